// Text formatting: display-safe strings, times, durations, numbers and state names. Pure
// functions of their arguments (and of the clock); nothing here touches the page.

/** Mirrors the gateway's escape_for_display: control, format (bidi, zero-width) and
 * non-ASCII space characters become \u{XXXX}, so the text shown is the text that runs. */
export function displaySafe(s) {
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
export function oneLine(s, n) {
  const t = displaySafe(s).replace(/\s+/g, " ").trim();
  return t.length > n ? t.slice(0, n - 1) + "…" : t;
}

export function shortId(id) {
  return String(id || "").slice(0, 8);
}

export function capitalize(s) {
  s = String(s || "").replace(/\.$/, "");
  return s ? s[0].toUpperCase() + s.slice(1) : s;
}

// ---------------------------------------------------------------------------------------------
// Time.

export function parseTime(t) {
  if (!t) return null;
  const d = new Date(t);
  return Number.isNaN(d.getTime()) ? null : d;
}

function pad(n) {
  return String(n).padStart(2, "0");
}

/** Local date and time to the second: "2026-01-31 14:05:09". */
export function absTime(t) {
  const d = parseTime(t);
  if (!d) return "—";
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** A duration in words: "42 s", "5 min", "2 h 10 min", "3 d 4 h". */
export function span(secs) {
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

/** An instant relative to now: "5 min ago" (mode "ago"), "in 2 h" ("until"), or how long
 * since it, "3 min" ("since"). */
export function relText(t, mode) {
  if (mode === "until") return until(t);
  if (mode === "since") {
    const d = parseTime(t);
    return d ? span((Date.now() - d.getTime()) / 1000) : "—";
  }
  return ago(t);
}

/** An instant as the charts name it: hh:mm today, with the day before it otherwise (a
 * 24 or 48 hour window has each hh:mm more than once). */
export function clock(t) {
  const d = new Date(t);
  const time = `${String(d.getHours()).padStart(2, "0")}:${String(d.getMinutes()).padStart(2, "0")}`;
  if (d.toDateString() === new Date().toDateString()) return time;
  return `${d.toLocaleDateString("en-US", { month: "short", day: "numeric" })}, ${time}`;
}

// ---------------------------------------------------------------------------------------------
// Numbers.

export function ms(v) {
  if (v === null || v === undefined) return "—";
  if (v < 10) return `${v.toFixed(1)} ms`;
  if (v < 1000) return `${Math.round(v)} ms`;
  return `${(v / 1000).toFixed(2)} s`;
}

export function us(v) {
  if (v === null || v === undefined) return "—";
  return ms(v / 1000);
}

export function pct(r) {
  if (r === null || r === undefined) return "—";
  return `${Math.round(r * 100)} %`;
}

export function plural(n, one, many) {
  return `${n} ${n === 1 ? one : many || one + "s"}`;
}

// ---------------------------------------------------------------------------------------------
// States (approvals, circuits) as the console names them.

const STATE_LABEL = {
  pending: "pending",
  approved: "approved",
  executing: "executing",
  executed: "executed",
  failed: "failed",
  rejected: "rejected",
  expired: "expired",
  outcome_unknown: "outcome unknown",
  withdrawn: "withdrawn",
  closed: "closed",
  open: "open",
  half_open: "half open",
};

export function label(s) {
  return STATE_LABEL[s] || String(s || "").replace(/_/g, " ");
}
