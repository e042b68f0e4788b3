// The live events stream: fetch + a stream reader (EventSource cannot send the Authorization
// header), reconnecting with exponential backoff and catching up after a gap. The pages say
// which events they follow (onEvent); the entry module says how to catch up (onReconnect).

import { $ } from "./dom.js";
import { span } from "./format.js";
import { session, sessionExpired } from "./session.js";

const stream = { ctrl: null, attempt: 0, retryTimer: null, watchdog: null, lastByte: 0, everConnected: false };

const handlers = new Map(); // event name -> [handler(payload, name)]
let reconnected = () => {};

/** Calls `handler(payload, name)` for each event of this name. */
export function onEvent(name, handler) {
  if (!handlers.has(name)) handlers.set(name, []);
  handlers.get(name).push(handler);
}

/** Calls `handler()` after the stream reconnects: events may have been missed meanwhile. */
export function onReconnect(handler) {
  reconnected = handler;
}

function setLive(s, detail) {
  const live = $("live");
  live.dataset.state = s;
  const text = { connecting: "Connecting…", live: "Live", reconnecting: `Reconnecting${detail ? ` in ${detail}` : "…"}`, off: "Offline" }[s];
  $("live-text").textContent = text;
  live.title = s === "live" ? "Live updates from the gateway are on" : "Live updates are interrupted; data may be stale";
}

export function startEvents() {
  stopEvents();
  stream.everConnected = false;
  stream.attempt = 0;
  connectEvents();
}

export function stopEvents() {
  const ctrl = stream.ctrl;
  stream.ctrl = null;
  clearTimeout(stream.retryTimer);
  clearInterval(stream.watchdog);
  if (ctrl) ctrl.abort();
  setLive("off");
}

async function connectEvents() {
  const ctrl = new AbortController();
  stream.ctrl = ctrl;
  setLive(stream.everConnected ? "reconnecting" : "connecting");
  try {
    const res = await fetch("/admin/events", { headers: { Authorization: `Bearer ${session.key}`, Accept: "text/event-stream" }, cache: "no-store", credentials: "omit", signal: ctrl.signal });
    if (res.status === 401) { sessionExpired(); return; }
    if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
    const wasConnected = stream.everConnected;
    stream.everConnected = true;
    stream.attempt = 0;
    stream.lastByte = Date.now();
    setLive("live");
    // Events may have been missed while disconnected: reload what is on screen.
    if (wasConnected) reconnected();
    clearInterval(stream.watchdog);
    // The gateway sends a keep-alive comment every 15 s; silence for 40 s means a dead link.
    stream.watchdog = setInterval(() => { if (Date.now() - stream.lastByte > 40000) ctrl.abort(); }, 5000);
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      stream.lastByte = Date.now();
      buf += value.replace(/\r\n?/g, "\n");
      let idx;
      while ((idx = buf.indexOf("\n\n")) >= 0) {
        const block = buf.slice(0, idx);
        buf = buf.slice(idx + 2);
        dispatchSse(block);
      }
    }
    throw new Error("the stream ended");
  } catch (e) {
    if (stream.ctrl !== ctrl) return; // stopped or replaced on purpose
    clearInterval(stream.watchdog);
    const delay = Math.min(30000, 1000 * 2 ** stream.attempt) * (0.8 + Math.random() * 0.4);
    stream.attempt = Math.min(stream.attempt + 1, 6);
    setLive("reconnecting", span(delay / 1000));
    stream.retryTimer = setTimeout(() => { if (stream.ctrl === ctrl) connectEvents(); }, delay);
  }
}

function dispatchSse(block) {
  let name = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    const i = line.indexOf(":");
    const field = i < 0 ? line : line.slice(0, i);
    let value = i < 0 ? "" : line.slice(i + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") name = value;
    else if (field === "data") data.push(value);
  }
  if (!data.length) return;
  let payload;
  try { payload = JSON.parse(data.join("\n")); } catch { return; }
  dispatch(name, payload);
}

function dispatch(name, payload) {
  // Visible to tests and curious operators: how many events arrived, and the last one.
  const live = $("live");
  live.dataset.events = String(Number(live.dataset.events || 0) + 1);
  live.dataset.lastEvent = name;
  for (const handler of handlers.get(name) || []) handler(payload, name);
}
