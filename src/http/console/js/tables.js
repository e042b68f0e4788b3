// Table helpers shared by the pages.

import { h } from "./dom.js";

/** A row of one cell spanning the table, for "Loading…", "None" and error messages. */
export function messageRow(colspan, text, { className, rowClass } = {}) {
  return h("tr", rowClass ? { className: rowClass } : {}, h("td", { attrs: { colspan }, className }, text));
}

/** A right-aligned number cell. */
export function numCell(value, props) {
  return h("td", { className: "num", ...props }, String(value));
}

/** A header row of column names. */
export function headRow(names) {
  return h("thead", {}, h("tr", {}, names.map((c) => h("th", { attrs: { scope: "col" } }, c))));
}

/** Puts `node` at position `index` of `parent`, moving it only when it is not there already:
 * moving an element drops the keyboard focus inside it (and a reason being typed). */
export function placeAt(parent, node, index) {
  if (parent.children[index] !== node) parent.insertBefore(node, parent.children[index] || null);
}
