// grace review: one answer at a time, its segments marked supported / unsupported, keyboard first.
// Answer and article text is untrusted: it only ever reaches the page as text nodes
// (textContent / createTextNode), never through innerHTML.
"use strict";

(() => {
  const { $, getJSON, postJSON, postOnLeave, el, marked, showError, offline, unsavedSaves } = window.graceUI;
  const flash = (msg) => window.Shell.flash(msg, 2500);

  const S = {
    state: null,      // /api/review/state
    idx: 0,           // current answer (0-based)
    item: null,       // /api/review/item/N
    focus: 0,         // focused segment (position in S.item.segments)
    articleId: null,  // article shown on the right
    articles: new Map(),  // "item/seg/id" -> /api/review/article response
    saving: Promise.resolve(),
    noteTimer: null,
    busy: false,      // moving to another answer: marks are ignored meanwhile
    moving: 0,        // go() calls waiting on the server (marks are ignored meanwhile too)
  };

  let autoAdvance = () => true;  // the #auto-advance box, wired at start

  const verdictName = (v) => (v === true ? "supported" : v === false ? "unsupported" : v === "partial" ? "partial" : "");

  // ---------------------------------------------------------------- progress

  function renderProgress() {
    const p = S.state.progress;
    $("progress").textContent = `${p.reviewed} / ${p.segments} segments reviewed`;
    $("progress").title = `${p.answers_done} of ${p.answers} answers fully reviewed`;
    $("counts").textContent = `${p.supported} supported · ${S.state.claims ? `${p.partial} partial · ` : ""}${p.unsupported} unsupported`;
    $("bar-supported").style.width = `${(100 * p.supported) / Math.max(1, p.segments)}%`;
    $("bar-unsupported").style.width = `${(100 * p.unsupported) / Math.max(1, p.segments)}%`;
    if (S.item) {
      const st = p.statuses[S.idx];
      $("astatus").textContent = st === "done" ? "reviewed" : st === "partial" ? "partly reviewed" : "not reviewed";
      $("astatus").className = `badge ${st}`;
    }
  }

  // a team's review (grace annotations review --team) opened without ?who=: each person picks their name
  function showPicker() {
    const { pageURL } = window.graceUI;
    $("rlayout").replaceChildren(el("section", { id: "pick", "aria-label": "Who is reviewing?" },
      el("h2", { text: "Who is reviewing?" }),
      el("ul", { id: "pick-list" }, ...S.state.people.map((n) => el("li", {},
        el("a", { href: pageURL("/", { who: n }), "data-person": n, text: n })))),
      el("p", { class: "muted", text: "A reviewer who decides disagreements opens the queue: " },
        el("a", { href: pageURL("/static/review_queue.html"), text: "review_queue.html" }))));
  }

  async function refreshState() {
    S.state = await getJSON("/api/review/state");
    if (S.state.need_person) { showPicker(); return; }
    const t = S.state.team;  // a team's review: the others' progress beside one's own
    $("who").textContent = `${S.state.reviewer} · KB ${S.state.kb.articles} articles` +
      (t ? ` · team: ${t.labelled} / ${t.claims} agreed or decided, ${t.disagree} to decide` : "");
    $("who").title = `run ${S.state.run}; KB ${S.state.kb.path} (${S.state.kb.kb_hash}); saving to ${S.state.out}`;
    const w = $("warnings");
    w.replaceChildren(...S.state.warnings.map((t) => el("li", { text: t })));
    w.hidden = S.state.warnings.length === 0;
    renderProgress();
  }

  // ---------------------------------------------------------------- answer

  const moves = window.Shell.latest();  // the latest go() wins: an earlier one still waiting must not overwrite it

  async function go(i, focus) {
    const total = S.state.progress.answers;
    if (!total) return;
    i = Math.max(0, Math.min(total - 1, i));
    S.moving += 1;  // marks wait: until the new answer is shown they would land on the old one
    const latest = moves.start();
    let item;
    try {
      await flushNote();
      showError("");
      item = await getJSON(`/api/review/item/${i}`);
    } catch (e) { if (latest()) showError(e.message); return; } finally { S.moving -= 1; }
    if (!latest()) return;
    S.idx = i;
    S.item = item;
    window.Shell.shown(i);
    renderItem();
    const firstOpen = item.segments.findIndex((s) => s.supported === null);
    setFocus(focus != null ? focus : Math.max(0, firstOpen));
  }

  function renderItem() {
    const it = S.item;
    $("apos").textContent = `Answer ${it.index + 1} / ${it.total}`;
    $("meta-text").textContent = `${it.question_id} · ${it.model}${it.repeat ? ` · repeat ${it.repeat}` : ""}`;
    const q = $("question");
    q.textContent = it.question != null ? it.question : "(question text not available; see the warning above)";
    q.classList.toggle("muted", it.question == null);
    renderAnswer();
    $("segments").replaceChildren(...it.segments.map((s, n) => segmentCard(s, n)));
    const nc = it.segments.filter((s) => !s.located).length;
    $("seg-count").textContent = `${it.segments.length} segment${it.segments.length === 1 ? "" : "s"}` +
      (nc && it.answer ? ` (${nc} not found verbatim in the answer)` : "");
    renderProgress();
  }

  function renderAnswer() {
    const box = $("answer");
    box.replaceChildren();
    const it = S.item;
    if (!it.answer) {
      box.append(el("p", { class: "muted", text: "The answer's full text is not available; its segments are listed below." }));
      return;
    }
    for (const [text, n] of it.answer) {
      if (n < 0) { box.append(document.createTextNode(text)); continue; }
      const s = it.segments[n];
      box.append(el("span", {
        class: `aseg ${verdictName(s.supported) || "open"}${n === S.focus ? " focused" : ""}`,
        "data-seg": String(n), title: `segment ${n + 1}`, onclick: () => setFocus(n),
      }, el("sup", { class: "segno", text: String(n + 1) }), text));
    }
  }

  function segmentCard(s, n) {
    const note = el("input", {
      type: "text", class: "note", placeholder: "note (optional): why, or what the article says instead",
      "aria-label": `note on segment ${n + 1}`, maxlength: "5000",
    });
    note.value = s.note || "";
    note.addEventListener("focus", () => { if (S.focus !== n) setFocus(n, { keepFocus: true }); });
    note.addEventListener("input", () => { clearTimeout(S.noteTimer); S.noteTimer = setTimeout(() => saveNote(n), 700); });
    note.addEventListener("change", () => saveNote(n));
    const cites = s.citations.map((c) => `#${c}`).join(", ");
    const li = el("li", { "data-seg": String(n) },
      el("div", { class: "seg-head" },
        el("span", { class: "segno", text: String(n + 1) }),
        el("span", { class: "seg-cites", text: s.citations.length ? `cites ${cites}` : "cites nothing: check it against the answer's articles" }),
        el("span", { class: "verdict" })),
      el("p", { class: `seg-text${s.located || !S.item.answer ? "" : " unlocated"}`, text: s.text }),
      el("div", { class: "seg-actions" },
        el("button", { type: "button", class: "mark yes", onclick: () => mark(n, true) }, "✓ supported ", el("kbd", { text: "s" })),
        ...(S.state.claims ? [el("button", { type: "button", class: "mark partial", onclick: () => mark(n, "partial") },
          "≈ partial ", el("kbd", { text: "h" }))] : []),
        el("button", { type: "button", class: "mark no", onclick: () => mark(n, false) }, "✗ unsupported ", el("kbd", { text: "u" })),
        note));
    li.addEventListener("click", (e) => { if (!e.target.closest("button, input")) setFocus(n); });
    return updateCard(li, s, n);
  }

  // the mark's state only: the note field is left alone, it may be mid-edit
  function updateCard(li, s, n) {
    const v = verdictName(s.supported);
    const unsaved = pending.has(segKey(S.item, s));  // the mark itself says so, not only a note
    li.className = `seg ${v || "open"}${n === S.focus ? " focused" : ""}${unsaved ? " unsaved" : ""}`;
    const badge = li.querySelector(".verdict");
    badge.className = `verdict ${unsaved ? "unsaved" : v}`;
    badge.textContent = (unsaved ? "NOT SAVED: " : "") + (v ? (s.reviewer ? `${v} · ${s.reviewer}` : v) : "not reviewed");
    for (const [cls, on] of [["yes", s.supported === true], ["no", s.supported === false], ["partial", s.supported === "partial"]]) {
      const b = li.querySelector(`button.${cls}`);
      if (!b) continue;
      b.classList.toggle("on", on);
      b.setAttribute("aria-pressed", String(on));
    }
    return li;
  }

  function refreshSegment(n) {
    const li = document.querySelector(`#segments > li[data-seg="${n}"]`);
    if (li) updateCard(li, S.item.segments[n], n);
    renderAnswer();
  }

  function setFocus(n, { keepFocus = false } = {}) {
    const segs = S.item.segments;
    if (!segs.length) return;
    S.focus = Math.max(0, Math.min(segs.length - 1, n));
    document.querySelectorAll("#segments > li").forEach((li, j) => li.classList.toggle("focused", j === S.focus));
    document.querySelectorAll("#answer .aseg").forEach((sp) => sp.classList.toggle("focused", Number(sp.dataset.seg) === S.focus));
    const li = document.querySelector(`#segments > li[data-seg="${S.focus}"]`);
    if (li) li.scrollIntoView({ block: "nearest" });
    if (!keepFocus && document.activeElement && document.activeElement.classList.contains("note")) document.activeElement.blur();
    showArticles();
  }

  // ---------------------------------------------------------------- article

  function articleChoices() {
    const s = S.item.segments[S.focus];
    const ids = s.citations.length ? s.citations : S.item.articles.map((a) => a.id);
    return ids.map((id) => S.item.articles.find((a) => a.id === id) || { id, in_kb: false, title: "" });
  }

  function showArticles() {
    const choices = articleChoices();
    if (!choices.some((a) => a.id === S.articleId)) S.articleId = choices.length ? choices[0].id : null;
    const tabs = $("tabs");
    tabs.replaceChildren(...choices.map((a) => el("button", {
      type: "button", role: "tab", class: `tab${a.id === S.articleId ? " on" : ""}`, "aria-selected": String(a.id === S.articleId),
      title: a.title || "", onclick: () => { S.articleId = a.id; showArticles(); },
    }, el("span", { class: "aid", text: `#${a.id}` }), " ", a.in_kb ? a.title : "not in the KB")));
    tabs.hidden = choices.length < 2;
    const s = S.item.segments[S.focus];
    $("a-hint").textContent = s.citations.length
      ? `Segment ${S.focus + 1} cites ${choices.length > 1 ? "these articles" : "this article"}; the passage closest to it is highlighted.`
      : `Segment ${S.focus + 1} cites nothing: it is supported only if an article the answer cites says it.`;
    loadArticle(S.idx, S.focus, S.articleId);
  }

  async function loadArticle(idx, seg, id) {
    const title = $("a-title"), text = $("a-text");
    if (id == null) {
      title.textContent = "No article cited";
      $("a-id").textContent = ""; $("a-crumb").textContent = "";
      text.replaceChildren(el("p", { class: "muted", text: "This answer cites no article." }));
      return;
    }
    const head = S.item.articles.find((a) => a.id === id);
    if (head && !head.in_kb) {
      title.textContent = "Article not in the KB";
      $("a-id").textContent = `#${id}`; $("a-crumb").textContent = "";
      text.replaceChildren(el("p", { class: "muted", text: `The answer cites #${id}, which this KB does not have: nothing supports the segment.` }));
      return;
    }
    const key = `${idx}/${seg}/${id}`;
    let a = S.articles.get(key);
    if (!a) {
      try { a = await getJSON("/api/review/article", { item: idx, seg, id }); } catch (e) { showError(e.message); return; }
      S.articles.set(key, a);
    }
    if (S.idx !== idx || S.focus !== seg || S.articleId !== id) return;  // the reviewer moved on meanwhile
    title.textContent = a.title;
    $("a-id").textContent = `#${a.id}`;
    $("a-crumb").textContent = [a.breadcrumb.join(" › "), a.source].filter(Boolean).join(" · ");
    const passage = marked(text, a.segments).querySelector(".passage");
    if (passage) {
      const box = text.getBoundingClientRect(), p = passage.getBoundingClientRect();
      text.scrollTop += p.top - box.top - Math.max(0, (box.height - p.height) / 3);
    } else {
      text.scrollTop = 0;
    }
  }

  function nextArticle() {
    const choices = articleChoices();
    if (choices.length < 2) return;
    const at = choices.findIndex((a) => a.id === S.articleId);
    S.articleId = choices[(at + 1) % choices.length].id;
    showArticles();
  }

  // ---------------------------------------------------------------- saving

  function noteValue(n) {
    const input = document.querySelector(`#segments > li[data-seg="${n}"] input.note`);
    return input ? input.value : S.item.segments[n].note;
  }

  // saves are chained so they reach the server in the order they were made, and applied to the
  // page at once, so a quick second key press builds on the first rather than on stale state
  function save(n, supported) {
    const it = S.item;
    const s = it.segments[n];
    const payload = {
      model: it.model, question_id: it.question_id, repeat: it.repeat, segment_index: s.segment_index,
      supported, note: noteValue(n),
    };
    s.supported = supported;
    s.note = payload.note.trim();
    const idx = S.idx;
    S.saving = S.saving.then(async () => {
      try {
        const res = await postJSON("/api/review/label", payload);
        S.state.progress = res.progress;
        if (S.item && S.idx === idx) {
          Object.assign(S.item.segments[n], { supported: res.segment.supported, reviewer: res.segment.reviewer });
          refreshSegment(n);
        }
        renderProgress();
        pending.drop(segKey(it, s));
        showError("");
        flash(`saved ${it.question_id} #${n + 1}: ${verdictName(res.segment.supported) || "no mark"}${res.segment.note ? " + note" : ""}`);
        return true;
      } catch (e) {
        if (offline(e)) {  // no answer (the server is down): kept, shown unsaved, and retried until it answers
          pending.keep(segKey(it, s), payload, { idx, n });
          if (S.idx === idx) refreshSegment(n);
          showError(`not saved yet (${e.message}): kept on this page and retried until the server answers`);
          return false;
        }
        showError(`not saved: ${e.message}`);
        if (S.idx === idx) {  // show what the server really holds
          try { S.item = await getJSON(`/api/review/item/${idx}`); renderItem(); setFocus(S.focus); } catch (_) { /* offline */ }
        }
        return false;
      }
    });
    if (S.idx === idx) refreshSegment(n);
    return S.saving;
  }

  function segKey(it, s) {
    return [it.model, it.question_id, it.repeat, s.segment_index].join("\u0000");
  }

  // the marks the server never got, sent again (after the marks made meanwhile) until it answers
  const pending = unsavedSaves({
    path: "/api/review/label",
    chain: (fn) => (S.saving = S.saving.then(fn)),
    saved: (key, res, { idx, n }) => {
      S.state.progress = res.progress;
      renderProgress();
      if (S.item && S.idx === idx) {
        Object.assign(S.item.segments[n], { supported: res.segment.supported, reviewer: res.segment.reviewer });
        refreshSegment(n);
      }
      flash(`saved #${n + 1}: ${verdictName(res.segment.supported) || "no mark"} (the server is back)`);
    },
    refused: async (key, e, { idx }) => {
      showError(`not saved: ${e.message}`);
      if (S.idx === idx) {
        try { S.item = await getJSON(`/api/review/item/${idx}`); renderItem(); setFocus(S.focus); } catch (_) { /* */ }
      }
    },
    settled: () => showError(""),
  });

  // the next segment is chosen from the marks already on the page, at once, so a quick second key
  // press lands on it; moving to the next answer waits for the save, and keys wait for the move
  async function mark(n, supported) {
    if (S.busy || S.moving) return;
    clearTimeout(S.noteTimer);
    const idx = S.idx;
    const saved = save(n, supported);
    if (!autoAdvance() || supported === null) return;
    const segs = S.item.segments;
    const after = segs.findIndex((s, j) => j > n && s.supported === null);
    const before = segs.findIndex((s) => s.supported === null);
    if (after >= 0) { setFocus(after); return; }
    if (before >= 0) { setFocus(before); return; }
    if (idx + 1 >= S.state.progress.answers) return;
    S.busy = true;
    try {
      if (await saved && S.idx === idx) await go(idx + 1);
    } finally { S.busy = false; }
  }

  function notePending(n) {
    return S.item && S.item.segments[n] && noteValue(n).trim() !== (S.item.segments[n].note || "");
  }

  function saveNote(n) {
    clearTimeout(S.noteTimer);
    if (!notePending(n)) return S.saving;
    return save(n, S.item.segments[n].supported);
  }

  async function flushNote() {
    if (!S.item) return;
    for (let n = 0; n < S.item.segments.length; n++) if (notePending(n)) await saveNote(n);
    await S.saving;
  }

  // ---------------------------------------------------------------- keyboard

  function typing(e, t) {
    if (t.classList.contains("note") && (e.key === "Enter" || e.key === "Escape")) { e.preventDefault(); t.blur(); saveNote(S.focus); }
  }

  function focusNote() {
    const input = document.querySelector(`#segments > li[data-seg="${S.focus}"] input.note`);
    if (input) input.focus();
  }

  function firstUnreviewed() {
    const f = S.state.progress.first_unreviewed;
    if (f != null) go(f); else flash("every segment is reviewed");
  }

  const keys = {
    s: () => mark(S.focus, true),
    u: () => mark(S.focus, false),
    h: () => { if (S.state.claims) mark(S.focus, "partial"); },
    c: () => { if (!S.busy && !S.moving) save(S.focus, null); },
    j: () => setFocus(S.focus + 1),
    k: () => setFocus(S.focus - 1),
    ArrowDown: () => setFocus(S.focus + 1),
    ArrowUp: () => setFocus(S.focus - 1),
    n: () => go(S.idx + 1),
    p: () => go(S.idx - 1),
    f: firstUnreviewed,
    a: () => nextArticle(),
    e: focusNote,
    Enter: focusNote,
  };

  // ---------------------------------------------------------------- wiring

  function wire() {
    window.Shell.keys({ keys, typing, ready: () => Boolean(S.item) });
    window.Shell.nav({ go, at: () => S.idx, hash: true });
    $("first-unreviewed").addEventListener("click", firstUnreviewed);
    autoAdvance = window.Shell.autoAdvance("grace-review-auto-advance");
    window.addEventListener("pagehide", () => {
      if (!S.item) return;
      S.item.segments.forEach((s, n) => {
        if (!notePending(n)) return;
        postOnLeave("/api/review/label", { model: S.item.model, question_id: S.item.question_id, repeat: S.item.repeat,
          segment_index: s.segment_index, supported: s.supported, note: noteValue(n) });
      });
    });
  }

  window.Shell.start(async () => {
    wire();
    await refreshState();
    if (S.state.need_person) return;
    const fromHash = window.Shell.hashIndex();
    const first = S.state.progress.first_unreviewed;
    await go(fromHash != null ? fromHash : (first != null ? first : 0));
  });
})();
