// grace kb curate: lint's findings one at a time, fixed by hand or by a proposal; keyboard first.
// Article and model text is untrusted: it only ever reaches the page as text nodes
// (textContent / createTextNode, through graceUI.el), never through innerHTML.
"use strict";

(() => {
  const { $, WHO, getJSON, postJSON, el, showError, pageURL } = window.graceUI;
  const { flash } = window.Shell;

  const S = {
    state: null,     // /api/curate/state
    idx: 0,          // current finding's place in the worklist
    f: null,         // /api/curate/finding response
    proposal: null,  // the proposal shown
    editing: false,  // the proposal's edit fields are open
    busy: Promise.resolve(),
    filter: { kind: "", section: "" },  // the worklist shows only these (from the address: #kind=..&section=..&f=KEY)
  };

  // the address of a finding (and the filters it was seen under): a link a curator can send a colleague
  function addressOf(key) {
    const h = new URLSearchParams();
    if (S.filter.kind) h.set("kind", S.filter.kind);
    if (S.filter.section) h.set("section", S.filter.section);
    if (key) h.set("f", key);
    return `${location.search}#${h.toString()}`;
  }

  function fromAddress(hash) {
    const h = new URLSearchParams((hash == null ? location.hash : hash).slice(1));
    S.filter = { kind: h.get("kind") || "", section: h.get("section") || "" };
    return h.get("f");
  }

  function renderFilters() {
    const st = S.state;
    const opts = (sel, all, counts, current) => {
      const names = Object.keys(counts);
      if (current && !names.includes(current)) names.push(current);
      sel.replaceChildren(el("option", { value: "", text: all }),
        ...names.map((n) => el("option", { value: n, text: `${n} (${counts[n] || 0})` })));
      sel.value = current;
    };
    opts($("filter-kind"), "every kind", st.counts, S.filter.kind);
    opts($("filter-section"), "every section", st.sections, S.filter.section);
  }

  async function openAddress(hash) {
    const wanted = fromAddress(hash);
    await refreshState();
    const at = wanted ? S.state.findings.findIndex((f) => f.key === wanted) : -1;
    await go(Math.max(0, at));
    if (wanted && at < 0) showError(`finding ${wanted} is not open any more (fixed, or its articles changed)`);
  }

  // ---------------------------------------------------------------- a team: changes wait for a reviewer

  const CHANGES_PAGE = 20;

  function renderTeam() {
    const t = S.state.team;
    $("team-box").hidden = !t;
    if (!t) return;
    const reviewer = WHO && t.reviewers.includes(WHO);
    $("team-you").textContent = WHO ? `${WHO} · ${reviewer ? "reviewer" : "curator"} · ${t.pending} pending` : "";
    $("pick-list").hidden = Boolean(WHO);
    if (!WHO) {
      showError("name yourself: pick your name (every change is recorded with it)");
      const names = [...(t.curators || []), ...t.reviewers];
      $("pick-list").replaceChildren(...names.map((n) => el("li", {},
        el("a", { href: pageURL("/", { who: n }), "data-person": n, text: n }))));
    }
    // every change, pending first, a page at a time (the page number kept across refreshes)
    const pages = Math.max(1, Math.ceil(t.changes.length / CHANGES_PAGE));
    S.changePage = Math.min(S.changePage || 0, pages - 1);
    const shown = t.changes.slice(S.changePage * CHANGES_PAGE, (S.changePage + 1) * CHANGES_PAGE);
    const turn = (d) => { S.changePage += d; renderTeam(); };
    $("changes-nav").hidden = pages < 2;
    $("changes-nav").replaceChildren(
      el("button", { type: "button", class: "changes-prev", onclick: () => turn(-1), ...(S.changePage ? {} : { disabled: "" }) }, "‹ newer"),
      el("span", { class: "muted", text: ` page ${S.changePage + 1} / ${pages} · ${t.changes.length} changes ` }),
      el("button", { type: "button", class: "changes-next", onclick: () => turn(1), ...(S.changePage < pages - 1 ? {} : { disabled: "" }) }, "older ›"));
    $("changes").replaceChildren(...shown.map((c) => {
      const li = el("li", { class: c.status, "data-change": String(c.id) },
        el("strong", { text: `${c.id}` }), " ", el("span", { text: c.summary }), " ",
        el("span", { class: "muted", text: `· ${c.author} · ${c.status}${c.reviewer ? ` by ${c.reviewer}` : ""}${c.reason ? `: ${c.reason}` : ""}` }),
        ...(c.blocks || []).map((b) => el("div", { class: "diff-block" },  // what approving it changes, word by word
          el("div", { class: "field-label", text: b.label }),
          el("div", { class: "diff" }, ...b.diff.map(([text, op]) => (op > 0 ? el("ins", { text }) : op < 0 ? el("del", { text }) : document.createTextNode(text)))))));
      if (c.status === "pending" && reviewer && c.author !== WHO) {
        const reason = el("input", { type: "text", class: "decline-reason", placeholder: "why reject (needed to reject)", "aria-label": `why reject change ${c.id}` });
        li.append(" ", el("button", { type: "button", class: "approve", onclick: () => act("approve", { change: c.id }) }, "approve"),
          " ", el("button", { type: "button", class: "decline", onclick: () => act("decline", { change: c.id, reason: reason.value }) }, "reject"),
          reason);
      }
      return li;
    }));
  }

  // ---------------------------------------------------------------- state, worklist, history

  function renderState() {
    const st = S.state;
    const left = st.findings.length;
    $("progress").textContent = `${left} finding${left === 1 ? "" : "s"} left of ${st.started_with} · ${st.actions} action${st.actions === 1 ? "" : "s"} in force`;
    const done = Math.max(0, st.started_with - left);
    $("bar-fixed").style.width = `${(100 * done) / Math.max(1, st.started_with)}%`;
    $("who").textContent = `${st.author} · KB ${st.kb.articles} articles · proposals ${st.proposer}`;
    $("who").title = `${st.kb.path} (${st.kb.kb_hash})`;
    $("worklist").replaceChildren(...st.findings.map((f, i) => {
      const li = el("li", { class: `finding ${f.severity}${i === S.idx ? " current" : ""}`, "data-key": f.key },
        el("span", { class: `badge ${f.severity}`, text: f.kind }), " ",
        el("span", { class: "aid", text: f.articles.map((a) => `#${a}`).join(" ") }), " ",
        el("span", { class: "ftitle", text: f.titles.join(" · ") }));
      li.addEventListener("click", () => go(i));
      return li;
    }));
    if (!left) $("worklist").append(el("li", { class: "empty", text: "No finding left: the KB is clean." }));
    $("history").replaceChildren(...st.history.map((h) => el("li", { class: h.undone ? "undone" : "" },
      el("span", { class: "aid", text: `${h.seq}` }), " ",
      el("strong", { text: h.action }), " ",
      el("span", { text: h.action === "undo" ? `of ${h.undoes}` : h.articles.join(", ") + (h.parts.length ? ` → ${h.parts.join(", ")}` : "") }), " ",
      el("span", { class: "muted", text: `${h.author} ${h.reason ? "· " + h.reason : ""}` }))));
    $("conflicts-box").hidden = !st.conflicts.length;
    $("conflicts").replaceChildren(...st.conflicts.map((c) => el("li", {},
      el("strong", { text: `${c.action} ${c.articles.join(", ")}` }), " ", el("span", { text: c.reason }))));
  }

  async function refreshState() {
    S.state = await getJSON("/api/curate/state", S.filter);
    renderState();
    renderFilters();
    renderTeam();
  }

  // ---------------------------------------------------------------- one finding

  const moves = window.Shell.latest();  // the latest go() wins: an earlier one still waiting must not overwrite it

  async function go(i) {
    const n = S.state.findings.length;
    const latest = moves.start();
    showError("");
    if (!n) { S.f = null; renderFinding(); return; }
    i = Math.max(0, Math.min(n - 1, i));
    let f;
    try { f = await getJSON("/api/curate/finding", { key: S.state.findings[i].key }); } catch (e) { if (latest()) showError(e.message); return; }
    if (!latest()) return;
    S.idx = i;
    S.f = f;
    history.replaceState(null, "", addressOf(f.key));
    S.proposal = (f.proposals || [])[0] || null;
    S.editing = false;
    renderState();
    renderFinding();
  }

  function paragraphsInto(node, paragraphs, article) {
    node.replaceChildren();
    paragraphs.forEach((segs, i) => {
      if (i > 0) {
        node.append(el("button", { type: "button", class: "split", title: `split ${article.id}: the second part starts with paragraph ${i + 1}`,
          "data-at": String(i + 1), onclick: () => split(article.id, i + 1) }, `✂ split here (paragraph ${i + 1})`));
      }
      const p = el("div", { class: "para", "data-n": String(i + 1) });
      let flagged = false;
      for (const [text, match, inPassage] of segs) {
        p.append(match ? el("mark", { text }) : document.createTextNode(text));
        flagged = flagged || Boolean(inPassage);
      }
      if (flagged) p.classList.add("passage");
      node.append(p);
    });
  }

  function articleCard(a, others) {
    const title = el("input", { type: "text", class: "title-input", value: a.title, "aria-label": `title of ${a.id}` });
    title.value = a.title;
    title.addEventListener("keydown", (e) => {
      if (e.key === "Enter") { e.preventDefault(); title.blur(); act("title", { id: a.id, title: title.value }); }
      if (e.key === "Escape") { e.preventDefault(); title.value = a.title; title.blur(); }
    });
    const text = el("textarea", { class: "text-input", rows: "12", "aria-label": `text of ${a.id}` });
    text.value = a.text;
    text.hidden = true;
    const paras = el("div", { class: "paras" });
    paragraphsInto(paras, a.paragraphs, a);
    const saveText = el("button", { type: "button", class: "save-text", hidden: "" }, "save text");
    const editText = el("button", { type: "button", class: "edit-text" }, "edit text");
    editText.addEventListener("click", () => {
      const open = text.hidden;
      text.hidden = !open; paras.hidden = open; saveText.hidden = !open;
      editText.textContent = open ? "cancel" : "edit text";
      if (open) text.focus(); else text.value = a.text;
    });
    saveText.addEventListener("click", () => act("text", { id: a.id, text: text.value }));
    const crumb = [a.breadcrumb.join(" › "), a.source, `${a.tokens} tokens`].filter(Boolean).join(" · ");
    return el("article", { class: "card", "data-id": a.id },
      el("div", { class: "card-head" }, el("span", { class: "aid", text: `#${a.id}` }), title,
        el("button", { type: "button", class: "save-title", onclick: () => act("title", { id: a.id, title: title.value }) }, "save title")),
      el("div", { class: "crumb", text: crumb }),
      paras, text,
      el("div", { class: "actions" }, editText, saveText,
        ...others.map((o) => el("button", { type: "button", class: "merge-into", onclick: () => act("merge", { keep: a.id, other: o.id }) },
          `merge #${o.id} into this`))));
  }

  function renderFinding() {
    const f = S.f;
    $("finding-head").hidden = !f;
    $("finding-actions").hidden = !f;
    $("distinct-box").hidden = true;
    if (!f) {
      $("fpos").textContent = "no finding left";
      $("articles").replaceChildren();
      renderProposal();
      return;
    }
    $("fpos").textContent = `Finding ${S.idx + 1} / ${S.state.findings.length}`;
    $("f-badge").textContent = f.severity;
    $("f-badge").className = `badge ${f.severity}`;
    $("f-kind").textContent = `${f.kind}: ${f.articles.map((a) => `#${a.id}`).join(", ")}`;
    $("f-message").textContent = f.message;
    $("f-link").href = addressOf(f.key);
    const pair = f.articles.length === 2;
    $("merge").hidden = !pair;
    $("distinct").hidden = !pair;
    $("propose-kind").value = f.proposal_kind;
    $("articles").classList.toggle("pair", f.articles.length > 1);
    $("articles").replaceChildren(...f.articles.map((a) => articleCard(a, f.articles.filter((o) => o.id !== a.id))));
    renderProposal();
  }

  // ---------------------------------------------------------------- proposals

  function renderProposal() {
    const p = S.proposal;
    $("proposal-box").hidden = !p;
    if (!p) return;
    $("p-kind").textContent = p.kind;
    const cost = p.cost_usd == null ? "cost unknown" : `$${p.cost_usd.toFixed(4)}`;
    $("p-meta").textContent = `#${p.id} by ${p.model} · ${p.cached ? "cached" : cost}`;
    $("p-reason").textContent = p.reason || "";
    const blocked = p.error ? `rejected: ${p.error}` : p.stale ? `stale: ${p.stale_reason}; reject it (x) and ask again` : "";
    $("p-error").hidden = !blocked;
    $("p-error").textContent = blocked;
    $("proposal-box").classList.toggle("unusable", Boolean(blocked));
    $("p-accept").disabled = Boolean(blocked);
    $("p-editbtn").disabled = Boolean(blocked);
    $("p-blocks").replaceChildren(...(p.blocks || []).map((b) => el("div", { class: "diff-block" },
      el("div", { class: "field-label", text: b.label }),
      el("div", { class: "diff" }, ...b.diff.map(([text, op]) => (op > 0 ? el("ins", { text }) : op < 0 ? el("del", { text }) : document.createTextNode(text)))))));
    $("p-edit").hidden = !S.editing;
    const split = p.kind === "split";
    $("p-split-edit").hidden = !split;
    for (const id of ["p-title", "p-text"]) { $(id).hidden = split; $(id).previousElementSibling.hidden = split; }
  }

  function openProposalEdit() {
    const p = S.proposal;
    if (!p || p.error || p.stale) return;
    S.editing = true;
    $("p-title").value = p.title || "";
    $("p-text").value = p.text || "";
    $("p-at").value = p.at || 2;
    $("p-title1").value = (p.titles || [])[0] || "";
    $("p-title2").value = (p.titles || [])[1] || "";
    renderProposal();
    (p.kind === "split" ? $("p-at") : $("p-title")).focus();
  }

  function propose() {
    if (!S.f) return undefined;
    const kind = $("propose-kind").value;
    const ids = kind === "merge" ? S.f.articles.slice(0, 2).map((a) => a.id) : [S.f.articles[0].id];
    flash("asking for a proposal…");
    return queue(async () => {
      const res = await postJSON("/api/curate/propose", { kind, articles: ids, finding: S.f.key });
      S.proposal = res.proposal;
      S.editing = false;
      renderProposal();
      flash(res.proposal.error ? `proposal ${res.proposal.id} rejected` : `proposal ${res.proposal.id} ready: y accepts`);
    });
  }

  function accept() {
    const p = S.proposal;
    if (!p || p.error || p.stale) { flash("no usable proposal to accept"); return undefined; }
    const body = { proposal: p.id };
    if (S.editing) {
      if (p.kind === "split") Object.assign(body, { at: Number($("p-at").value), titles: [$("p-title1").value, $("p-title2").value] });
      else Object.assign(body, { title: $("p-title").value, text: $("p-text").value });
    }
    return act("accept", body);
  }

  function reject() {
    const p = S.proposal;
    if (!p) return undefined;
    return queue(async () => {
      const res = await postJSON("/api/curate/reject", { proposal: p.id });
      S.proposal = null;
      await refreshState();
      renderProposal();
      flash(res.done);
    });
  }

  // ---------------------------------------------------------------- actions

  // actions are chained, so they reach the server in the order they were made
  function queue(fn) {
    S.busy = S.busy.then(async () => {
      try { showError(""); await fn(); } catch (e) { showError(e.message); }
    });
    return S.busy;
  }

  function act(action, body) {
    return queue(async () => {
      const key = S.f ? S.f.key : null;
      const res = await postJSON(`/api/curate/${action}`, body);
      await refreshState();  // under the page's filters
      const at = S.state.findings.findIndex((f) => f.key === key);
      const extra = (res.fixed ? ` · ${res.fixed} finding${res.fixed > 1 ? "s" : ""} fixed` : "") + (res.new ? ` · ${res.new} new` : "");
      flash(`saved: ${res.done}${extra}`);
      await go(at >= 0 ? at : S.idx);
    });
  }

  function split(id, at) { return act("split", { id, at }); }

  function merge() {
    if (!S.f || S.f.articles.length !== 2) return undefined;
    return act("merge", { keep: S.f.articles[0].id, other: S.f.articles[1].id });
  }

  function openDistinct() {
    if (!S.f || S.f.articles.length !== 2) return;
    $("distinct-box").hidden = false;
    $("distinct-why").value = "";
    $("distinct-why").focus();
  }

  function confirmDistinct() {
    const why = $("distinct-why").value.trim();
    if (!why) { showError("say why the two articles are distinct: the next reader of lint sees it"); return; }
    $("distinct-box").hidden = true;
    act("distinct", { a: S.f.articles[0].id, b: S.f.articles[1].id, why });
  }

  function undo() { return act("undo", {}); }

  // ---------------------------------------------------------------- keyboard

  function typing(e, t) {
    if (t.id === "distinct-why" && e.key === "Enter") { e.preventDefault(); confirmDistinct(); return; }
    if (t.id === "distinct-why" && e.key === "Escape") { e.preventDefault(); $("distinct-box").hidden = true; t.blur(); return; }
    if (e.key === "Escape") { e.preventDefault(); t.blur(); }
  }

  const keys = {
    j: () => go(S.idx + 1),
    k: () => go(S.idx - 1),
    p: () => propose(),
    y: () => accept(),
    e: () => openProposalEdit(),
    x: () => reject(),
    m: () => merge(),
    d: () => openDistinct(),
    z: () => undo(),
    t: () => { const i = document.querySelector("#articles .title-input"); if (i) { i.focus(); i.select(); } },
    Escape: () => { $("distinct-box").hidden = true; if (S.editing) { S.editing = false; renderProposal(); } },
  };

  function wire() {
    window.Shell.keys({ keys, typing });
    window.Shell.nav({ go, at: () => S.idx });
    $("undo").addEventListener("click", () => undo());
    $("propose").addEventListener("click", () => propose());
    $("merge").addEventListener("click", () => merge());
    $("distinct").addEventListener("click", () => openDistinct());
    $("p-accept").addEventListener("click", () => accept());
    $("p-editbtn").addEventListener("click", () => openProposalEdit());
    $("p-reject").addEventListener("click", () => reject());
    for (const [id, name] of [["filter-kind", "kind"], ["filter-section", "section"]]) {
      $(id).addEventListener("change", () => queue(async () => {
        S.filter[name] = $(id).value;
        history.replaceState(null, "", addressOf(null));
        await refreshState();
        await go(0);
      }));
    }
  }

  window.Shell.start(async () => {
    wire();
    await openAddress();
    // a link followed in this tab (only the #... part changes): its filters and finding
    // the address as followed (the event's newURL): by the time the queue runs it, a move still under way may have
    // rewritten location.hash to the finding it shows, and the link's filters would be lost
    window.addEventListener("hashchange", (e) => { const hash = new URL(e.newURL).hash; queue(() => openAddress(hash)); });
  });
})();
