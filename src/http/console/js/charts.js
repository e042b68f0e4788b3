// Charts as inline SVG, no library. Every series has a text legend and a fill pattern of its
// own (not colour alone), every bucket is a focusable element with its numbers as its
// accessible name; the pages put each chart's numbers in a table beside it.

import { h, replaceChildren } from "./dom.js";
import { clock, parseTime } from "./format.js";

const SVG_NS = "http://www.w3.org/2000/svg";

/** Creates an SVG element with these attributes (null and undefined skipped). */
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

/** Bars per bucket, stacked by `series`, with an optional line over them. */
export function chart(container, { prefix, since, until, bucketSecs, rows, series, line, unit, label, describe }) {
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
export function latencyChart(container, { since, until, bucketSecs, rows }) {
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

/** One band per source and replica: the breaker's state between its transitions. */
export function circuitTimeline(container, { since, until, transitions }) {
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
export function callsStrip({ since, until, bucketSecs, rows, name }) {
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

/** Bars of one report-only rule's would-change counts, one per bucket of the window. */
export function ruleSparkline(buckets, since, until, bucketSecs) {
  const n = Math.max(1, Math.ceil((parseTime(until) - parseTime(since)) / 1000 / bucketSecs));
  const counts = new Array(n).fill(0);
  for (const b of buckets) {
    const i = Math.floor((parseTime(b.at) - parseTime(since)) / 1000 / bucketSecs);
    counts[Math.min(n - 1, Math.max(0, i))] += b.would_change;
  }
  const max = Math.max(1, ...counts);
  const w = 240, ht = 28, bw = w / n;
  const root = svg("svg", { viewBox: `0 0 ${w} ${ht}`, width: w, height: ht, role: "img", "aria-label": `${counts.reduce((a, b) => a + b, 0)} would-change calls in ${n} buckets`, class: "sparkline" });
  counts.forEach((c, i) => {
    if (!c) return;
    const bh = Math.max(2, (c / max) * ht);
    root.appendChild(svg("rect", { x: i * bw, y: ht - bh, width: Math.max(1, bw - 1), height: bh }, svg("title", {}, `${c} would change`)));
  });
  return root;
}
