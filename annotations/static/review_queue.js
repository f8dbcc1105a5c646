// grace annotations review --team: the reviewer's queue. Each claim the people gave different verdicts, every verdict
// side by side with who gave it, their note and the articles the claim cites; the reviewer's verdict, with why,
// becomes the team's human label. Claims, notes and KB text are untrusted: text nodes only (graceUI.el).
"use strict";

(() => {
  const { $, WHO, getJSON, postJSON, el, showError, pageURL } = window.graceUI;
  const { flash } = window.Shell;
  const S = { items: [], idx: 0, verdict: null, classes: ["supported", "partial", "unsupported"] };

  function renderHead(team) {
    const decided = S.items.filter((it) => it.status === "adjudicated").length;
    $("progress").textContent = `${S.items.length - decided} to decide · ${decided} decided · team: ` +
      `${team.labelled} / ${team.claims} claims labelled`;
    $("who").textContent = WHO || "";
  }

  function renderChoice() {
    for (const b of document.querySelectorAll("#choices button")) {
      b.setAttribute("aria-checked", String(b.dataset.verdict === S.verdict));
      b.classList.toggle("chosen", b.dataset.verdict === S.verdict);
    }
  }

  function go(i) {
    if (!S.items.length) return;
    S.idx = Math.max(0, Math.min(S.items.length - 1, i));
    render();
  }

  function render() {
    $("empty").hidden = S.items.length > 0;
    $("item").hidden = S.items.length === 0;
    if (!S.items.length) { $("qpos").textContent = "Claim 0 / 0"; return; }
    const it = S.items[S.idx];
    $("qpos").textContent = `Claim ${S.idx + 1} / ${S.items.length} · ${it.question_id} · ${it.model}`;
    $("qtext").textContent = it.question || "";
    $("claim").textContent = it.text;
    $("status-badge").textContent = it.status === "adjudicated" ? "decided" : "people disagree";
    $("status-badge").className = `badge ${it.status === "adjudicated" ? "labelled" : "skipped"}`;
    $("verdicts").replaceChildren(...it.verdicts.map((v, n) => el("li", { class: "side", "data-person": v.person },
      el("div", { class: "label-line" }, el("kbd", { text: String(n + 1) }), " ", el("strong", { text: v.person }),
        " ", el("span", { class: `badge ${v.verdict}`, text: v.verdict })),
      v.note ? el("p", { class: "muted", text: `note: ${v.note}` }) : null)));
    $("choices").replaceChildren(...S.classes.map((c) => el("button", { type: "button", role: "radio", "data-verdict": c,
      onclick: () => { S.verdict = c; renderChoice(); } }, c)));
    $("articles").replaceChildren(...it.articles.map((a) => el("li", { class: "card", "data-id": a.id },
      el("span", { class: "chip-id", text: `#${a.id}` }), " ", el("strong", { class: "title", text: a.in_kb ? a.title : "(not in the KB)" }),
      el("details", {}, el("summary", { text: "full text" }), el("p", { class: "article-text", text: a.text + (a.cut ? " …" : "") })))));
    const d = it.decision;
    $("previous").hidden = !d;
    $("previous").textContent = d ? `decided by ${d.by}: ${d.verdict} (${d.reason})` : "";
    S.verdict = d ? d.verdict : null;
    $("reason").value = "";
    renderChoice();
  }

  async function decide() {
    const it = S.items[S.idx];
    if (!it) return;
    const seen = Object.fromEntries(it.verdicts.map((v) => [v.person, v.verdict]));
    try {
      const res = await postJSON("/api/review/adjudicate", { model: it.model, question_id: it.question_id,
        repeat: it.repeat, segment_index: it.segment_index, verdict: S.verdict, reason: $("reason").value, seen });
      showError("");
      flash(`decided ${it.question_id} claim ${it.segment_index}: ${res.decision.verdict}`);
      S.items = res.queue.items;
      renderHead(res.team);
      const next = S.items.findIndex((x) => x.status === "disagree");
      go(next >= 0 ? next : 0);
    } catch (e) { showError(`not decided: ${e.message}`); }
  }

  async function load() {
    const q = await getJSON("/api/review/queue");
    S.items = q.items;
    if (!q.claims) S.classes = ["supported", "unsupported"];
    renderHead(q.team);
    go(S.idx);
  }

  function pick() {
    $("queue").hidden = true;
    $("pick").hidden = false;
    const open = (n) => { if (n.trim()) location.href = pageURL("/static/review_queue.html", { who: n.trim() }); };
    $("pick-name").addEventListener("keydown", (e) => { if (e.key === "Enter") open($("pick-name").value); });
    $("pick-go").addEventListener("click", () => open($("pick-name").value));
  }

  function wire() {
    window.Shell.keys({
      keys: { j: () => go(S.idx + 1), k: () => go(S.idx - 1), w: () => $("reason").focus() },
      ready: () => S.items.length > 0,
      before: (e) => {
        const n = Number(e.key);
        if (!(n >= 1 && n <= 9) || e.shiftKey) return false;
        const v = S.items[S.idx].verdicts[n - 1];
        if (v) { S.verdict = v.verdict; renderChoice(); }
        e.preventDefault();
        return true;
      },
      typing: (e, t) => {
        if (t.id === "reason" && e.key === "Enter") { e.preventDefault(); decide(); }
        if (e.key === "Escape") t.blur();
      },
    });
    window.Shell.nav({ go, at: () => S.idx });
    $("decide").addEventListener("click", decide);
    $("calibration-link").href = pageURL("/static/calibration.html", WHO ? { who: WHO } : {});
  }

  window.Shell.start(async () => {
    wire();
    if (!WHO) { pick(); return; }
    await load();
  });
})();
