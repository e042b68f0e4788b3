// The API client: JSON over fetch with the key in the Authorization header (never in a URL,
// never in a cookie), errors as ApiError, and plain-language sentences for failed actions.

import { capitalize, label } from "./format.js";

class ApiError extends Error {
  constructor(status, code, message, body) {
    super(message);
    this.status = status;
    this.code = code;
    this.body = body;
  }
}

// Set by the session (configureApi): the signed-in key, and what a 401 means for it.
let currentKey = () => null;
let unauthorized = () => {};

/** `key()` gives the signed-in key (the default for every call); `onUnauthorized()` runs when
 * the gateway no longer accepts it. */
export function configureApi({ key, onUnauthorized }) {
  currentKey = key;
  unauthorized = onUnauthorized;
}

export async function api(path, { method = "GET", body, key = currentKey(), quiet401 = false } = {}) {
  const headers = { Authorization: `Bearer ${key}`, Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let res;
  try {
    res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: "no-store", credentials: "omit", redirect: "error" });
  } catch (e) {
    throw new ApiError(0, "network", `the gateway could not be reached (${e.message || e})`, null);
  }
  const text = await res.text();
  let data = null;
  if (text) {
    try { data = JSON.parse(text); } catch { data = null; }
  }
  if (!res.ok) {
    // Errors are {"error", "code"}; a few (malformed query or body) come as plain text.
    const plain = !data && text ? text.trim().slice(0, 300) : "";
    const err = new ApiError(res.status, (data && data.code) || `http_${res.status}`, (data && data.error) || plain || res.statusText || `HTTP ${res.status}`, data);
    if (res.status === 401 && !quiet401 && currentKey()) unauthorized();
    throw err;
  }
  return data;
}

/** A plain-language sentence for a failed action. */
export function describeError(e, what) {
  if (!(e instanceof ApiError)) return `${what} failed: ${e && e.message ? e.message : e}`;
  switch (e.status) {
    case 0:
      return `${what} failed: ${e.message}.`;
    case 400:
      if (e.code === "reason_required") return `${what} failed: a reason is required.`;
      return `${what} failed: ${e.message}.`;
    case 401:
      return `${what} failed: the key was not accepted (revoked or unknown). Sign in again.`;
    case 403:
      return `${what} is not allowed for this key: ${e.message}.`;
    case 404:
      return `${what} failed: not found (${e.message}).`;
    case 409: {
      const st = e.body && e.body.state;
      if (st && st !== "pending") return `${what} refused: already ${label(st)}. ${capitalize(e.message)}.`;
      return `${what} refused: ${e.message}.`;
    }
    case 503:
      return `${what} failed: the gateway is unavailable (${e.message}).`;
    default:
      return `${what} failed: ${e.message} (HTTP ${e.status}).`;
  }
}

/** A query string of the parameters that have a value ("" when none has). */
export function qs(params) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") u.set(k, v);
  const s = u.toString();
  return s ? `?${s}` : "";
}
