// The Sources page's Webhooks section: registered endpoints with their counts, register,
// pause / resume, rotate the secret (shown once), test, deliveries with their attempts,
// delete. The list comes with the Sources page's refresh (showWebhooks); after a change the
// section asks for that refresh (the `refresh` given to initWebhooks).

import { $, h, clear, replaceChildren } from "./dom.js";
import { api, describeError } from "./api.js";
import { absTime, capitalize, displaySafe } from "./format.js";
import { headRow, messageRow, numCell } from "./tables.js";
import { announce, chips } from "./widgets.js";

const WEBHOOK_EVENTS = ["approval.created", "approval.decided", "approval.executed", "approval.failed", "approval.expired", "approval.withdrawn", "approval.returned", "circuit.changed", "audit.checkpoint"];

/** Attempts a delivery's log keeps (the gateway's `ATTEMPTS_KEPT`). */
const ATTEMPTS_KEPT = 20;

let webhooks = []; // GET /admin/webhooks
/** Webhooks whose deliveries are shown. */
const openDeliveries = new Set();
const deliveryLoads = new Map(); // webhook id -> newest load
let refresh = () => {};

/** Shows this list of endpoints (from GET /admin/webhooks). */
export function showWebhooks(list) {
  webhooks = list;
  renderWebhooks();
}

/** Forgets the list (on sign-out). */
export function resetWebhooks() {
  webhooks = [];
  clear($("webhooks-body"));
}

function renderWebhooks() {
  // The table is rebuilt on every refresh: keyboard focus goes back to the same action of
  // the same endpoint, and an open deliveries list keeps showing until its new one loads.
  const body = $("webhooks-body");
  const active = document.activeElement;
  const focusAt = active && body.contains(active) && active.dataset.action
    ? { webhook: active.closest("tr[data-webhook]")?.dataset.webhook, action: active.dataset.action } : null;
  const shown = new Map([...openDeliveries].map((id) => [id, $(`deliveries-${id}`)]).filter(([, box]) => box));
  const rows = [];
  for (const w of webhooks || []) {
    const paused = Boolean(w.paused_at);
    const stateText = [paused ? `Paused since ${absTime(w.paused_at)}` : "Delivering",
      w.previous_until ? `previous secret signs until ${absTime(w.previous_until)}` : null].filter(Boolean).join("; ");
    const act = (label, title, fn, cls, action) => h("button", { type: "button", className: `btn btn-small ${cls || ""}`, attrs: { "aria-label": `${label} ${w.url}`, title }, dataset: { action }, onclick: fn }, label);
    rows.push(h("tr", { dataset: { webhook: w.id, paused: String(paused) } },
      h("th", { attrs: { scope: "row" }, className: "mono small" }, displaySafe(w.url), w.format === "slack" ? h("span", { className: "tag" }, "slack") : null),
      h("td", {}, chips(w.events, "none")),
      numCell(w.pending),
      numCell(w.delivered),
      numCell(w.failed),
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
  if (!rows.length) rows.push(messageRow(7, "No webhooks are registered.", { className: "empty-cell" }));
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
    refresh();
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
    refresh();
  } catch (ex) {
    announce(describeError(ex, `${capitalize(action)} ${w.url}`), "error");
  }
}

async function rotateWebhook(w) {
  if (!window.confirm(`Rotate the signing secret of ${w.url}? The new secret is shown once; the current one keeps signing beside it for a day.`)) return;
  try {
    const r = await api(`/admin/webhooks/${encodeURIComponent(w.id)}/rotate`, { method: "POST", body: {} });
    showSecret(`New signing secret of ${w.url} (the previous one signs too until ${absTime(r.previous_valid_until)})`, r.secret);
    refresh();
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
    refresh();
  } catch (ex) {
    announce(describeError(ex, `Deleting ${w.url}`), "error");
  }
}

function toggleDeliveries(w) {
  if (openDeliveries.has(w.id)) openDeliveries.delete(w.id);
  else openDeliveries.add(w.id);
  renderWebhooks();
}

/** A delivery's attempts, oldest first: when, the endpoint's HTTP status (or that no
 * answer came, with why), and how long each took; the log keeps the newest 20. */
function attemptList(log, attempts) {
  if (!log.length) return null;
  const items = log.map((a) => h("li", { dataset: { status: a.status ?? "none" } },
    `${absTime(a.at)}: ${a.status ? `HTTP ${a.status}` : `no answer (${displaySafe(a.error || "failed")})`} (${a.ms} ms)`));
  const earlier = log.length >= ATTEMPTS_KEPT ? attempts - log.length : 0;
  return h("ol", { className: "attempts" }, earlier > 0 ? h("li", { className: "muted" }, `${earlier} earlier`) : null, items);
}

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
      headRow(["Event", "Created", "Attempts", "Status", "Last error"]),
      h("tbody", {}, list.map((d) => h("tr", { dataset: { delivery: d.id, state: d.delivered_at ? "delivered" : d.gave_up_at ? "given_up" : "pending" } },
        h("td", { className: "mono" }, displaySafe(d.event)), h("td", {}, absTime(d.created_at)),
        h("td", {}, String(d.attempts), attemptList(d.attempt_log || [], d.attempts)),
        h("td", {}, status(d)), h("td", {}, displaySafe(d.last_error || "—")))))) : h("p", { className: "muted" }, "No deliveries yet."));
  } catch (ex) {
    replaceChildren(box, h("p", { className: "error-cell" }, describeError(ex, "Loading the deliveries")));
  }
}

/** Wires the section: the event checkboxes of the form, registering, the secret box.
 * `refreshPage()` reloads the Sources page (this list with it) after a change. */
export function initWebhooks(refreshPage) {
  refresh = refreshPage;
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
}
