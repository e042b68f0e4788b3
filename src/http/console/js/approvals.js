// The Approvals page: writes waiting for a decision (a card each, oldest first, decided here
// by an approver, read-only for an operator) and the history of decided ones, both kept
// current by the events stream.

import { $, h, clear, replaceChildren } from "./dom.js";
import { api, describeError, qs } from "./api.js";
import { decisionsEl, effectEl, progressEl, resultEl, statementEl, touchesEl, verbOf } from "./approval-view.js";
import { onEvent } from "./events.js";
import { absTime, displaySafe, label, oneLine, plural, shortId } from "./format.js";
import { session } from "./session.js";
import { placeAt } from "./tables.js";
import { announce, badge, timeEl } from "./widgets.js";

const pending = new Map(); // id -> approval
const pendingCards = new Map(); // id -> card refs
const decided = new Map(); // id -> decided approval, in the history's order (newest first)
const historyItems = new Map(); // id -> <details>
let historyNext = null;
let historyFilter = { state: "", source: "" };
let pendingLoading = null;

/** Opening the page. */
export function showApprovals() {
  loadPending();
  loadHistory();
}

/** The page's introduction, which says what this role may do here. */
export function introduceApprovals() {
  $("approvals-intro").textContent = session.role === "operator"
    ? "Writes held for a human decision, across all sources. Operators watch; approvers scoped to the source decide."
    : "Writes held for your decision on the sources you approve. New requests appear here as they arrive.";
}

/** Forgets every approval shown (on sign-out). */
export function resetApprovals() {
  historyNext = null;
  for (const m of [pending, pendingCards, decided, historyItems]) m.clear();
  clear($("pending-list"));
  clear($("history-list"));
}

/** The pending approvals (also kept fresh while another page is open: the count in the
 * navigation). */
