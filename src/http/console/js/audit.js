// The Audit page: the hash-chained records (filtered, paged newest first), the chain's
// verification, the signed checkpoints, and what report-only policy rules would have done.

import { $, h, clear, replaceChildren } from "./dom.js";
import { api, describeError, qs } from "./api.js";
import { ruleSparkline } from "./charts.js";
import { onEvent } from "./events.js";
import { absTime, displaySafe, oneLine, plural, us } from "./format.js";
import { session } from "./session.js";
import { messageRow, numCell } from "./tables.js";
import { announce, badge } from "./widgets.js";

const audit = { cursors: [null], index: 0, next: null, filter: {} };
let auditSeq = 0;
let verifying = false;
let reportedTimer = null;

/** Opening the page. */
export function showAudit() {
  loadAudit({ fresh: true });
  verifyChain();
  loadCheckpoints();
  loadReported();
}

/** Forgets the records shown (on sign-out). */
export function resetAudit() {
  clear($("audit-body"));
}

/** Sets the filter to one identity's records in a window (and of one source, when given);
 * the page applies it when it opens. */
export function setAuditFilter({ identity, source, since, until }) {
  // datetime-local wants local time without a zone, to the second.
  const local = (iso) => {
    const d = new Date(iso);
    const p = (n) => String(n).padStart(2, "0");
    return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
  };
  $("audit-identity").value = identity;
  $("audit-source").value = source || "";
  $("audit-outcome").value = "";
  $("audit-since").value = local(since);
  $("audit-until").value = local(until);
}

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

async function loadAudit({ index = 0, fresh = false } = {}) {
  const a = audit;
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
    replaceChildren(tbody, messageRow(9, msg, { className: "error-cell" }));
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
      numCell(r.row_count === null || r.row_count === undefined ? "—" : r.row_count),
      h("td", { className: "num nowrap" }, us(r.duration_us)),
      h("td", { className: "stmt-cell" }, detail)));
  }
  $("audit-empty").hidden = records.length > 0;
  const a = audit;
  $("audit-newer").disabled = a.index === 0;
  $("audit-newest").disabled = a.index === 0;
  $("audit-older").disabled = a.next === null;
  const first = records[0];
  const last = records[records.length - 1];
  $("audit-range").textContent = records.length ? `Page ${a.index + 1} · seq ${first.seq}–${last.seq}` : `Page ${a.index + 1}`;
}

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

/** The signed checkpoints table, and the verifier key (none on a gateway without a key). */
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

async function loadReported() {
  const body = $("reported-body");
  try {
    const r = await api(`/admin/policy/reported${qs({ since: $("reported-window").value })}`);
    clear(body);
    for (const rule of r.rules || []) {
      body.appendChild(h("tr", { dataset: { rule: `${rule.policy}/${rule.rule}` } },
        h("td", {}, displaySafe(rule.source)),
        h("td", { className: "mono small" }, `${displaySafe(rule.policy)} / ${displaySafe(rule.rule)}`),
        numCell(rule.would_change),
        numCell(rule.no_change),
        numCell(rule.errors),
        h("td", {}, ruleSparkline(rule.buckets, r.since, r.until, r.bucket_secs))));
    }
    $("reported-empty").hidden = (r.rules || []).length > 0;
  } catch (e) {
    announce(describeError(e, "Loading the report-only rules"), "error");
  }
}

// A busy fleet reports many calls a second: reload the chart at most every 5 s.
function scheduleReported() {
  if (reportedTimer) return;
  reportedTimer = setTimeout(() => { reportedTimer = null; if (session.page === "audit") loadReported(); }, 5000);
}

/** Wires the filter, the pager, the chain and checkpoint buttons, the report-only window,
 * and the events the page follows. */
export function initAudit() {
  $("reported-window").addEventListener("change", loadReported);
  $("audit-filter").addEventListener("submit", (e) => { e.preventDefault(); loadAudit({ fresh: true }); });
  $("audit-clear").addEventListener("click", () => {
    for (const id of ["audit-identity", "audit-source", "audit-since", "audit-until"]) $(id).value = "";
    $("audit-outcome").value = "";
    loadAudit({ fresh: true });
  });
  $("audit-older").addEventListener("click", () => loadAudit({ index: audit.index + 1 }));
  $("audit-newer").addEventListener("click", () => loadAudit({ index: Math.max(0, audit.index - 1) }));
  $("audit-newest").addEventListener("click", () => loadAudit({ index: 0 }));
  $("chain-verify").addEventListener("click", verifyChain);
  $("checkpoint-now").addEventListener("click", checkpointNow);
  onEvent("audit.checkpoint", () => { if (session.page === "audit") loadCheckpoints(); });
  onEvent("policy.reported", () => { if (session.page === "audit") scheduleReported(); });
}
