// grace view: Runs, Leaderboard, Questions, Question, Compare and Trends pages over one JSON API.
// Every string from a run (questions, answers, article text, model names) is untrusted: it only ever goes into
// text nodes through graceUI.el, never innerHTML. The page's state lives in the URL's hash (#/questions?...),
// so a link reproduces exactly what was on screen, and a reload restores it.
// A static export (grace view --export) loads this same file with window.GRACE_EXPORT set: the API is then
// answered here, from the exported data, by Local below (the same filters as harness/viewer/grid.py).
// The outcome names (and their labels and cell texts) come with the data, from harness/viewer/grid.py's
// OUTCOME_NAMES: this file spells none.
"use strict";

(() => {
  const ui = window.graceUI;
  const { $, el } = ui;
  const EXPORT = window.GRACE_EXPORT || null;
  const PAGE_SIZE = 50;
  const FILTERS = ["runs", "model", "outcome", "article", "category", "disagree", "flip", "suspect", "missed",
    "truncated", "q", "sort", "page"];
  let renderToken = 0;
  let pollTimer = null;

  // -- the API: the server's, or the export's ------------------------------------------------------------------

  function api(path, params) {
    if (EXPORT) return Local.handle(path, params || {});
    return ui.getJSON(path, params);
  }

  function plotSrc(run, name) {
    if (EXPORT) return EXPORT.plots[run] ? EXPORT.plots[run][name] : "";
    return ui.url("/api/plot", { run, name });
  }

  function trendPlotSrc(params) {
    if (EXPORT) return EXPORT.trend ? EXPORT.trend.plots[Local.trendKey(params) + "|" + (params.model || "")] || "" : "";
    return ui.url("/api/trend-plot", params);
  }

  // -- routing --------------------------------------------------------------------------------------------------

  function route() {
    const h = location.hash.replace(/^#\/?/, "");
    const q = h.indexOf("?");
    const page = (q < 0 ? h : h.slice(0, q)) || "runs";
    return { page, params: new URLSearchParams(q < 0 ? "" : h.slice(q + 1)) };
  }

  function href(page, params) {
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(params || {})) {
      if (v !== undefined && v !== null && v !== "" && v !== false) p.set(k, v === true ? "1" : String(v));
    }
    const s = p.toString();
    return `#/${page}${s ? "?" + s : ""}`;
  }

  function go(page, params) {
    location.hash = href(page, params);
  }

  function link(text, page, params, props) {
    return el("a", { href: href(page, params), ...(props || {}) }, text);
  }

  // -- small helpers --------------------------------------------------------------------------------------------

  function pct(x, digits = 1) {
    return x === null || x === undefined || Number.isNaN(x) ? "–" : `${(100 * x).toFixed(digits)}%`;
  }

  function signedPp(x) {
    return `${x >= 0 ? "+" : ""}${(100 * x).toFixed(1)} pp`;
  }

  function outcomeShort(cell, cellText) {
    const c = cell.cited && cell.cited !== "none" && cell.cited !== "REFUSE" ? cell.cited : "";
    const text = cellText[cell.outcome] ? cellText[cell.outcome].replace("{cited}", () => c) : cell.outcome;
    return text.trim() + (cell.n > 1 ? ` ${cell.hits}/${cell.n}` : "") + (cell.truncated ? " ✂" : "");
  }

  function badge(text, cls, title) {
    return el("span", { class: `badge ${cls || ""}`, ...(title ? { title } : {}) }, text);
  }

  function outcomeBadge(outcome, hit, tone) {
    return badge(outcome ? outcome.replace(/_/g, " ") : "–", `tone-${tone || "none"} ${hit ? "hit" : "miss"}`);
  }

  function section(title, ...children) {
    return el("section", { class: "card" }, el("h2", {}, title), ...children);
  }

  function table(headers, rows, cls) {
    return el("div", { class: "scroll" }, el("table", { class: cls || "" },
      el("thead", {}, el("tr", {}, ...headers.map((h) => (typeof h === "string" ? el("th", {}, h) : h)))),
      el("tbody", {}, ...rows)));
  }

  function setMain(...children) {
    // a section a page leaves out is null (as el() takes it): replaceChildren would print it as the text "null"
    const main = $("main");
    main.replaceChildren(...children.filter((c) => c != null));
  }

  function showError(msg) {
    ui.showError(msg);
  }

  function status(text) {
    $("status").textContent = text || "";
  }

  function waitingView(w, again) {
    const pctDone = Math.round(100 * (w.progress || 0));
    if (w.problem && w.state !== "indexing" && w.state !== "waiting") {
      return el("div", { class: "card notice", id: "waiting" }, el("strong", {}, `${w.run}: `), w.problem);
    }
    clearTimeout(pollTimer);
    pollTimer = setTimeout(again, 500);
    return el("div", { class: "card notice", id: "waiting" },
      el("strong", {}, `Indexing ${w.run}… ${pctDone}%`), ` ${w.phase || ""}`,
      el("div", {}, el("progress", { max: "100", value: String(pctDone) })),
      el("p", { class: "muted" }, "A large run is indexed once; the index is kept in grace's cache folder and " +
        "rebuilt only when the run changes. The Runs and Leaderboard pages work meanwhile."));
  }

  // -- Runs -----------------------------------------------------------------------------------------------------

  async function runsPage() {
    const data = await api("/api/runs");
    const picked = new Set();
    const rows = data.runs.map((r) => {
      const box = el("input", { type: "checkbox", "data-run": r.id, "aria-label": `pick ${r.id}` });
      box.addEventListener("change", () => { box.checked ? picked.add(r.id) : picked.delete(r.id); update(); });
      const models = r.models.map((m) => `${m.model}${m.accuracy != null ? ` ${pct(m.accuracy)}` : ""}`).join(", ");
      let state = r.state === "ready" ? "indexed" : r.state === "indexing" ? `indexing ${Math.round(100 * r.progress)}%` : r.state;
      if (r.stale) state += " (re-indexing)";
      return el("tr", { "data-run": r.id },
        el("td", {}, box),
        el("td", {}, el("strong", {}, r.id), el("div", { class: "muted small" }, r.path),
          r.in_progress ? el("div", { class: "warn small" }, `in progress: ${r.in_progress}`) : null,
          r.problem ? el("div", { class: "warn small" }, r.problem) : null),
        el("td", {}, r.when || "–"),
        el("td", {}, r.kb ? `${r.kb.path || "?"}${r.kb.articles != null ? ` (${r.kb.articles} articles)` : ""}` : "–"),
        el("td", {}, r.gold ? `${r.gold.path || "?"}${r.gold.questions != null ? ` (${r.gold.questions} questions)` : ""}${r.sample ? `; asked ${r.sample}` : ""}` : "–"),
        el("td", {}, models || "–"),
        el("td", { class: "num" }, r.cost_usd == null ? "–" : r.cost_usd === 0 ? "$0" : `$${r.cost_usd.toFixed(r.cost_usd >= 0.1 ? 2 : 4)}`),
        el("td", {}, state),
        el("td", { class: "links" },
          link("Leaderboard", "leaderboard", { run: r.id }), " ",
          link("Questions", "questions", { runs: r.id })));
    });
    const open = el("button", { type: "button", id: "open-picked", disabled: "" }, "Questions for the picked runs");
    const cmp = el("button", { type: "button", id: "compare-picked", disabled: "" }, "Compare the two picked runs");
    open.addEventListener("click", () => go("questions", { runs: [...picked].join(",") }));
    cmp.addEventListener("click", () => { const [a, b] = [...picked]; go("compare", { a, b }); });
    function update() {
      open.toggleAttribute("disabled", picked.size === 0);
      cmp.toggleAttribute("disabled", picked.size !== 2);
    }
    setMain(section(`Runs (${data.runs.length})`,
      el("p", { class: "muted" }, "Pick runs to see their questions side by side (in the order picked: the first is " +
        "run A of \"flipped between runs\"), or two runs to compare."),
      el("div", { class: "actions" }, open, " ", cmp, " ",
        link("Trends across these runs", "trend", {}, { id: "trend-link" })),
      table(["", "Run", "When", "KB", "Gold", "Models (accuracy)", "Cost", "Index", ""], rows, "runs")));
    if (data.runs.some((r) => r.state === "indexing" || r.state === "waiting")) {
      clearTimeout(pollTimer);
      pollTimer = setTimeout(() => { if (route().page === "runs" && !picked.size) render(); }, 1500);
    }
  }

  // -- Leaderboard ----------------------------------------------------------------------------------------------

  async function leaderboardPage(params) {
    const runs = (await api("/api/runs")).runs;
    const rid = params.get("run") || (runs[0] && runs[0].id);
    const picker = el("select", { id: "lb-run", "aria-label": "run" },
      ...runs.map((r) => el("option", { value: r.id, ...(r.id === rid ? { selected: "" } : {}) }, r.id)));
    picker.addEventListener("change", () => go("leaderboard", { run: picker.value }));
    const data = await api("/api/leaderboard", { run: rid });
    const rows = data.rows.map((r) => el("tr", {}, ...data.columns.map((c) => {
      const td = el("td", { class: c.numeric ? "num" : "" }, r.cells[c.key]);
      if (c.key === "model") {
        td.replaceChildren(link(r.cells.model, "questions", { runs: rid, model: r.model }));
        if (r.errors) td.append(el("span", { class: "warn small" }, ` (${r.errors} errors)`));
      }
      return td;
    })));
    const pairs = data.pairwise.map((p) => el("tr", {},
      el("td", {}, p.a), el("td", {}, p.b), el("td", { class: "num" }, String(p.n)),
      el("td", { class: "num" }, String(p.a_only)), el("td", { class: "num" }, String(p.b_only)),
      el("td", { class: "num" }, p.p_adjusted.toFixed(4)), el("td", {}, p.significant ? "yes" : "no"),
      el("td", {}, link("compare", "compare", { a: rid, b: rid, ma: p.a, mb: p.b }))));
    const plots = el("div", { class: "plots" }, ...data.plots.map((plot) =>
      el("figure", {}, el("img", { src: plotSrc(rid, plot.name), alt: `${plot.name} plot`, "data-plot": plot.name }),
        plot.caption ? el("figcaption", { class: "muted small" }, plot.caption) : null)));
    const suspects = data.suspects ? el("p", {}, `${data.suspects} gold label(s) contradicted by most models that are not baselines: `,
      link("show them in the grid", "questions", { runs: rid, suspect: "1" })) : null;
    setMain(
      section("Leaderboard", el("div", { class: "actions" }, "Run ", picker),
        table(data.columns.map((c) => el("th", { class: c.numeric ? "num" : "" }, c.header)), rows, "leaderboard"),
        ...data.notes.map((n) => el("p", { class: "warn" }, n)), suspects,
        ...Object.entries(data.failed).map(([m, why]) => el("p", { class: "warn" }, `not ranked: ${m}: ${why}`)),
        el("ul", { class: "legend muted" }, ...data.legend.map((l) => el("li", {}, l)))),
      data.categories ? section("Accuracy per category",
        table(data.categories.headers.map((h, i) => el("th", { class: i ? "num" : "" }, h)),
          data.categories.rows.map((r) => el("tr", { "data-category": r[0] },
            ...r.map((v, i) => el("td", { class: i ? "num" : "" }, v)))), "categories"),
        el("p", { class: "muted small" }, data.categories.legend)) : null,
      section("Plots", plots),
      section("Pairwise tests (McNemar exact, Holm-corrected)",
        pairs.length ? table(["A", "B", "n", "A only", "B only", "p (Holm)", "significant", ""], pairs)
          : el("p", { class: "muted" }, "Only one model: no pairwise tests.")),
      data.citation_pairwise ? section("Citation F1 tests (paired permutation, Holm-corrected)",
        table(data.citation_pairwise.headers, data.citation_pairwise.rows.map((r) => el("tr", {},
          ...r.map((v, i) => el("td", { class: i >= 2 && i < 7 ? "num" : "" }, v)))), "citation-pairs"),
        el("p", { class: "muted small" }, data.citation_pairwise.legend)) : null);
  }

  // -- Questions ------------------------------------------------------------------------------------------------

  function filterState(params) {
    const s = {};
    for (const k of FILTERS) s[k] = params.get(k) || "";
    return s;
  }

  function filterBar(s, data) {
    const models = [...new Set(data.columns.map((c) => c.model))];
    const state = { ...s };
    // from the URL as it is now, not as it was when this bar was drawn: two quick changes both count
    const apply = (changes) => go("questions", { ...filterState(route().params), runs: state.runs, ...changes,
      page: changes.page || "" });
    const sel = (id, label, value, options) => {
      const node = el("select", { id, "aria-label": label },
        ...options.map(([v, t]) => el("option", { value: v, ...(v === value ? { selected: "" } : {}) }, t)));
      node.addEventListener("change", () => apply({ [id.replace("f-", "")]: node.value }));
      return el("label", {}, `${label} `, node);
    };
    const check = (id, label, title) => {
      const key = id.replace("f-", "");
      const box = el("input", { type: "checkbox", id, ...(state[key] ? { checked: "" } : {}) });
      box.addEventListener("change", () => apply({ [key]: box.checked ? "1" : "" }));
      return el("label", { title }, box, ` ${label}`);
    };
    const search = el("input", { type: "search", id: "f-q", value: state.q, placeholder: "words in questions or answers" });
    search.addEventListener("keydown", (e) => { if (e.key === "Enter") apply({ q: search.value.trim() }); });
    search.addEventListener("change", () => apply({ q: search.value.trim() }));
    const article = el("input", { type: "text", id: "f-article", value: state.article, placeholder: "article ID", size: "8" });
    article.addEventListener("change", () => apply({ article: article.value.trim() }));
    const runs = data.runs || [];
    return el("div", { class: "filters card", id: "filters" },
      el("span", { class: "muted" }, `Runs: ${runs.join(", ")} `), link("change", "runs", {}), " ",
      sel("f-model", "Model", state.model, [["", "every model"], ...models.map((m) => [m, m])]),
      sel("f-outcome", "Outcome", state.outcome, [["", "any outcome"], ["hit", "correct (majority)"],
        ["miss", "not correct"], ...data.outcomes.map((o) => [o.name, o.label])]),
      el("label", {}, "Article ", article),
      data.categories && data.categories.length ? sel("f-category", "Category", state.category,
        [["", "every category"], ...data.categories.map((c) => [c, c])]) : null,
      runs.length > 1 ? sel("f-flip", "Flipped", state.flip, [["", "–"], ["any", `flipped ${runs[0]} → ${runs[runs.length - 1]}`],
        ["improved", "improved"], ["regressed", "regressed"]]) : null,
      check("f-disagree", "models disagree", "the columns cite different articles, or some refuse"),
      check("f-suspect", "label suspects", "the label audit says the gold label may be wrong"),
      check("f-missed", "retrieval missed gold", "the gold article was not among the articles shown"),
      check("f-truncated", "truncated", "an answer was cut off by max_tokens"),
      el("label", {}, "Search ", search),
      sel("f-sort", "Sort", state.sort || "file", [["file", "file order"], ["id", "question ID"],
        ["hardest", "hardest first"], ["easiest", "easiest first"], ["disagreement", "most disagreement"]]),
      FILTERS.some((k) => state[k] && !["runs", "sort", "page"].includes(k))
        ? link("clear filters", "questions", { runs: state.runs }, { id: "clear" }) : null);
  }

  async function questionsPage(params) {
    const s = filterState(params);
    const again = () => { if (route().page === "questions") render(); };
    const data = await api("/api/questions", Object.fromEntries(Object.entries(s).filter(([, v]) => v)));
    if (data.waiting) { setMain(waitingView(data.waiting, again)); return; }
    const runsParam = s.runs || data.runs.join(",");
    const cellText = Object.fromEntries(data.outcomes.map((o) => [o.name, o.cell]));
    const toneOf = Object.fromEntries(data.outcomes.map((o) => [o.name, o.tone]));
    const many = data.runs.length > 1;
    const head = [el("th", {}, "Question"), el("th", {}, "Gold"),
      ...data.columns.map((c) => el("th", { class: `col ${c.focus ? "" : "dim"}`, title: `${c.model} in ${c.run}` },
        el("div", {}, c.model), many ? el("div", { class: "muted small" }, c.run) : null,
        el("div", { class: "small" }, pct(c.accuracy))))];
    const rows = data.rows.map((r) => el("tr", { "data-id": r.id },
      el("td", { class: "qcell" },
        link(r.id, "question", { runs: runsParam, id: r.id }, { class: "qid" }), " ",
        el("span", { class: "qtext" }, r.question),
        r.suspect ? badge("label suspect", "suspect", "the label audit flags this gold label") : null,
        r.missed ? badge("retrieval missed", "missed", "the gold article was not shown to the models") : null,
        r.category ? badge(r.category, "category", "the question's category in the gold file") : null),
      el("td", { class: "gold" }, r.gold),
      ...r.cells.map((c, i) => c
        ? el("td", { class: `cell tone-${toneOf[c.outcome] || "none"} ${c.hit ? "hit" : "miss"} ${data.columns[i].focus ? "" : "dim"}`,
          title: `${data.columns[i].model}: ${c.outcome}${c.n > 1 ? ` (${c.hits} of ${c.n} repeats correct)` : ""}` },
        outcomeShort(c, cellText))
        : el("td", { class: "cell absent" }, "–"))));
    const pager = el("div", { class: "pager" },
      data.page > 1 ? link("← previous", "questions", { ...s, page: data.page - 1 }, { id: "prev" }) : el("span", {}),
      el("span", { id: "pageinfo" }, ` page ${data.page} of ${data.pages} `),
      data.page < data.pages ? link("next →", "questions", { ...s, page: data.page + 1 }, { id: "next" }) : el("span", {}));
    setMain(filterBar({ ...s, runs: runsParam }, data),
      ...(data.notices || []).map((n) => el("p", { class: "card warn" }, n)),
      el("section", { class: "card" },
        el("h2", {}, el("span", { id: "total" }, String(data.total)), ` of ${data.all} questions`),
        table(head, rows, "grid"), pager));
    const grid = document.querySelector("table.grid");
    if (grid) grid.id = "grid";
  }

  // -- Question -------------------------------------------------------------------------------------------------

  // an article's Markdown as the server parsed it (harness/viewer/markdown_tree.py): [tag, ...children] lists and
  // strings, each element made here from the allowed tags and every string a text node; a link keeps its address
  // only when it is http(s) or mailto
  const MD_TAGS = new Set(["p", "h4", "h5", "h6", "ul", "ol", "li", "blockquote", "pre", "hr", "br", "strong", "em",
    "s", "code", "a", "table", "thead", "tbody", "tr", "th", "td"]);
  function mdNodes(nodes) {
    return nodes.map((n) => {
      if (typeof n === "string") return n;
      if (!Array.isArray(n) || !MD_TAGS.has(n[0])) return el("span", {}, ...mdNodes(Array.isArray(n) ? n.slice(1) : []));
      if (n[0] !== "a") return el(n[0], {}, ...mdNodes(n.slice(1)));
      const href = String(n[1]);
      return /^(https?:|mailto:)/i.test(href) ? el("a", { href, rel: "noopener noreferrer", target: "_blank" }, ...mdNodes(n.slice(2)))
        : el("span", {}, ...mdNodes(n.slice(2)));
    });
  }

  function articleBox(a, gold) {
    if (!a) return el("p", { class: "muted" }, "not in the KB");
    const body = a.blocks && a.blocks.length ? el("div", { class: "atext md" }, ...mdNodes(a.blocks))
      : el("div", { class: "atext" }, a.text || (a.in_kb ? "" : "This ID is not in the KB the run was scored against."));
    return el("div", { class: `article ${gold ? "gold" : ""}`, id: `art-${a.id}`, "data-article": a.id },
      el("h3", {}, `[${a.id}] `, a.title || (a.in_kb ? "" : "(not an article of the KB)")), body,
      a.cut ? el("p", { class: "muted small" }, "(cut at 20,000 characters)") : null);
  }

  function answerView(ans, data, many) {
    const text = el("div", { class: "answer" });
    if (!ans.pieces.length) text.append(el("span", { class: "muted" }, ans.note || "(empty answer)"));
    const cits = Array.isArray(ans.citations) ? ans.citations : null;
    for (const p of ans.pieces) {
      if (p.refs && cits) {
        // a marker of a references answer: which of the answer's citations it names, and the first article of them
        const named = p.refs.map((k) => cits[k]).filter(Boolean);
        const first = named.flatMap((c) => c.articles)[0];
        const a = el("a", { class: `cite ref ${named.length ? "" : "unlisted"} ${named.some((c) => c.unmapped) ? "unmapped" : ""}`,
          href: "#", "data-refs": p.refs.join(" "),
          title: named.length ? named.map((c) => `${c.reference} → ${c.unmapped ? "unmapped" : c.articles.join(", ")}`).join("; ")
            : "no source in the answer's list for this marker" }, p.text);
        a.addEventListener("click", (e) => { e.preventDefault(); if (first) showArticle(first, data); });
        text.append(a);
      } else if (p.cites) {
        const a = el("a", { class: "cite", href: "#", "data-cites": p.cites.join(" "), title: p.cites.map((c) =>
          `${c}: ${(data.articles[c] || {}).title || "not in the KB"}`).join("; ") }, p.text);
        a.addEventListener("click", (e) => { e.preventDefault(); showArticle(p.cites[0], data); });
        text.append(a);
      } else {
        text.append(document.createTextNode(p.text));
      }
    }
    const reading = (name, r) => el("div", { class: "reading" }, el("span", { class: "muted" }, `${name}: `),
      outcomeBadge(r.outcome, r.hit, r.tone), " ", r.why, r.rule ? el("span", { class: "muted small" }, ` (read by: ${r.rule})`) : null);
    const spot = ans.spotcheck.length ? el("details", { class: "spot", open: "" },
      el("summary", {}, `Spot-check: ${ans.spotcheck.length} segment(s)`),
      table(["#", "Segment", "Cites", "Verdict", "Why"], ans.spotcheck.map((s) => el("tr", {},
        el("td", {}, String(s.segment)), el("td", {}, s.text), el("td", {}, s.citations.join(", ")),
        el("td", { class: s.supported === true ? "ok" : s.supported === false ? "bad" : "muted" },
          s.supported === true ? "supported" : s.supported === false ? "unsupported" : "not judged"),
        el("td", { class: "small" }, s.explanation))))) : null;
    const citations = cits ? citationsView(cits, ans.citation_figures || {}, data) : null;
    const meta = [many ? `repeat ${ans.repeat}` : "", ans.truncated ? "cut off by max_tokens" : "",
      ans.latency_ms != null ? `${Math.round(ans.latency_ms)} ms` : ""].filter(Boolean).join(" · ");
    // a system that retrieved for itself (python:, http:, imported logs): its own list, each linked to the article
    const own = Array.isArray(ans.system_retrieved) ? el("div", { class: "system-retrieved small" },
      el("span", { class: "muted" }, `Retrieved by the system (${ans.system_retrieved.length}): `),
      ...(ans.system_retrieved.length ? ans.system_retrieved.flatMap((id, i) => [i ? ", " : "",
        el("a", { href: "#", class: "art-link", "data-article": id, title: (data.articles[id] || {}).title || "not in the KB",
          onclick: (e) => { e.preventDefault(); showArticle(id, data); } },
          `${i + 1}. [${id}] ${(data.articles[id] || {}).title || ""}`.trim())])
        : [el("span", { class: "muted" }, "none")])) : null;
    const loop = ans.tool_loop ? loopView(ans.tool_loop, data) : null;
    return el("div", { class: "answer-card", "data-repeat": String(ans.repeat) },
      meta ? el("div", { class: "muted small" }, meta) : null,
      text, reading("lenient", ans.lenient), reading("strict", ans.strict), citations, own, loop, spot);
  }

  // a model that searched for itself: each tool call in turn order, its arguments, the articles it returned (the
  // ones the answer cites marked), and a citation of an article no call returned
  function loopView(loop, data) {
    const link = (id) => el("a", { href: "#", class: "art-link" + (loop.cited.includes(id) ? " cited" : ""),
      "data-article": id, title: (data.articles[id] || {}).title || "not in the KB",
      onclick: (e) => { e.preventDefault(); showArticle(id, data); } },
      `[${id}]` + (loop.cited.includes(id) ? " (cited)" : ""));
    const rows = loop.calls.map((c, k) => el("tr", { class: c.problem ? "loop-problem" : "", "data-call": String(k) },
      el("td", { class: "num" }, String(c.turn)), el("td", {}, el("code", {}, c.name)),
      el("td", { class: "small" }, el("code", {}, c.arguments)),
      el("td", {}, ...(c.returned.length ? c.returned.flatMap((id, i) => [i ? ", " : "", link(id)])
        : [el("span", { class: "muted" }, c.problem ? c.note : "nothing")]))));
    const outcome = loop.outcome && loop.outcome !== "completed" ? ` · ${loop.outcome}` : "";
    return el("details", { class: "tool-loop", open: "" },
      el("summary", {}, `Search loop: ${loop.tool_calls} tool call(s) over ${loop.turns} turn(s)${outcome}`),
      loop.calls.length ? table(["Turn", "Tool", "Arguments", "Returned"], rows, "tool-calls") : null,
      loop.unseen.length ? el("p", { class: "bad small unseen" },
        `Cited without any search returning it: ${loop.unseen.map((id) => `[${id}]`).join(", ")}`) : null);
  }

  // every citation of an answer read as references: the reference as the system wrote it, the article(s) it maps
  // to, how, the resolver's note, the quote and whether it was found in the article; unmapped ones marked
  function citationsView(cits, fig, data) {
    const figure = (name, key) => (fig[key] === null || fig[key] === undefined ? null : `${name} ${pct(fig[key], 0)}`);
    const figures = [figure("precision", "cit_precision"), figure("recall", "cit_recall"), figure("F1", "cit_f1"),
      figure("cit. correct", "cit_correct"), figure("coverage", "coverage")].filter(Boolean).join(" · ");
    const unmapped = cits.filter((c) => c.unmapped).length;
    const rows = cits.map((c, k) => el("tr", { class: c.unmapped ? "unmapped" : "", "data-citation": String(k) },
      el("td", { class: "num" }, String(k + 1)),
      el("td", { class: "reference" }, el("code", {}, c.reference)),
      el("td", {}, ...(c.unmapped ? [badge("unmapped", "refuse", "resolved to no KB article: counted as a miss")]
        : c.articles.flatMap((id, i) => [i ? ", " : "", el("a", { href: "#", class: "art-link", "data-article": id,
          title: (data.articles[id] || {}).title || "not in the KB",
          onclick: (e) => { e.preventDefault(); showArticle(id, data); } },
        `[${id}] ${(data.articles[id] || {}).title || ""}`.trim())]))),
      el("td", {}, c.how || "–"),
      el("td", { class: "small" }, c.note),
      el("td", { class: "small" }, c.quote === null ? el("span", { class: "muted" }, "no quote")
        : el("span", {}, el("q", {}, c.quote), " ", c.quote_found === true ? el("span", { class: "ok" }, "found")
          : c.quote_found === false ? el("span", { class: "bad" }, "not found") : el("span", { class: "muted" }, "not checked")))));
    return el("details", { class: "citations", open: "" },
      el("summary", {}, `Citations: ${cits.length}` + (unmapped ? `, ${unmapped} unmapped` : "") + (figures ? ` · ${figures}` : "")),
      (fig.marker_problems || []).length ? el("p", { class: "warn small" }, `marker problems: ${fig.marker_problems.join(", ")}`) : null,
      cits.length ? table(["#", "Reference (as written)", "Article(s)", "How", "Note", "Quote"], rows, "citations")
        : el("p", { class: "muted small" }, "no citation"));
  }

  function showArticle(id, data) {
    const box = $("article-panel");
    box.replaceChildren(el("h2", {}, "Article"), articleBox(data.articles[id], data.expected.includes(id)));
    box.hidden = false;
    box.scrollIntoView({ block: "nearest" });
  }

  async function questionPage(params) {
    const again = () => { if (route().page === "question") render(); };
    const runs = params.get("runs") || "";
    const data = await api("/api/question", { runs, id: params.get("id") || "" });
    if (data.waiting) { setMain(waitingView(data.waiting, again)); return; }
    const gold = data.must_refuse
      ? el("p", {}, badge("must_refuse", "refuse"), " The KB cannot answer this question: a model should refuse.")
      : el("div", {}, ...data.expected.map((id) => articleBox(data.articles[id], true)));
    const first = data.runs[0];
    const retrieved = first.retrieved.length ? table(["Rank", "Article", "Score", ""], first.retrieved.map((r, i) =>
      el("tr", { class: r.gold ? "gold" : "" }, el("td", { class: "num" }, String(i + 1)),
        el("td", {}, el("a", { href: "#", class: "art-link", "data-article": r.id, onclick: (e) => {
          e.preventDefault(); showArticle(r.id, data); } }, `[${r.id}] ${(data.articles[r.id] || {}).title || ""}`)),
        el("td", { class: "num" }, r.score == null ? "–" : r.score.toFixed(3)),
        el("td", {}, r.gold ? badge("gold", "gold") : "")))) : el("p", { class: "muted" }, "No retrieval recorded.");
    const suspects = data.runs.flatMap((r) => r.suspects);
    // one row per model, one column per run: where two runs differ, the answers stand side by side
    const names = [...new Set(data.runs.flatMap((r) => r.models.map((m) => m.model)))];
    const modelCell = (r, name) => {
      const m = r.models.find((x) => x.model === name);
      if (!m) return el("div", { class: "model muted" }, `not in ${r.run}`);
      return el("div", { class: "model", "data-model": m.model, "data-run": r.run },
        el("h3", {}, data.runs.length > 1 ? el("span", { class: "muted" }, `${r.run}: `) : null, m.model, " ",
          outcomeBadge(m.outcome, m.hit, m.tone),
          m.n > 1 ? el("span", { class: "muted small" }, ` ${m.hits} of ${m.n} repeats correct`) : null),
        ...m.answers.map((a) => answerView(a, data, m.answers.length > 1)));
    };
    const blocks = [section(data.runs.length > 1 ? `Answers: ${data.runs.map((r) => r.run).join(" | ")}` : "Answers",
      ...names.map((name) => el("div", { class: `model-row cols-${data.runs.length}` },
        ...data.runs.map((r) => modelCell(r, name)))),
      ...data.runs.filter((r) => r.retrieval_differs).map((r) => el("p", { class: "muted small" },
        `${r.run}: the models were shown different articles; each answer's own list is in responses.jsonl.`)))];
    const annotate = data.annotate ? el("div", {},
      el("p", {}, "Gold label wrong? Open this question in grace annotate, with the models' citations as suggestions:"),
      el("pre", { class: "cmd", id: "annotate-cmd" }, data.annotate.argv.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, "'\\''")}'`)).join(" ")),
      el("p", { class: "small" }, "then ", el("a", { href: data.annotate.url, rel: "noreferrer", target: "_blank" }, data.annotate.url)))
      : el("p", { class: "muted" }, "The gold file is not known, so grace annotate cannot be offered.");
    setMain(
      el("div", { class: "qhead card" },
        el("div", { class: "muted small" }, link("← questions", "questions", { runs }), ` · ${data.id}`),
        el("h1", { id: "qtext" }, data.question || `(question ${data.id}: text not found in the gold file)`)),
      el("div", { class: "qlayout" },
        el("div", {},
          section("Gold", gold),
          suspects.length ? section("Label audit", ...suspects.map((s) => el("p", { class: "warn" },
            el("strong", {}, s.kind.replace(/_/g, " ") + ": "), s.reason))) : null,
          ...blocks,
          section("Fix the gold label", annotate)),
        el("aside", {},
          section("Retrieved (rank order)", retrieved),
          el("section", { class: "card", id: "article-panel", hidden: "" }))));
  }

  // -- Compare --------------------------------------------------------------------------------------------------

  async function comparePage(params) {
    const runs = (await api("/api/runs")).runs;
    const a = params.get("a") || "", b = params.get("b") || "", ma = params.get("ma") || "", mb = params.get("mb") || "";
    const choose = (id, value, options, label) => {
      const node = el("select", { id, "aria-label": label }, el("option", { value: "" }, "–"),
        ...options.map((o) => el("option", { value: o, ...(o === value ? { selected: "" } : {}) }, o)));
      node.addEventListener("change", () => go("compare", { a: $("c-a").value, b: $("c-b").value,
        ma: $("c-ma") ? $("c-ma").value : "", mb: $("c-mb") ? $("c-mb").value : "", [id.slice(2)]: node.value }));
      return el("label", {}, `${label} `, node);
    };
    const ids = runs.map((r) => r.id);
    const modelsOf = (rid) => ((runs.find((r) => r.id === rid) || {}).models || []).map((m) => m.model);
    const form = el("div", { class: "actions" }, choose("c-a", a, ids, "Run A"), " ", choose("c-ma", ma, modelsOf(a), "model"),
      " → ", choose("c-b", b, ids, "Run B"), " ", choose("c-mb", mb, modelsOf(b), "model"),
      el("span", { class: "muted small" }, " (no model: every model in both runs; the same run twice: two of its models)"));
    if (!a || !b) { setMain(section("Compare", form)); return; }
    const again = () => { if (route().page === "compare") render(); };
    const data = await api("/api/compare", { a, b, ma, mb });
    if (data.waiting) { setMain(section("Compare", form), waitingView(data.waiting, again)); return; }
    const qlink = (q) => link(q, "question", { runs: a === b ? a : `${a},${b}`, id: q }, { class: "qid" });
    const summary = table(["Model", "A", "B", "Δ [95% CI]", "McNemar p", "Improved", "Regressed"], data.models.map((m) =>
      el("tr", {}, el("td", {}, m.model), el("td", { class: "num" }, pct(m.accuracy_a)), el("td", { class: "num" }, pct(m.accuracy_b)),
        el("td", { class: `num ${m.significant ? (m.delta > 0 ? "ok" : "bad") : ""}` },
          `${signedPp(m.delta)}${m.delta_ci ? ` [${signedPp(m.delta_ci[0])}, ${signedPp(m.delta_ci[1])}]` : ""}`),
        el("td", { class: "num" }, m.mcnemar_p < 1e-4 ? "<0.0001" : m.mcnemar_p.toFixed(4)),
        el("td", { class: "num" }, String(m.n_improved)), el("td", { class: "num" }, String(m.n_regressed)))));
    const details = data.models.map((m) => section(`${m.model}: ${m.n_improved} improved, ${m.n_regressed} regressed`,
      el("p", { class: "muted small" }, `On the ${m.n_questions} questions both sides answered; a question is correct when more than half of its repeats are.`),
      el("h3", {}, `Improved (${m.n_improved})`),
      el("div", { class: "idlist improved" }, ...m.improved.map(qlink)),
      m.n_improved > m.improved.length ? el("p", { class: "muted" }, `…and ${m.n_improved - m.improved.length} more (grace compare --json lists them all)`) : null,
      el("h3", {}, `Regressed (${m.n_regressed})`),
      el("div", { class: "idlist regressed" }, ...m.regressed.map(qlink)),
      m.n_regressed > m.regressed.length ? el("p", { class: "muted" }, `…and ${m.n_regressed - m.regressed.length} more`) : null,
      el("details", {}, el("summary", {}, "Per article"),
        table(["Article", "n", "A", "B", "Δ", "Improved", "Regressed"], m.articles.map((x) => el("tr", {},
          el("td", {}, `${x.article}${x.title ? ` ${x.title}` : ""}`), el("td", { class: "num" }, String(x.n)),
          el("td", { class: "num" }, pct(x.accuracy_a)), el("td", { class: "num" }, pct(x.accuracy_b)),
          el("td", { class: "num" }, signedPp(x.delta)), el("td", { class: "num" }, String(x.improved)),
          el("td", { class: "num" }, String(x.regressed))))))));
    // models read as references on both sides: their change in citation F1 (grace compare's second table)
    const cited = data.models.filter((m) => m.citations);
    const citations = cited.length ? table(["Model", "Citation F1 A", "B", "Δ F1 [95% CI]", "Permutation p", "Precision", "Recall"],
      cited.map((m) => { const c = m.citations; return el("tr", { "data-model": m.model }, el("td", {}, m.model),
        el("td", { class: "num" }, pct(c.f1_a)), el("td", { class: "num" }, pct(c.f1_b)),
        el("td", { class: `num ${c.significant ? (c.delta > 0 ? "ok" : "bad") : ""}` },
          `${signedPp(c.delta)}${c.delta_ci ? ` [${signedPp(c.delta_ci[0])}, ${signedPp(c.delta_ci[1])}]` : ""}`),
        el("td", { class: "num" }, c.p_value < 1e-4 ? "<0.0001" : c.p_value.toFixed(4)),
        el("td", { class: "num" }, `${pct(c.precision_a)} → ${pct(c.precision_b)}`),
        el("td", { class: "num" }, `${pct(c.recall_a)} → ${pct(c.recall_b)}`)); }), "citation-compare") : null;
    // every setting the two sides were asked or scored with differently (grace compare's "what differs")
    const differs = (data.differences || []).length
      ? el("div", { class: "card", id: "differences" }, el("h3", {}, "What differs (A → B)"),
        el("ul", {}, ...data.differences.map((d) => el("li", { "data-kind": d.kind }, d.text, " ",
          el("span", { class: "muted small" }, `(${d.kind})`)))),
        el("p", { class: "muted small" }, "answers: what was asked or how (a change in accuracy may come from it); scoring: how the same answers are scored; calls: how the calls were made."))
      : el("p", { class: "muted small", id: "differences" }, "Both sides were asked and scored with the same recorded settings.");
    setMain(section("Compare", form, differs, summary,
      el("p", { class: "muted small" }, `Δ: B − A, paired bootstrap 95% CI over questions (${data.bootstrap} resamples, seed ${data.seed}); McNemar: exact test on the improved and regressed counts.`),
      citations, citations ? el("p", { class: "muted small" }, "Citation F1: per question, the mean over its repeats of each answer's citation F1, over the questions both sides have it for; paired bootstrap 95% CI, paired permutation test.") : null),
    ...(data.notices || []).map((n) => el("p", { class: "card warn" }, n)),
    ...details);
  }

  // -- Trends: each model's accuracy across the runs of one gold set (harness/viewer/trend.py) -------------------

  const TREND_PARAMS = ["gold", "metric", "category", "model"];

  async function trendPage(params) {
    const p = {};
    for (const k of TREND_PARAMS) if (params.get(k)) p[k] = params.get(k);
    const again = () => { if (route().page === "trend") render(); };
    const data = await api("/api/trend", p);
    if (data.waiting) { setMain(waitingView(data.waiting, again)); return; }
    const T = data.trend;
    // from the URL as it is now; a new gold set starts with no category or model (its own may differ)
    const apply = (key, value) => {
      const now = {};
      for (const k of TREND_PARAMS) now[k] = route().params.get(k) || "";
      const next = { ...now, [key]: value, ...(key === "gold" ? { category: "", model: "" } : {}) };
      if (next.metric === "accuracy") next.metric = "";
      go("trend", next);
    };
    const sel = (id, label, value, options) => {
      const node = el("select", { id, "aria-label": label },
        ...options.map(([v, t]) => el("option", { value: v, ...(v === value ? { selected: "" } : {}) }, t)));
      node.addEventListener("change", () => apply(id.slice(2), node.value));
      return el("label", {}, `${label} `, node);
    };
    const filters = el("div", { class: "filters card", id: "trend-filters" },
      T.groups.length > 1 ? sel("t-gold", "Gold set", T.gold_hash, T.groups.map((g) =>
        [g.hash, `${g.path || "in memory"} (${g.hash.slice(0, 12)}, ${g.runs.length} run${g.runs.length === 1 ? "" : "s"})`])) : null,
      sel("t-metric", "Metric", T.metric, data.metrics.map((m) => [m.name, m.label])),
      T.categories.length ? sel("t-category", "Category", T.category || "",
        [["", "every question"], ...T.categories.map((c) => [c, c])]) : null,
      sel("t-model", "Model", data.state.model, [["", "every model"], ...T.models.map((m) => [m, m])]));
    const plotParams = { gold: T.gold_hash, metric: T.metric, category: T.category || "", model: data.state.model };
    const metric = data.metrics.find((m) => m.name === T.metric).label;
    const chart = el("figure", { class: "trend" }, el("img", { src: trendPlotSrc(plotParams), id: "trend-plot", "data-plot": "trend",
      alt: `${metric} of each model across ${T.runs.length} runs` }));
    const changes = [];
    const rows = T.series.map((s) => {
      const at = Object.fromEntries(s.points.map((pt) => [pt.run, pt]));
      return el("tr", { "data-model": s.model }, el("td", {}, s.model), ...T.runs.map((r) => {
        const pt = at[r.id];
        if (!pt) return el("td", { class: "num muted", "data-run": r.id }, "–");
        const c = pt.change;
        const mark = c && c.significant ? c.direction : "";
        if (mark) changes.push([s.model, pt]);
        const tip = c ? `since ${c.since}: ${signedPp(c.delta)}, ${c.regressed} regressed, ${c.improved} improved, McNemar p = ${c.mcnemar_p.toPrecision(3)}`
          : (pt.note || "");
        return el("td", { class: `num ${mark ? `change ${mark === "regressed" ? "bad" : "ok"}` : ""}`, "data-run": r.id,
          ...(mark ? { "data-change": mark } : {}), ...(tip ? { title: tip } : {}) },
          pct(pt.value), pt.ci95 ? el("div", { class: "muted small" }, `[${pct(pt.ci95[0], 0)}–${pct(pt.ci95[1], 0)}]`) : null,
          pt.sample_of ? el("div", { class: "muted small sample" }, `n=${pt.n_questions} of ${pt.sample_of}`) : null,
          mark ? el("div", { class: "small" }, `${mark === "regressed" ? "▼" : "▲"} ${signedPp(c.delta)}`) : null);
      }));
    });
    const head = [el("th", {}, "Model"), ...T.runs.map((r) => el("th", { class: "num", title: r.path },
      r.id, el("div", { class: "muted small" }, data.when[r.id])))];
    const marked = changes.map(([model, pt]) => el("li", { "data-model": model, "data-run": pt.run },
      el("strong", {}, model), `: ${pt.change.direction} from ${pt.change.since} to ${pt.run} (${data.when[pt.run]}), ` +
      `${signedPp(pt.change.delta)} on ${pt.change.n_questions} questions, ${pt.change.regressed} regressed, ` +
      `${pt.change.improved} improved, McNemar p = ${pt.change.mcnemar_p.toPrecision(3)} `,
      link("compare", "compare", { a: pt.change.since, b: pt.run, ma: model, mb: model })));
    setMain(
      section(`Trends: ${metric}${T.category ? ` on ${T.category}` : ""} across ${T.runs.length} runs`,
        el("p", { class: "muted" }, `Gold set ${T.gold_path || "in memory"} (${T.gold_hash.slice(0, 12)}). Runs in the ` +
          "order they started (run.json), each model's figure with its 95% CI."),
        filters, el("div", { class: "plots" }, chart),
        ...T.left_out.map((l) => el("p", { class: "warn small left-out" }, `Left out: ${l.run} (${l.path}): ${l.reason}`)),
        ...T.notes.map((n) => el("p", { class: "warn small" }, n))),
      section(`Significant changes (${changes.length})`,
        changes.length ? el("ul", { id: "trend-changes" }, ...marked)
          : el("p", { class: "muted", id: "trend-changes" }, "None: no model changed significantly between two of its runs."),
        el("p", { class: "muted small" }, data.rule)),
      section("Figures", table(head, rows, "trend")));
  }

  // -- the page -------------------------------------------------------------------------------------------------

  async function render() {
    const token = ++renderToken;
    clearTimeout(pollTimer);
    showError("");
    const { page, params } = route();
    for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("on", a.dataset.page === page);
    const pages = { runs: runsPage, leaderboard: leaderboardPage, questions: questionsPage, question: questionPage,
      compare: comparePage, trend: trendPage };
    try {
      status("loading…");
      await (pages[page] || runsPage)(params);
      if (token === renderToken) $("main").dataset.rendered = location.hash;  // what is on screen (tests wait on it)
      if (token === renderToken) status(EXPORT ? `static export · ${EXPORT.created || ""}` : "");
    } catch (e) {
      if (token !== renderToken) return;
      status("");
      showError(e.message);
      if (!$("main").children.length) setMain(el("p", { class: "muted" }, "Nothing to show."));
    }
    document.body.dataset.ready = "1";
  }

  // -- the static export: the API answered from exported data (same rules as harness/viewer/grid.py) ----------------

  const Local = {
    loaded: {},
    handle(path, p) {
      const X = EXPORT;
      if (path === "/api/runs") return Promise.resolve({ runs: X.runs });
      if (path === "/api/leaderboard") return Promise.resolve(X.leaderboards[p.run || X.runs[0].id]);
      if (path === "/api/questions") return Promise.resolve(this.questions(p));
      if (path === "/api/question") return this.question(p.id);
      if (path === "/api/compare") {
        const key = [p.a, p.b, p.ma || "", p.mb || ""].join("|");
        if (X.compare[key]) return Promise.resolve(X.compare[key]);
        return Promise.reject(new Error("this comparison is not in the export: an export holds its run's model " +
          "pairs; run grace view on the run folders to compare anything else"));
      }
      if (path === "/api/trend") return this.trend(p);
      return Promise.reject(new Error(`no such page: ${path}`));
    },
    questions(p) {
      const G = EXPORT.grid;
      const runs = (p.runs || G.run).split(",");
      if (runs.length !== 1 || runs[0] !== G.run) throw new Error(`the export holds run ${G.run} only`);
      const nCols = G.columns.length;
      const cols = p.model ? G.columns.map((c, i) => (c.model === p.model ? i : -1)).filter((i) => i >= 0)
        : G.columns.map((c, i) => i);
      if (p.model && !cols.length) throw new Error(`no model '${p.model}' in the runs picked`);
      if (p.flip) throw new Error("'flipped between runs' needs two runs: pick another run on the Runs page");
      const categories = G.categories || [];
      if (p.category && !categories.includes(p.category)) {
        throw new Error(`no category '${p.category}' in the runs picked; they have ${categories.join(", ") ||
          "none (the gold file has no category column)"}`);
      }
      const words = (p.q || "").toLowerCase().normalize("NFD").replace(/\p{M}/gu, "").split(/[^\p{L}\p{N}]+/u).filter(Boolean).slice(0, 12);
      const at = (name, r, c) => G[name][r * nCols + c];
      const outcomeAt = (r, c) => (G.outcomes[at("outcome", r, c)] || {}).name;
      const keep = [];
      for (let r = 0; r < G.qids.length; r++) {
        if (p.outcome) {
          let ok = false;
          for (const c of cols) {
            const asked = at("asked", r, c);
            if (p.outcome === "hit" || p.outcome === "miss") {
              const hit = at("hits", r, c) * 2 > asked;
              if (asked > 0 && (p.outcome === "hit") === hit) ok = true;
            } else if (asked > 0 && outcomeAt(r, c) === p.outcome) ok = true;
          }
          if (!ok) continue;
        }
        if (p.article) {
          const code = G.labels.indexOf(p.article);
          let ok = G.gold[r].split(";").includes(p.article);
          for (let c = 0; c < nCols && !ok; c++) if (code >= 0 && at("pred", r, c) === code) ok = true;
          if (!ok) continue;
        }
        if (p.disagree) {
          const seen = new Set();
          for (let c = 0; c < nCols; c++) if (at("asked", r, c) > 0) seen.add(at("pred", r, c));
          let n = 0;
          for (let c = 0; c < nCols; c++) if (at("asked", r, c) > 0) n++;
          if (!(n >= 2 && seen.size > 1)) continue;
        }
        if (p.category && G.category[r] !== p.category) continue;
        if (p.suspect && !G.suspect[r]) continue;
        if (p.missed && !G.missed[r]) continue;
        if (p.truncated && !cols.some((c) => at("truncated", r, c))) continue;
        if (words.length && !words.every((w) => G.search[r].includes(" " + w))) continue;
        keep.push(r);
      }
      const share = (r) => {
        let s = 0, n = 0;
        for (let c = 0; c < nCols; c++) { const a = at("asked", r, c); if (a > 0) { s += at("hits", r, c) / a; n++; } }
        return n ? s / n : 0;
      };
      const distinct = (r) => { const s = new Set(); for (let c = 0; c < nCols; c++) if (at("asked", r, c) > 0) s.add(at("pred", r, c)); return s.size; };
      const sorters = {
        id: (x, y) => (G.qids[x] < G.qids[y] ? -1 : G.qids[x] > G.qids[y] ? 1 : x - y),
        hardest: (x, y) => share(x) - share(y) || x - y,
        easiest: (x, y) => share(y) - share(x) || x - y,
        disagreement: (x, y) => distinct(y) - distinct(x) || x - y,
      };
      if (sorters[p.sort]) keep.sort(sorters[p.sort]);
      const pages = Math.max(1, Math.ceil(keep.length / PAGE_SIZE));
      const page = Math.min(Math.max(1, Number(p.page) || 1), pages);
      const columns = G.columns.map((c, i) => {
        let hit = 0, n = 0;
        for (const r of keep) {
          const asked = at("asked", r, i);
          if (asked > 0) { n++; if (at("hits", r, i) * 2 > asked) hit++; }
        }
        return { run: c.run, model: c.model, accuracy: n ? Math.round(10000 * hit / n) / 10000 : null, focus: !p.model || cols.includes(i) };
      });
      const rows = keep.slice((page - 1) * PAGE_SIZE, page * PAGE_SIZE).map((r) => ({
        id: G.qids[r], question: G.question[r], gold: G.gold[r], suspect: !!G.suspect[r], missed: !!G.missed[r],
        ...(categories.length ? { category: G.category[r] } : {}),
        cells: G.columns.map((c, i) => {
          const asked = at("asked", r, i);
          if (!asked) return null;
          const pred = at("pred", r, i);
          const label = pred >= 0 ? G.labels[pred] : "";
          return { outcome: outcomeAt(r, i), hits: at("hits", r, i), n: asked,
            hit: at("hits", r, i) * 2 > asked, cited: label || (pred === G.none ? "none" : ""), truncated: !!at("truncated", r, i) };
        }),
      }));
      return { total: keep.length, all: G.qids.length, page, pages, page_size: PAGE_SIZE, outcomes: G.outcomes,
        categories, columns, rows, runs: [G.run], notices: [] };
    },
    // the trend pages as the server gave them, one per gold set, metric and category; the model filter is
    // applied here as harness/viewer/trend.py's only_model does
    trendKey(p) {
      const T = EXPORT.trend;
      const gold = p.gold ? T.golds.find((h) => h.startsWith(p.gold)) || p.gold : T.default;
      return [gold, p.metric || "accuracy", p.category || ""].join("|");
    },
    trend(p) {
      const T = EXPORT.trend;
      if (!T) return Promise.reject(new Error("this export holds no scored run: no trend to show"));
      const page = T.pages[this.trendKey(p)];
      if (!page) {
        return Promise.reject(new Error(`no trend for gold set '${p.gold || T.default}', metric '${p.metric || "accuracy"}' ` +
          `and category '${p.category || ""}' in this export; its gold sets are ${T.golds.join(", ")}`));
      }
      if (!p.model) return Promise.resolve(page);
      if (!page.trend.models.includes(p.model)) {
        return Promise.reject(new Error(`no model '${p.model}' in these runs; they have ${page.trend.models.join(", ")}`));
      }
      return Promise.resolve({ ...page, trend: { ...page.trend, series: page.trend.series.filter((s) => s.model === p.model) },
        state: { ...page.state, model: p.model } });
    },
    question(id) {
      const chunk = EXPORT.chunks[id];
      if (chunk === undefined) return Promise.reject(new Error(`no question '${id}' in the export`));
      const done = () => (EXPORT.questions && EXPORT.questions[id]) || null;
      if (done()) return Promise.resolve(done());
      return new Promise((resolve, reject) => {
        const s = document.createElement("script");
        s.src = `data/questions-${chunk}.js`;
        s.onload = () => (done() ? resolve(done()) : reject(new Error(`question '${id}' missing from its data file`)));
        s.onerror = () => reject(new Error(`cannot read data/questions-${chunk}.js next to this page`));
        document.head.append(s);
      });
    },
  };

  window.addEventListener("hashchange", render);
  document.addEventListener("DOMContentLoaded", render);
})();
