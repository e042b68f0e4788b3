// Sign-in and the session: the key (kept in sessionStorage only), the role the key turned
// out to have, and the pages it may use. What happens on entering and leaving the console is
// the entry module's (setSessionHooks).

import { $, h, clear, replaceChildren } from "./dom.js";
import { api, configureApi, describeError } from "./api.js";

/** The console's pages, in the navigation's order. */
export const PAGES = ["sources", "approvals", "audit", "activity"];

const KEY_STORAGE = "interlock.console.key";

/** The signed-in session; `page` is the page shown (set by the router). */
export const session = {
  key: null,
  role: null, // "operator" | "approver"
  name: null,
  pages: new Set(),
  page: null,
};

let hooks = { enter: () => {}, leave: () => {} };

/** `enter()` runs once signed in; `leave()` on signing out, before the sign-in form shows. */
export function setSessionHooks({ enter, leave }) {
  hooks = { enter, leave };
}

configureApi({ key: () => session.key, onUnauthorized: sessionExpired });

// ---------------------------------------------------------------------------------------------
// Role detection.

async function probe(path, key) {
  try {
    await api(path, { key, quiet401: true });
    return 200;
  } catch (e) {
    if (e.status === 403) return 403;
    throw e;
  }
}

/** Which pages a key may use: the role is what the endpoints answer (200 or 403). */
async function detect(key) {
  const approvals = await probe("/admin/approvals?state=pending&limit=1", key);
  if (approvals === 403) return { role: null, pages: new Set() };
  const [sources, audit] = await Promise.all([probe("/admin/sources", key), probe("/admin/audit?limit=1", key)]);
  const pages = new Set();
  if (sources === 200) pages.add("sources");
  pages.add("approvals");
  if (audit === 200) pages.add("audit");
  // The activity series are operators' (GET /admin/activity).
  if (sources === 200) pages.add("activity");
  return { role: sources === 200 ? "operator" : "approver", pages };
}

/** The operator's own name, from the key prefixes in /admin/identities (best effort). */
async function whoAmI() {
  if (session.role !== "operator") return null;
  try {
    const data = await api("/admin/identities");
    for (const ident of data.identities || []) {
      for (const k of ident.keys || []) {
        if (k.prefix && !k.revoked_at && session.key.startsWith(k.prefix)) return ident.name;
      }
    }
  } catch { /* the name is a nicety */ }
  return null;
}

// ---------------------------------------------------------------------------------------------
// Signing in and out.

async function signIn(key, { restoring = false } = {}) {
  const errorEl = $("signin-error");
  errorEl.textContent = "";
  const submit = $("signin-submit");
  submit.disabled = true;
  submit.textContent = "Signing in…";
  try {
    const found = await detect(key);
    if (!found.role) {
      const msg = "This key cannot use the console: it belongs to an agent. Use an operator or approver key.";
      if (restoring) sessionStorage.removeItem(KEY_STORAGE);
      showSignIn(msg);
      return;
    }
    session.key = key;
    session.role = found.role;
    session.pages = found.pages;
    sessionStorage.setItem(KEY_STORAGE, key);
    $("signin-key").value = "";
    session.name = await whoAmI();
    hooks.enter();
  } catch (e) {
    let msg;
    if (e.status === 401) {
      msg = "That key was not recognised, or it was revoked.";
      sessionStorage.removeItem(KEY_STORAGE);
    } else {
      msg = describeError(e, "Signing in");
    }
    showSignIn(msg);
  } finally {
    submit.disabled = false;
    submit.textContent = "Sign in";
  }
}

function showSignIn(message) {
  for (const p of PAGES) $(`page-${p}`).hidden = true;
  $("nav").hidden = true;
  $("session").hidden = true;
  $("page-signin").hidden = false;
  document.title = "Sign in · InterLock console";
  const err = $("signin-error");
  err.textContent = message || "";
  $("signin-key").setAttribute("aria-invalid", message ? "true" : "false");
  $("signin-key").focus();
}

/** The console's frame once signed in: the navigation (the pages this key may use) and
 * who is signed in. */
export function showConsole() {
  $("page-signin").hidden = true;
  $("nav").hidden = false;
  $("session").hidden = false;
  for (const a of $("nav").querySelectorAll("a[data-page]")) a.hidden = !session.pages.has(a.dataset.page);
  const who = $("whoami");
  replaceChildren(who, h("span", { className: `role role-${session.role}` }, session.role), session.name ? h("span", { className: "who-name" }, session.name) : null);
}

function signOut(message) {
  hooks.leave();
  sessionStorage.removeItem(KEY_STORAGE);
  Object.assign(session, { key: null, role: null, name: null, pages: new Set(), page: null });
  clear($("banner"));
  if (location.hash) history.replaceState(null, "", location.pathname);
  showSignIn(message);
}

let expiring = false;

/** The gateway no longer accepts the key: sign out, saying why (once, however many calls
 * were refused). */
export function sessionExpired() {
  if (expiring) return;
  expiring = true;
  setTimeout(() => {
    expiring = false;
    signOut("Your key is no longer accepted (revoked or unknown). Sign in again.");
  }, 0);
}

/** Wires the sign-in form and the Sign out button. */
export function initSession() {
  $("signin-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const key = $("signin-key").value.trim();
    if (!key) {
      $("signin-error").textContent = "Enter an operator or approver key.";
      $("signin-key").setAttribute("aria-invalid", "true");
      $("signin-key").focus();
      return;
    }
    signIn(key);
  });
  $("signout").addEventListener("click", () => signOut(""));
}

/** Signs in again with the key this tab kept (after a reload), or shows the sign-in form. */
export function resumeSession() {
  const saved = sessionStorage.getItem(KEY_STORAGE);
  if (saved) signIn(saved, { restoring: true });
  else showSignIn("");
}
