// Small DOM helpers. Everything is built from elements and text nodes, never from markup
// (no innerHTML anywhere in the console).

/** The element with this id. */
export const $ = (id) => document.getElementById(id);

/** Creates an element; `props` may hold className, text, attrs, dataset, on{Event}. */
export function h(tag, props, ...children) {
  const node = document.createElement(tag);
  if (props) {
    for (const [k, v] of Object.entries(props)) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "className") node.className = v;
      else if (k === "text") node.textContent = String(v);
      else if (k === "dataset") Object.assign(node.dataset, v);
      else if (k === "attrs") for (const [a, av] of Object.entries(v)) { if (av !== null && av !== undefined && av !== false) node.setAttribute(a, String(av)); }
      else if (k.startsWith("on") && typeof v === "function") node.addEventListener(k.slice(2).toLowerCase(), v);
      else node[k] = v;
    }
  }
  append(node, children);
  return node;
}

/** Appends children (nested arrays flattened; null, undefined and false skipped; anything
 * that is not a node becomes a text node). */
function append(node, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    node.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

export function replaceChildren(node, ...children) {
  clear(node);
  return append(node, children);
}
