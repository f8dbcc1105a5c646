// Shared by grace's web apps (the labelling page, the spot-check review, the results viewer):
// the JSON API calls (carrying the access token when the server asks for one) and
// a DOM builder that only ever puts untrusted text into text nodes, never innerHTML.
"use strict";

window.graceUI = (() => {
  const TOKEN = new URLSearchParams(location.search).get("token");
  const $ = (id) => document.getElementById(id);

  function url(path, params) {
    const u = new URL(path, location.origin);
    for (const [k, v] of Object.entries(params || {})) u.searchParams.set(k, v);
    if (TOKEN) u.searchParams.set("token", TOKEN);
    return u.pathname + u.search;
  }

  async function getJSON(path, params) {
    const r = await fetch(url(path, params), { cache: "no-store" });
    const data = await r.json();
    if (!r.ok) throw new Error(data.error || r.statusText);
    return data;
  }

  async function postJSON(path, body) {
    const r = await fetch(url(path), {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
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

  function showError(msg) {
    $("error").textContent = msg || "";
  }

  return { TOKEN, $, url, getJSON, postJSON, el, showError };
})();
