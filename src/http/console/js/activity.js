// The Activity page: what the fleet's calls did over time (GET /admin/activity), as charts
// with their tables: the sources of the window (troubled first), calls by outcome, latency,
// the result cache, refusals and cost admission, circuits over time, approvals, the circuit
// history and the top talkers (each linking to its audit records).

import { $, h, clear, replaceChildren } from "./dom.js";
import { api, describeError, qs } from "./api.js";
import { setAuditFilter } from "./audit.js";
import { callsStrip, chart, circuitTimeline, latencyChart } from "./charts.js";
import { absTime, clock, displaySafe } from "./format.js";
import { session } from "./session.js";
import { numCell } from "./tables.js";
import { announce } from "./widgets.js";

const OUTCOMES = [
  { key: "ok", label: "OK", cls: "ok" },
  { key: "refused", label: "Refused", cls: "refused" },
  { key: "queued", label: "Queued", cls: "queued" },
  { key: "unavailable", label: "Unavailable", cls: "unavailable" },
];

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

/** Sources listed before "Show all". */
const SUMMARY_ROWS = 10;
let lastActivity = null;
let sourcesListed = false;
let activityKey = 0; // bumped on sign-out: answers asked before it are dropped
let activityLoads = 0, activityPending = 0;
let activityDrawnAt = 0, activityBucketSecs = 60;

/** Opening the page. */
export function showActivity() {
  loadActivity();
}

/** One row per source of the window (fleet view): its totals, its calls over time, and
 * the first bucket in which it was unavailable; the troubled ones first. */
function sourcesSummary(r) {
  const changes = new Map();
  for (const t of r.circuit || []) changes.set(t.source_id, (changes.get(t.source_id) || 0) + 1);
  // Each source as the summary gives it (sources=summary): the window's totals and a strip
  // of calls per bucket; its buckets whole are asked for only when it is charted.
  const start = new Date(r.since).getTime();
  const rows = (r.sources || []).map((s) => {
    const n = s.totals || {};
    const strip = s.strip || { calls: [], failed: [] };
    const buckets = strip.calls.map((calls, i) => ({ at: new Date(start + i * r.bucket_secs * 1000).toISOString(),
      calls, refused: strip.failed[i] || 0, unavailable: 0 })).filter((b) => b.calls);
    return { id: s.source, buckets, calls: n.calls || 0, refused: n.refused || 0, unavailable: n.unavailable || 0,
      hits: n.cache_hits || 0, misses: n.cache_misses || 0, p99: n.p99_ms ?? null, firstDown: s.first_unavailable || null };
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
      h("td", {}, callsStrip({ since: r.since, until: r.until, bucketSecs: r.bucket_secs, rows: t.buckets, name })),
      numCell(t.calls), numCell(t.refused),
      numCell(t.unavailable),
      h("td", {}, t.firstDown ? h("time", { attrs: { datetime: t.firstDown }, title: absTime(t.firstDown) }, clock(t.firstDown)) : "—"),
      numCell(t.p99 ?? "—"),
      numCell(reads ? `${Math.round(t.hits / reads * 100)} % of ${reads}` : "—"),
      numCell(`${changes.get(t.id) || 0}${r.circuit_truncated ? "+" : ""}`,
        { title: r.circuit_truncated ? "the window has more transitions than the API lists: at least this many" : null })));
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

/** Forgets the Activity page's data and choices (on sign-out: the next key may see less). */
export function resetActivity() {
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

/** The page's refresh, every 10 s for short windows and about every thirtieth of a bucket
 * for long ones (a day's 30-minute buckets every minute: each ask of a day of a large
 * fleet costs the gateway a fraction of a second); never while a load is on its way, and
 * never under the keyboard (see `underKeyboard`). */
export function activityTick() {
  if (session.page !== "activity" || document.hidden || activityPending) return;
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
    // The fleet view asks for each source in brief (totals and a strip), one source for all.
    const r = await api(`/admin/activity${qs({ since: $("activity-window").value, source, sources: source ? "" : "summary" })}`);
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
        h("td", {}, absTime(b.at)), numCell(b.calls), numCell(b.ok),
        numCell(b.refused), numCell(b.queued), numCell(b.unavailable),
        numCell(b.p50_ms ?? "—"), numCell(b.p99_ms ?? "—"),
        numCell(b.cache_hit_ratio == null ? "—" : `${Math.round(b.cache_hit_ratio * 100)} %`),
        h("td", { className: "small" }, Object.entries(b.refused_by_code || {}).map(([c, n]) => `${c} ${n}`).join(", ")),
        h("td", { className: "small" }, Object.entries(b.cost || {}).map(([c, n]) => `${c} ${n}`).join(", "))));
    }
    const approvals = (r.approvals || []).filter((a) => a.created || a.decided || a.pending);
    chart($("approvals-chart"), { since: r.since, until: r.until, bucketSecs: r.bucket_secs, rows: approvals, prefix: "appr",
      series: [{ key: "created", label: "Created", cls: "created" }, { key: "decided", label: "Decided", cls: "decided" }],
      line: { key: "pending", label: "Waiting", cls: "pending" }, label: "Approvals per bucket" });
    const ab = clear($("approvals-series-body"));
    for (const a of approvals) ab.appendChild(h("tr", {}, h("td", {}, absTime(a.at)), numCell(a.created), numCell(a.decided), numCell(a.pending)));
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
      // The link opens the Audit page with this identity's records of the charted window.
      const link = h("a", { href: "#/audit", onclick: () => setAuditFilter({ identity: t.identity === "(others)" ? "" : t.identity, source, since: r.since, until: r.until }) }, displaySafe(t.identity));
      tb.appendChild(h("tr", { dataset: { identity: t.identity } }, h("td", {}, link), numCell(t.calls), numCell(t.refused), numCell(t.queued)));
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

/** Wires the window and source filters, "Show all sources", and the links from each chart
 * to its table. */
export function initActivity() {
  $("activity-filter").addEventListener("submit", (e) => { e.preventDefault(); loadActivity(); });
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
}
