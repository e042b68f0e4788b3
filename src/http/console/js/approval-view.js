// How an approval is shown, on a pending card and in the history: its statement, what it
// touches, its previewed effect and bound, its progress, decisions and result. Pure
// renderers of one approval (GET /admin/approvals/{id}); the Approvals page places them.

import { h } from "./dom.js";
import { absTime, displaySafe, plural, shortId } from "./format.js";
import { chips, timeEl } from "./widgets.js";

export function touchesEl(t) {
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

export function progressEl(a) {
  const req = a.approvals_required || 1;
  const got = Math.min(a.approvals || 0, req);
  const text = `${got} of ${req} approval${req === 1 ? "" : "s"}`;
  return h("div", { className: "progress", dataset: { role: "progress" } },
    h("div", { className: "progress-bar", attrs: { role: "progressbar", "aria-valuemin": 0, "aria-valuemax": req, "aria-valuenow": got, "aria-label": text } },
      Array.from({ length: req }, (_, i) => h("span", { className: `progress-step${i < got ? " done" : ""}` }))),
    h("span", { className: "progress-text" }, text));
}

export function decisionsEl(a) {
  if (!a.decisions || !a.decisions.length) return null;
  return h("ul", { className: "decisions" }, a.decisions.map((d) =>
    h("li", { className: `decision decision-${d.decision === "approve" ? "approve" : "reject"}` },
      h("span", { className: "decision-who" }, displaySafe(d.approver)),
      h("span", { className: "decision-what" }, d.decision === "approve" ? " approved" : " rejected"),
      d.reason ? [": ", h("q", { className: "decision-reason" }, displaySafe(d.reason))] : null,
      " · ", timeEl(d.decided_at))));
}

export function statementEl(a) {
  return h("pre", { className: "statement", attrs: { tabindex: 0, "aria-label": `Statement of approval ${shortId(a.id)}` } }, h("code", {}, a.statement_display ?? displaySafe(a.statement)));
}

/** What the write would do (its preview) and the bound it is held to. */
export function effectEl(a) {
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
  const rows = (n) => `${n} row${n === 1 ? "" : "s"}`;
  const boundText = isRead
    ? (a.max_rows === null || a.max_rows === undefined ? "Returns at most the row cap above." : `Returns at most ${rows(a.max_rows)}.`)
    : a.max_rows === null || a.max_rows === undefined ? "No bound on the rows it may affect."
    : a.bound_source === "estimate" ? `Bound: the planner's estimate. If the approved run affects more than ${rows(a.max_rows)}, it is rolled back and handed back to you with the exact count.`
    : `Bound: fails and changes nothing if it affects more than ${rows(a.max_rows)}.`;
  const last = Array.isArray(a.handbacks) && a.handbacks.length ? a.handbacks[a.handbacks.length - 1] : null;
  if (last) {
    parts.push(h("p", { className: "small warn-text", dataset: { role: "handed-back" } },
      `Handed back: approved, the run would have changed ${rows(last.measured)}, more than the ${last.estimated ?? "?"} estimated; it was rolled back and nothing changed. Its earlier decisions no longer count.`));
  }
  parts.push(h("p", { className: "effect-bound small", dataset: { role: "bound" } },
    boundText,
    a.statement_sha256 ? h("span", { className: "mono muted", title: "SHA-256 of the statement the approval is bound to" }, ` · sha256 ${a.statement_sha256.slice(0, 16)}…`) : null));
  return h("div", { className: "effect" }, parts);
}

/** The statement's first word ("UPDATE"), or "Write". */
export function verbOf(a) {
  const m = /^\s*([A-Za-z]+)/.exec(a.statement_display || "");
  return m ? m[1].toUpperCase() : "Write";
}

/** An executed approval's result: when, the rows affected, any error, the returned data. */
export function resultEl(a) {
  const parts = [];
  if (a.state === "executed") {
    parts.push(h("p", { className: "result-line ok-text" }, `Executed ${a.executed_at ? absTime(a.executed_at) : ""}`.trim(), a.rows_affected !== null && a.rows_affected !== undefined ? ` · ${plural(a.rows_affected, "row")} affected` : ""));
  }
  if (a.error) parts.push(h("p", { className: "result-line bad-text" }, "Error: ", displaySafe(a.error)));
  if (a.result !== null && a.result !== undefined) parts.push(h("details", { className: "json" }, h("summary", {}, "Returned data"), h("pre", { className: "mono small" }, displaySafe(JSON.stringify(a.result, null, 2)))));
  return parts;
}
