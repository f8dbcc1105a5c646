// Shared by grace's web apps (the labelling page, the spot-check review, the KB curation page, the results viewer):
// the JSON API calls (carrying the access token when the server asks for one), a DOM builder that only ever puts
// untrusted text into text nodes, never innerHTML, and (window.Shell, below) the page shell the three work pages
// share: keyboard dispatch, the help overlay, prev/next and the #N address, auto-advance, the "saved" toast, start-up.
"use strict";

window.graceUI = (() => {
  const QUERY = new URLSearchParams(location.search);
  const TOKEN = QUERY.get("token");
  // a page one person of a team opened (grace annotate --team: ?who=NAME): every call names them, a GET in its
  // query, a POST in its JSON body, and the server routes it to that person's labels
  const WHO = QUERY.get("who");
  // and their own key (a team session's personal link, ?who=NAME&cred=KEY): the server acts as the key's owner
  const CRED = QUERY.get("cred");
  const $ = (id) => document.getElementById(id);

  function url(path, params) {
    const u = new URL(path, location.origin);
    for (const [k, v] of Object.entries(params || {})) u.searchParams.set(k, v);
    if (WHO) u.searchParams.set("who", WHO);
    if (CRED) u.searchParams.set("cred", CRED);
    if (TOKEN) u.searchParams.set("token", TOKEN);
    return u.pathname + u.search;
  }

  // the address of another page of the same app, keeping the token (and the person's key, for the same person)
  function pageURL(path, params) {
    const u = new URL(path, location.origin);
    for (const [k, v] of Object.entries(params || {})) u.searchParams.set(k, v);
    if (CRED && WHO && !u.searchParams.has("who")) u.searchParams.set("who", WHO);
    if (CRED && u.searchParams.get("who") === WHO) u.searchParams.set("cred", CRED);
    if (TOKEN) u.searchParams.set("token", TOKEN);
    return u.pathname + u.search;
  }

  async function getJSON(path, params) {
    const r = await fetch(url(path, params), { cache: "no-store" });
    const data = await r.json();
    if (!r.ok) throw new Error(data.error || r.statusText);
    return data;
  }

  function post(path, body, extra) {
    const named = WHO && body && typeof body === "object" && !Array.isArray(body) ? { ...body, who: WHO } : body;
    return fetch(url(path), {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(named),
      ...extra,
    });
  }

  async function postJSON(path, body) {
    const r = await post(path, body);
    const data = await r.json();
    if (!r.ok) throw new Error(data.error || r.statusText);
    return data;
  }

  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(props || {})) {
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v);
    }
    for (const c of children) {
      if (c == null) continue;
      node.append(typeof c === "string" ? document.createTextNode(c) : c);
    }
    return node;
  }

  // [text, isMatch, inPassage] pieces from the server (an article with the question's words and its closest
  // passage marked): matches become <mark>, each run of passage pieces one <span class="passage">, all text nodes
  function marked(node, segments) {
    node.replaceChildren();
    let passage = null;
    for (const [text, match, inPassage] of segments) {
      const piece = match ? el("mark", { text }) : document.createTextNode(text);
      if (!inPassage) { passage = null; node.append(piece); continue; }
      if (!passage) { passage = el("span", { class: "passage" }); node.append(passage); }
      passage.append(piece);
    }
    return node;
  }

  function showError(msg) {
    $("error").textContent = msg || "";
  }

  // saves the server never got (no answer: it is down, the network gone), kept by the page and sent again every
  // 2 s, oldest first, until it answers. `chain(fn)` runs each round after the page's own saves (so a retry never
  // overtakes a newer save); `saved(id, res, extra)` and `refused(id, error, extra)` (a 4xx once it answers) say
  // what became of each; `settled()` runs when none is left.
  const offline = (e) => e instanceof TypeError;
  function unsavedSaves({ path, chain, saved, refused, settled }) {
    const waiting = new Map();
    let timer = null;
    function retry() {
      return chain(async () => {
        for (const [id, { payload, extra }] of [...waiting]) {
          try {
            const res = await postJSON(path, payload);
            waiting.delete(id);
            saved(id, res, extra);
          } catch (e) {
            if (offline(e)) return;  // still down: the next round
            waiting.delete(id);
            await refused(id, e, extra);
          }
        }
        if (!waiting.size && timer != null) { clearInterval(timer); timer = null; if (settled) settled(); }
      });
    }
    return {
      keep(id, payload, extra) { waiting.set(id, { payload, extra }); if (timer == null) timer = setInterval(retry, 2000); },
      has: (id) => waiting.has(id),
      drop: (id) => waiting.delete(id),
    };
  }

  // closing the tab mid-edit: keepalive lets the last edit reach the server after the page is gone
  function postOnLeave(path, body) {
    post(path, body, { keepalive: true });
  }

  return { TOKEN, WHO, CRED, $, url, pageURL, getJSON, postJSON, postOnLeave, el, marked, showError, offline,
    unsavedSaves };
})();

