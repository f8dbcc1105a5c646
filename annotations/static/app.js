// grace annotate: one question at a time, keyboard first.
// KB and question text is untrusted: it only ever reaches the page as text nodes
// (textContent / createTextNode), never through innerHTML.
"use strict";

(() => {
  const { $, getJSON, postJSON, postOnLeave, el, marked, showError, pageURL, offline, unsavedSaves } = window.graceUI;
  const { flash } = window.Shell;

  const S = {
    state: null,        // /api/state
    idx: 0,             // current question index (0-based)
    q: null,            // /api/question/N response
    list: [],           // cards shown with number keys (candidates or search results)
    listKind: "candidates",
    focus: -1,          // focused card in S.list
    viewer: null,       // article shown in the viewer
    saving: Promise.resolve(),
    editTimer: null,
  };
  let autoAdvance = () => true;  // the #auto-advance box, wired at start

  // ---------------------------------------------------------------- state and progress

  function renderProgress() {
    const p = S.state.progress;
    const share = (p.must_refuse_share * 100).toFixed(1);
    const prov = p.provenance || {};
    $("progress").textContent =
      `${p.labelled} / ${p.total} labelled · must_refuse ${p.must_refuse} (${share}%)` +
      (p.skipped ? ` · skipped ${p.skipped}` : "") +
      (p.draft ? ` · drafts ${p.draft}` : "") +
      (S.state.review ? ` · reviewed ${p.reviewed} / ${p.total}` : "") +
      (p.suggested ? ` · suggestions accepted ${prov.accepted_suggestion || 0}, changed ${prov.changed_suggestion || 0}` : "");
    $("bar-labelled").style.width = `${(100 * p.labelled) / Math.max(1, p.total)}%`;
    $("bar-skipped").style.width = `${(100 * p.skipped) / Math.max(1, p.total)}%`;
  }

  // ---------------------------------------------------------------- a team (grace annotate --team)

  function kappaText(a) {
    if (!a) return "";
    return `${a.name} ${a.kappa == null ? "undefined" : a.kappa.toFixed(3)}` + (a.kappa == null ? "" : ` (${a.strength})`);
  }

  function renderTeam() {
    const t = S.state.team;
    $("team").hidden = !t;
    if (!t) return;
    const parts = [`team: ${t.gold} / ${t.questions} gold`];
    if (t.disagree || t.reopened) parts.push(`${t.disagree + (t.reopened || 0)} to decide`);
    parts.push(t.agreement ? kappaText(t.agreement) : "agreement: not yet");
    $("team-line").textContent = parts.join(" · ");
    $("team-line").title = t.agreement ? t.agreement.pairwise.map((p) =>
      `${p.a} vs ${p.b}: Cohen's kappa ${p.kappa == null ? "undefined" : p.kappa.toFixed(3)}`).join("\n") : t.agreement_note;
    $("team-people").replaceChildren(...t.people.map((p) => el("li", { "data-person": p.name },
      el("strong", { text: p.name }), ` ${p.labelled + p.skipped} / ${p.assigned}`)));
    $("queue-link").hidden = !t.disagree && !t.adjudicated && !t.reopened;
    $("queue-link").href = pageURL("/static/adjudicate.html");
  }

  // the team page opened without a name: each person picks theirs (a roster) or types it, and the page reopens as them
  function showPicker() {
    const t = S.state.team;
    $("layout").hidden = true;
    $("pick").hidden = false;
    const open = (name, page) => { if (name.trim()) location.href = pageURL(page || "/", { who: name.trim() }); };
    const reviewers = t.reviewers.filter((r) => !(t.roster || []).includes(r));  // they go to the queue
    $("pick-list").replaceChildren(
      ...(t.roster || []).map((n) => el("li", {}, el("button", { type: "button", "data-person": n, onclick: () => open(n) }, n))),
      ...reviewers.map((n) => el("li", {}, el("button", { type: "button", "data-person": n,
        onclick: () => open(n, "/static/adjudicate.html") }, `${n} (reviewer's queue)`))));
    $("pick-name").addEventListener("keydown", (e) => { if (e.key === "Enter") open($("pick-name").value); });
    $("pick-go").addEventListener("click", () => open($("pick-name").value));
    if ((S.state.keyed || []).length && !$("pick-keyed")) {  // they sign in with the link printed for them
      $("pick").prepend(el("p", { id: "pick-keyed", class: "muted",
        text: `${S.state.keyed.join(", ")}: open your own link (the one the session printed for you); a name alone acts as nobody.` }));
    }
  }

  async function refreshState() {
    S.state = await getJSON("/api/state");
    if (S.state.need_person) return;
    renderTeam();
    $("who").textContent = `${S.state.annotator} · KB ${S.state.kb.articles} articles`;
    $("who").title = `${S.state.kb.path} (${S.state.kb.kb_hash}), saving to ${S.state.out}`;
    renderProgress();
  }

  // ---------------------------------------------------------------- question

  const moves = window.Shell.latest();  // the latest go() wins: an earlier one still waiting must not overwrite it

  async function go(i) {
    const total = S.state.progress.total;
    if (!total) return;
    i = Math.max(0, Math.min(total - 1, i));
    const latest = moves.start();
    await flushEdits();
    showError("");
    let q;
    try {
      q = await getJSON(`/api/question/${i}`);
    } catch (e) { if (latest()) showError(e.message); return; }
    if (!latest()) return;
    S.q = q;
    S.idx = i;
    window.Shell.shown(i);
    closeViewer();
    closeSkip();
    clearSearch(false);
    renderQuestion();
    setList("candidates", S.q.candidates);
  }

  function renderQuestion() {
    const r = S.q.record;
    $("qpos").textContent = `Question ${S.idx + 1} / ${S.q.total} · ${r.question_id}`;
    $("qtext").value = r.question;
    $("answer").value = r.expected_answer;
    $("notes").value = r.notes;
    $("original").hidden = !r.original_question;
    $("original-text").textContent = r.original_question;
    const extras = $("extras");
    extras.replaceChildren();
    for (const [k, v] of Object.entries(r.extra || {})) {
      if (!v) continue;
      extras.append(el("dt", { text: k }), el("dd", { text: v }));
    }
    renderSuggestion();
    renderAudit();
    renderLabel();
    renderElsewhere();
  }

  // ---------------------------------------------------------------- suggestion and audit

  function labelString(cites, mustRefuse) {
    return mustRefuse ? "REFUSE" : [...new Set(cites)].sort().join(";");
  }

  function renderSuggestion() {
    const s = S.q.suggestion;
    $("suggest-box").hidden = !s;
    if (!s) return;
    $("suggest-box").classList.toggle("unusable", !s.usable);
    const flag = $("s-flag");
    flag.textContent = s.usable ? (s.flag || "") : `none: ${s.flag || "no label"}`;
    flag.className = `badge ${s.flag ? "weak" : ""}`;
    flag.hidden = !flag.textContent;
    const items = s.must_refuse ? [el("li", { class: "chip refuse-chip", text: "must_refuse" })]
      : s.citations.map((id) => {
        const a = (s.articles || []).find((x) => x.id === id);
        return el("li", { class: "chip" },
          el("span", { class: "chip-id", text: `#${id}` }), " ",
          el("span", { text: a ? a.title : "(not in the KB)" }), " ",
          a ? el("button", { type: "button", class: "chip-view", title: "full text", onclick: () => openViewer(id) }, "full text") : null);
      });
    $("s-label").replaceChildren(...(s.usable ? items : []));
    const meta = [];
    if (s.support != null) meta.push(`support ${Math.round(s.support * 100)}%`);
    if (s.voters) meta.push(`${s.voters} voter${s.voters > 1 ? "s" : ""}`);
    if (s.votes) meta.push(`votes ${s.votes}`);
    if (s.source) meta.push(s.source);
    $("s-meta").textContent = meta.join(" · ");
    $("s-reason").textContent = s.reason || "";
    $("accept").hidden = !s.usable;
  }

  function renderAudit() {
    const rows = S.q.audit || [];
    $("audit-box").hidden = rows.length === 0;
    $("audit-list").replaceChildren(...rows.map((a) => el("li", {},
      el("strong", { text: a.kind || "suspect" }), " ",
      el("span", { class: "muted", text: `gold ${a.gold || "?"} → ${a.suggested || "?"}` }), " ",
      el("span", { text: a.reason || "" }),
      a.check ? el("span", { class: "muted", text: ` (check ${a.check})` }) : null)));
  }

  function firstTodo() {
    const f = S.state.progress.first_todo;
    if (f != null) go(f); else flash(S.state.review ? "every listed question is reviewed" : "no unlabelled question left");
  }

  function acceptSuggestion() {
    const s = S.q && S.q.suggestion;
    if (!s || !s.usable) { flash("no suggestion to accept here"); return undefined; }
    return save(body("labelled", s.must_refuse ? [] : s.citations.slice(), s.must_refuse), { advance: true });
  }

  function renderElsewhere() {
    const elsewhere = S.q.chosen_elsewhere || [];
    $("elsewhere").hidden = elsewhere.length === 0;
    $("elsewhere-list").replaceChildren(...elsewhere.map((c) => card(c, null)));
  }

  function titleOf(id) {
    const all = [...S.q.candidates, ...(S.q.chosen_elsewhere || []), ...((S.q.suggestion || {}).articles || []), ...S.list];
    const c = all.find((x) => x.id === id);
    return c ? c.title : "";
  }

  function renderLabel() {
    const r = S.q.record;
    const badge = $("status-badge");
    let text = r.status;
    if (r.status === "labelled") text = r.must_refuse ? "must_refuse" : `answered by ${r.expected_citations.length} article${r.expected_citations.length > 1 ? "s" : ""}`;
    if (r.status === "draft") text = "draft: not gold until accepted";
    const unsaved = pending.has(r.question_id);  // the label itself says so, not only a note
    badge.textContent = unsaved ? `NOT SAVED: ${text} (retrying until the server answers)` : text;
    badge.className = `badge ${unsaved ? "unsaved" : r.must_refuse && r.status === "labelled" ? "refuse" : r.status}`;
    $("label-box").classList.toggle("unsaved", unsaved);
    const prov = { accepted_suggestion: "accepted suggestion", changed_suggestion: "changed the suggestion" };
    $("provenance").textContent = r.status === "labelled" ? (prov[r.provenance] || "") : "";
    const s = S.q.suggestion;
    const same = s && s.usable && r.status === "labelled" && labelString(r.expected_citations, r.must_refuse) === s.suggested;
    $("suggest-box").classList.toggle("taken", Boolean(same));
    const chosen = $("chosen");
    chosen.replaceChildren(...r.expected_citations.map((id) =>
      el("li", { class: "chip" },
        el("span", { class: "chip-id", text: `#${id}` }), " ",
        el("span", { text: titleOf(id) }), " ",
        el("button", { type: "button", class: "chip-x", title: "remove", "aria-label": `remove article ${id}`, onclick: () => toggleAlso(id) }, "×"))));
    $("refuse").classList.toggle("on", r.must_refuse);
    $("needall").hidden = r.must_refuse || r.expected_citations.length < 2;
    $("needall").classList.toggle("on", ((r.extra || {}).citations_needed || "").trim().toLowerCase() === "all");
    for (const li of document.querySelectorAll("#cands > li, #elsewhere-list > li")) {
      li.classList.toggle("chosen", r.expected_citations.includes(li.dataset.id));
    }
  }

  // ---------------------------------------------------------------- saving

  function body(status, cites, mustRefuse, extra) {
    const r = S.q.record;
    return Object.assign({
      question_id: r.question_id,
      status,
      expected_citations: cites,
      must_refuse: mustRefuse,
      question: $("qtext").value,
      expected_answer: $("answer").value,
      notes: $("notes").value,
    }, extra || {});
  }

  // saves are chained so they reach the server in the order they were made, and applied to the
  // page at once, so a second quick key press builds on the first rather than on stale state
  function save(payload, { advance = false } = {}) {
    const qid = payload.question_id;
    const idx = S.idx;
    const stayed = moves.watch();  // a move started meanwhile (a click, the address bar) cancels the auto-advance
    const oldText = S.q.record.question;
    const keeps = payload.status === "labelled" || payload.status === "draft";  // a draft keeps its proposal
    S.q.record = Object.assign({}, S.q.record, {
      status: payload.status,
      expected_citations: keeps ? payload.expected_citations.slice() : [],
      must_refuse: keeps && payload.must_refuse,
      question: payload.question.trim(),
      expected_answer: payload.expected_answer.trim(),
      notes: payload.notes.trim(),
    });
    if (payload.citations_needed) {
      S.q.record.extra = Object.assign({}, S.q.record.extra || {}, { citations_needed: payload.citations_needed });
    }
    renderLabel();
    S.saving = S.saving.then(async () => {
      try {
        const res = await postJSON("/api/label", payload);
        S.state.progress = res.progress;
        if (res.team) { S.state.team = res.team; renderTeam(); }
        if (S.state.statuses) S.state.statuses[idx] = res.record.status;
        renderProgress();
        if (S.q && S.q.record.question_id === qid) {
          S.q.record = res.record;
          renderLabel();
          if (res.record.question !== oldText && !advance) {
            const fresh = await getJSON(`/api/question/${idx}`);
            // new wording, new candidates; the text fields stay as typed (the user may be mid-edit)
            if (S.q && S.q.record.question_id === qid) {
              S.q.candidates = fresh.candidates;
              S.q.chosen_elsewhere = fresh.chosen_elsewhere;
              if (S.listKind === "candidates") setList("candidates", S.q.candidates);
              renderElsewhere();
              renderLabel();
            }
          }
        }
        pending.drop(qid);
        showError("");
        flash(`saved ${qid}: ${describe(res.record)}`);
        return true;
      } catch (e) {
        if (offline(e)) {  // no answer (the server is down, the network gone): kept, and retried
          pending.keep(qid, payload, idx);
          if (S.q && S.q.record.question_id === qid) renderLabel();
          showError(`not saved yet (${e.message}): kept on this page and retried until the server answers`);
          return false;
        }
        showError(`not saved: ${e.message}`);
        if (S.q && S.q.record.question_id === qid) {  // show what the server really holds
          try { S.q.record = (await getJSON(`/api/question/${idx}`)).record; renderLabel(); } catch (_) { /* offline */ }
        }
        return false;
      }
    });
    return S.saving.then((ok) => {
      const last = idx + 1 >= S.state.progress.total;
      if (ok && advance && autoAdvance() && S.idx === idx && stayed() && !last) return go(idx + 1);
      return undefined;
    });
  }

  // the saves the server never got, sent again (after the saves made meanwhile) until it answers
  const pending = unsavedSaves({
    path: "/api/label",
    chain: (fn) => (S.saving = S.saving.then(fn)),
    saved: (qid, res, idx) => {
      S.state.progress = res.progress;
      if (res.team) { S.state.team = res.team; renderTeam(); }
      if (S.state.statuses) S.state.statuses[idx] = res.record.status;
      renderProgress();
      if (S.q && S.q.record.question_id === qid) { S.q.record = res.record; renderLabel(); }
      flash(`saved ${qid}: ${describe(res.record)} (the server is back)`);
    },
    refused: async (qid, e, idx) => {  // refused once it answered (a bad label, a person's change): say so
      showError(`not saved: ${qid}: ${e.message}`);
      if (S.q && S.q.record.question_id === qid) {
        try { S.q.record = (await getJSON(`/api/question/${idx}`)).record; renderLabel(); } catch (_) { /* */ }
      }
    },
    settled: () => showError(""),
  });

  // another tab (or the same person elsewhere) saved a newer label of the question shown: show it, not the old one
  async function refreshShown() {
    if (!S.q || editsPending()) return;
    const qid = S.q.record.question_id;
    if (pending.has(qid)) return;
    await S.saving;
    let fresh;
    try { fresh = (await getJSON(`/api/record/${S.idx}`)).record; } catch (_) { return; }
    const r = S.q && S.q.record;
    if (!r || r.question_id !== qid || pending.has(qid) || editsPending()) return;
    const was = `${r.status}|${labelString(r.expected_citations, r.must_refuse)}|${r.labelled_at}`;
    const now = `${fresh.status}|${labelString(fresh.expected_citations, fresh.must_refuse)}|${fresh.labelled_at}`;
    if (was === now) return;
    S.q.record = fresh;
    renderQuestion();
    flash(`${qid} changed elsewhere (another tab): now ${describe(fresh)}`);
  }

  function describe(r) {
    if (r.status !== "labelled") return r.status;
    return r.must_refuse ? "must_refuse" : r.expected_citations.map((c) => `#${c}`).join(", ");
  }

  function choose(id) {
    if (!S.q) return;
    return save(body("labelled", [id], false), { advance: true });
  }

  function toggleAlso(id) {
    const r = S.q.record;
    const cites = r.must_refuse ? [] : r.expected_citations.slice();
    const at = cites.indexOf(id);
    if (at >= 0) cites.splice(at, 1); else cites.push(id);
    return save(body(cites.length ? "labelled" : "unlabelled", cites, false));
  }

  // the chosen articles as alternatives (any one answers) or all required (citations_needed = all)
  function toggleNeedAll() {
    const r = S.q.record;
    const all = ((r.extra || {}).citations_needed || "").trim().toLowerCase() === "all";
    return save(body(r.status, r.expected_citations, r.must_refuse, { citations_needed: all ? "any" : "all" }));
  }

  function refuse() {
    const r = S.q.record;
    if (r.must_refuse && r.status === "labelled") return save(body("unlabelled", [], false));
    return save(body("labelled", [], true), { advance: true });
  }

  function openSkip() {
    $("skip-box").hidden = false;
    $("skip-note").value = "";
    $("skip-note").focus();
  }

  function closeSkip() {
    $("skip-box").hidden = true;
  }

  function confirmSkip() {
    const note = $("skip-note").value.trim();
    const notes = $("notes").value.trim();
    const merged = note ? (notes ? `${notes}; skipped: ${note}` : `skipped: ${note}`) : notes;
    $("notes").value = merged;
    closeSkip();
    return save(body("skipped", [], false, { notes: merged }), { advance: true });
  }

  function clearLabel() {
    return save(body("unlabelled", [], false));
  }

  // text fields: saved when left, or after a pause in typing
  function scheduleEdit() {
    clearTimeout(S.editTimer);
    S.editTimer = setTimeout(saveEdits, 800);
  }

  function editsPending() {
    if (!S.q) return false;
    const r = S.q.record;
    return $("qtext").value.trim() !== r.question || $("answer").value.trim() !== r.expected_answer ||
      $("notes").value.trim() !== r.notes;
  }

  function saveEdits() {
    clearTimeout(S.editTimer);
    if (!editsPending()) return S.saving;
    const r = S.q.record;
    if (!$("qtext").value.trim()) { showError("the question text cannot be empty"); return S.saving; }
    return save(body(r.status, r.expected_citations, r.must_refuse));
  }

  async function flushEdits() {
    await saveEdits();
    await S.saving;
  }

  // ---------------------------------------------------------------- candidate / result cards

  function card(c, n) {
    const chosen = S.q && S.q.record.expected_citations.includes(c.id);
    const sug = S.q && S.q.suggestion;
    const suggested = sug && sug.usable && sug.citations.includes(c.id);
    const title = marked(el("span", { class: "title" }), c.title_segments);
    const snippet = marked(el("p", { class: "snippet" }), c.snippet.segments);
    if (c.snippet.cut_before) snippet.prepend("… ");
    if (c.snippet.cut_after) snippet.append(" …");
    const crumb = [...c.breadcrumb].join(" › ");
    const head = el("div", { class: "card-head" },
      n != null ? el("kbd", { class: "num", text: String(n) }) : null,
      title,
      suggested ? el("span", { class: "sug-tag", title: "the suggested label (y accepts)", text: "suggested" }) : null,
      el("span", { class: "aid", text: `#${c.id}` }),
      c.score != null ? el("span", { class: "score", title: "retrieval score", text: String(c.score) }) : null);
    const li = el("li", { class: `card${chosen ? " chosen" : ""}`, "data-id": c.id },
      head,
      (crumb || c.source) ? el("div", { class: "crumb", text: [crumb, c.source].filter(Boolean).join(" · ") }) : null,
      snippet,
      el("div", { class: "actions" },
        el("button", { type: "button", class: "choose", onclick: () => choose(c.id) }, n != null ? `choose ${n}` : "choose"),
        el("button", { type: "button", class: "also", onclick: () => toggleAlso(c.id) }, n != null ? `also answers ⇧${n}` : "also answers"),
        el("button", { type: "button", class: "view", onclick: () => openViewer(c.id) }, "full text")));
    li.addEventListener("click", (e) => { if (!e.target.closest("button")) setFocus(S.list.findIndex((x) => x.id === c.id)); });
    return li;
  }

  function setList(kind, items) {
    S.listKind = kind;
    S.list = items;
    S.focus = -1;
    $("list-title").textContent = kind === "candidates" ? `Top candidates (${S.state.retriever})` : `Search results (${items.length})`;
    $("cands").replaceChildren(...items.map((c, i) => card(c, i < 10 ? (i + 1) % 10 : null)));
    if (!items.length) {
      const why = kind === "candidates" ? "Retrieval found no article sharing a word with this question." : "No article matches.";
      $("cands").append(el("li", { class: "empty" }, `${why} Search the KB with /, or mark must_refuse with r.`));
    }
  }

  function setFocus(i) {
    const items = document.querySelectorAll("#cands > li");
    if (!items.length) return;
    S.focus = Math.max(0, Math.min(items.length - 1, i));
    items.forEach((li, j) => li.classList.toggle("focused", j === S.focus));
    items[S.focus].scrollIntoView({ block: "nearest" });
  }

  // ---------------------------------------------------------------- search

  let searchTimer = null;
  let searchSeq = 0;

  async function runSearch() {
    const q = $("search").value.trim();
    if (!q) { clearSearch(true); return; }
    const seq = ++searchSeq;
    const t0 = performance.now();
    try {
      const res = await getJSON("/api/search", { q });
      if (seq !== searchSeq) return;
      $("search-info").textContent = `${res.results.length} results in ${Math.round(performance.now() - t0)} ms`;
      setList("search", res.results);
    } catch (e) { showError(e.message); }
  }

  function clearSearch(showCandidates) {
    $("search").value = "";
    $("search-info").textContent = "";
    searchSeq++;
    if (showCandidates && S.q) setList("candidates", S.q.candidates);
  }

  // ---------------------------------------------------------------- viewer

  async function openViewer(id) {
    const q = S.listKind === "search" && $("search").value.trim() ? $("search").value.trim() : S.q.record.question;
    let a;
    try { a = await getJSON(`/api/article/${encodeURIComponent(id)}`, { q }); } catch (e) { showError(e.message); return; }
    S.viewer = a;
    $("v-title").textContent = `#${a.id} ${a.title}`;
    $("v-crumb").textContent = [a.breadcrumb.join(" › "), a.source].filter(Boolean).join(" · ");
    marked($("v-text"), a.segments);
    $("viewer").hidden = false;
    const p = document.querySelector("#v-text .passage");
    if (p) p.scrollIntoView({ block: "center" }); else $("v-text").scrollTop = 0;
  }

  function closeViewer() {
    $("viewer").hidden = true;
    S.viewer = null;
  }

  // ---------------------------------------------------------------- keyboard

  function numberKey(e) {
    const m = /^Digit(\d)$/.exec(e.code) || /^Numpad(\d)$/.exec(e.code);
    if (!m) return null;
    const d = Number(m[1]);
    return d === 0 ? 9 : d - 1;
  }

  function typing(e, t) {
    if (t.id === "skip-note" && e.key === "Enter") { e.preventDefault(); confirmSkip(); return; }
    if (t.id === "skip-note" && e.key === "Escape") { e.preventDefault(); closeSkip(); return; }
    if (t.id === "search" && e.key === "Enter") { e.preventDefault(); clearTimeout(searchTimer); runSearch(); t.blur(); return; }
    if (t.id === "search" && e.key === "Escape") { e.preventDefault(); clearSearch(true); t.blur(); return; }
    if (e.key === "Escape" || (e.key === "Enter" && (e.ctrlKey || e.metaKey))) { e.preventDefault(); t.blur(); saveEdits(); }
  }

  function digit(e) {
    const n = numberKey(e);
    if (n == null) return false;
    e.preventDefault();
    const c = S.list[n];
    if (!c) return true;
    if (e.shiftKey) toggleAlso(c.id); else choose(c.id);
    return true;
  }

  const keys = {
    j: () => go(S.idx + 1),
    k: () => go(S.idx - 1),
    u: () => firstTodo(),
    r: () => refuse(),
    y: () => acceptSuggestion(),
    s: () => openSkip(),
    c: () => clearLabel(),
    e: () => $("qtext").focus(),
    a: () => $("answer").focus(),
    n: () => $("notes").focus(),
    "/": () => $("search").focus(),
    o: () => { if (S.list[S.focus]) openViewer(S.list[S.focus].id); },
    Enter: () => { if (S.list[S.focus]) openViewer(S.list[S.focus].id); },
    ArrowDown: () => setFocus(S.focus + 1),
    ArrowUp: () => setFocus(S.focus - 1),
    Escape: () => {
      if (!$("viewer").hidden) closeViewer();
      else if (S.listKind === "search") clearSearch(true);
    },
  };

  // ---------------------------------------------------------------- wiring

  function wire() {
    window.Shell.keys({ keys, typing, before: digit, ready: () => Boolean(S.state && S.state.progress) });
    window.Shell.nav({ go, at: () => S.idx, hash: true });
    $("first-unlabelled").addEventListener("click", () => firstTodo());
    $("refuse").addEventListener("click", () => refuse());
    $("needall").addEventListener("click", () => toggleNeedAll());
    $("accept").addEventListener("click", () => acceptSuggestion());
    $("skip").addEventListener("click", () => openSkip());
    $("clear").addEventListener("click", () => clearLabel());
    for (const id of ["qtext", "answer", "notes"]) {
      $(id).addEventListener("input", scheduleEdit);
      $(id).addEventListener("change", saveEdits);
    }
    $("search").addEventListener("input", () => { clearTimeout(searchTimer); searchTimer = setTimeout(runSearch, 150); });
    $("v-close").addEventListener("click", closeViewer);
    $("v-choose").addEventListener("click", () => { if (S.viewer) choose(S.viewer.id); });
    $("v-add").addEventListener("click", () => { if (S.viewer) toggleAlso(S.viewer.id); });
    autoAdvance = window.Shell.autoAdvance("grace-auto-advance");
    window.addEventListener("pagehide", () => {
      if (!editsPending() || !$("qtext").value.trim()) return;
      const r = S.q.record;
      postOnLeave("/api/label", body(r.status, r.expected_citations, r.must_refuse));
    });
  }

  window.Shell.start(async () => {
    wire();
    await refreshState();
    if (S.state.need_person) { showPicker(); return; }
    window.addEventListener("focus", refreshShown);  // back to this tab: a label saved in another shows here
    setInterval(refreshShown, 5000);
    if (S.state.team) {  // the others label meanwhile: their progress and the agreement follow without a reload
      setInterval(async () => {
        try { S.state.team = await getJSON("/api/team"); renderTeam(); } catch (_) { /* the next try */ }
      }, 10000);
    }
    const fromHash = window.Shell.hashIndex();
    const first = S.state.progress.first_todo;
    await go(fromHash != null ? fromHash : (first != null ? first : 0));
  });
})();
