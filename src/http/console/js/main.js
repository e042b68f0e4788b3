// InterLock console: a small, framework-free single-page app served by the gateway, as
// native ES modules (no build step). This is the entry module (index.html loads it): it
// wires the pages to the session, the router and the events stream.
//
// Security rules kept throughout the console's modules:
// - the key lives in sessionStorage only and is sent in the Authorization header (never in a
//   URL, never in localStorage, never in a cookie);
// - everything from the API is rendered with textContent / text nodes, never innerHTML;
// - statements are shown from `statement_display` (control and bidi characters escaped by the
//   gateway); audit statements, which the API returns raw, get the same escaping here.
//
// Modules: dom, format, widgets, tables (shared helpers); api (the API client); session
// (sign-in); events (the live stream); charts (SVG); the pages sources (+ webhooks),
// approvals (+ approval-view), audit, activity.

import { $, clear } from "./dom.js";
import { onEvent, onReconnect, startEvents, stopEvents } from "./events.js";
import { capitalize } from "./format.js";
import { PAGES, initSession, resumeSession, session, setSessionHooks, showConsole } from "./session.js";
import { announce, tickTimes } from "./widgets.js";
import { initSources, loadSources, resetSources, showSources, sourcesTick } from "./sources.js";
import { initApprovals, introduceApprovals, loadHistory, loadPending, resetApprovals, showApprovals } from "./approvals.js";
import { initAudit, resetAudit, showAudit } from "./audit.js";
import { activityTick, initActivity, resetActivity, showActivity } from "./activity.js";

/** What opening each page loads. */
const SHOW = { sources: showSources, approvals: showApprovals, audit: showAudit, activity: showActivity };

let timers = [];

function enterConsole() {
  showConsole();
  introduceApprovals();
  startEvents();
  timers.push(setInterval(tickTimes, 1000));
  timers.push(setInterval(sourcesTick, 10000));
  timers.push(setInterval(activityTick, 10000));
  // Approvers land on Approvals; operators on Sources.
  route(true);
  // Keep the pending count in the nav fresh whatever page is open.
  if (session.page !== "approvals") loadPending({ quiet: true });
}

function leaveConsole() {
  stopEvents();
  for (const t of timers) clearInterval(t);
  timers = [];
  resetSources();
  resetApprovals();
  resetAudit();
  resetActivity();
}

// ---------------------------------------------------------------------------------------------
// Routing (hash only; the key never appears in the URL).

function defaultPage() {
  if (session.role === "approver") return "approvals";
  return ["sources", "approvals", "audit"].find((p) => session.pages.has(p));
}

function route(initial = false) {
  if (!session.key) return;
  const m = /^#\/([a-z]+)/.exec(location.hash);
  let page = m && m[1];
  if (!page || !session.pages.has(page)) {
    if (page && !session.pages.has(page) && PAGES.includes(page)) announce(`The ${page} page is not available to an ${session.role}.`, "warn");
    page = defaultPage();
    history.replaceState(null, "", `#/${page}`);
  }
  const changed = session.page !== page;
  session.page = page;
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
  SHOW[page]();
  if (changed && !initial) $(`${page}-title`).focus();
  else if (initial) $(`${page}-title`).focus({ preventScroll: true });
}

/** Reloads what is on screen (after the events stream missed some). */
function refreshAll() {
  if (!session.key) return;
  if (session.pages.has("sources") && session.page === "sources") loadSources({ quiet: true });
  loadPending({ quiet: true });
  if (session.page === "approvals") loadHistory({ quiet: true });
}

// ---------------------------------------------------------------------------------------------
// Wiring.

function init() {
  initSession();
  initSources();
  initApprovals();
  initAudit();
  initActivity();
  setSessionHooks({ enter: enterConsole, leave: leaveConsole });
  onReconnect(refreshAll);
  onEvent("lagged", (ev) => {
    announce(`Live updates fell behind (${ev.missed} events missed); reloading.`, "warn");
    refreshAll();
  });
  window.addEventListener("hashchange", () => route(false));
  resumeSession();
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
else init();
