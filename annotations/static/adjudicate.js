// The reviewer's queue of a team (grace annotate --team: gold labels; grace annotations review --team: spot-check
// verdicts). Each item the people disagree on, every label side by side with who gave it and the articles it cites;
// the reviewer's label, with why, becomes the team's. The queue says what its items are (`kind`); KINDS says how each
// is drawn, taken and decided, the rest is one walk. The page names its API (`<body data-api>`). Labels, notes,
// claims and KB text are untrusted: they reach the page as text nodes only (graceUI.el).
"use strict";

(() => {
  const { $, WHO, getJSON, postJSON, el, showError, pageURL } = window.graceUI;
  const { flash } = window.Shell;
  const API = document.body.dataset.api || "/api";
  const S = { items: [], idx: 0, kind: null, cites: [], refuse: false, verdict: null, classes: [] };

  function titleOf(id) {
    const a = (S.items[S.idx].articles || []).find((x) => x.id === id);
    return a && a.in_kb ? a.title : "(not in the KB)";
  }

  function chips(cites, refuse) {
    if (refuse) return [el("li", { class: "chip refuse-chip", text: "must_refuse" })];
    return cites.map((id) => el("li", { class: "chip" }, el("span", { class: "chip-id", text: `#${id}` }), " ",
      el("span", { text: titleOf(id) })));
  }

  function fullText(a) {
    return el("details", {}, el("summary", { text: "full text" }), el("p", { class: "article-text", text: a.text + (a.cut ? " …" : "") }));
  }

  // what differs between a gold label (articles or must_refuse) and a claim's verdict (one of the classes)
  const KINDS = {
    labels: {
      unit: "Question",
      key: (it) => it.question_id,
      where: (it) => it.question_id,
      sides: (it) => it.labels,
      takeable: (it) => it.labels.filter((lab) => lab.status === "labelled"),
      side: (lab, it) => [
        lab.status === "labelled" ? el("ul", { class: "chips" }, ...chips(lab.expected_citations, lab.must_refuse))
          : el("p", { class: "muted", text: lab.status }),
        lab.notes ? el("p", { class: "muted", text: `notes: ${lab.notes}` }) : null,
        lab.question !== it.question ? el("p", { class: "muted", text: `reworded: ${lab.question}` }) : null,
        lab.status === "labelled" ? el("button", { type: "button", class: "take-label", onclick: () => take(lab) },
          `take ${lab.person}'s label`) : null],
      take: (lab) => { S.refuse = lab.must_refuse; S.cites = lab.expected_citations.slice(); },
      article: (a) => [
        el("label", {}, el("input", { type: "checkbox", class: "take", "data-id": a.id, onchange: (e) => {
          S.refuse = false;
          S.cites = e.target.checked ? [...S.cites, a.id] : S.cites.filter((c) => c !== a.id);
          renderDecision();
        } }), " ", el("span", { class: "chip-id", text: `#${a.id}` }), " ", el("strong", { class: "title", text: a.title })),
        a.breadcrumb.length ? el("p", { class: "crumb", text: a.breadcrumb.join(" › ") }) : null],
      start: (d) => { S.cites = d ? d.expected_citations.slice() : []; S.refuse = d ? d.must_refuse : false; },
      renderDecision: () => {
        $("chosen").replaceChildren(...chips(S.cites, S.refuse));
        $("refuse-box").checked = S.refuse;
        for (const box of document.querySelectorAll("#articles input.take")) box.checked = S.cites.includes(box.dataset.id);
      },
      body: (it) => ({ question_id: it.question_id, expected_citations: S.cites, must_refuse: S.refuse }),
      decided: (it, res) => `decided ${it.question_id}: ${res.record.must_refuse ? "must_refuse"
        : res.record.expected_citations.map((c) => `#${c}`).join(", ")}`,
      team: (t) => `team: ${t.gold} / ${t.questions} gold` +
        (t.agreement ? ` · ${t.agreement.name} ${t.agreement.kappa == null ? "undefined" : t.agreement.kappa.toFixed(3)}` : ""),
    },
    verdicts: {
      unit: "Claim",
      key: (it) => [it.model, it.question_id, it.repeat, it.segment_index].join("\u0000"),
      where: (it) => `${it.question_id} · ${it.model}`,
      sides: (it) => it.verdicts,
      takeable: (it) => it.verdicts,
      side: (v) => [v.note ? el("p", { class: "muted", text: `note: ${v.note}` }) : null],
      badge: (v) => el("span", { class: `badge ${v.verdict}`, text: v.verdict }),
      take: (v) => { S.verdict = v.verdict; },
      article: (a) => [el("span", { class: "chip-id", text: `#${a.id}` }), " ",
        el("strong", { class: "title", text: a.in_kb ? a.title : "(not in the KB)" })],
      start: (d) => {
        S.verdict = d ? d.verdict : null;
        $("choices").replaceChildren(...S.classes.map((c) => el("button", { type: "button", role: "radio", "data-verdict": c,
          onclick: () => { S.verdict = c; renderDecision(); } }, c)));
      },
      renderDecision: () => {
        for (const b of document.querySelectorAll("#choices button")) {
          b.setAttribute("aria-checked", String(b.dataset.verdict === S.verdict));
          b.classList.toggle("chosen", b.dataset.verdict === S.verdict);
        }
      },
      body: (it) => ({ model: it.model, question_id: it.question_id, repeat: it.repeat, segment_index: it.segment_index,
        verdict: S.verdict }),
      decided: (it, res) => `decided ${it.question_id} claim ${it.segment_index}: ${res.decision.verdict}`,
      team: (t) => `team: ${t.labelled} / ${t.claims} claims labelled`,
    },
  };
  const K = () => KINDS[S.kind];
  const labelOf = (side) => side.label || side.verdict;

  function renderHead(team) {
    const decided = S.items.filter((it) => it.status === "adjudicated").length;
    $("progress").textContent = `${S.items.length - decided} to decide · ${decided} decided`;
    $("team-line").textContent = K().team(team);
    $("who").textContent = WHO || "";
  }

  function renderDecision() { K().renderDecision(); }

  function renderArticles(it) {
    $("articles").replaceChildren(...it.articles.map((a) => el("li", { class: "card", "data-id": a.id },
      ...K().article(a), fullText(a))));
  }

  // the whole KB, as the labelling page searches it: an article nobody cited joins the item's, chosen
  let searchTimer = null;
  async function searchKB() {
    const q = $("kb-search").value.trim();
    if (!q) { $("kb-results").replaceChildren(); return; }
    let res;
    try { res = await getJSON(`${API}/kb`, { q }); } catch (e) { showError(e.message); return; }
    if ($("kb-search").value.trim() !== q) return;  // typed on meanwhile
    $("kb-results").replaceChildren(...res.results.map((a) => el("li", { class: "card", "data-id": a.id },
      el("button", { type: "button", class: "add-article", onclick: () => addArticle(a) }, "add"), " ",
      el("span", { class: "chip-id", text: `#${a.id}` }), " ", el("strong", { class: "title", text: a.title }),
      a.breadcrumb.length ? el("p", { class: "crumb", text: a.breadcrumb.join(" › ") }) : null, fullText(a))));
  }

  function addArticle(a) {
    const it = S.items[S.idx];
    if (!it.articles.some((x) => x.id === a.id)) it.articles.push(a);
    S.refuse = false;
    if (!S.cites.includes(a.id)) S.cites = [...S.cites, a.id];
    renderArticles(it);
    renderDecision();
    $("kb-results").replaceChildren();
    $("kb-search").value = "";
  }

  function take(side) {
    K().take(side);
    renderDecision();
  }

  function go(i) {
    if (!S.items.length) return;
    S.idx = Math.max(0, Math.min(S.items.length - 1, i));
    render();
  }

  function render() {
    const k = K();
    $("empty").hidden = S.items.length > 0;
    $("item").hidden = S.items.length === 0;
    if (!S.items.length) { $("qpos").textContent = `${k.unit} 0 / 0`; return; }
    const it = S.items[S.idx];
    $("qpos").textContent = `${k.unit} ${S.idx + 1} / ${S.items.length} · ${k.where(it)}`;
    $("qtext").textContent = it.question || "";
    if ($("claim")) $("claim").textContent = it.text || "";
    $("status-badge").textContent = it.status === "adjudicated" ? "decided"
      : it.status === "reopened" ? "labels changed since the decision: decide again" : "people disagree";
    $("status-badge").className = `badge ${it.status === "adjudicated" ? "labelled" : "skipped"}`;
    $("labels").replaceChildren(...k.sides(it).map((side, n) => el("li", { class: "side", "data-person": side.person },
      el("div", { class: "label-line" }, el("kbd", { text: String(n + 1) }), " ", el("strong", { text: side.person }),
        ...(k.badge ? [" ", k.badge(side)] : [])),
      ...k.side(side, it))));
    renderArticles(it);
    if ($("kb-results")) { $("kb-results").replaceChildren(); $("kb-search").value = ""; }
    const d = it.decision;
    $("previous").hidden = !d;
    $("previous").textContent = d ? `decided by ${d.by}: ${labelOf(d)} (${d.reason})` : "";
    k.start(d);
    $("reason").value = "";
    renderDecision();
  }

  async function decide() {
    const it = S.items[S.idx];
    if (!it) return;
    const seen = it.seen; // what this page was shown (each label, the decision so far): the server decides on it only
    try {
      const res = await postJSON(`${API}/adjudicate`, { ...K().body(it), reason: $("reason").value, seen });
      showError("");
      flash(K().decided(it, res));
      S.items = res.queue.items;
      renderHead(res.team);
      const next = S.items.findIndex((x) => x.status !== "adjudicated");
      go(next >= 0 ? next : Math.max(0, S.items.findIndex((x) => K().key(x) === K().key(it))));
    } catch (e) {
      showError(`not decided: ${e.message}`);
      // refused on a state that changed (a label, or another decision came first): show the question as it is now
      if (/changed since you opened it/.test(e.message)) {
        const key = K().key(it);
        const why = $("reason").value;
        try { await load(); } catch (_) { return; /* the message stands */ }
        const i = S.items.findIndex((x) => K().key(x) === key);
        if (i >= 0) go(i);
        $("reason").value = why;
      }
    }
  }

  async function load() {
    const q = await getJSON(`${API}/queue`);
    S.kind = q.kind;
    S.classes = q.classes || [];
    S.items = q.items;
    renderHead(q.team);
    go(S.idx);
  }

  async function pick() {
    const team = await getJSON(`${API}/team`);
    $("queue").hidden = true;
    $("pick").hidden = false;
    const open = (n) => { if (n.trim()) location.href = pageURL(location.pathname, { who: n.trim() }); };
    $("pick-list").replaceChildren(...team.reviewers.map((n) =>
      el("li", {}, el("button", { type: "button", "data-person": n, onclick: () => open(n) }, n))));
    $("pick-name").addEventListener("keydown", (e) => { if (e.key === "Enter") open($("pick-name").value); });
    $("pick-go").addEventListener("click", () => open($("pick-name").value));
  }

  function wire() {
    window.Shell.keys({
      keys: { j: () => go(S.idx + 1), k: () => go(S.idx - 1), w: () => $("reason").focus(),
        "/": () => { if ($("kb-search")) $("kb-search").focus(); } },
      ready: () => S.items.length > 0,
      before: (e) => {
        const n = Number(e.key);
        if (!(n >= 1 && n <= 9) || e.shiftKey) return false;
        const side = K().takeable(S.items[S.idx])[n - 1];
        if (side) take(side);
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
    if ($("kb-search")) {
      $("kb-search").addEventListener("input", () => { clearTimeout(searchTimer); searchTimer = setTimeout(searchKB, 150); });
      $("kb-search").addEventListener("keydown", async (e) => {
        if (e.key !== "Enter") return;
        e.preventDefault();
        clearTimeout(searchTimer);
        await searchKB();
        const first = $("kb-results").querySelector("button.add-article");
        if (first) first.click();
      });
    }
    if ($("refuse-box")) $("refuse-box").addEventListener("change", () => {
      S.refuse = $("refuse-box").checked;
      if (S.refuse) S.cites = [];
      renderDecision();
    });
    if ($("calibration-link")) $("calibration-link").href = pageURL("/static/calibration.html", WHO ? { who: WHO } : {});
  }

  window.Shell.start(async () => {
    wire();
    if (!WHO) { await pick(); return; }
    await load();
  });
})();