export async function loadPending({ quiet = false } = {}) {
  if (!session.pages.has("approvals")) return;
  if (pendingLoading) return pendingLoading;
  pendingLoading = (async () => {
    try {
      const data = await api(`/admin/approvals${qs({ state: "pending", limit: 200 })}`);
      const fresh = new Map((data.approvals || []).map((a) => [a.id, a]));
      for (const id of [...pending.keys()]) if (!fresh.has(id)) pending.delete(id);
      for (const [id, a] of fresh) pending.set(id, a);
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
  const f = historyFilter;
  if (f.state && a.state !== f.state) return false;
  if (f.source && a.source_id !== f.source) return false;
  return true;
}

export async function loadHistory({ quiet = false, more = false } = {}) {
  if (!session.pages.has("approvals")) return;
  const f = historyFilter;
  const btn = $("history-more");
  try {
    const before = more ? historyNext : null;
    if (more) { btn.disabled = true; btn.textContent = "Loading…"; }
    const data = await api(`/admin/approvals${qs({ state: f.state, source: f.source, limit: 50, before })}`);
    if (!more) { decided.clear(); for (const el of historyItems.values()) el.remove(); historyItems.clear(); }
    for (const a of data.approvals || []) if (historyMatches(a)) decided.set(a.id, a);
    historyNext = data.next_before || null;
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
  const items = [...pending.values()].sort((a, b) => String(a.created_at).localeCompare(String(b.created_at)));
  for (const [id, refs] of pendingCards) {
    if (!pending.has(id)) removeCard(id, refs);
  }
  // Oldest first (the one waiting longest on top). Cards are moved only when out of order,
  // so typing a reason is never interrupted by a new arrival.
  items.forEach((a, i) => {
    let refs = pendingCards.get(a.id);
    if (!refs) {
      refs = buildCard(a);
      pendingCards.set(a.id, refs);
    }
    placeAt(list, refs.root, i);
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
  pendingCards.delete(id);
  if (hadFocus) {
    const target = (next && next.querySelector("textarea")) || $("approvals-title");
    target.focus();
  }
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
  if (session.role === "approver") {
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

/** Says that the requester waits on this approval as an MCP task (its decision ends the wait). */
function taskMarker(a) {
  if (!a.waited_on_as_task) return null;
  const waiting = a.state === "pending" || a.state === "approved" || a.state === "executing";
  return h("span", {
    className: "task-marker",
    dataset: { task: "true" },
    title: "The requesting agent asked for an MCP task: it is told the outcome as soon as this approval ends, without calling again.",
  }, waiting ? "agent waiting (MCP task)" : "MCP task");
}

function fillCard(refs, a) {
  refs.root.dataset.state = a.state;
  replaceChildren(refs.title, h("span", { className: "verb" }, verbOf(a)), " on ", h("span", { className: "mono" }, a.source_id), h("span", { className: "muted id" }, ` #${shortId(a.id)}`));
  replaceChildren(refs.badge, badge("state", a.state));
  replaceChildren(refs.meta,
    h("span", {}, "Requested by ", h("strong", {}, displaySafe(a.requester))),
    taskMarker(a),
    h("span", {}, timeEl(a.created_at)),
    h("span", {}, "expires ", timeEl(a.expires_at, "until")),
    h("span", { className: "mono small muted", title: "Approval id" }, a.id));
  if (!refs.statement.firstChild) replaceChildren(refs.statement, statementEl(a));
  replaceChildren(refs.touches, touchesEl(a.touches));
  replaceChildren(refs.effect, effectEl(a));
  // The preview is computed in the background after the write is queued: look again.
  if (!a.preview && !refs.previewTimer) {
    refs.previewTimer = setTimeout(() => { refs.previewTimer = null; if (pending.has(a.id)) refreshApproval(a.id); }, 1000);
  }
  replaceChildren(refs.progress, progressEl(a));
  replaceChildren(refs.decisions, decisionsEl(a));
}

function setCardResult(id, text, kind) {
  const refs = pendingCards.get(id);
  if (refs) {
    refs.result.textContent = text;
    refs.result.className = `card-result result-${kind}`;
  }
}

async function decide(id, verdict) {
  const refs = pendingCards.get(id);
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
      pending.delete(id);
      renderPending();
    }
    return null;
  }
}

function upsertApproval(a, { decidedHere = false } = {}) {
  if (a.state === "pending") {
    pending.set(a.id, a);
    renderPending();
    return;
  }
  const wasPending = pending.delete(a.id);
  if (wasPending) renderPending();
  if (historyMatches(a)) {
    const isNew = !decided.has(a.id);
    if (isNew) {
      // Newest first: put it on top.
      const rest = [...decided.entries()];
      decided.clear();
      decided.set(a.id, a);
      for (const [k, v] of rest) decided.set(k, v);
    } else {
      decided.set(a.id, a);
    }
    renderHistory({ highlight: a.id, open: decidedHere || wasPending ? a.id : null });
  }
}

const ANNOUNCE_EVENT = {
  "approval.created": (ev) => [`New approval request #${shortId(ev.id)} on ${ev.source} from ${displaySafe(ev.requester)}.`, "info"],
  "approval.decided": (ev) => [`#${shortId(ev.id)} on ${ev.source}: ${displaySafe(ev.approver)} ${ev.decision === "approve" ? "approved" : "rejected"} it; now ${label(ev.state)}.`, ev.decision === "approve" ? "ok" : "warn"],
  "approval.executed": (ev) => [`#${shortId(ev.id)} on ${ev.source} finished: ${label(ev.state)}.`, ev.state === "executed" ? "ok" : "error"],
  "approval.expired": (ev) => [`#${shortId(ev.id)} on ${ev.source} expired without a decision.`, "warn"],
  "approval.returned": (ev) => [`#${shortId(ev.id)} on ${ev.source} is back for a decision: approved, it would have changed ${ev.measured} rows, more than the ${ev.estimated ?? "?"} estimated (rolled back, nothing changed).`, "warn"],
  "approval.withdrawn": (ev) => [`#${shortId(ev.id)} on ${ev.source} was withdrawn by its requester, ${displaySafe(ev.requester)}.`, "warn"],
};

async function onApprovalEvent(ev, name) {
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
  const items = [...decided.values()];
  for (const [id, el] of historyItems) {
    if (!decided.has(id)) { el.remove(); historyItems.delete(id); }
  }
  items.forEach((a, i) => {
    const old = historyItems.get(a.id);
    const el = buildHistoryItem(a);
    if (old) {
      el.open = old.open;
      const hadFocus = old.contains(document.activeElement);
      old.replaceWith(el);
      if (hadFocus) el.querySelector("summary").focus();
    }
    historyItems.set(a.id, el);
    placeAt(list, el, i);
    if (open === a.id) el.open = true;
    if (highlight === a.id) {
      el.classList.add("flash");
    }
  });
  $("history-empty").hidden = items.length > 0;
  $("history-more").hidden = !historyNext;
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
        taskMarker(a),
        h("span", { className: "mono small muted" }, a.id)),
      statementEl(a),
      touchesEl(a.touches),
      progressEl(a),
      decisionsEl(a),
      resultEl(a)));
}

/** Wires the page's buttons and filter, and the approval events it follows. */
export function initApprovals() {
  $("approvals-refresh").addEventListener("click", async () => {
    await Promise.all([loadPending(), loadHistory()]);
    announce("Approvals refreshed.", "info");
  });
  $("history-filter").addEventListener("submit", (e) => {
    e.preventDefault();
    historyFilter = { state: $("history-state").value, source: $("history-source").value.trim() };
    loadHistory();
  });
  $("history-state").addEventListener("change", () => {
    historyFilter = { state: $("history-state").value, source: $("history-source").value.trim() };
    loadHistory();
  });
  $("history-more").addEventListener("click", () => loadHistory({ more: true }));
  for (const name of Object.keys(ANNOUNCE_EVENT)) onEvent(name, onApprovalEvent);
}