// The page shell of the work pages (annotate, review, kb curate): one item at a time, keyboard first.
// Each page calls, once:
//   Shell.keys({ keys, typing, before, ready })  one keydown listener for the page:
//       keys    {key: fn}: a plain key press (letters lower-cased, else KeyboardEvent.key: "Enter", "ArrowDown")
//       typing  (e, target): a key typed in a text field or select (Enter in #jump is the shell's own)
//       before  (e) => bool: a plain key press seen before `keys` (the digit keys); true when handled
//       ready   () => bool: false ignores plain keys (nothing shown yet)
//     "?" opens the help overlay (#help, its buttons #help-btn and #help-close); while it is open every plain
//     key is swallowed, and Esc or ? closes it. Ctrl, Cmd and Alt chords are left to the browser.
//   Shell.nav({ go, at, hash })  #prev / #next buttons go to at() - 1 / at() + 1, Enter in #jump goes to its
//     number; with hash, the address ends in #N (1-based: Shell.shown(i) after each move, Shell.hashIndex() reads
//     it, null when absent) and editing it moves.
//   Shell.autoAdvance(storageKey)  the #auto-advance box, remembered in localStorage; returns "is it on?".
//   Shell.latest()  a move counter, so the latest of overlapping moves wins: start() makes a move and returns
//     "is it still the latest?"; watch() returns "has no move started since?".
//   Shell.flash(msg, clearAfterMs)  the fading "saved" toast (#saved).
//   Shell.start(fn)  on DOMContentLoaded runs fn (wire, first load); a failure is shown as "cannot reach the
//     grace server"; success marks body[data-ready] (the browser tests wait on it).
window.Shell = (() => {
  const { $, showError } = window.graceUI;
  let navOpts = null;

  function typingIn(t) {
    return t instanceof HTMLElement &&
      (t.tagName === "TEXTAREA" || t.tagName === "SELECT" || (t.tagName === "INPUT" && t.type !== "checkbox"));
  }

  function help(open) {
    $("help").hidden = !open;
  }

  function jumpKey(e, t) {
    if (!navOpts || t.id !== "jump" || e.key !== "Enter") return false;
    e.preventDefault();
    const n = Number(t.value);
    t.value = "";
    t.blur();
    if (n) navOpts.go(n - 1);
    return true;
  }

  function keys({ keys: actions, typing = () => false, before = () => false, ready = () => true }) {
    const all = { ...actions, "?": () => help(true) };
    document.addEventListener("keydown", (e) => {
      const t = e.target;
      if (typingIn(t)) {
        if (!jumpKey(e, t)) typing(e, t);
        return;
      }
      if (e.ctrlKey || e.metaKey || e.altKey || !ready()) return;
      if (!$("help").hidden) {
        if (e.key === "Escape" || e.key === "?") { help(false); e.preventDefault(); }
        return;
      }
      if (before(e)) return;
      const f = all[e.key.length === 1 ? e.key.toLowerCase() : e.key];
      if (f) { e.preventDefault(); f(); }
    });
    $("help-btn").addEventListener("click", () => help(true));
    $("help-close").addEventListener("click", () => help(false));
  }

  function hashIndex() {
    const n = Number(location.hash.slice(1));
    return n ? n - 1 : null;
  }

  function nav(opts) {
    navOpts = opts;
    $("prev").addEventListener("click", () => opts.go(opts.at() - 1));
    $("next").addEventListener("click", () => opts.go(opts.at() + 1));
    if (opts.hash) {
      window.addEventListener("hashchange", () => {
        const i = hashIndex();
        if (i != null && i !== opts.at()) opts.go(i);
      });
    }
  }

  function shown(i) {
    history.replaceState(null, "", `${location.search}#${i + 1}`);
  }

  function autoAdvance(storageKey) {
    const box = $("auto-advance");
    const saved = localStorage.getItem(storageKey);
    if (saved !== null) box.checked = saved === "1";
    box.addEventListener("change", () => localStorage.setItem(storageKey, box.checked ? "1" : "0"));
    return () => box.checked;
  }

  function latest() {
    let n = 0;
    return {
      start() { const mine = ++n; return () => mine === n; },
      watch() { const mine = n; return () => mine === n; },
    };
  }

  let flashTimer = null;
  function flash(msg, clearAfterMs) {
    const s = $("saved");
    s.textContent = msg;
    s.classList.remove("fade");
    void s.offsetWidth;  // restarts the fade animation
    s.classList.add("fade");
    clearTimeout(flashTimer);
    if (clearAfterMs) flashTimer = setTimeout(() => { s.textContent = ""; }, clearAfterMs);
  }

  function start(fn) {
    document.addEventListener("DOMContentLoaded", async () => {
      try { await fn(); } catch (e) { showError(`cannot reach the grace server: ${e.message}`); return; }
      document.body.dataset.ready = "1";
    });
  }

  return { keys, nav, shown, hashIndex, autoAdvance, latest, flash, start };
})();
