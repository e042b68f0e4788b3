// Small pieces shared by the pages: state badges, chip lists, self-updating relative times,
// and the announcement banner.

import { $, h, clear, replaceChildren } from "./dom.js";
import { absTime, displaySafe, label, parseTime, relText } from "./format.js";

/** A state badge (`kind` "state", "circuit" or "outcome"), with the value in a data
 * attribute of the same name. */
export function badge(kind, value, extra) {
  return h("span", { className: `badge badge-${kind}-${String(value).replace(/[^a-z_]/gi, "")}`, dataset: { [kind]: value }, ...extra }, label(value));
}

/** A list of monospace chips, or `emptyText` when there is none. */
export function chips(list, emptyText) {
  if (!list || !list.length) return h("span", { className: "muted" }, emptyText);
  return h("ul", { className: "chips" }, list.map((t) => h("li", { className: "chip mono" }, displaySafe(t))));
}

/** A <time> element that keeps its relative text fresh (see tickTimes). */
export function timeEl(t, mode = "ago", className = "") {
  const d = parseTime(t);
  const el = h("time", { className: `rel ${className}`.trim(), dataset: { t: t || "", mode }, attrs: { datetime: d ? d.toISOString() : null, title: d ? absTime(t) : null } });
  el.textContent = relText(t, mode);
  return el;
}

/** Refreshes the text of every relative time on the page (every second while signed in). */
export function tickTimes() {
  for (const el of document.querySelectorAll("time.rel[data-t]")) {
    const t = el.dataset.t;
    const text = relText(t, el.dataset.mode);
    if (el.textContent !== text) el.textContent = text;
  }
}

// ---------------------------------------------------------------------------------------------
// Announcements: the visible banner is the aria-live (polite) region; errors are also read
// out assertively.

let bannerTimer = null;

export function announce(message, kind = "info", { sticky = false } = {}) {
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
