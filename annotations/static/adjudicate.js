// grace annotate --team: the reviewer's queue. Each question the team disagrees on, every label side by side with who
// gave it and the articles they cite; the reviewer's label, with why, becomes the gold. Labels, notes and KB text are
// untrusted: they reach the page as text nodes only (graceUI.el).
"use strict";

(() => {
  const { $, WHO, getJSON, postJSON, el, showError, pageURL } = window.graceUI;
  const { flash } = window.Shell;
  const S = { items: [], idx: 0, cites: [], refuse: false, team: null };

  function renderHead(team) {
    S.team = team;
    const a = team.agreement;
    $("team-line").textContent = `team: ${team.gold} / ${team.questions} gold` +
      (a ? ` · ${a.name} ${a.kappa == null ? "undefined" : a.kappa.toFixed(3)}` : "");
    const decided = S.items.filter((it) => it.status === "adjudicated").length;
    $("progress").textContent = `${S.items.length - decided} to decide · ${decided} decided`;
    $("who").textContent = WHO || "";
  }

  function titleOf(id) {
    const a = (S.items[S.idx].articles || []).find((x) => x.id === id);
    return a ? a.title : "(not in the KB)";
  }

  function chips(cites, refuse) {
    if (refuse) return [el("li", { class: "chip refuse-chip", text: "must_refuse" })];
    return cites.map((id) => el("li", { class: "chip" }, el("span", { class: "chip-id", text: `#${id}` }), " ",
      el("span", { text: titleOf(id) })));
  }

  function renderDecision() {
    $("chosen").replaceChildren(...chips(S.cites, S.refuse));
    $("refuse-box").checked = S.refuse;
    for (const box of document.querySelectorAll("#articles input.take")) box.checked = S.cites.includes(box.dataset.id);
  }

  function take(lab) {
    S.refuse = lab.must_refuse;
    S.cites = lab.expected_citations.slice();
    renderDecision();
  }

  function go(i) {
    if (!S.items.length) return;
    S.idx = Math.max(0, Math.min(S.items.length - 1, i));
    render();
  }

  function render() {
    $("empty").hidden = S.items.length > 0;
    $("item").hidden = S.items.length === 0;
    if (!S.items.length) { $("qpos").textContent = "Question 0 / 0"; return; }
    const it = S.items[S.idx];
    $("qpos").textContent = `Question ${S.idx + 1} / ${S.items.length} · ${it.question_id}`;
    $("qtext").textContent = it.question;
    $("status-badge").textContent = it.status === "adjudicated" ? "decided" : "people disagree";
    $("status-badge").className = `badge ${it.status === "adjudicated" ? "labelled" : "skipped"}`;
    $("labels").replaceChildren(...it.labels.map((lab, n) => el("li", { class: "side", "data-person": lab.person },
      el("div", { class: "label-line" }, el("kbd", { text: String(n + 1) }), " ", el("strong", { text: lab.person })),
      lab.status === "labelled" ? el("ul", { class: "chips" }, ...chips(lab.expected_citations, lab.must_refuse))
        : el("p", { class: "muted", text: lab.status }),
      lab.notes ? el("p", { class: "muted", text: `notes: ${lab.notes}` }) : null,
      lab.question !== it.question ? el("p", { class: "muted", text: `reworded: ${lab.question}` }) : null,
      lab.status === "labelled" ? el("button", { type: "button", class: "take-label", onclick: () => take(lab) },
        `take ${lab.person}'s label`) : null)));
    $("articles").replaceChildren(...it.articles.map((a) => el("li", { class: "card", "data-id": a.id },
      el("label", {}, el("input", { type: "checkbox", class: "take", "data-id": a.id, onchange: (e) => {
        S.refuse = false;
        S.cites = e.target.checked ? [...S.cites, a.id] : S.cites.filter((c) => c !== a.id);
        renderDecision();
      } }), " ", el("span", { class: "chip-id", text: `#${a.id}` }), " ", el("strong", { class: "title", text: a.title })),
      a.breadcrumb.length ? el("p", { class: "crumb", text: a.breadcrumb.join(" › ") }) : null,
      el("details", {}, el("summary", { text: "full text" }), el("p", { class: "article-text", text: a.text + (a.cut ? " …" : "") })))));
    const d = it.decision;
    $("previous").hidden = !d;
    $("previous").textContent = d ? `decided by ${d.by}: ${d.label} (${d.reason})` : "";
    S.cites = d ? d.expected_citations.slice() : [];
    S.refuse = d ? d.must_refuse : false;
    $("reason").value = "";
    renderDecision();
  }

  async function decide() {
    const it = S.items[S.idx];
    if (!it) return;
    const seen = Object.fromEntries(it.labels.map((lab) => [lab.person, lab.label]));
    try {
      const res = await postJSON("/api/adjudicate", { question_id: it.question_id, expected_citations: S.cites,
        must_refuse: S.refuse, reason: $("reason").value, seen });
      showError("");
      flash(`decided ${it.question_id}: ${res.record.must_refuse ? "must_refuse" : res.record.expected_citations.map((c) => `#${c}`).join(", ")}`);
      S.items = res.queue.items;
      renderHead(res.team);
      const next = S.items.findIndex((x) => x.status === "disagree");
      go(next >= 0 ? next : S.items.findIndex((x) => x.question_id === it.question_id));
    } catch (e) { showError(`not decided: ${e.message}`); }
  }

  async function load() {
    const q = await getJSON("/api/queue");
    S.items = q.items;
    renderHead(q.team);
    go(S.idx);
  }

  async function pick() {
    const team = await getJSON("/api/team");
    $("queue").hidden = true;
    $("pick").hidden = false;
    const open = (n) => { if (n.trim()) location.href = pageURL("/static/adjudicate.html", { who: n.trim() }); };
    $("pick-list").replaceChildren(...team.reviewers.map((n) =>
      el("li", {}, el("button", { type: "button", "data-person": n, onclick: () => open(n) }, n))));
    $("pick-name").addEventListener("keydown", (e) => { if (e.key === "Enter") open($("pick-name").value); });
    $("pick-go").addEventListener("click", () => open($("pick-name").value));
  }

  function wire() {
    const keys = { j: () => go(S.idx + 1), k: () => go(S.idx - 1), w: () => $("reason").focus() };
    window.Shell.keys({
      keys,
      ready: () => S.items.length > 0,
      before: (e) => {
        const n = Number(e.key);
        if (!(n >= 1 && n <= 9) || e.shiftKey) return false;
        const lab = (S.items[S.idx].labels.filter((l) => l.status === "labelled"))[n - 1];
        if (lab) take(lab);
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
    $("refuse-box").addEventListener("change", () => {
      S.refuse = $("refuse-box").checked;
      if (S.refuse) S.cites = [];
      renderDecision();
    });
  }

  window.Shell.start(async () => {
    wire();
    if (!WHO) { await pick(); return; }
    await load();
  });
})();
