// The Sources page: a row per source (circuit, last error, pool, latency, cache, cost
// admission, catalog) with its Force open / close / Reset dialog, the replicas sharing the
// control database, the Webhooks section (webhooks.js) and the supervised actors. Circuit
// badges follow the events stream; the rest refreshes every 10 s while the page is open.

import { $, h, clear, replaceChildren } from "./dom.js";
import { api, describeError } from "./api.js";
import { onEvent } from "./events.js";
import { absTime, displaySafe, label, ms, oneLine, pct, plural } from "./format.js";
import { session } from "./session.js";
import { messageRow, numCell, placeAt } from "./tables.js";
import { showWebhooks, initWebhooks, resetWebhooks } from "./webhooks.js";
import { announce, badge, timeEl } from "./widgets.js";

const sources = new Map(); // id -> source_json
const sourceRows = new Map(); // id -> row refs
let sourcesLoadedAt = null;
let sourcesLoading = null;
const sourceReloads = new Map(); // id -> timer of its row's reload after a circuit event

/** Loads the page (every section); `quiet` when refreshing in the background. */
export async function loadSources({ quiet = false } = {}) {
  if (!session.pages.has("sources")) return;
  if (sourcesLoading) return sourcesLoading;
  const tbody = $("sources-body");
  if (!sources.size && !quiet) replaceChildren(tbody, messageRow(9, "Loading sources…", { rowClass: "loading-row" }));
  sourcesLoading = (async () => {
    try {
      const [data, actors, replicas, hooks] = await Promise.all([api("/admin/sources"), api("/admin/actors"), api("/admin/replicas"), api("/admin/webhooks")]);
      renderActors(actors.actors || []);
      renderReplicas(replicas.replicas || []);
      showWebhooks(hooks.webhooks || []);
      const list = (data.sources || []).slice().sort((a, b) => a.id.localeCompare(b.id));
      const seen = new Set();
      for (const s of list) {
        seen.add(s.id);
        sources.set(s.id, s);
      }
      for (const id of [...sources.keys()]) if (!seen.has(id)) sources.delete(id);
      sourcesLoadedAt = new Date();
      renderSources();
      const page = $("page-sources");
      page.dataset.refreshed = String(Number(page.dataset.refreshed || 0) + 1);
    } catch (e) {
      if (e.status === 401) return;
      const msg = describeError(e, "Loading sources");
      if (!quiet) announce(msg, "error");
      if (!sources.size) replaceChildren(tbody, messageRow(9, msg, { className: "error-cell" }));
    } finally {
      sourcesLoading = null;
    }
  })();
  return sourcesLoading;
}

/** Opening the page. */
export function showSources() {
  loadSources();
}

/** The 10 s refresh, while the page is open and the tab visible. */
export function sourcesTick() {
  if (session.page === "sources" && !document.hidden) loadSources({ quiet: true });
}

/** Forgets every source and row (on sign-out: the next key may see less). */
export function resetSources() {
  sources.clear();
  sourceRows.clear();
  sourcesLoadedAt = null;
  for (const id of ["sources-body", "actors-body", "replicas-body"]) clear($(id));
  resetWebhooks();
}

async function loadSource(id) {
  try {
    const s = await api(`/admin/sources/${encodeURIComponent(id)}`);
    sources.set(s.id, s);
    renderSources();
  } catch (e) {
    if (e.status === 404) { sources.delete(id); renderSources(); }
  }
}

function renderSources() {
  const tbody = $("sources-body");
  for (const row of tbody.querySelectorAll("tr:not([data-source-id])")) row.remove();
  const ids = [...sources.keys()].sort();
  for (const [id, refs] of sourceRows) {
    if (!sources.has(id)) { refs.tr.remove(); sourceRows.delete(id); }
  }
  ids.forEach((id, i) => {
    let refs = sourceRows.get(id);
    if (!refs) {
      refs = buildSourceRow(id);
      sourceRows.set(id, refs);
    }
    // Rows are moved only when out of order: moving a row would drop the keyboard focus.
    placeAt(tbody, refs.tr, i);
    fillSourceRow(refs, sources.get(id));
  });
  if (!ids.length) replaceChildren(tbody, messageRow(9, "No sources are registered.", { className: "empty-cell" }));
  renderSourcesSummary();
  $("sources-updated").textContent = sourcesLoadedAt ? `Updated ${absTime(sourcesLoadedAt.toISOString()).slice(11)}` : "";
}

function renderReplicas(replicas) {
  const rows = replicas.map((r) => {
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

function renderActors(actors) {
  const rows = actors.map((a) => h("tr", { dataset: { actor: a.actor, up: String(a.up) }, className: a.up ? "" : "row-open" },
    h("th", { attrs: { scope: "row" }, className: "mono" }, a.actor),
    h("td", {}, h("span", { className: `dot ${a.up ? "dot-closed" : "dot-open"}`, attrs: { "aria-hidden": "true" } }), a.up ? " up" : " down"),
    numCell(a.restarts),
    h("td", { className: "small" }, a.last_failure || "—"),
    h("td", { className: "small muted" }, absTime(a.since))));
  replaceChildren($("actors-body"), ...rows);
}

function renderSourcesSummary() {
  const counts = { closed: 0, half_open: 0, open: 0 };
  for (const s of sources.values()) counts[s.circuit.state] = (counts[s.circuit.state] || 0) + 1;
  replaceChildren($("sources-summary"),
    h("span", { className: "summary-item" }, h("strong", {}, String(sources.size)), ` ${sources.size === 1 ? "source" : "sources"}`),
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
  const refs = sourceRows.get(id);
  if (!refs) return;
  refs.tr.classList.remove("flash");
  void refs.tr.offsetWidth; // restart the animation
  refs.tr.classList.add("flash");
}

/** A circuit.changed event: the badge at once, the full row (forced flag, window counts,
 * last error) shortly after. */
function onCircuitChanged(ev) {
  const s = sources.get(ev.source);
  if (s) {
    s.circuit = { ...s.circuit, state: ev.to, since: ev.at };
    if (sourceRows.has(ev.source)) {
      fillSourceRow(sourceRows.get(ev.source), s);
      renderSourcesSummary();
      flashRow(ev.source);
    }
  }
  const kind = ev.to === "open" ? "error" : ev.to === "half_open" ? "warn" : "ok";
  announce(`Circuit of ${ev.source}: ${label(ev.from)} → ${label(ev.to)}. ${displaySafe(ev.reason)}`, kind === "error" ? "warn" : kind);
  clearTimeout(sourceReloads.get(ev.source));
  sourceReloads.set(ev.source, setTimeout(() => { sourceReloads.delete(ev.source); if (session.pages.has("sources")) loadSource(ev.source); }, 250));
}

// ---------------------------------------------------------------------------------------------
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
    const s = sources.get(source);
    if (s && res.circuit) {
      s.circuit = res.circuit;
      if (sourceRows.has(source)) { fillSourceRow(sourceRows.get(source), s); renderSourcesSummary(); flashRow(source); }
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

/** Wires the page's buttons, the circuit dialog, the Webhooks section and the events the
 * page follows. */
export function initSources() {
  initWebhooks(() => loadSources({ quiet: true }));
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
  onEvent("circuit.changed", onCircuitChanged);
  onEvent("actor.restarted", (ev) => {
    announce(`Actor ${ev.actor} was restarted (${ev.reason}).`, "warn");
    if (session.pages.has("sources") && session.page === "sources") loadSources({ quiet: true });
  });
}
