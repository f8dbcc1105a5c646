// grace annotations review --team: the judge against the people. Kappa of the judge against each person and the
// team's labels, of each pair of people, the confusion, and each false positive / negative with a link to the
// viewer's question page (grace view RUN). Claims and explanations are model output: text nodes only (graceUI.el).
"use strict";

(() => {
  const { $, WHO, getJSON, el, showError, pageURL } = window.graceUI;
  const num = (x) => (x === null || x === undefined ? "–" : x.toFixed(3));
  const pct = (x) => (x === null || x === undefined ? "–" : `${(100 * x).toFixed(1)}%`);

  function row(kind, name, f) {
    return el("tr", { "data-kind": kind, "data-name": name },
      el("th", { scope: "row", text: name }), el("td", { class: "num n", text: String(f.n) }),
      el("td", { class: "num kappa", text: num(f.kappa) }), el("td", { class: "num kappa-all", text: num(f.kappa_multiclass) }),
      el("td", { class: "num", text: pct(f.agreement) }),
      el("td", { class: "num", text: f.precision_unsupported === undefined ? "" : pct(f.precision_unsupported) }),
      el("td", { class: "num", text: f.recall_unsupported === undefined ? "" : pct(f.recall_unsupported) }));
  }

  function confusion(c, classes) {
    const head = el("tr", {}, el("th", { text: "people \\ judge" }), ...classes.map((k) => el("th", { text: k })));
    const body = c.confusion_classes
      ? classes.map((h) => el("tr", {}, el("th", { scope: "row", text: h }),
        ...classes.map((j) => el("td", { class: "num", "data-cell": `${h}/${j}`, text: String(c.confusion_classes[h][j]) }))))
      : c.confusion ? [
        el("tr", {}, el("th", { scope: "row", text: "supported" }), el("td", { class: "num", "data-cell": "tn", text: String(c.confusion.tn) }),
          el("td", { class: "num", "data-cell": "fp", text: String(c.confusion.fp) })),
        el("tr", {}, el("th", { scope: "row", text: "unsupported" }), el("td", { class: "num", "data-cell": "fn", text: String(c.confusion.fn) }),
          el("td", { class: "num", "data-cell": "tp", text: String(c.confusion.tp) }))] : [];
    $("confusion").replaceChildren(el("thead", {}, head), el("tbody", {}, ...body));
  }

  function card(e) {
    const safe = typeof e.question_page === "string" && /^https?:\/\//.test(e.question_page);
    return el("li", { class: "card", "data-question": e.question_id, "data-seg": String(e.segment_index) },
      el("div", {}, safe ? el("a", { href: e.question_page, target: "_blank", rel: "noopener", class: "question-link",
        text: `${e.question_id} · ${e.model}` }) : el("strong", { text: `${e.question_id} · ${e.model}` }),
        ` · claim ${e.segment_index} · people: ${e.human} · judge: ${e.judge}`),
      el("p", { text: e.text }),
      e.judge_explanation ? el("p", { class: "muted", text: `judge: ${e.judge_explanation}` }) : null);
  }

  async function load() {
    const c = await getJSON("/api/review/calibration");
    $("who").textContent = c.reviewer;
    $("judge-line").textContent = `Judge ${c.judge} (${c.mode}) on run ${c.run}`;
    const t = c.team;
    $("progress").textContent = `${t.labelled} / ${t.claims} claims labelled by the team · ${t.disagree} to decide`;
    $("kappa-rows").replaceChildren(
      ...c.judge_vs_people.map((p) => row("judge-person", `${c.judge} vs ${p.name}`, p)),
      row("judge-team", `${c.judge} vs team`, c.judge_vs_team),
      ...c.people_pairs.map((p) => row("pair", `${p.a} vs ${p.b}`, p)));
    confusion(c.judge_vs_team, c.classes);
    $("false-positives").replaceChildren(...c.false_positives.map(card));
    $("false-negatives").replaceChildren(...c.false_negatives.map(card));
    $("viewer-hint").hidden = Boolean(c.viewer);
    $("viewer-hint").textContent = c.viewer ? "" : `To open each question in the viewer: run 'grace view ${c.run}' ` +
      "and start this review with --viewer and the address it prints.";
  }

  window.Shell.start(async () => {
    const again = () => load().catch((e) => showError(e.message));
    window.Shell.keys({ keys: { r: again } });
    $("refresh").addEventListener("click", again);
    $("queue-link").href = pageURL("/static/review_queue.html", WHO ? { who: WHO } : {});
    if (!WHO) { showError("name yourself: open this page with ?who=YOUR_NAME (a reviewer)"); return; }
    await load();
    setInterval(() => load().catch(() => { /* the next try */ }), 10000);  // verdicts come in meanwhile
  });
})();
