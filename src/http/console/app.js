// InterLock console: a small, framework-free single-page app served by the gateway.
//
// Security rules kept throughout this file:
// - the key lives in sessionStorage only and is sent in the Authorization header (never in a
//   URL, never in localStorage, never in a cookie);
// - everything from the API is rendered with textContent / text nodes, never innerHTML;
// - statements are shown from `statement_display` (control and bidi characters escaped by the
//   gateway); audit statements, which the API returns raw, get the same escaping here.
"use strict";

(() => {
  const KEY_STORAGE = "interlock.console.key";
  const PAGES = ["sources", "approvals", "audit", "activity"];
  const TERMINAL = new Set(["executed", "failed", "rejected", "expired", "outcome_unknown"]);

  const state = {
    key: null,
    role: null, // "operator" | "approver"
    name: null,
    pages: new Set(),
    page: null,
    sources: new Map(), // id -> source_json
    actors: [], // GET /admin/actors
    replicas: [], // GET /admin/replicas (live)
    webhooks: [], // GET /admin/webhooks
    sourceRows: new Map(), // id -> row refs
    sourcesLoadedAt: null,
    pending: new Map(), // id -> approval
    pendingCards: new Map(), // id -> card refs
    history: new Map(), // id -> approval (insertion order = display order after sort)
    historyItems: new Map(), // id -> <details>
    historyNext: null,
    historyFilter: { state: "", source: "" },
    audit: { cursors: [null], index: 0, next: null, filter: {} },
    timers: [],
  };

  // ---------------------------------------------------------------------------------------
  // Small DOM helpers (text only).

  const $ = (id) => document.getElementById(id);

  /** Creates an element; `props` may hold className, text, attrs, dataset, on{Event}. */
  function h(tag, props, ...children) {
    const node = document.createElement(tag);
    if (props) {
      for (const [k, v] of Object.entries(props)) {
        if (v === undefined || v === null || v === false) continue;
        if (k === "className") node.className = v;
        else if (k === "text") node.textContent = String(v);
        else if (k === "dataset") Object.assign(node.dataset, v);
        else if (k === "attrs") for (const [a, av] of Object.entries(v)) { if (av !== null && av !== undefined && av !== false) node.setAttribute(a, String(av)); }
        else if (k.startsWith("on") && typeof v === "function") node.addEventListener(k.slice(2).toLowerCase(), v);
        else node[k] = v;
      }
    }
    append(node, children);
    return node;
  }

  function append(node, children) {
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      node.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
    return node;
  }

  function replaceChildren(node, ...children) {
    clear(node);
    return append(node, children);
  }

  /** Mirrors the gateway's escape_for_display: control, format (bidi, zero-width) and
   * non-ASCII space characters become \u{XXXX}, so the text shown is the text that runs. */
  function displaySafe(s) {
    if (s === null || s === undefined) return "";
    let out = "";
    for (const ch of String(s)) {
      const cp = ch.codePointAt(0);
      const control = (cp < 0x20 && ch !== "\n" && ch !== "\t") || (cp >= 0x7f && cp <= 0x9f);
      const format = (cp >= 0x200b && cp <= 0x200f) || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2060 && cp <= 0x2069) || cp === 0xfeff || cp === 0x00ad || (cp >= 0xfff9 && cp <= 0xfffb);
      const space = cp > 0x7f && /\s/u.test(ch);
      out += control || format || space ? `\\u{${cp.toString(16).toUpperCase().padStart(4, "0")}}` : ch;
    }
    return out;
  }

  /** One line of at most `n` characters, for summaries. */
  function oneLine(s, n) {
    const t = displaySafe(s).replace(/\s+/g, " ").trim();
    return t.length > n ? t.slice(0, n - 1) + "…" : t;
  }

  function shortId(id) {
    return String(id || "").slice(0, 8);
  }

  // ---------------------------------------------------------------------------------------
  // Time and number formatting.

  function parseTime(t) {
    if (!t) return null;
    const d = new Date(t);
    return Number.isNaN(d.getTime()) ? null : d;
  }

  function pad(n) {
    return String(n).padStart(2, "0");
  }

  function absTime(t) {
    const d = parseTime(t);
    if (!d) return "—";
    return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  }

  function span(secs) {
    secs = Math.max(0, Math.round(secs));
    if (secs < 60) return `${secs} s`;
    if (secs < 3600) return `${Math.floor(secs / 60)} min`;
    if (secs < 86400) {
      const hrs = Math.floor(secs / 3600);
      const min = Math.floor((secs % 3600) / 60);
      return min ? `${hrs} h ${min} min` : `${hrs} h`;
    }
    return `${Math.floor(secs / 86400)} d ${Math.floor((secs % 86400) / 3600)} h`;
  }

  function ago(t) {
    const d = parseTime(t);
    if (!d) return "—";
    const s = (Date.now() - d.getTime()) / 1000;
    if (s < 5) return "just now";
    return `${span(s)} ago`;
  }

  function until(t) {
    const d = parseTime(t);
    if (!d) return "—";
    const s = (d.getTime() - Date.now()) / 1000;
    return s <= 0 ? "expired" : `in ${span(s)}`;
  }

  /** A <time> element that keeps its relative text fresh (see tickTimes). */
  function timeEl(t, mode = "ago", className = "") {
    const d = parseTime(t);
    const el = h("time", { className: `rel ${className}`.trim(), dataset: { t: t || "", mode }, attrs: { datetime: d ? d.toISOString() : null, title: d ? absTime(t) : null } });
    el.textContent = relText(t, mode);
    return el;
  }

  function relText(t, mode) {
    if (mode === "until") return until(t);
    if (mode === "since") {
      const d = parseTime(t);
      return d ? span((Date.now() - d.getTime()) / 1000) : "—";
    }
    return ago(t);
  }

  function tickTimes() {
    for (const el of document.querySelectorAll("time.rel[data-t]")) {
      const t = el.dataset.t;
      const text = relText(t, el.dataset.mode);
      if (el.textContent !== text) el.textContent = text;
    }
  }

  function ms(v) {
    if (v === null || v === undefined) return "—";
    if (v < 10) return `${v.toFixed(1)} ms`;
    if (v < 1000) return `${Math.round(v)} ms`;
    return `${(v / 1000).toFixed(2)} s`;
  }

  function us(v) {
    if (v === null || v === undefined) return "—";
    return ms(v / 1000);
  }

  function pct(r) {
    if (r === null || r === undefined) return "—";
    return `${Math.round(r * 100)} %`;
  }

  function plural(n, one, many) {
    return `${n} ${n === 1 ? one : many || one + "s"}`;
  }

  const STATE_LABEL = {
    pending: "pending",
    approved: "approved",
    executing: "executing",
    executed: "executed",
    failed: "failed",
    rejected: "rejected",
    expired: "expired",
    outcome_unknown: "outcome unknown",
    closed: "closed",
    open: "open",
    half_open: "half open",
  };

  function label(s) {
    return STATE_LABEL[s] || String(s || "").replace(/_/g, " ");
  }

  function badge(kind, value, extra) {
    return h("span", { className: `badge badge-${kind}-${String(value).replace(/[^a-z_]/gi, "")}`, dataset: { [kind]: value }, ...extra }, label(value));
  }

  // ---------------------------------------------------------------------------------------
  // Announcements: the visible banner is the aria-live (polite) region; errors are also read
  // out assertively.

  let bannerTimer = null;

  function announce(message, kind = "info", { sticky = false } = {}) {
    const banner = $("banner");
    clearTimeout(bannerTimer);
    const icon = { ok: "✓", error: "!", info: "i", warn: "!" }[kind] || "i";
    const close = h("button", { type: "button", className: "banner-close", attrs: { "aria-label": "Dismiss message" }, onclick: () => { clear(banner); } }, "×");
    replaceChildren(banner, h("div", { className: `banner-msg banner-${kind}`, dataset: { kind } }, h("span", { className: "banner-icon", attrs: { "aria-hidden": "true" } }, icon), h("span", { className: "banner-text" }, message), close));
    if (kind === "error") {
      $("announcer").textContent = "";
      setTimeout(() => { $("announcer").textContent = message; }, 50);
    }
    if (!sticky && kind !== "error") bannerTimer = setTimeout(() => clear(banner), 12000);
  }

  // ---------------------------------------------------------------------------------------
  // The API.

  class ApiError extends Error {
    constructor(status, code, message, body) {
      super(message);
      this.status = status;
      this.code = code;
      this.body = body;
    }
  }

  async function api(path, { method = "GET", body, key = state.key, quiet401 = false } = {}) {
    const headers = { Authorization: `Bearer ${key}`, Accept: "application/json" };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    let res;
    try {
      res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: "no-store", credentials: "omit", redirect: "error" });
    } catch (e) {
      throw new ApiError(0, "network", `the gateway could not be reached (${e.message || e})`, null);
    }
    const text = await res.text();
    let data = null;
    if (text) {
      try { data = JSON.parse(text); } catch { data = null; }
    }
    if (!res.ok) {
      // Errors are {"error", "code"}; a few (malformed query or body) come as plain text.
      const plain = !data && text ? text.trim().slice(0, 300) : "";
      const err = new ApiError(res.status, (data && data.code) || `http_${res.status}`, (data && data.error) || plain || res.statusText || `HTTP ${res.status}`, data);
      if (res.status === 401 && !quiet401 && state.key) sessionExpired();
      throw err;
    }
    return data;
  }

  /** A plain-language sentence for a failed action. */
  function describeError(e, what) {
    if (!(e instanceof ApiError)) return `${what} failed: ${e && e.message ? e.message : e}`;
    switch (e.status) {
      case 0:
        return `${what} failed: ${e.message}.`;
      case 400:
        if (e.code === "reason_required") return `${what} failed: a reason is required.`;
        return `${what} failed: ${e.message}.`;
      case 401:
        return `${what} failed: the key was not accepted (revoked or unknown). Sign in again.`;
      case 403:
        return `${what} is not allowed for this key: ${e.message}.`;
      case 404:
        return `${what} failed: not found (${e.message}).`;
      case 409: {
        const st = e.body && e.body.state;
        if (st && st !== "pending") return `${what} refused: already ${label(st)}. ${capitalize(e.message)}.`;
        return `${what} refused: ${e.message}.`;
      }
      case 503:
        return `${what} failed: the gateway is unavailable (${e.message}).`;
      default:
        return `${what} failed: ${e.message} (HTTP ${e.status}).`;
    }
  }

  function capitalize(s) {
    s = String(s || "").replace(/\.$/, "");
    return s ? s[0].toUpperCase() + s.slice(1) : s;
  }

  function qs(params) {
    const u = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") u.set(k, v);
    const s = u.toString();
    return s ? `?${s}` : "";
  }

  // ---------------------------------------------------------------------------------------
  // Sign-in and role detection.

  async function probe(path, key) {
    try {
      await api(path, { key, quiet401: true });
      return 200;
    } catch (e) {
      if (e.status === 403) return 403;
      throw e;
    }
  }

  /** Which pages a key may use: the role is what the endpoints answer (200 or 403). */
  async function detect(key) {
    const approvals = await probe("/admin/approvals?state=pending&limit=1", key);
    if (approvals === 403) return { role: null, pages: new Set() };
    const [sources, audit] = await Promise.all([probe("/admin/sources", key), probe("/admin/audit?limit=1", key)]);
    const pages = new Set();
    if (sources === 200) pages.add("sources");
    pages.add("approvals");
    if (audit === 200) pages.add("audit");
    // The activity series are operators' (GET /admin/activity).
    if (sources === 200) pages.add("activity");
    return { role: sources === 200 ? "operator" : "approver", pages };
  }

  /** The operator's own name, from the key prefixes in /admin/identities (best effort). */
  async function whoAmI() {
    if (state.role !== "operator") return null;
    try {
      const data = await api("/admin/identities");
      for (const ident of data.identities || []) {
        for (const k of ident.keys || []) {
          if (k.prefix && !k.revoked_at && state.key.startsWith(k.prefix)) return ident.name;
        }
      }
    } catch { /* the name is a nicety */ }
    return null;
  }

  async function signIn(key, { restoring = false } = {}) {
    const errorEl = $("signin-error");
    errorEl.textContent = "";
    const submit = $("signin-submit");
    submit.disabled = true;
    submit.textContent = "Signing in…";
    try {
      const found = await detect(key);
      if (!found.role) {
        const msg = "This key cannot use the console: it belongs to an agent. Use an operator or approver key.";
        if (restoring) sessionStorage.removeItem(KEY_STORAGE);
        showSignIn(msg);
        return;
      }
      state.key = key;
      state.role = found.role;
      state.pages = found.pages;
      sessionStorage.setItem(KEY_STORAGE, key);
      $("signin-key").value = "";
      state.name = await whoAmI();
      enterConsole();
    } catch (e) {
      let msg;
      if (e.status === 401) {
        msg = "That key was not recognised, or it was revoked.";
        sessionStorage.removeItem(KEY_STORAGE);
      } else {
        msg = describeError(e, "Signing in");
      }
      showSignIn(msg);
    } finally {
      submit.disabled = false;
      submit.textContent = "Sign in";
    }
  }

  function showSignIn(message) {
    for (const p of PAGES) $(`page-${p}`).hidden = true;
    $("nav").hidden = true;
    $("session").hidden = true;
    $("page-signin").hidden = false;
    document.title = "Sign in · InterLock console";
    const err = $("signin-error");
    err.textContent = message || "";
    $("signin-key").setAttribute("aria-invalid", message ? "true" : "false");
    $("signin-key").focus();
  }

  function signOut(message) {
    stopEvents();
    for (const t of state.timers) clearInterval(t);
    state.timers = [];
    sessionStorage.removeItem(KEY_STORAGE);
    Object.assign(state, { key: null, role: null, name: null, pages: new Set(), page: null, sourcesLoadedAt: null, historyNext: null, actors: [], replicas: [], webhooks: [] });
    for (const m of [state.sources, state.sourceRows, state.pending, state.pendingCards, state.history, state.historyItems]) m.clear();
    clear($("sources-body"));
    clear($("actors-body"));
    clear($("replicas-body"));
    clear($("webhooks-body"));
    clear($("pending-list"));
    clear($("history-list"));
    clear($("audit-body"));
    clear($("banner"));
    resetActivity();
    if (location.hash) history.replaceState(null, "", location.pathname);
    showSignIn(message);
  }

  let expiring = false;
  function sessionExpired() {
    if (expiring) return;
    expiring = true;
    setTimeout(() => {
      expiring = false;
      signOut("Your key is no longer accepted (revoked or unknown). Sign in again.");
    }, 0);
  }

  function enterConsole() {
    $("page-signin").hidden = true;
    $("nav").hidden = false;
    $("session").hidden = false;
    for (const a of $("nav").querySelectorAll("a[data-page]")) a.hidden = !state.pages.has(a.dataset.page);
    const who = $("whoami");
    replaceChildren(who, h("span", { className: `role role-${state.role}` }, state.role), state.name ? h("span", { className: "who-name" }, state.name) : null);
    $("approvals-intro").textContent = state.role === "operator"
      ? "Writes held for a human decision, across all sources. Operators watch; approvers scoped to the source decide."
      : "Writes held for your decision on the sources you approve. New requests appear here as they arrive.";
    startEvents();
    state.timers.push(setInterval(tickTimes, 1000));
    state.timers.push(setInterval(() => { if (state.page === "sources" && !document.hidden) loadSources({ quiet: true }); }, 10000));
    state.timers.push(setInterval(activityTick, 10000));
    // Approvers land on Approvals; operators on Sources.
    route(true);
    // Keep the pending count in the nav fresh whatever page is open.
    if (state.page !== "approvals") loadPending({ quiet: true });
  }

  // ---------------------------------------------------------------------------------------
  // Routing (hash only; the key never appears in the URL).

  function defaultPage() {
    if (state.role === "approver") return "approvals";
    return ["sources", "approvals", "audit"].find((p) => state.pages.has(p));
  }

  function route(initial = false) {
    if (!state.key) return;
    const m = /^#\/([a-z]+)/.exec(location.hash);
    let page = m && m[1];
    if (!page || !state.pages.has(page)) {
      if (page && !state.pages.has(page) && PAGES.includes(page)) announce(`The ${page} page is not available to an ${state.role}.`, "warn");
      page = defaultPage();
      history.replaceState(null, "", `#/${page}`);
    }
    const changed = state.page !== page;
    state.page = page;
    // A result shown on the previous page does not belong here (errors stay until dismissed).
    if (changed && !initial) {
      const msg = $("banner").querySelector(".banner-msg");
      if (msg && msg.dataset.kind !== "error") clear($("banner"));
    }
    for (const p of PAGES) $(`page-${p}`).hidden = p !== page;
    for (const a of $("nav").querySelectorAll("a[data-page]")) {
      if (a.dataset.page === page) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    }
    document.title = `${capitalize(page)} · InterLock console`;
    if (page === "sources") loadSources();
    if (page === "approvals") { loadPending(); loadHistory(); }
    if (page === "audit") { loadAudit({ fresh: true }); verifyChain(); loadCheckpoints(); loadReported(); }
    if (page === "activity") loadActivity();
    if (changed && !initial) $(`${page}-title`).focus();
    else if (initial) $(`${page}-title`).focus({ preventScroll: true });
  }

  // ---------------------------------------------------------------------------------------
  // The events stream: fetch + a stream reader (EventSource cannot send the Authorization
  // header), reconnecting with exponential backoff and catching up after a gap.

  const events = { ctrl: null, attempt: 0, retryTimer: null, watchdog: null, lastByte: 0, everConnected: false };

  function setLive(s, detail) {
    const live = $("live");
    live.dataset.state = s;
    const text = { connecting: "Connecting…", live: "Live", reconnecting: `Reconnecting${detail ? ` in ${detail}` : "…"}`, off: "Offline" }[s];
    $("live-text").textContent = text;
    live.title = s === "live" ? "Live updates from the gateway are on" : "Live updates are interrupted; data may be stale";
  }

  function startEvents() {
    stopEvents();
    events.everConnected = false;
    events.attempt = 0;
    connectEvents();
  }

  function stopEvents() {
    const ctrl = events.ctrl;
    events.ctrl = null;
    clearTimeout(events.retryTimer);
    clearInterval(events.watchdog);
    if (ctrl) ctrl.abort();
    setLive("off");
  }

  async function connectEvents() {
    const ctrl = new AbortController();
    events.ctrl = ctrl;
    setLive(events.everConnected ? "reconnecting" : "connecting");
    try {
      const res = await fetch("/admin/events", { headers: { Authorization: `Bearer ${state.key}`, Accept: "text/event-stream" }, cache: "no-store", credentials: "omit", signal: ctrl.signal });
      if (res.status === 401) { sessionExpired(); return; }
      if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
      const reconnected = events.everConnected;
      events.everConnected = true;
      events.attempt = 0;
      events.lastByte = Date.now();
      setLive("live");
      // Events may have been missed while disconnected: reload what is on screen.
      if (reconnected) refreshAll();
      clearInterval(events.watchdog);
      // The gateway sends a keep-alive comment every 15 s; silence for 40 s means a dead link.
      events.watchdog = setInterval(() => { if (Date.now() - events.lastByte > 40000) ctrl.abort(); }, 5000);
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        events.lastByte = Date.now();
        buf += value.replace(/\r\n?/g, "\n");
        let idx;
        while ((idx = buf.indexOf("\n\n")) >= 0) {
          const block = buf.slice(0, idx);
          buf = buf.slice(idx + 2);
          dispatchSse(block);
        }
      }
      throw new Error("the stream ended");
    } catch (e) {
      if (events.ctrl !== ctrl) return; // stopped or replaced on purpose
      clearInterval(events.watchdog);
      const delay = Math.min(30000, 1000 * 2 ** events.attempt) * (0.8 + Math.random() * 0.4);
      events.attempt = Math.min(events.attempt + 1, 6);
      setLive("reconnecting", span(delay / 1000));
      events.retryTimer = setTimeout(() => { if (events.ctrl === ctrl) connectEvents(); }, delay);
    }
  }

  function dispatchSse(block) {
    let name = "message";
    const data = [];
    for (const line of block.split("\n")) {
      if (!line || line.startsWith(":")) continue;
      const i = line.indexOf(":");
      const field = i < 0 ? line : line.slice(0, i);
      let value = i < 0 ? "" : line.slice(i + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") name = value;
      else if (field === "data") data.push(value);
    }
    if (!data.length) return;
    let payload;
    try { payload = JSON.parse(data.join("\n")); } catch { return; }
    onEvent(name, payload);
  }

  function onEvent(name, ev) {
    // Visible to tests and curious operators: how many events arrived, and the last one.
    const live = $("live");
    live.dataset.events = String(Number(live.dataset.events || 0) + 1);
    live.dataset.lastEvent = name;
    switch (name) {
      case "circuit.changed":
        onCircuitChanged(ev);
        break;
      case "actor.restarted":
        announce(`Actor ${ev.actor} was restarted (${ev.reason}).`, "warn");
        if (state.pages.has("sources") && state.page === "sources") loadSources({ quiet: true });
        break;
      case "approval.created":
      case "approval.decided":
      case "approval.executed":
      case "approval.expired":
        onApprovalEvent(name, ev);
        break;
      case "audit.checkpoint":
        if (state.page === "audit") loadCheckpoints();
        break;
      case "policy.reported":
        if (state.page === "audit") scheduleReported();
        break;
      case "lagged":
        announce(`Live updates fell behind (${ev.missed} events missed); reloading.`, "warn");
        refreshAll();
        break;
      default:
        break;
    }
  }

  function refreshAll() {
    if (!state.key) return;
    if (state.pages.has("sources") && state.page === "sources") loadSources({ quiet: true });
    loadPending({ quiet: true });
    if (state.page === "approvals") loadHistory({ quiet: true });
  }

  // ---------------------------------------------------------------------------------------
  // Sources.

  let sourcesLoading = null;

  async function loadSources({ quiet = false } = {}) {
    if (!state.pages.has("sources")) return;
    if (sourcesLoading) return sourcesLoading;
    const tbody = $("sources-body");
    if (!state.sources.size && !quiet) replaceChildren(tbody, h("tr", { className: "loading-row" }, h("td", { attrs: { colspan: 9 } }, "Loading sources…")));
    sourcesLoading = (async () => {
      try {
        const [data, actors, replicas, hooks] = await Promise.all([api("/admin/sources"), api("/admin/actors"), api("/admin/replicas"), api("/admin/webhooks")]);
        state.actors = actors.actors || [];
        state.replicas = replicas.replicas || [];
        state.webhooks = hooks.webhooks || [];
        renderActors();
        renderReplicas();
        renderWebhooks();
        const list = (data.sources || []).slice().sort((a, b) => a.id.localeCompare(b.id));
        const seen = new Set();
        for (const s of list) {
          seen.add(s.id);
          state.sources.set(s.id, s);
        }
        for (const id of [...state.sources.keys()]) if (!seen.has(id)) state.sources.delete(id);
        state.sourcesLoadedAt = new Date();
        renderSources();
        const page = $("page-sources");
        page.dataset.refreshed = String(Number(page.dataset.refreshed || 0) + 1);
      } catch (e) {
        if (e.status === 401) return;
        const msg = describeError(e, "Loading sources");
        if (!quiet) announce(msg, "error");
        if (!state.sources.size) replaceChildren(tbody, h("tr", {}, h("td", { attrs: { colspan: 9 }, className: "error-cell" }, msg)));
      } finally {
        sourcesLoading = null;
      }
    })();
    return sourcesLoading;
  }

  async function loadSource(id) {
    try {
      const s = await api(`/admin/sources/${encodeURIComponent(id)}`);
      state.sources.set(s.id, s);
      renderSources();
    } catch (e) {
      if (e.status === 404) { state.sources.delete(id); renderSources(); }
    }
  }

  function renderSources() {
    const tbody = $("sources-body");
    for (const row of tbody.querySelectorAll("tr:not([data-source-id])")) row.remove();
    const ids = [...state.sources.keys()].sort();
    for (const [id, refs] of state.sourceRows) {
      if (!state.sources.has(id)) { refs.tr.remove(); state.sourceRows.delete(id); }
    }
    ids.forEach((id, i) => {
      let refs = state.sourceRows.get(id);
      if (!refs) {
        refs = buildSourceRow(id);
        state.sourceRows.set(id, refs);
      }
      // Rows are moved only when out of order: moving a row would drop the keyboard focus.
      if (tbody.children[i] !== refs.tr) tbody.insertBefore(refs.tr, tbody.children[i] || null);
      fillSourceRow(refs, state.sources.get(id));
    });
    if (!ids.length) replaceChildren(tbody, h("tr", {}, h("td", { attrs: { colspan: 9 }, className: "empty-cell" }, "No sources are registered.")));
    renderSourcesSummary();
    $("sources-updated").textContent = state.sourcesLoadedAt ? `Updated ${absTime(state.sourcesLoadedAt.toISOString()).slice(11)}` : "";
  }

  const WEBHOOK_EVENTS = ["approval.created", "approval.decided", "approval.executed", "approval.failed", "approval.expired", "circuit.changed", "audit.checkpoint"];
  /** Webhooks whose deliveries are shown. */
  const openDeliveries = new Set();

  function renderWebhooks() {
    // The table is rebuilt on every refresh: keyboard focus goes back to the same action of
    // the same endpoint, and an open deliveries list keeps showing until its new one loads.
    const body = $("webhooks-body");
    const active = document.activeElement;
    const focusAt = active && body.contains(active) && active.dataset.action
      ? { webhook: active.closest("tr[data-webhook]")?.dataset.webhook, action: active.dataset.action } : null;
    const shown = new Map([...openDeliveries].map((id) => [id, $(`deliveries-${id}`)]).filter(([, box]) => box));
    const rows = [];
    for (const w of state.webhooks || []) {
      const paused = Boolean(w.paused_at);
      const stateText = [paused ? `Paused since ${absTime(w.paused_at)}` : "Delivering",
        w.previous_until ? `previous secret signs until ${absTime(w.previous_until)}` : null].filter(Boolean).join("; ");
      const act = (label, title, fn, cls, action) => h("button", { type: "button", className: `btn btn-small ${cls || ""}`, attrs: { "aria-label": `${label} ${w.url}`, title }, dataset: { action }, onclick: fn }, label);
      rows.push(h("tr", { dataset: { webhook: w.id, paused: String(paused) } },
        h("th", { attrs: { scope: "row" }, className: "mono small" }, displaySafe(w.url), w.format === "slack" ? h("span", { className: "tag" }, "slack") : null),
        h("td", {}, chips(w.events, "none")),
        h("td", { className: "num" }, String(w.pending)),
        h("td", { className: "num" }, String(w.delivered)),
        h("td", { className: "num" }, String(w.failed)),
        h("td", { className: "small", dataset: { role: "webhook-state" } }, stateText),
        h("td", { className: "actions" }, h("div", { className: "btn-group" },
          act(paused ? "Resume" : "Pause", paused ? "Deliver again, waiting deliveries first" : "Hold deliveries in the outbox", () => webhookAction(w, paused ? "resume" : "pause"), "", "pause"),
          act("Rotate secret", "A new secret, shown once; the old one signs beside it for a day", () => rotateWebhook(w), "", "rotate"),
          act("Test", "Queue a webhook.test delivery", () => webhookAction(w, "test"), "", "test"),
          act(openDeliveries.has(w.id) ? "Hide deliveries" : "Deliveries", "Each delivery's attempts, last error and next retry", () => toggleDeliveries(w), "", "deliveries"),
          act("Delete", "Remove the endpoint and its deliveries", () => deleteWebhook(w), "btn-reject", "delete")))));
      if (openDeliveries.has(w.id)) {
        const box = shown.get(w.id) || h("div", { id: `deliveries-${w.id}`, className: "deliveries" }, "Loading deliveries…");
        rows.push(h("tr", { className: "deliveries-row", dataset: { deliveriesOf: w.id } }, h("td", { attrs: { colspan: 7 } }, box)));
      }
    }
    if (!rows.length) rows.push(h("tr", {}, h("td", { attrs: { colspan: 7 }, className: "empty-cell" }, "No webhooks are registered.")));
    replaceChildren(body, ...rows);
    if (focusAt) {
      const again = [...body.querySelectorAll("button[data-action]")]
        .find((b) => b.dataset.action === focusAt.action && b.closest("tr[data-webhook]")?.dataset.webhook === focusAt.webhook);
      if (again) again.focus();
    }
    for (const id of openDeliveries) loadDeliveries(id);
  }

  function showSecret(title, secret) {
    $("webhook-secret-title").textContent = title;
    $("webhook-secret-value").textContent = secret;
    $("webhook-secret").hidden = false;
    $("webhook-secret-copy").focus();
  }

  async function registerWebhook(e) {
    e.preventDefault();
    const url = $("webhook-url").value.trim();
    const events = [...$("webhook-events").querySelectorAll("input:checked")].map((i) => i.value);
    const err = $("webhook-error");
    err.textContent = "";
    if (!url) { err.textContent = "Enter the endpoint's URL."; $("webhook-url").focus(); return; }
    if (!events.length) { err.textContent = "Choose at least one event."; return; }
    try {
      const r = await api("/admin/webhooks", { method: "POST", body: { url, events, format: $("webhook-format").value } });
      $("webhook-url").value = "";
      announce(`Registered ${r.url}.`, "ok");
      showSecret(`Signing secret of ${r.url}`, r.secret);
      loadSources({ quiet: true });
    } catch (ex) {
      // The gateway names what it refused (the target policy, an unknown event).
      err.textContent = describeError(ex, "Registering the endpoint");
    }
  }

  async function webhookAction(w, action) {
    try {
      await api(`/admin/webhooks/${encodeURIComponent(w.id)}/${action}`, { method: "POST", body: {} });
      const done = { pause: "Paused", resume: "Resumed", test: "Queued a test delivery to" }[action];
      announce(`${done} ${w.url}.`, "ok");
      loadSources({ quiet: true });
    } catch (ex) {
      announce(describeError(ex, `${capitalize(action)} ${w.url}`), "error");
    }
  }

  async function rotateWebhook(w) {
    if (!window.confirm(`Rotate the signing secret of ${w.url}? The new secret is shown once; the current one keeps signing beside it for a day.`)) return;
    try {
      const r = await api(`/admin/webhooks/${encodeURIComponent(w.id)}/rotate`, { method: "POST", body: {} });
      showSecret(`New signing secret of ${w.url} (the previous one signs too until ${absTime(r.previous_valid_until)})`, r.secret);
      loadSources({ quiet: true });
    } catch (ex) {
      announce(describeError(ex, `Rotating the secret of ${w.url}`), "error");
    }
  }

  async function deleteWebhook(w) {
    if (!window.confirm(`Delete ${w.url} and its deliveries?`)) return;
    try {
      await api(`/admin/webhooks/${encodeURIComponent(w.id)}`, { method: "DELETE" });
      openDeliveries.delete(w.id);
      announce(`Deleted ${w.url}.`, "ok");
      loadSources({ quiet: true });
    } catch (ex) {
      announce(describeError(ex, `Deleting ${w.url}`), "error");
    }
  }

  function toggleDeliveries(w) {
    if (openDeliveries.has(w.id)) openDeliveries.delete(w.id);
    else openDeliveries.add(w.id);
    renderWebhooks();
  }

  /** Attempts a delivery's log keeps (the gateway's `ATTEMPTS_KEPT`). */
  const ATTEMPTS_KEPT = 20;

  /** A delivery's attempts, oldest first: when, the endpoint's HTTP status (or that no
   * answer came, with why), and how long each took; the log keeps the newest 20. */
  function attemptList(log, attempts) {
    if (!log.length) return null;
    const items = log.map((a) => h("li", { dataset: { status: a.status ?? "none" } },
      `${absTime(a.at)}: ${a.status ? `HTTP ${a.status}` : `no answer (${displaySafe(a.error || "failed")})`} (${a.ms} ms)`));
    const earlier = log.length >= ATTEMPTS_KEPT ? attempts - log.length : 0;
    return h("ol", { className: "attempts" }, earlier > 0 ? h("li", { className: "muted" }, `${earlier} earlier`) : null, items);
  }

  const deliveryLoads = new Map(); // webhook id -> newest load

  async function loadDeliveries(id) {
    const box = $(`deliveries-${id}`);
    if (!box) return;
    const load = (deliveryLoads.get(id) || 0) + 1;
    deliveryLoads.set(id, load);
    try {
      const r = await api(`/admin/webhooks/${encodeURIComponent(id)}/deliveries`);
      if (deliveryLoads.get(id) !== load || !box.isConnected) return; // a newer list is coming
      const list = r.deliveries || [];
      const status = (d) => d.delivered_at ? `delivered ${absTime(d.delivered_at)}` : d.gave_up_at ? `given up ${absTime(d.gave_up_at)}` : `next attempt ${absTime(d.next_attempt_at)}`;
      replaceChildren(box, list.length ? h("table", { className: "table small" },
        h("caption", { className: "sr-only" }, "Deliveries, newest first"),
        h("thead", {}, h("tr", {}, ["Event", "Created", "Attempts", "Status", "Last error"].map((c) => h("th", { attrs: { scope: "col" } }, c)))),
        h("tbody", {}, list.map((d) => h("tr", { dataset: { delivery: d.id, state: d.delivered_at ? "delivered" : d.gave_up_at ? "given_up" : "pending" } },
          h("td", { className: "mono" }, displaySafe(d.event)), h("td", {}, absTime(d.created_at)),
          h("td", {}, String(d.attempts), attemptList(d.attempt_log || [], d.attempts)),
          h("td", {}, status(d)), h("td", {}, displaySafe(d.last_error || "—")))))) : h("p", { className: "muted" }, "No deliveries yet."));
    } catch (ex) {
      replaceChildren(box, h("p", { className: "error-cell" }, describeError(ex, "Loading the deliveries")));
    }
  }

  function renderReplicas() {
    const rows = (state.replicas || []).map((r) => {
      const circuits = Object.entries(r.circuits || {}).sort(([a], [b]) => a.localeCompare(b))
        .map(([source, c]) => h("span", { className: "tag", dataset: { circuit: c.state } }, `${source}: ${String(c.state).replace("_", " ")}${c.forced ? " (forced)" : ""}`));
      return h("tr", { dataset: { replica: r.id } },
        h("th", { attrs: { scope: "row" }, className: "mono" }, r.id.slice(0, 8), r.this ? h("span", { className: "tag" }, "serves this console") : null),
        h("td", { className: "mono small" }, r.address),
        h("td", {}, ...circuits),
        h("td", { className: "small muted" }, absTime(r.heartbeat_at)));
    });
    replaceChildren($("replicas-body"), ...rows);
  }

  function renderActors() {
    const rows = (state.actors || []).map((a) => h("tr", { dataset: { actor: a.actor, up: String(a.up) }, className: a.up ? "" : "row-open" },
      h("th", { attrs: { scope: "row" }, className: "mono" }, a.actor),
      h("td", {}, h("span", { className: `dot ${a.up ? "dot-closed" : "dot-open"}`, attrs: { "aria-hidden": "true" } }), a.up ? " up" : " down"),
      h("td", { className: "num" }, String(a.restarts)),
      h("td", { className: "small" }, a.last_failure || "—"),
      h("td", { className: "small muted" }, absTime(a.since))));
    replaceChildren($("actors-body"), ...rows);
  }

  function renderSourcesSummary() {
    const counts = { closed: 0, half_open: 0, open: 0 };
    for (const s of state.sources.values()) counts[s.circuit.state] = (counts[s.circuit.state] || 0) + 1;
    replaceChildren($("sources-summary"),
      h("span", { className: "summary-item" }, h("strong", {}, String(state.sources.size)), ` ${state.sources.size === 1 ? "source" : "sources"}`),
      h("span", { className: "summary-item ok" }, h("span", { className: "dot dot-closed", attrs: { "aria-hidden": "true" } }), h("strong", {}, String(counts.closed)), " closed"),
      h("span", { className: "summary-item warn" }, h("span", { className: "dot dot-half_open", attrs: { "aria-hidden": "true" } }), h("strong", {}, String(counts.half_open)), " half open"),
      h("span", { className: "summary-item bad" }, h("span", { className: "dot dot-open", attrs: { "aria-hidden": "true" } }), h("strong", {}, String(counts.open)), " open"));
  }

  function buildSourceRow(id) {
    const cells = Array.from({ length: 8 }, (_, i) => h(i === 0 ? "th" : "td", i === 0 ? { attrs: { scope: "row" } } : {}));
    for (const i of [3, 4, 5, 6]) cells[i].className = "num";
    cells[6].dataset.role = "cost";
    cells[2].dataset.role = "last-error";
    const mk = (action, text, verb) => h("button", { type: "button", className: `btn btn-small btn-${action}`, dataset: { action }, title: `${verb} the circuit of ${id}`, attrs: { "aria-label": `${verb} the circuit of ${id}` }, onclick: (e) => openCircuitDialog(id, action, e.currentTarget) }, text);
    const buttons = { open: mk("open", "Open", "Force open"), close: mk("close", "Close", "Force close"), reset: mk("reset", "Reset", "Reset") };
    const actions = h("td", { className: "actions" }, h("div", { className: "btn-group" }, buttons.open, buttons.close, buttons.reset));
    const tr = h("tr", { dataset: { sourceId: id } }, cells, actions);
    return { tr, cells, buttons };
  }

  function fillSourceRow(refs, s) {
    const c = refs.cells;
    const circuit = s.circuit || {};
    refs.tr.dataset.circuit = circuit.state;
    refs.tr.classList.toggle("row-open", circuit.state === "open");
    refs.tr.classList.toggle("row-half", circuit.state === "half_open");
    refs.tr.classList.toggle("row-disabled", !s.enabled);
    replaceChildren(c[0],
      h("div", { className: "src-id" }, h("span", { className: "mono" }, s.id), h("span", { className: "tag" }, s.type), s.enabled ? null : h("span", { className: "tag tag-warn" }, "disabled")),
      s.description ? h("div", { className: "src-desc" }, s.description) : null,
      s.database ? h("div", { className: "src-db mono small muted" }, s.database, s.tls ? ` · tls ${s.tls}` : "") : null,
      s.settings_error ? h("div", { className: "src-err small" }, `Settings: ${s.settings_error}`) : null);
    const fails = circuit.window_failures ?? 0;
    replaceChildren(c[1],
      h("div", { className: "circuit" },
        badge("circuit", circuit.state, { attrs: { "data-role": "circuit-badge" } }),
        circuit.forced ? h("span", { className: "tag tag-warn", title: "Forced by an operator: stays until closed or reset" }, "forced") : null,
        h("span", { className: "small muted" }, "for ", timeEl(circuit.since, "since"))),
      h("div", { className: "small window", dataset: { role: "window" }, title: "Outcomes in the breaker's sliding window" }, h("span", { className: fails ? "bad-text" : "" }, `${fails} fail`), ` · ${circuit.window_successes ?? 0} ok`));
    const stale = circuit.state === "closed";
    replaceChildren(c[2], circuit.last_error
      ? h("span", { className: `last-error${stale ? " last-error-old" : ""}`, title: stale ? "The last upstream error; the circuit has closed since" : displaySafe(circuit.last_error) }, oneLine(circuit.last_error, 80))
      : h("span", { className: "muted" }, "—"));
    const pool = s.pool;
    replaceChildren(c[3], pool ? h("span", {}, `${pool.in_use} / ${pool.size} / ${pool.max_size}`, pool.waiting ? h("div", { className: "small warn-text" }, `${pool.waiting} waiting`) : null) : h("span", { className: "muted" }, "—"));
    const st = s.stats || {};
    replaceChildren(c[4], h("div", {}, `${ms(st.p50_ms)} / ${ms(st.p99_ms)}`), h("div", { className: "small muted", dataset: { role: "runs" } }, `${st.executions_last_minute ?? 0} runs/min`));
    replaceChildren(c[5], pct(st.cache_hit_ratio), h("div", { className: "small muted" }, `${st.cache_hits ?? 0} hit · ${st.cache_misses ?? 0} miss`));
    const cost = st.cost;
    replaceChildren(c[6], cost
      ? [h("div", {}, `${cost.admitted} / ${cost.refused}`, cost.queued ? ` · ${cost.queued}` : ""),
         h("div", { className: "small muted", title: (cost.by_identity || []).map(([who, n]) => `${who}: ${n.admitted} admitted, ${n.refused} refused, ${n.queued} queued`).join("\n") },
           `${Math.round(cost.units_admitted).toLocaleString()} units admitted`)]
      : h("span", { className: "muted", title: "No read on this source has been planned by cost admission" }, "—"));
    const cat = s.catalog;
    replaceChildren(c[7], cat ? [h("div", {}, timeEl(cat.scanned_at, "ago")), h("div", { className: "small muted" }, plural(cat.relations, "relation"), cat.truncated ? " (truncated)" : "")] : h("span", { className: "muted" }, s.type === "documents" ? "n/a" : "not scanned"));
    refs.buttons.open.disabled = circuit.state === "open" && circuit.forced;
    refs.buttons.close.disabled = circuit.state === "closed" && !circuit.forced;
  }

  function flashRow(id) {
    const refs = state.sourceRows.get(id);
    if (!refs) return;
    refs.tr.classList.remove("flash");
    void refs.tr.offsetWidth; // restart the animation
    refs.tr.classList.add("flash");
  }

  const sourceReloads = new Map();

  function onCircuitChanged(ev) {
    const s = state.sources.get(ev.source);
    if (s) {
      s.circuit = { ...s.circuit, state: ev.to, since: ev.at };
      if (state.sourceRows.has(ev.source)) {
        fillSourceRow(state.sourceRows.get(ev.source), s);
        renderSourcesSummary();
        flashRow(ev.source);
      }
    }
    const kind = ev.to === "open" ? "error" : ev.to === "half_open" ? "warn" : "ok";
    announce(`Circuit of ${ev.source}: ${label(ev.from)} → ${label(ev.to)}. ${displaySafe(ev.reason)}`, kind === "error" ? "warn" : kind);
    // Fetch the full row (forced flag, window counts, last error) shortly after.
    clearTimeout(sourceReloads.get(ev.source));
    sourceReloads.set(ev.source, setTimeout(() => { sourceReloads.delete(ev.source); if (state.pages.has("sources")) loadSource(ev.source); }, 250));
  }

  // The circuit dialog.
  const circuitDialog = { source: null, action: null, opener: null, busy: false };
  const ACTION_TEXT = {
    open: { title: "Force the circuit open", verb: "Force open", text: (id) => `Every call to ${id} is refused without touching the database until an operator closes or resets the circuit.` },
    close: { title: "Force the circuit closed", verb: "Force close", text: (id) => `Calls to ${id} go through again at once and the failure window starts empty. If the source is still failing, the breaker opens again.` },
    reset: { title: "Reset the circuit", verb: "Reset", text: (id) => `Releases any forced state of ${id} and starts over closed with an empty failure window.` },
  };

  function openCircuitDialog(id, action, opener) {
    const d = $("circuit-dialog");
    Object.assign(circuitDialog, { source: id, action, opener, busy: false });
    const t = ACTION_TEXT[action];
    $("circuit-dialog-title").textContent = `${t.title}: ${id}`;
    $("circuit-dialog-text").textContent = t.text(id);
    $("circuit-submit").textContent = t.verb;
    $("circuit-submit").className = `btn ${action === "open" ? "btn-danger" : "btn-primary"}`;
    $("circuit-reason").value = "";
    $("circuit-reason").removeAttribute("aria-invalid");
    $("circuit-error").textContent = "";
    d.showModal();
    $("circuit-reason").focus();
  }

  function closeCircuitDialog() {
    const d = $("circuit-dialog");
    if (d.open) d.close();
  }

  async function submitCircuit(e) {
    e.preventDefault();
    if (circuitDialog.busy) return;
    const { source, action } = circuitDialog;
    const reason = $("circuit-reason").value.trim();
    if (!reason) {
      $("circuit-error").textContent = "Give a reason: it is recorded in the audit log.";
      $("circuit-reason").setAttribute("aria-invalid", "true");
      $("circuit-reason").focus();
      return;
    }
    circuitDialog.busy = true;
    const submit = $("circuit-submit");
    submit.disabled = true;
    const verb = ACTION_TEXT[action].verb;
    submit.textContent = "Working…";
    try {
      const res = await api(`/admin/sources/${encodeURIComponent(source)}/circuit`, { method: "POST", body: { action, reason } });
      const s = state.sources.get(source);
      if (s && res.circuit) {
        s.circuit = res.circuit;
        if (state.sourceRows.has(source)) { fillSourceRow(state.sourceRows.get(source), s); renderSourcesSummary(); flashRow(source); }
      }
      closeCircuitDialog();
      const now = res.circuit ? label(res.circuit.state) : "?";
      announce(`${verb} of ${source} done: the circuit is now ${now}${res.circuit && res.circuit.forced ? " (forced)" : ""}.`, "ok");
      loadSource(source);
    } catch (err) {
      const msg = describeError(err, `${verb} of ${source}`);
      $("circuit-error").textContent = msg;
      announce(msg, "error");
    } finally {
      circuitDialog.busy = false;
      submit.disabled = false;
      submit.textContent = verb;
    }
  }

  // ---------------------------------------------------------------------------------------
  // Approvals.

  let pendingLoading = null;

  async function loadPending({ quiet = false } = {}) {
    if (!state.pages.has("approvals")) return;
    if (pendingLoading) return pendingLoading;
    pendingLoading = (async () => {
      try {
        const data = await api(`/admin/approvals${qs({ state: "pending", limit: 200 })}`);
        const fresh = new Map((data.approvals || []).map((a) => [a.id, a]));
        for (const id of [...state.pending.keys()]) if (!fresh.has(id)) state.pending.delete(id);
        for (const [id, a] of fresh) state.pending.set(id, a);
        renderPending();
      } catch (e) {
        if (e.status === 401) return;
        if (!quiet) announce(describeError(e, "Loading pending approvals"), "error");
      } finally {
        pendingLoading = null;
      }
    })();
    return pendingLoading;
  }

  function historyMatches(a) {
    if (a.state === "pending") return false;
    const f = state.historyFilter;
    if (f.state && a.state !== f.state) return false;
    if (f.source && a.source_id !== f.source) return false;
    return true;
  }

  async function loadHistory({ quiet = false, more = false } = {}) {
    if (!state.pages.has("approvals")) return;
    const f = state.historyFilter;
    const btn = $("history-more");
    try {
      const before = more ? state.historyNext : null;
      if (more) { btn.disabled = true; btn.textContent = "Loading…"; }
      const data = await api(`/admin/approvals${qs({ state: f.state, source: f.source, limit: 50, before })}`);
      if (!more) { state.history.clear(); for (const el of state.historyItems.values()) el.remove(); state.historyItems.clear(); }
      for (const a of data.approvals || []) if (historyMatches(a)) state.history.set(a.id, a);
      state.historyNext = data.next_before || null;
      renderHistory();
    } catch (e) {
      if (e.status === 401) return;
      if (!quiet) announce(describeError(e, "Loading the approval history"), "error");
    } finally {
      btn.disabled = false;
      btn.textContent = "Load older";
    }
  }

  function renderPending() {
    const list = $("pending-list");
    const items = [...state.pending.values()].sort((a, b) => String(a.created_at).localeCompare(String(b.created_at)));
    for (const [id, refs] of state.pendingCards) {
      if (!state.pending.has(id)) removeCard(id, refs);
    }
    // Oldest first (the one waiting longest on top). Cards are moved only when out of order,
    // so typing a reason is never interrupted by a new arrival.
    items.forEach((a, i) => {
      let refs = state.pendingCards.get(a.id);
      if (!refs) {
        refs = buildCard(a);
        state.pendingCards.set(a.id, refs);
      }
      if (list.children[i] !== refs.root) list.insertBefore(refs.root, list.children[i] || null);
      fillCard(refs, a);
    });
    $("pending-empty").hidden = items.length > 0;
    $("pending-total").textContent = String(items.length);
    const nav = $("pending-count");
    nav.hidden = items.length === 0;
    nav.textContent = String(items.length);
    nav.setAttribute("aria-label", `${plural(items.length, "pending approval")}`);
  }

  function removeCard(id, refs) {
    const hadFocus = refs.root.contains(document.activeElement);
    const next = refs.root.nextElementSibling || refs.root.previousElementSibling;
    refs.root.remove();
    state.pendingCards.delete(id);
    if (hadFocus) {
      const target = (next && next.querySelector("textarea")) || $("approvals-title");
      target.focus();
    }
  }

  function chips(list, emptyText) {
    if (!list || !list.length) return h("span", { className: "muted" }, emptyText);
    return h("ul", { className: "chips" }, list.map((t) => h("li", { className: "chip mono" }, displaySafe(t))));
  }

  function touchesEl(t) {
    t = t || {};
    return h("dl", { className: "touches" },
      h("div", {}, h("dt", {}, "Writes tables"), h("dd", {}, chips(t.tables_written, "none"))),
      h("div", {}, h("dt", {}, "Writes columns"), h("dd", {}, chips(t.columns_written, "none"))),
      h("div", {}, h("dt", {}, "Reads tables"), h("dd", {}, chips(t.tables_read, "none"))),
      t.depends_on_clock ? h("div", { dataset: { role: "clock" } }, h("dt", {}, "Depends on"), h("dd", {}, h("span", { className: "chip warn" }, "the clock: it may change other rows when it runs than when previewed"))) : null,
      t.cost ? h("div", { dataset: { role: "cost" } }, h("dt", {}, "Planner's cost"), h("dd", {}, costEl(t.cost))) : null);
  }

  /** Cost admission's view of a queued call: the estimate, the limits it is over, the costliest steps. */
  function costEl(c) {
    const est = c.estimate || {};
    const over = (c.exceeded || []).map((l) => `${l.measure} ${Math.round(l.estimate)} over ${l.limit} (${displaySafe(l.rule)})`);
    const steps = (c.expensive_steps || []).map((st) => `${displaySafe(st.step)}${st.relation ? " of " + displaySafe(st.relation) : ""} ≈${Math.round(st.rows)} rows`);
    return h("div", {},
      h("span", { className: "chip" }, est.cost == null ? "not estimated" : `${Math.round(est.cost).toLocaleString()} units`),
      c.approvals ? h("span", { className: "small muted" }, ` · asks ${c.approvals} approval${c.approvals === 1 ? "" : "s"}`) : null,
      c.error ? h("p", { className: "small warn-text" }, displaySafe(c.error)) : null,
      over.length ? h("p", { className: "small" }, `Over its limit: ${over.join("; ")}.`) : null,
      steps.length ? h("p", { className: "small muted" }, `Costliest steps: ${steps.join(", ")}.`) : null);
  }

  /** Rows changed per table, when PostgreSQL counted more than one table. */
  function perTableEl(changed) {
    const tables = Object.entries(changed || {});
    if (tables.length < 2) return null;
    return h("p", { className: "small muted", dataset: { role: "rows-changed" } },
      "In each table: ", tables.map(([t, n]) => `${displaySafe(t)} ${n}`).join(", "));
  }

  function progressEl(a) {
    const req = a.approvals_required || 1;
    const got = Math.min(a.approvals || 0, req);
    const text = `${got} of ${req} approval${req === 1 ? "" : "s"}`;
    return h("div", { className: "progress", dataset: { role: "progress" } },
      h("div", { className: "progress-bar", attrs: { role: "progressbar", "aria-valuemin": 0, "aria-valuemax": req, "aria-valuenow": got, "aria-label": text } },
        Array.from({ length: req }, (_, i) => h("span", { className: `progress-step${i < got ? " done" : ""}` }))),
      h("span", { className: "progress-text" }, text));
  }

  function decisionsEl(a) {
    if (!a.decisions || !a.decisions.length) return null;
    return h("ul", { className: "decisions" }, a.decisions.map((d) =>
      h("li", { className: `decision decision-${d.decision === "approve" ? "approve" : "reject"}` },
        h("span", { className: "decision-who" }, displaySafe(d.approver)),
        h("span", { className: "decision-what" }, d.decision === "approve" ? " approved" : " rejected"),
        d.reason ? [": ", h("q", { className: "decision-reason" }, displaySafe(d.reason))] : null,
        " · ", timeEl(d.decided_at))));
  }

  function statementEl(a) {
    return h("pre", { className: "statement", attrs: { tabindex: 0, "aria-label": `Statement of approval ${shortId(a.id)}` } }, h("code", {}, a.statement_display ?? displaySafe(a.statement)));
  }

  /** What the write would do (its preview) and the bound it is held to. */
  function effectEl(a) {
    const p = a.preview;
    const parts = [];
    if (!p) {
      parts.push(h("p", { className: "effect-count muted", dataset: { role: "effect" } }, "Effect preview: computing…"));
    } else if (p.mode === "off") {
      parts.push(h("p", { className: "effect-count muted", dataset: { role: "effect" } }, "No effect preview for this source."));
    } else if (!p.ok) {
      parts.push(h("p", { className: "effect-count effect-failed", dataset: { role: "effect" } }, `Effect preview failed: ${displaySafe(p.error || "unknown error")}. You can still decide.`));
    } else if (p.mode === "read") {
      const masked = (p.columns || []).filter((c) => c.masked).map((c) => `${c.name} (${c.masked})`);
      parts.push(h("p", { className: "effect-count", dataset: { role: "effect", rows: "0" } }, h("strong", {}, "A read: changes nothing"),
        h("span", { className: "muted" }, ` · reads ${(p.tables_read || []).map(displaySafe).join(", ") || "no table"}; at most ${p.row_cap} rows, to the requester only`)));
      parts.push(h("p", { className: "small" }, masked.length ? `Masked: ${masked.map(displaySafe).join(", ")}.` : "No column is masked."));
    } else if (p.mode === "dry_run") {
      const n = p.rows_affected ?? 0;
      parts.push(h("p", { className: "effect-count", dataset: { role: "effect", rows: String(n) } }, h("strong", {}, `Changes ${n} row${n === 1 ? "" : "s"}`), h("span", { className: "muted" }, " (ran and rolled back; every table, triggers included)")));
      parts.push(perTableEl(p.rows_changed));
      const rowsTable = (rows) => {
        const cols = Object.keys(rows[0]);
        const head = h("thead", {}, h("tr", {}, cols.map((c) => h("th", { attrs: { scope: "col" } }, displaySafe(c)))));
        const cell = (r, c) => h("td", { className: "mono" }, displaySafe(JSON.stringify(r[c])));
        const body = h("tbody", {}, rows.map((r) => h("tr", {}, cols.map((c) => cell(r, c)))));
        return h("div", { className: "table-wrap" }, h("table", { className: "table small" }, head, body));
      };
      const images = [["Before", p.before], ["After", p.after], ["Returned", p.returning]]
        .filter(([, rows]) => Array.isArray(rows) && rows.length);
      if (images.length) {
        parts.push(h("details", { className: "effect-rows", dataset: { role: "images" } },
          h("summary", {}, `Rows ${images.map(([k]) => k.toLowerCase()).join(" / ")} (first ${Math.max(...images.map(([, r]) => r.length))}, as the requester may see them)`),
          images.map(([k, rows]) => [h("h4", { className: "small" }, k), rowsTable(rows)])));
      } else if (p.no_images) {
        parts.push(h("p", { className: "small muted" }, `No row images: ${displaySafe(p.no_images)}.`));
      }
    } else {
      const n = p.estimated_rows;
      parts.push(h("p", { className: "effect-count", dataset: { role: "effect", rows: String(n ?? "") } }, h("strong", {}, `About ${n ?? "?"} row${n === 1 ? "" : "s"}`), h("span", { className: "muted" }, " (planner estimate; nothing ran)")));
      if (Array.isArray(p.may_also_change) && p.may_also_change.length) {
        parts.push(h("p", { className: "small warn-text", dataset: { role: "also" } }, `Not in the estimate, counted by the bound: ${p.may_also_change.map(displaySafe).join("; ")}.`));
      }
      parts.push(h("details", { className: "effect-plan" }, h("summary", {}, "Plan"), h("pre", { className: "mono small" }, JSON.stringify(p.plan, null, 2))));
    }
    if (p && p.ok && p.bound_to_rows_shown_why) {
      parts.push(h("p", { className: "small muted", dataset: { role: "rows-shown", bound: String(!!p.bound_to_rows_shown) } }, displaySafe(p.bound_to_rows_shown_why) + "."));
    }
    const isRead = p && p.mode === "read";
    const boundText = isRead
      ? (a.max_rows === null || a.max_rows === undefined ? "Returns at most the row cap above." : `Returns at most ${a.max_rows} row${a.max_rows === 1 ? "" : "s"}.`)
      : (a.max_rows === null || a.max_rows === undefined ? "No bound on the rows it may affect." : `Bound: fails and changes nothing if it affects more than ${a.max_rows} row${a.max_rows === 1 ? "" : "s"}.`);
    parts.push(h("p", { className: "effect-bound small", dataset: { role: "bound" } },
      boundText,
      a.statement_sha256 ? h("span", { className: "mono muted", title: "SHA-256 of the statement the approval is bound to" }, ` · sha256 ${a.statement_sha256.slice(0, 16)}…`) : null));
    return h("div", { className: "effect" }, parts);
  }

  function verbOf(a) {
    const m = /^\s*([A-Za-z]+)/.exec(a.statement_display || "");
    return m ? m[1].toUpperCase() : "Write";
  }

  function buildCard(a) {
    const id = a.id;
    const titleId = `ap-${id}-title`;
    const reasonId = `ap-${id}-reason`;
    const resultId = `ap-${id}-result`;
    const refs = {};
    refs.badge = h("span", {});
    refs.meta = h("div", { className: "card-meta" });
    refs.statement = h("div", {});
    refs.touches = h("div", {});
    refs.effect = h("div", {});
    refs.progress = h("div", {});
    refs.decisions = h("div", {});
    refs.result = h("p", { id: resultId, className: "card-result", dataset: { role: "result" } });
    refs.title = h("h3", { id: titleId, className: "card-title" });
    let form = null;
    if (state.role === "approver") {
      refs.reason = h("textarea", { id: reasonId, rows: 2, maxLength: 2000, attrs: { "aria-describedby": resultId }, placeholder: "Why you approve or reject it (recorded in the audit log)" });
      refs.maxRows = h("input", { id: `ap-${id}-max`, type: "number", min: 0, step: 1, className: "max-rows", placeholder: "e.g. 10", attrs: { "aria-describedby": resultId } });
      refs.approve = h("button", { type: "submit", className: "btn btn-approve", dataset: { action: "approve" } }, "Approve");
      refs.reject = h("button", { type: "button", className: "btn btn-reject", dataset: { action: "reject" }, onclick: () => decide(id, "reject") }, "Reject");
      form = h("form", { className: "decide", onsubmit: (e) => { e.preventDefault(); decide(id, "approve"); } },
        h("label", { attrs: { for: reasonId } }, "Reason ", h("span", { className: "req" }, "(required to reject)")),
        refs.reason,
        h("label", { attrs: { for: `ap-${id}-max` } }, "At most this many rows ", h("span", { className: "muted" }, "(optional bound)")),
        refs.maxRows,
        h("div", { className: "decide-buttons" }, refs.approve, refs.reject));
    } else {
      form = h("p", { className: "muted small readonly-note" }, "Read-only: only an approver scoped to this source can decide.");
    }
    refs.root = h("article", { className: "card approval-card", dataset: { approvalId: id, state: a.state }, attrs: { "aria-labelledby": titleId } },
      h("header", { className: "card-head" }, refs.title, refs.badge),
      refs.meta, refs.statement, refs.effect, refs.touches,
      h("div", { className: "card-foot" }, h("div", { className: "card-progress" }, refs.progress, refs.decisions), form),
      refs.result);
    return refs;
  }

  function fillCard(refs, a) {
    refs.root.dataset.state = a.state;
    replaceChildren(refs.title, h("span", { className: "verb" }, verbOf(a)), " on ", h("span", { className: "mono" }, a.source_id), h("span", { className: "muted id" }, ` #${shortId(a.id)}`));
    replaceChildren(refs.badge, badge("state", a.state));
    replaceChildren(refs.meta,
      h("span", {}, "Requested by ", h("strong", {}, displaySafe(a.requester))),
      h("span", {}, timeEl(a.created_at)),
      h("span", {}, "expires ", timeEl(a.expires_at, "until")),
      h("span", { className: "mono small muted", title: "Approval id" }, a.id));
    if (!refs.statement.firstChild) replaceChildren(refs.statement, statementEl(a));
    replaceChildren(refs.touches, touchesEl(a.touches));
    replaceChildren(refs.effect, effectEl(a));
    // The preview is computed in the background after the write is queued: look again.
    if (!a.preview && !refs.previewTimer) {
      refs.previewTimer = setTimeout(() => { refs.previewTimer = null; if (state.pending.has(a.id)) refreshApproval(a.id); }, 1000);
    }
    replaceChildren(refs.progress, progressEl(a));
    replaceChildren(refs.decisions, decisionsEl(a));
  }

  function setCardResult(id, text, kind) {
    const refs = state.pendingCards.get(id);
    if (refs) {
      refs.result.textContent = text;
      refs.result.className = `card-result result-${kind}`;
    }
  }

  async function decide(id, verdict) {
    const refs = state.pendingCards.get(id);
    if (!refs || refs.busy) return;
    const reason = refs.reason.value.trim();
    const what = verdict === "approve" ? `Approving #${shortId(id)}` : `Rejecting #${shortId(id)}`;
    if (verdict === "reject" && !reason) {
      setCardResult(id, "Say why you reject it: a reason is required to reject.", "error");
      refs.reason.setAttribute("aria-invalid", "true");
      refs.reason.focus();
      announce(`${what}: a reason is required to reject.`, "error");
      return;
    }
    refs.reason.removeAttribute("aria-invalid");
    refs.busy = true;
    refs.approve.disabled = true;
    refs.reject.disabled = true;
    setCardResult(id, `${what}…`, "info");
    try {
      const body = { reason };
      const bound = refs.maxRows && refs.maxRows.value.trim();
      if (verdict === "approve" && bound) body.max_rows = Number(bound);
      const a = await api(`/admin/approvals/${encodeURIComponent(id)}/${verdict}`, { method: "POST", body });
      let msg;
      if (verdict === "reject") msg = `Rejected #${shortId(id)}: it will not run.`;
      else if (a.state === "pending") msg = `Approved #${shortId(id)}: ${a.approvals} of ${a.approvals_required} approvals; it waits for another approver.`;
      else msg = `Approved #${shortId(id)}: ${a.approvals} of ${a.approvals_required} approvals; it is ${label(a.state)}${a.state === "executed" ? "" : " — the result follows"}.`;
      setCardResult(id, msg, "ok");
      announce(msg, "ok");
      upsertApproval(a, { decidedHere: true });
    } catch (e) {
      const msg = describeError(e, what);
      setCardResult(id, msg, "error");
      announce(msg, "error");
      // The approval may have moved on (409): show where it is now.
      refreshApproval(id);
    } finally {
      refs.busy = false;
      refs.approve.disabled = false;
      refs.reject.disabled = false;
    }
  }

  async function refreshApproval(id) {
    try {
      const a = await api(`/admin/approvals/${encodeURIComponent(id)}`);
      upsertApproval(a);
      return a;
    } catch (e) {
      if (e.status === 404) {
        state.pending.delete(id);
        renderPending();
      }
      return null;
    }
  }

  function upsertApproval(a, { decidedHere = false } = {}) {
    if (a.state === "pending") {
      state.pending.set(a.id, a);
      renderPending();
      return;
    }
    const wasPending = state.pending.delete(a.id);
    if (wasPending) renderPending();
    if (historyMatches(a)) {
      const isNew = !state.history.has(a.id);
      if (isNew) {
        // Newest first: put it on top.
        const rest = [...state.history.entries()];
        state.history.clear();
        state.history.set(a.id, a);
        for (const [k, v] of rest) state.history.set(k, v);
      } else {
        state.history.set(a.id, a);
      }
      renderHistory({ highlight: a.id, open: decidedHere || wasPending ? a.id : null });
    }
  }

  const ANNOUNCE_EVENT = {
    "approval.created": (ev) => [`New approval request #${shortId(ev.id)} on ${ev.source} from ${displaySafe(ev.requester)}.`, "info"],
    "approval.decided": (ev) => [`#${shortId(ev.id)} on ${ev.source}: ${displaySafe(ev.approver)} ${ev.decision === "approve" ? "approved" : "rejected"} it; now ${label(ev.state)}.`, ev.decision === "approve" ? "ok" : "warn"],
    "approval.executed": (ev) => [`#${shortId(ev.id)} on ${ev.source} finished: ${label(ev.state)}.`, ev.state === "executed" ? "ok" : "error"],
    "approval.expired": (ev) => [`#${shortId(ev.id)} on ${ev.source} expired without a decision.`, "warn"],
  };

  async function onApprovalEvent(name, ev) {
    const a = await refreshApproval(ev.id);
    let [msg, kind] = ANNOUNCE_EVENT[name](ev);
    if (name === "approval.executed" && a) {
      if (a.state === "executed") msg += a.rows_affected !== null && a.rows_affected !== undefined ? ` ${plural(a.rows_affected, "row")} affected.` : "";
      else if (a.error) msg += ` ${displaySafe(a.error)}`;
    }
    announce(msg, kind);
  }

  function renderHistory({ highlight = null, open = null } = {}) {
    const list = $("history-list");
    const items = [...state.history.values()];
    for (const [id, el] of state.historyItems) {
      if (!state.history.has(id)) { el.remove(); state.historyItems.delete(id); }
    }
    items.forEach((a, i) => {
      const old = state.historyItems.get(a.id);
      const el = buildHistoryItem(a);
      if (old) {
        el.open = old.open;
        const hadFocus = old.contains(document.activeElement);
        old.replaceWith(el);
        if (hadFocus) el.querySelector("summary").focus();
      }
      state.historyItems.set(a.id, el);
      const at = list.children[i];
      if (at !== el) list.insertBefore(el, at || null);
      if (open === a.id) el.open = true;
      if (highlight === a.id) {
        el.classList.add("flash");
      }
    });
    $("history-empty").hidden = items.length > 0;
    $("history-more").hidden = !state.historyNext;
  }

  function resultEl(a) {
    const parts = [];
    if (a.state === "executed") {
      parts.push(h("p", { className: "result-line ok-text" }, `Executed ${a.executed_at ? absTime(a.executed_at) : ""}`.trim(), a.rows_affected !== null && a.rows_affected !== undefined ? ` · ${plural(a.rows_affected, "row")} affected` : ""));
    }
    if (a.error) parts.push(h("p", { className: "result-line bad-text" }, "Error: ", displaySafe(a.error)));
    if (a.result !== null && a.result !== undefined) parts.push(h("details", { className: "json" }, h("summary", {}, "Returned data"), h("pre", { className: "mono small" }, displaySafe(JSON.stringify(a.result, null, 2)))));
    return parts;
  }

  function buildHistoryItem(a) {
    const summary = h("summary", {},
      badge("state", a.state),
      h("span", { className: "h-verb" }, verbOf(a)),
      h("span", { className: "mono h-src" }, a.source_id),
      h("span", { className: "h-stmt mono" }, oneLine(a.statement_display, 90)),
      h("span", { className: "h-meta muted small" }, displaySafe(a.requester), " · ", timeEl(a.created_at)));
    return h("details", { className: "history-item", dataset: { approvalId: a.id, state: a.state } },
      summary,
      h("div", { className: "history-body" },
        h("div", { className: "card-meta" },
          h("span", {}, "Requested by ", h("strong", {}, displaySafe(a.requester)), " ", absTime(a.created_at)),
          h("span", { className: "mono small muted" }, a.id)),
        statementEl(a),
        touchesEl(a.touches),
        progressEl(a),
        decisionsEl(a),
        resultEl(a)));
  }

  // ---------------------------------------------------------------------------------------
  // Audit.

  function readAuditFilter() {
    const toIso = (v) => {
      if (!v) return "";
      const d = new Date(v);
      return Number.isNaN(d.getTime()) ? "" : d.toISOString();
    };
    return {
      identity: $("audit-identity").value.trim(),
      source: $("audit-source").value.trim(),
      outcome: $("audit-outcome").value,
      since: toIso($("audit-since").value),
      until: toIso($("audit-until").value),
      limit: $("audit-limit").value,
    };
  }

  let auditSeq = 0;

  async function loadAudit({ index = 0, fresh = false } = {}) {
    const a = state.audit;
    if (fresh) { a.cursors = [null]; a.filter = readAuditFilter(); index = 0; }
    const before = a.cursors[index];
    const my = ++auditSeq;
    const tbody = $("audit-body");
    $("audit-table").setAttribute("aria-busy", "true");
    try {
      const data = await api(`/admin/audit${qs({ ...a.filter, before })}`);
      if (my !== auditSeq) return;
      a.index = index;
      a.next = data.next_before || null;
      if (a.next !== null) a.cursors[index + 1] = a.next;
      renderAudit(data.records || []);
    } catch (e) {
      if (e.status === 401 || my !== auditSeq) return;
      const msg = describeError(e, "Loading audit records");
      announce(msg, "error");
      replaceChildren(tbody, h("tr", {}, h("td", { attrs: { colspan: 9 }, className: "error-cell" }, msg)));
    } finally {
      if (my === auditSeq) $("audit-table").removeAttribute("aria-busy");
    }
  }

  function decisionSummary(r) {
    const d = r.decision;
    if (!d || typeof d !== "object") return "";
    if (r.adapter === "admin") {
      const bits = [];
      if (d.action) bits.push(String(d.action));
      if (d.reason) bits.push(`“${d.reason}”`);
      if (d.enabled !== undefined) bits.push(d.enabled ? "enabled" : "disabled");
      if (d.decision) bits.push(String(d.decision));
      return bits.length ? bits.join(" ") : JSON.stringify(d);
    }
    const bits = [];
    if (d.verdict) bits.push(String(d.verdict));
    if (d.class) bits.push(String(d.class));
    if (d.reason) bits.push(String(d.reason));
    return bits.join(" · ") || JSON.stringify(d);
  }

  function renderAudit(records) {
    const tbody = $("audit-body");
    clear(tbody);
    for (const r of records) {
      const summaryText = r.statement ? oneLine(r.statement, 70) : oneLine(decisionSummary(r), 70) || "—";
      const detail = h("details", { className: "audit-detail" },
        h("summary", {}, h("span", { className: r.statement ? "mono" : "" }, summaryText)),
        h("dl", { className: "kv" },
          r.statement ? [h("dt", {}, "Statement"), h("dd", {}, h("pre", { className: "statement small" }, h("code", {}, displaySafe(r.statement))))] : null,
          h("dt", {}, "Decision"), h("dd", {}, h("pre", { className: "mono small" }, displaySafe(JSON.stringify(r.decision, null, 2)))),
          h("dt", {}, "Request"), h("dd", { className: "mono small" }, displaySafe(r.request_id)),
          r.approval_id ? [h("dt", {}, "Approval"), h("dd", { className: "mono small" }, r.approval_id)] : null,
          r.fingerprint ? [h("dt", {}, "Fingerprint"), h("dd", { className: "mono small" }, r.fingerprint)] : null,
          h("dt", {}, "Dialect / action"), h("dd", {}, displaySafe(r.dialect || "—"), " / ", displaySafe(r.action || "—")),
          h("dt", {}, "Cache"), h("dd", {}, r.cache_hit ? "hit" : "miss")));
      tbody.appendChild(h("tr", { dataset: { seq: r.seq, outcome: r.outcome } },
        h("td", { className: "num mono" }, String(r.seq)),
        h("td", { className: "nowrap" }, h("time", { attrs: { datetime: r.at, title: r.at } }, absTime(r.at))),
        h("td", {}, r.identity ? displaySafe(r.identity) : h("span", { className: "muted" }, "—")),
        h("td", {}, h("div", { className: "mono small" }, displaySafe(r.tool)), h("div", { className: "small muted" }, displaySafe(r.adapter))),
        h("td", {}, r.source_id ? h("span", { className: "mono" }, displaySafe(r.source_id)) : h("span", { className: "muted" }, "—")),
        h("td", {}, badge("outcome", r.outcome), r.cache_hit ? h("span", { className: "tag" }, "cached") : null),
        h("td", { className: "num" }, r.row_count === null || r.row_count === undefined ? "—" : String(r.row_count)),
        h("td", { className: "num nowrap" }, us(r.duration_us)),
        h("td", { className: "stmt-cell" }, detail)));
    }
    $("audit-empty").hidden = records.length > 0;
    const a = state.audit;
    $("audit-newer").disabled = a.index === 0;
    $("audit-newest").disabled = a.index === 0;
    $("audit-older").disabled = a.next === null;
    const first = records[0];
    const last = records[records.length - 1];
    $("audit-range").textContent = records.length ? `Page ${a.index + 1} · seq ${first.seq}–${last.seq}` : `Page ${a.index + 1}`;
  }

  /** The signed checkpoints table; `configured` is false on a gateway without a key. */
  async function loadCheckpoints() {
    const body = $("checkpoints-body");
    try {
      const r = await api("/admin/audit/checkpoints?limit=20");
      $("checkpoints-key").textContent = r.verifier_key || "none: this gateway signs no checkpoints (set audit.checkpoint_key_file)";
      $("checkpoint-now").disabled = !r.verifier_key;
      clear(body);
      for (const c of r.checkpoints || []) {
        const stamp = c.timestamp
          ? h("span", {}, badge("outcome", "ok"), " ", h("time", { attrs: { datetime: c.timestamped_at } }, absTime(c.timestamped_at)))
          : c.timestamp_error
            ? h("span", { className: "small" }, badge("outcome", "error"), " pending: ", displaySafe(c.timestamp_error))
            : h("span", { className: "muted" }, "none");
        body.appendChild(h("tr", { dataset: { size: c.tree_size } },
          h("td", { className: "num mono" }, String(c.tree_size)),
          h("td", { className: "mono small", attrs: { title: c.root_hash } }, c.root_hash.slice(0, 16) + "…"),
          h("td", { className: "nowrap" }, h("time", { attrs: { datetime: c.created_at } }, absTime(c.created_at))),
          h("td", {}, stamp)));
      }
      $("checkpoints-empty").hidden = (r.checkpoints || []).length > 0;
    } catch (e) {
      announce(describeError(e, "Loading the signed checkpoints"), "error");
    }
  }

  /** Bars of one rule's would-change counts, one per bucket of the window (SVG, no library). */
  function sparkline(buckets, since, until, bucketSecs) {
    const n = Math.max(1, Math.ceil((parseTime(until) - parseTime(since)) / 1000 / bucketSecs));
    const counts = new Array(n).fill(0);
    for (const b of buckets) {
      const i = Math.floor((parseTime(b.at) - parseTime(since)) / 1000 / bucketSecs);
      counts[Math.min(n - 1, Math.max(0, i))] += b.would_change;
    }
    const max = Math.max(1, ...counts);
    const w = 240, ht = 28, bw = w / n;
    const ns = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(ns, "svg");
    svg.setAttribute("viewBox", `0 0 ${w} ${ht}`);
    svg.setAttribute("width", String(w));
    svg.setAttribute("height", String(ht));
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", `${counts.reduce((a, b) => a + b, 0)} would-change calls in ${n} buckets`);
    svg.classList.add("sparkline");
    counts.forEach((c, i) => {
      if (!c) return;
      const r = document.createElementNS(ns, "rect");
      const bh = Math.max(2, (c / max) * ht);
      r.setAttribute("x", String(i * bw));
      r.setAttribute("y", String(ht - bh));
      r.setAttribute("width", String(Math.max(1, bw - 1)));
      r.setAttribute("height", String(bh));
      const t = document.createElementNS(ns, "title");
      t.textContent = `${c} would change`;
      r.appendChild(t);
      svg.appendChild(r);
    });
    return svg;
  }

  async function loadReported() {
    const body = $("reported-body");
    try {
      const r = await api(`/admin/policy/reported${qs({ since: $("reported-window").value })}`);
      clear(body);
      for (const rule of r.rules || []) {
        body.appendChild(h("tr", { dataset: { rule: `${rule.policy}/${rule.rule}` } },
          h("td", {}, displaySafe(rule.source)),
          h("td", { className: "mono small" }, `${displaySafe(rule.policy)} / ${displaySafe(rule.rule)}`),
          h("td", { className: "num" }, String(rule.would_change)),
          h("td", { className: "num" }, String(rule.no_change)),
          h("td", { className: "num" }, String(rule.errors)),
          h("td", {}, sparkline(rule.buckets, r.since, r.until, r.bucket_secs))));
      }
      $("reported-empty").hidden = (r.rules || []).length > 0;
    } catch (e) {
      announce(describeError(e, "Loading the report-only rules"), "error");
    }
  }

  // A busy fleet reports many calls a second: reload the chart at most every 5 s.
  let reportedTimer = null;
  function scheduleReported() {
    if (reportedTimer) return;
    reportedTimer = setTimeout(() => { reportedTimer = null; if (state.page === "audit") loadReported(); }, 5000);
  }

  // ---------------------------------------------------------------------------------------
  // Activity over time: inline SVG charts of GET /admin/activity. Every series has a text
  // legend and a fill pattern of its own (not colour alone), every bucket is a focusable
  // element with its numbers as its accessible name, and each chart has its table.

  const SVG_NS = "http://www.w3.org/2000/svg";
  const OUTCOMES = [
    { key: "ok", label: "OK", cls: "ok" },
    { key: "refused", label: "Refused", cls: "refused" },
    { key: "queued", label: "Queued", cls: "queued" },
    { key: "unavailable", label: "Unavailable", cls: "unavailable" },
  ];

  function svg(tag, attrs, ...children) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) if (v !== null && v !== undefined) node.setAttribute(k, String(v));
    for (const c of children.flat()) if (c) node.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    return node;
  }

  /** Fill patterns (per chart, ids must be unique in the document). */
  function patterns(prefix) {
    const stripe = (id, angle) => svg("pattern", { id: `${prefix}-${id}`, patternUnits: "userSpaceOnUse", width: 6, height: 6, patternTransform: `rotate(${angle})` },
      svg("rect", { width: 6, height: 6, class: `pat-bg pat-${id}` }), svg("line", { x1: 0, y1: 0, x2: 0, y2: 6, class: "pat-line" }));
    return svg("defs", {},
      stripe("refused", 45), stripe("unavailable", -45), stripe("decided", 90),
      svg("pattern", { id: `${prefix}-queued`, patternUnits: "userSpaceOnUse", width: 6, height: 6 },
        svg("rect", { width: 6, height: 6, class: "pat-bg pat-queued" }), svg("circle", { cx: 3, cy: 3, r: 1.4, class: "pat-dot" })));
  }

  function fill(prefix, cls) { return cls === "ok" || cls === "created" ? null : `url(#${prefix}-${cls})`; }

  function legend(items) {
    return h("ul", { className: "legend" }, items.map((i) => h("li", {}, h("span", { className: `swatch swatch-${i.cls}`, attrs: { "aria-hidden": "true" } }), i.label)));
  }

  /** An instant as the charts name it: hh:mm today, with the day before it otherwise (a
   * 24 or 48 hour window has each hh:mm more than once). */
  function clock(t) {
    const d = new Date(t);
    const time = `${String(d.getHours()).padStart(2, "0")}:${String(d.getMinutes()).padStart(2, "0")}`;
    if (d.toDateString() === new Date().toDateString()) return time;
    return `${d.toLocaleDateString("en-US", { month: "short", day: "numeric" })}, ${time}`;
  }

  /** Bars per bucket, stacked by `series`, with an optional line over them. */
  function chart(container, { prefix, since, until, bucketSecs, rows, series, line, unit, label, describe }) {
    const W = 900, H = 200, L = 44, B = 22, T = 8;
    const slots = Math.max(1, Math.ceil((new Date(until) - new Date(since)) / 1000 / bucketSecs));
    const slotW = (W - L) / slots;
    const total = (r) => series.reduce((a, s) => a + (r[s.key] || 0), 0);
    const max = Math.max(1, ...rows.map(total), ...(line ? rows.map((r) => r[line.key] || 0) : []));
    const y = (v) => T + (H - T - B) * (1 - v / max);
    const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart-svg", role: "group", "aria-label": label });
    root.appendChild(patterns(prefix));
    root.appendChild(svg("line", { x1: L, y1: H - B, x2: W, y2: H - B, class: "axis" }));
    root.appendChild(svg("text", { x: L - 6, y: T + 10, class: "tick", "text-anchor": "end" }, `${Math.round(max)}${unit || ""}`));
    root.appendChild(svg("text", { x: L - 6, y: H - B, class: "tick", "text-anchor": "end" }, "0"));
    root.appendChild(svg("text", { x: L, y: H - 4, class: "tick" }, clock(since)));
    root.appendChild(svg("text", { x: W, y: H - 4, class: "tick", "text-anchor": "end" }, clock(until)));
    const points = [];
    for (const r of rows) {
      const i = Math.floor((new Date(r.at) - new Date(since)) / 1000 / bucketSecs);
      const x = L + i * slotW;
      const parts = series.filter((s) => r[s.key]).map((s) => `${r[s.key]} ${s.label.toLowerCase()}`);
      const lineText = line && r[line.key] != null ? `, ${line.label.toLowerCase()} ${r[line.key]}${unit || ""}` : "";
      const name = `${clock(r.at)}: ${parts.join(", ") || "none"}${lineText}${describe ? describe(r) : ""}`;
      const g = svg("g", { class: "bucket", tabindex: 0, role: "img", "aria-label": name, "data-at": r.at });
      g.appendChild(svg("title", {}, name));
      let base = 0;
      for (const s of series) {
        const v = r[s.key] || 0;
        if (!v) continue;
        const top = y(base + v);
        g.appendChild(svg("rect", { x: x + 0.5, y: top, width: Math.max(1, slotW - 1), height: Math.max(1, y(base) - top), class: `bar bar-${s.cls}`, fill: fill(prefix, s.cls), "data-series": s.key, "data-value": v }));
        base += v;
      }
      container.dataset.buckets = String(rows.length);
      root.appendChild(g);
      if (line && r[line.key] != null) points.push(`${x + slotW / 2},${y(r[line.key])}`);
    }
    if (line && points.length) root.appendChild(svg("polyline", { points: points.join(" "), class: `line line-${line.cls}` }));
    replaceChildren(container, root, legend([...series, ...(line ? [line] : [])]));
  }

  /** Two lines (p50 solid, p99 dashed), one point per bucket. */
  function latencyChart(container, { since, until, bucketSecs, rows }) {
    const W = 900, H = 160, L = 44, B = 22, T = 8;
    const slots = Math.max(1, Math.ceil((new Date(until) - new Date(since)) / 1000 / bucketSecs));
    const slotW = (W - L) / slots;
    const max = Math.max(1, ...rows.map((r) => r.p99_ms || 0));
    const y = (v) => T + (H - T - B) * (1 - v / max);
    const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart-svg", role: "group", "aria-label": "Latency per bucket" });
    root.appendChild(svg("line", { x1: L, y1: H - B, x2: W, y2: H - B, class: "axis" }));
    root.appendChild(svg("text", { x: L - 6, y: T + 10, class: "tick", "text-anchor": "end" }, `${max} ms`));
    root.appendChild(svg("text", { x: L, y: H - 4, class: "tick" }, clock(since)));
    root.appendChild(svg("text", { x: W, y: H - 4, class: "tick", "text-anchor": "end" }, clock(until)));
    for (const [key, cls] of [["p99_ms", "p99"], ["p50_ms", "p50"]]) {
      const pts = rows.filter((r) => r[key] != null).map((r) => {
        const i = Math.floor((new Date(r.at) - new Date(since)) / 1000 / bucketSecs);
        return `${L + i * slotW + slotW / 2},${y(r[key])}`;
      });
      if (pts.length) root.appendChild(svg("polyline", { points: pts.join(" "), class: `line line-${cls}` }));
    }
    for (const r of rows) {
      if (r.p50_ms == null) continue;
      const i = Math.floor((new Date(r.at) - new Date(since)) / 1000 / bucketSecs);
      const name = `${clock(r.at)}: p50 ${r.p50_ms} ms, p99 ${r.p99_ms} ms`;
      const g = svg("g", { class: "bucket", tabindex: 0, role: "img", "aria-label": name });
      g.appendChild(svg("title", {}, name));
      g.appendChild(svg("circle", { cx: L + i * slotW + slotW / 2, cy: y(r.p99_ms), r: 3, class: "point point-p99" }));
      g.appendChild(svg("rect", { x: L + i * slotW + slotW / 2 - 3, y: y(r.p50_ms) - 3, width: 6, height: 6, class: "point point-p50" }));
      root.appendChild(g);
    }
    replaceChildren(container, root, legend([{ cls: "p50", label: "p50 (solid, squares)" }, { cls: "p99", label: "p99 (dashed, circles)" }]));
  }

  /** The kind of a refusal code, for the refusals chart (the table keeps every code). */
  function refusalKind(code) {
    if (/^(unauthenticated|invalid_token|insufficient_scope)$/.test(code)) return "identity";
    if (/^(rate_limited|cost_budget_exhausted|cost_exceeded|cost_explain_analyze)$/.test(code)) return "limits";
    if (/^(access_denied|policy_denied|no_grant|identity_not_mapped|masked_column_misuse|not_a_sql_source|approval_needs_literals)$/.test(code)) return "access";
    if (/^(unknown_source|source_disabled)$/.test(code)) return "source";
    return "input";
  }
  const REFUSAL_KINDS = [
    { key: "identity", label: "Identity", cls: "ok" },
    { key: "access", label: "Access and policy", cls: "refused" },
    { key: "limits", label: "Rate and cost limits", cls: "unavailable" },
    { key: "input", label: "Input (SQL, arguments)", cls: "queued" },
    { key: "source", label: "Source", cls: "decided" },
  ];

  /** One band per source and replica: the breaker's state between its transitions. */
  function circuitTimeline(container, { since, until, transitions }) {
    const byBand = new Map();
    for (const t of [...transitions].reverse()) {
      const key = `${t.source_id} · ${String(t.replica).slice(0, 8)}`;
      if (!byBand.has(key)) byBand.set(key, []);
      byBand.get(key).push(t);
    }
    if (!byBand.size) { replaceChildren(container, h("p", { className: "empty" }, "No circuit changed in this window.")); return; }
    const W = 900, L = 170, row = 26, H = row * byBand.size + 20;
    const t0 = new Date(since).getTime(), t1 = new Date(until).getTime();
    const x = (t) => L + (W - L) * Math.min(1, Math.max(0, (new Date(t).getTime() - t0) / (t1 - t0)));
    const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart-svg", role: "group", "aria-label": "Circuit states over time" });
    root.appendChild(patterns("tl"));
    const cls = { closed: "ok", half_open: "queued", open: "refused" };
    let i = 0;
    for (const [band, list] of byBand) {
      const y = 4 + i * row;
      root.appendChild(svg("text", { x: 4, y: y + 16, class: "tick" }, band));
      let from = since, state = list[0].from_state;
      const segments = [];
      for (const t of list) { segments.push([from, t.at, state]); from = t.at; state = t.to_state; }
      segments.push([from, until, state]);
      for (const [a, b, s] of segments) {
        const name = `${band}: ${s.replace("_", " ")} from ${clock(a)} to ${clock(b)}`;
        const g = svg("g", { class: "bucket", tabindex: 0, role: "img", "aria-label": name, "data-state": s });
        g.appendChild(svg("title", {}, name));
        g.appendChild(svg("rect", { x: x(a), y, width: Math.max(1, x(b) - x(a)), height: row - 8, class: `bar bar-${cls[s] || "ok"}`, fill: fill("tl", cls[s] || "ok") }));
        root.appendChild(g);
      }
      i++;
    }
    root.appendChild(svg("text", { x: L, y: H - 2, class: "tick" }, clock(since)));
    root.appendChild(svg("text", { x: W, y: H - 2, class: "tick", "text-anchor": "end" }, clock(until)));
    replaceChildren(container, root, legend([{ cls: "ok", label: "Closed" }, { cls: "queued", label: "Half open" }, { cls: "refused", label: "Open" }]));
  }

  /** A source's calls per bucket in a small strip: solid bars for calls answered, hollow
   * bars stacked on them for calls refused or unavailable (shape, not colour, tells them
   * apart); its name says the peak and when failures began. */
  function sparkline({ since, until, bucketSecs, rows, name }) {
    const W = 168, H = 28;
    const slots = Math.max(1, Math.ceil((new Date(until) - new Date(since)) / 1000 / bucketSecs));
    const slotW = W / slots;
    const max = Math.max(1, ...rows.map((b) => b.calls));
    const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, class: "spark", role: "img", "aria-label": name });
    for (const b of rows) {
      const x = Math.floor((new Date(b.at) - new Date(since)) / 1000 / bucketSecs) * slotW;
      const bad = b.refused + b.unavailable;
      const good = b.calls - bad;
      const hGood = (H - 2) * good / max, hBad = (H - 2) * bad / max;
      if (good) root.appendChild(svg("rect", { x, y: H - hGood, width: Math.max(1, slotW - 0.5), height: hGood, class: "spark-ok" }));
      if (bad) root.appendChild(svg("rect", { x: x + 0.5, y: H - hGood - hBad, width: Math.max(1, slotW - 1.5), height: Math.max(1, hBad), class: "spark-bad" }));
    }
    return root;
  }

  /** The Audit page's filter set to a top talker's records of the charted window (and
   * source, when one is charted). */
  function auditFor(identity, source, since, until) {
    // datetime-local wants local time without a zone, to the second.
    const local = (iso) => {
      const d = new Date(iso);
      const p = (n) => String(n).padStart(2, "0");
      return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
    };
    $("audit-identity").value = identity === "(others)" ? "" : identity;
    $("audit-source").value = source || "";
    $("audit-outcome").value = "";
    $("audit-since").value = local(since);
    $("audit-until").value = local(until);
  }

  /** Sources listed before "Show all". */
  const SUMMARY_ROWS = 10;
  let lastActivity = null;

  /** One row per source of the window (fleet view): its totals, its calls over time, and
   * the first bucket in which it was unavailable; the troubled ones first. */
  function sourcesSummary(r) {
    const changes = new Map();
    for (const t of r.circuit || []) changes.set(t.source_id, (changes.get(t.source_id) || 0) + 1);
    const rows = (r.sources || []).map((s) => {
      const t = { id: s.source, buckets: s.buckets || [], calls: 0, refused: 0, unavailable: 0, hits: 0, misses: 0, p99: null, firstDown: null };
      for (const b of t.buckets) {
        t.calls += b.calls; t.refused += b.refused; t.unavailable += b.unavailable;
        t.hits += b.cache_hits || 0; t.misses += b.cache_misses || 0;
        if (b.p99_ms != null) t.p99 = Math.max(t.p99 ?? 0, b.p99_ms);
        if (b.unavailable && !t.firstDown) t.firstDown = b.at;
      }
      return t;
    }).sort((a, b) => b.unavailable - a.unavailable || b.refused - a.refused || b.calls - a.calls
      || String(a.id).localeCompare(String(b.id), "en", { numeric: true }));
    const body = clear($("activity-sources-body"));
    const more = $("activity-sources-more");
    const shown = more.getAttribute("aria-expanded") === "true" ? rows.length : SUMMARY_ROWS;
    more.hidden = rows.length <= SUMMARY_ROWS;
    more.textContent = more.getAttribute("aria-expanded") === "true" ? `Show the first ${SUMMARY_ROWS} only` : `Show all ${rows.length} sources`;
    for (const t of rows.slice(0, shown)) {
      const label = t.id == null ? "(no source named)" : displaySafe(t.id);
      const peak = t.buckets.reduce((m, b) => (b.calls > m.calls ? b : m), { calls: 0 });
      const name = `${label}: ${t.calls} calls, at most ${peak.calls} per bucket${peak.at ? ` (${clock(peak.at)})` : ""}`
        + (t.firstDown ? `; unavailable from ${clock(t.firstDown)}` : "") + (t.refused ? `; ${t.refused} refused` : "");
      const cell = t.id == null ? h("td", {}, label)
        : h("td", {}, h("button", { type: "button", className: "btn btn-quiet btn-small", onclick: () => chooseSource(t.id) }, label));
      const reads = t.hits + t.misses;
      body.appendChild(h("tr", { dataset: { source: t.id ?? "" } }, cell,
        h("td", {}, sparkline({ since: r.since, until: r.until, bucketSecs: r.bucket_secs, rows: t.buckets, name })),
        h("td", { className: "num" }, String(t.calls)), h("td", { className: "num" }, String(t.refused)),
        h("td", { className: "num" }, String(t.unavailable)),
        h("td", {}, t.firstDown ? h("time", { attrs: { datetime: t.firstDown }, title: absTime(t.firstDown) }, clock(t.firstDown)) : "—"),
        h("td", { className: "num" }, t.p99 ?? "—"),
        h("td", { className: "num" }, reads ? `${Math.round(t.hits / reads * 100)} % of ${reads}` : "—"),
        h("td", { className: "num", title: r.circuit_truncated ? "the window has more transitions than the API lists: at least this many" : null },
          `${changes.get(t.id) || 0}${r.circuit_truncated ? "+" : ""}`)));
    }
    $("activity-sources-empty").hidden = rows.length > 0;
  }

  /** Charts one source alone (from the summary's buttons), and moves focus to its charts. */
  function chooseSource(id) {
    const select = $("activity-source");
    if (![...select.options].some((o) => o.value === id)) select.appendChild(h("option", { value: id }, displaySafe(id)));
    select.value = id;
    loadActivity().then((drawn) => { if (drawn) $("calls-title").focus(); });
  }

  let sourcesListed = false;
  let activityKey = 0; // bumped on sign-out: answers asked before it are dropped

  /** Forgets the Activity page's data and choices (on sign-out: the next key may see less). */
  function resetActivity() {
    const select = $("activity-source");
    while (select.options.length > 1) select.remove(1);
    select.value = "";
    sourcesListed = false;
    activityKey++;
    lastActivity = null;
    activityLoads++; // an answer still on its way is not drawn
    for (const id of ["activity-sources-body", "calls-body", "approvals-series-body", "circuit-history-body", "talkers-body",
      "calls-chart", "latency-chart", "cache-chart", "refusals-chart", "cost-chart", "circuit-timeline", "approvals-chart"]) clear($(id));
    delete $("page-activity").dataset.loaded;
  }

  /** The source filter's options, once (a source chosen from the table before may be there
   * already). */
  async function activitySources() {
    if (sourcesListed) return;
    const select = $("activity-source");
    const asked = activityKey;
    try {
      const r = await api("/admin/sources");
      if (asked !== activityKey) return; // signed out meanwhile
      const have = new Set([...select.options].map((o) => o.value));
      for (const s of r.sources || []) if (!have.has(s.id)) select.appendChild(h("option", { value: s.id }, displaySafe(s.id)));
      sourcesListed = true;
    } catch (_) { /* the fleet view works without the list; asked again next load */ }
  }

  let activityLoads = 0, activityPending = 0;
  let activityDrawnAt = 0, activityBucketSecs = 60;

  /** The page's refresh, every 10 s for short windows and about every thirtieth of a bucket
   * for long ones (a day's 30-minute buckets every minute: each ask of a day of a large
   * fleet costs the gateway a fraction of a second); never while a load is on its way, and
   * never under the keyboard (see `underKeyboard`). */
  function activityTick() {
    if (state.page !== "activity" || document.hidden || activityPending) return;
    if (Date.now() - activityDrawnAt < Math.max(10000, activityBucketSecs * 1000 / 30) - 500) return;
    if (underKeyboard()) {
      $("activity-paused").hidden = false;
      const page = $("page-activity");
      page.dataset.deferred = String(Number(page.dataset.deferred || 0) + 1);
      return;
    }
    loadActivity();
  }

  /** Whether keyboard focus (not a mouse click) is on something a redraw would replace (a
   * bucket, a timeline stretch, a row's button): the page then waits, saying so, rather
   * than drop the user's place, and catches up once focus moves on. */
  function underKeyboard() {
    const a = document.activeElement;
    return Boolean(a && a.closest && a.matches(":focus-visible") && a.closest("#page-activity .chart, #page-activity tbody"));
  }

  async function loadActivity() {
    activitySources();
    const source = $("activity-source").value;
    // A slower answer to an earlier choice (or to the timer) must not paint over a newer one.
    const load = ++activityLoads;
    activityPending++;
    try {
      const r = await api(`/admin/activity${qs({ since: $("activity-window").value, source })}`);
      if (load !== activityLoads) return false;
      const drawing = performance.now();
      const series = source ? ((r.sources || []).find((s) => s.source === source) || { buckets: [] }).buckets : r.fleet;
      const frame = { since: r.since, until: r.until, bucketSecs: r.bucket_secs, rows: series || [] };
      $("activity-horizon").textContent = `What the fleet's calls did, from every replica's minutes: kept ${r.retain_hours} hours, at most ${Math.round(r.flush_interval_ms / 1000)} s behind; buckets of ${Math.round(r.bucket_secs / 60)} min.`;
      $("activity-sources").hidden = Boolean(source);
      if (!source) {
        lastActivity = r;
        sourcesSummary(r);
      }
      chart($("calls-chart"), { ...frame, prefix: "calls", series: OUTCOMES, label: "Calls per bucket by outcome" });
      latencyChart($("latency-chart"), frame);
      const reads = frame.rows.filter((b) => b.cache_hits || b.cache_misses).map((b) => ({ at: b.at, hits: b.cache_hits, misses: b.cache_misses }));
      if (reads.length) {
        chart($("cache-chart"), { ...frame, rows: reads, prefix: "cache", label: "Reads answered per bucket, from the cache or the source",
          series: [{ key: "hits", label: "Cache hits", cls: "ok" }, { key: "misses", label: "Misses (read from the source)", cls: "decided" }],
          describe: (b) => `, hit ratio ${Math.round(b.hits / (b.hits + b.misses) * 100)} %` });
      } else {
        replaceChildren($("cache-chart"), h("p", { className: "muted small" }, "No read was answered in this window."));
      }
      const kinds = frame.rows.filter((b) => b.refused).map((b) => {
        const row = { at: b.at };
        for (const [code, n] of Object.entries(b.refused_by_code || {})) row[refusalKind(code)] = (row[refusalKind(code)] || 0) + n;
        return row;
      });
      if (kinds.length) chart($("refusals-chart"), { ...frame, rows: kinds, prefix: "refusals", series: REFUSAL_KINDS, label: "Refusals per bucket by kind" });
      else replaceChildren($("refusals-chart"), h("p", { className: "muted small" }, "No call was refused in this window."));
      const costRows = frame.rows.filter((b) => Object.keys(b.cost || {}).length).map((b) => ({ at: b.at, admitted: b.cost.admitted || 0, refused: (b.cost.refused || 0) + (b.cost.budget_exhausted || 0), queued: b.cost.queued || 0 }));
      if (costRows.length) {
        chart($("cost-chart"), { ...frame, rows: costRows, prefix: "cost", label: "Cost admission per bucket",
          series: [{ key: "admitted", label: "Admitted", cls: "ok" }, { key: "refused", label: "Refused (over a limit or budget)", cls: "refused" }, { key: "queued", label: "Queued by cost", cls: "queued" }] });
      } else {
        replaceChildren($("cost-chart"), h("p", { className: "muted small" }, "No read was planned for cost admission in this window."));
      }
      circuitTimeline($("circuit-timeline"), { since: r.since, until: r.until, transitions: r.circuit || [] });
      const body = clear($("calls-body"));
      for (const b of frame.rows) {
        body.appendChild(h("tr", { dataset: { at: b.at } },
          h("td", {}, absTime(b.at)), h("td", { className: "num" }, String(b.calls)), h("td", { className: "num" }, String(b.ok)),
          h("td", { className: "num" }, String(b.refused)), h("td", { className: "num" }, String(b.queued)), h("td", { className: "num" }, String(b.unavailable)),
          h("td", { className: "num" }, b.p50_ms ?? "—"), h("td", { className: "num" }, b.p99_ms ?? "—"),
          h("td", { className: "num" }, b.cache_hit_ratio == null ? "—" : `${Math.round(b.cache_hit_ratio * 100)} %`),
          h("td", { className: "small" }, Object.entries(b.refused_by_code || {}).map(([c, n]) => `${c} ${n}`).join(", ")),
          h("td", { className: "small" }, Object.entries(b.cost || {}).map(([c, n]) => `${c} ${n}`).join(", "))));
      }
      const approvals = (r.approvals || []).filter((a) => a.created || a.decided || a.pending);
      chart($("approvals-chart"), { since: r.since, until: r.until, bucketSecs: r.bucket_secs, rows: approvals, prefix: "appr",
        series: [{ key: "created", label: "Created", cls: "created" }, { key: "decided", label: "Decided", cls: "decided" }],
        line: { key: "pending", label: "Waiting", cls: "pending" }, label: "Approvals per bucket" });
      const ab = clear($("approvals-series-body"));
      for (const a of approvals) ab.appendChild(h("tr", {}, h("td", {}, absTime(a.at)), h("td", { className: "num" }, String(a.created)), h("td", { className: "num" }, String(a.decided)), h("td", { className: "num" }, String(a.pending))));
      const ch = clear($("circuit-history-body"));
      for (const t of r.circuit || []) {
        ch.appendChild(h("tr", { dataset: { to: t.to_state, source: t.source_id } },
          h("td", {}, absTime(t.at)), h("td", {}, displaySafe(t.source_id)),
          h("td", {}, h("span", { className: `badge badge-circuit-${t.from_state}` }, t.from_state), " → ", h("span", { className: `badge badge-circuit-${t.to_state}` }, t.to_state)),
          h("td", { className: "small" }, displaySafe(t.reason)), h("td", { className: "mono small", title: t.replica }, String(t.replica).slice(0, 8))));
      }
      $("circuit-history-empty").hidden = (r.circuit || []).length > 0;
      const tb = clear($("talkers-body"));
      for (const t of r.top_talkers || []) {
        const link = h("a", { href: "#/audit", onclick: () => auditFor(t.identity, source, r.since, r.until) }, displaySafe(t.identity));
        tb.appendChild(h("tr", { dataset: { identity: t.identity } }, h("td", {}, link), h("td", { className: "num" }, String(t.calls)), h("td", { className: "num" }, String(t.refused)), h("td", { className: "num" }, String(t.queued))));
      }
      $("talkers-empty").hidden = (r.top_talkers || []).length > 0;
      // How long drawing took, apart from the answer's wait (the browser test reports it).
      performance.clearMeasures("interlock.activity.draw");
      performance.measure("interlock.activity.draw", { start: drawing });
      activityDrawnAt = Date.now();
      activityBucketSecs = r.bucket_secs;
      $("activity-paused").hidden = true;
      Object.assign($("page-activity").dataset, { since: r.since, bucket: r.bucket_secs });
      $("page-activity").dataset.loaded = r.until;
      return true;
    } catch (e) {
      if (load === activityLoads) announce(describeError(e, "Loading the activity"), "error");
      return false;
    } finally {
      activityPending--;
    }
  }

  async function checkpointNow() {
    const btn = $("checkpoint-now");
    btn.disabled = true;
    try {
      const c = await api("/admin/audit/checkpoints", { method: "POST" });
      announce(`Signed a checkpoint of ${plural(c.tree_size, "record")}.`, "ok");
    } catch (e) {
      announce(describeError(e, "Signing a checkpoint"), "error");
    } finally {
      btn.disabled = false;
      loadCheckpoints();
    }
  }

  let verifying = false;

  async function verifyChain() {
    if (verifying) return;
    verifying = true;
    const chain = $("chain");
    const btn = $("chain-verify");
    btn.disabled = true;
    chain.dataset.state = "checking";
    $("chain-text").textContent = "Verifying the chain…";
    try {
      const r = await api("/admin/audit/verify");
      if (r.ok) {
        chain.dataset.state = "ok";
        $("chain-text").textContent = `Chain intact: ${plural(r.records, "record")} verified`;
      } else {
        chain.dataset.state = "broken";
        const b = r.first_break || {};
        $("chain-text").textContent = `Chain BROKEN at seq ${b.seq ?? "?"}: ${displaySafe(b.reason || "unknown reason")} (${plural(r.records, "record")} intact before it)`;
        announce(`The audit chain is broken at seq ${b.seq ?? "?"}.`, "error");
      }
      chain.title = `Checked ${absTime(new Date().toISOString())}`;
    } catch (e) {
      chain.dataset.state = "unknown";
      const msg = describeError(e, "Verifying the audit chain");
      $("chain-text").textContent = "Chain status unknown";
      announce(msg, "error");
    } finally {
      verifying = false;
      btn.disabled = false;
    }
  }

  // ---------------------------------------------------------------------------------------
  // Wiring.

  function init() {
    $("signin-form").addEventListener("submit", (e) => {
      e.preventDefault();
      const key = $("signin-key").value.trim();
      if (!key) {
        $("signin-error").textContent = "Enter an operator or approver key.";
        $("signin-key").setAttribute("aria-invalid", "true");
        $("signin-key").focus();
        return;
      }
      signIn(key);
    });
    $("signout").addEventListener("click", () => signOut(""));
    $("reported-window").addEventListener("change", loadReported);
    $("activity-filter").addEventListener("submit", (e) => { e.preventDefault(); loadActivity(); });
    for (const ev of WEBHOOK_EVENTS) {
      const id = `webhook-event-${ev.replace(".", "-")}`;
      $("webhook-events").appendChild(h("label", { className: "check", attrs: { for: id } }, h("input", { type: "checkbox", id, value: ev, checked: ev.startsWith("approval.") }), ev));
    }
    $("webhook-form").addEventListener("submit", registerWebhook);
    $("webhook-secret-hide").addEventListener("click", () => { $("webhook-secret").hidden = true; $("webhook-secret-value").textContent = ""; });
    $("webhook-secret-copy").addEventListener("click", async () => {
      try { await navigator.clipboard.writeText($("webhook-secret-value").textContent); announce("Copied the secret.", "ok"); }
      catch (_) { announce("Copy failed: select the secret and copy it.", "warn"); }
    });
    for (const b of document.querySelectorAll("[data-show-table]")) {
      b.addEventListener("click", () => {
        const details = $(b.dataset.showTable);
        details.open = true;
        details.querySelector("summary").focus();
      });
    }
    $("activity-sources-more").addEventListener("click", () => {
      const more = $("activity-sources-more");
      more.setAttribute("aria-expanded", String(more.getAttribute("aria-expanded") !== "true"));
      if (lastActivity) sourcesSummary(lastActivity);
    });
    for (const b of document.querySelectorAll("[data-focus]")) b.addEventListener("click", () => $(b.dataset.focus).focus());
    $("activity-window").addEventListener("change", loadActivity);
    $("activity-source").addEventListener("change", loadActivity);
    window.addEventListener("hashchange", () => route(false));

    $("sources-refresh").addEventListener("click", async () => {
      await loadSources();
      announce("Sources refreshed.", "info");
    });
    $("circuit-form").addEventListener("submit", submitCircuit);
    $("circuit-cancel").addEventListener("click", closeCircuitDialog);
    $("circuit-dialog").addEventListener("close", () => {
      const opener = circuitDialog.opener;
      // Back where the keyboard user was: the button, or the next usable one in its row.
      const row = opener && opener.closest("tr");
      const target = opener && opener.isConnected && !opener.disabled ? opener : row && row.querySelector("button:not(:disabled)");
      (target || $("sources-title")).focus();
    });

    $("approvals-refresh").addEventListener("click", async () => {
      await Promise.all([loadPending(), loadHistory()]);
      announce("Approvals refreshed.", "info");
    });
    $("history-filter").addEventListener("submit", (e) => {
      e.preventDefault();
      state.historyFilter = { state: $("history-state").value, source: $("history-source").value.trim() };
      loadHistory();
    });
    $("history-state").addEventListener("change", () => {
      state.historyFilter = { state: $("history-state").value, source: $("history-source").value.trim() };
      loadHistory();
    });
    $("history-more").addEventListener("click", () => loadHistory({ more: true }));

    $("audit-filter").addEventListener("submit", (e) => { e.preventDefault(); loadAudit({ fresh: true }); });
    $("audit-clear").addEventListener("click", () => {
      for (const id of ["audit-identity", "audit-source", "audit-since", "audit-until"]) $(id).value = "";
      $("audit-outcome").value = "";
      loadAudit({ fresh: true });
    });
    $("audit-older").addEventListener("click", () => loadAudit({ index: state.audit.index + 1 }));
    $("audit-newer").addEventListener("click", () => loadAudit({ index: Math.max(0, state.audit.index - 1) }));
    $("audit-newest").addEventListener("click", () => loadAudit({ index: 0 }));
    $("chain-verify").addEventListener("click", verifyChain);
    $("checkpoint-now").addEventListener("click", checkpointNow);

    const saved = sessionStorage.getItem(KEY_STORAGE);
    if (saved) signIn(saved, { restoring: true });
    else showSignIn("");
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
