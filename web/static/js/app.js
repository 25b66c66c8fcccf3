// Entry point: one store fed by the websocket, region renderers run at most
// once per animation frame, and the page's actions sent to the REST API.

import { loadStrings, t, setText, setAttr, show, challenge } from "./util.js";
import { createStore, snapshot, apply, addTrace, markAll } from "./store.js";
import { connect } from "./conn.js";
import { renderControl } from "./control.js";
import { renderCluster } from "./cluster.js";
import { renderCloud, renderCalls, renderFaults } from "./cloud.js";
import { renderFlow, flowKeys, selectedService } from "./flow.js";
import { renderNodeInit } from "./nodeinit.js";
import { initExercises } from "./exercise.js";
import { initConsole } from "./console.js";
import { initFlowReplays, startRecordingReplay, replayLog } from "./player.js";
import { renderMap, resetMap } from "./map.js";

loadStrings();

const st = createStore();

// --- players (player.js) ---
// The page draws `view`: the live store, or the store of a moment a player
// shows (a flow replay, or `ccmlab replay`'s recording). Live messages
// always go to `st`; nothing a player does reaches the lab.
const replayMode = document.documentElement.dataset.mode === "replay";
let view = st;
function setView(store) {
  const next = store || st;
  if (next !== view) {
    view = next;
    markAll(view);
  }
  schedule();
}
// The actions that change the lab: refused (and their buttons disabled)
// in replay mode.
const LAB_ACTIONS = new Set(["toggle-controller", "fault", "stepmode", "step-next", "launch", "instance", "send-request", "toggle-exercises"]);
function lockLab() {
  for (const el of document.querySelectorAll("[data-action]")) if (LAB_ACTIONS.has(el.getAttribute("data-action"))) el.disabled = true;
}
let flowReplays = null;
// --- end players ---
const ui = {
  conn: "connecting",
  busy: new Set(), // actions in flight: a controller name, "fault", "send", ...
  svcChoice: null,
  sendKind: "loadbalancer", // where the request panel's requests enter
  nodeChoice: null,
  presenter: false,
  exercises: true, // the exercise panel shown (outside presenter mode)
};

const renderers = {
  control: renderControl,
  cluster: renderCluster,
  cloud: renderCloud,
  calls: renderCalls,
  faults: renderFaults,
  flow: renderFlow,
  nodeinit: renderNodeInit,
};

// Numbers for the responsiveness test (web/e2e): how long applying and
// drawing a burst of messages takes, measured inside the page.
const stats = {
  renders: 0,
  lastRenderMs: 0,
  renderedMessages: 0,
  renderedAt: 0,
  markMessages: -1,
  burstStart: 0,
};

// The map's inputs, by the regions the store marks dirty.
const MAP_REGIONS = new Set(["cluster", "cloud", "calls", "control", "flow"]);
stats.mapRenders = 0;
stats.lastMapMs = 0;

let frame = 0;
let fallback = 0;

// schedule draws on the next animation frame; the timer is a fallback for
// a window the browser considers occluded, where frames may not come.
function schedule() {
  if (frame) return;
  frame = requestAnimationFrame(renderNow);
  fallback = setTimeout(renderNow, 250);
}

function renderNow() {
  if (frame) cancelAnimationFrame(frame);
  clearTimeout(fallback);
  frame = 0;
  const t0 = performance.now();
  const dirty = [...view.dirty];
  view.dirty.clear();
  for (const region of dirty) {
    try {
      renderers[region](view, ui);
    } catch (err) {
      console.error("rendering", region, err);
    }
  }
  // The map draws from most of the store: it redraws when any region it
  // shows did.
  if (dirty.some((r) => MAP_REGIONS.has(r))) {
    const m0 = performance.now();
    try {
      renderMap(view, ui, dirty.every((r) => r === "calls" || !MAP_REGIONS.has(r)));
    } catch (err) {
      console.error("rendering", "map", err);
    }
    stats.mapRenders++;
    stats.lastMapMs = performance.now() - m0;
  }
  const t1 = performance.now();
  if (replayMode) lockLab();
  else if (flowReplays) flowReplays.sync();
  stats.renders++;
  stats.lastRenderMs = t1 - t0;
  stats.renderedMessages = st.messages;
  stats.renderedAt = t1;
}

function dirty(...regions) {
  for (const r of regions) {
    st.dirty.add(r);
    view.dirty.add(r);
  }
  schedule();
}

// --- the stream ---

function onMessage(m) {
  if (stats.markMessages >= 0 && stats.burstStart === 0) stats.burstStart = performance.now();
  if (m.type === "snapshot") snapshot(st, m.data || {});
  else if (m.type === "exercise") exercises.changed(m.data && m.data.exercise);
  else apply(st, m);
  schedule();
}

function onState(state, info) {
  // Back after a restart: progress lives in the lab's data dir, reread it.
  if (state === "live" && ui.conn !== "live" && ui.conn !== "connecting") exercises.refresh();
  ui.conn = state;
  const el = document.getElementById("conn");
  setAttr(el, "data-state", state);
  let text;
  switch (state) {
    case "live":
      text = "● " + t("conn.live");
      break;
    case "connecting":
      text = t("conn.connecting");
      break;
    case "restarting":
      text = "⟳ " + t("conn.restarting");
      break;
    default:
      text = "⟳ " + t("conn.reconnecting", { n: info.attempt || 1, s: ((info.delay || 0) / 1000).toFixed(1) });
  }
  if (state !== "live" && state !== "connecting") text += " — " + t("conn.stale");
  setText(el, text);
  document.body.classList.toggle("stale", state !== "live" && state !== "connecting");
  dirty("control");
}

// --- actions ---

// The page's language, asked of the API so that its errors (a full
// disk's 507 among them) come in it.
const LANG = document.documentElement.lang === "ja" ? "ja" : "en";
const withLang = (path) => (/[?&]lang=/.test(path) ? path : path + (path.includes("?") ? "&" : "?") + "lang=" + LANG);

async function api(method, path, body) {
  let res;
  try {
    // Paths are written "/api/..." but fetched relative to the page, so the
    // page also works behind a prefix (the classroom's /s/<name>/).
    res = await fetch(withLang(path).replace(/^\//, ""), {
      method,
      headers: body === undefined ? {} : { "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "same-origin",
    });
  } catch {
    throw new Error(t("action.offline"));
  }
  let data = null;
  try {
    data = await res.json();
  } catch {
    // no body
  }
  // A disk or etcd is full: show the banner now. The 507's own message
  // (what is full, that nothing changed) is the action's error below.
  if (res.status === 507) checkHealth();
  if (!res.ok) throw new Error((data && data.error) || `${res.status} ${res.statusText}`);
  return data;
}

// --- a full data dir, a full etcd ---

// /healthz answers "degraded: " and its reasons, " | " between them,
// while a store is full: "data dir full: DIR" (the lab cannot save) and
// "etcd database full: WHY" (the apiserver cannot store). The banner says each
// and stays until /healthz answers "ok" again (the lab recovers by itself
// once there is room).
const DEGRADED = "degraded: ";
const DISK_FULL = "data dir full: ";
const ETCD_FULL = "etcd database full";
const HEALTH_EVERY = 5000;

async function checkHealth() {
  let text = "";
  try {
    const res = await fetch("healthz", { credentials: "same-origin", cache: "no-store" });
    if (res.ok) text = await res.text();
  } catch {
    return; // offline: the connection status says so already
  }
  const el = document.getElementById("disk-banner");
  const why = text.startsWith(DEGRADED) ? text.slice(DEGRADED.length).split(" | ") : [];
  const lines = [];
  for (const w of why) {
    if (w.startsWith(DISK_FULL)) lines.push(t("disk.full", { dir: w.slice(DISK_FULL.length).trim() }));
    else if (w.startsWith(ETCD_FULL)) lines.push(t("disk.etcdFull"));
  }
  if (lines.length) setText(el, lines.join(" "));
  show(el, lines.length > 0);
}

let alertTimer = 0;

function say(text, isError) {
  const el = document.getElementById("alert");
  el.classList.toggle("alert-info", !isError);
  setAttr(el, "role", isError ? "alert" : "status");
  setText(el, text);
  show(el, !!text);
  clearTimeout(alertTimer);
  if (text) alertTimer = setTimeout(() => show(el, false), isError ? 12000 : 6000);
}

async function act(key, regions, fn) {
  if (ui.busy.has(key)) return;
  ui.busy.add(key);
  dirty(...regions);
  try {
    await fn();
  } catch (err) {
    say(t("action.failed", { msg: err.message }), true);
  } finally {
    ui.busy.delete(key);
    dirty(...regions);
  }
}

function toggleController(name) {
  if (!(name in st.controllers)) return;
  act(name, ["control", "flow"], async () => {
    st.controllers = await api("PUT", "/api/controllers/" + encodeURIComponent(name), { enabled: !st.controllers[name] });
  });
}

function toggleFault(name) {
  const cur = st.faults;
  const f = { deny: [...(cur.deny || [])], latency: cur.latency || "0s", qps: cur.qps || 0, burst: cur.burst || 0 };
  if (cur.failNext) f.failNext = { ...cur.failNext };
  switch (name) {
    case "deny-create":
      f.deny = f.deny.includes("CreateLoadBalancer") ? f.deny.filter((a) => a !== "CreateLoadBalancer") : [...f.deny, "CreateLoadBalancer"];
      break;
    case "throttle":
      if (f.qps > 0) [f.qps, f.burst] = [0, 0];
      else [f.qps, f.burst] = [1, 1];
      break;
    case "latency":
      f.latency = f.latency && f.latency !== "0s" ? "0s" : "2s";
      break;
    default:
      return;
  }
  act("fault", ["faults"], async () => {
    st.faults = await api("PUT", "/api/cloud/faults", f);
  });
}

function toggleStepMode() {
  act("stepmode", ["faults"], async () => {
    const r = await api("PUT", "/api/cloud/stepmode", { enabled: !st.stepMode });
    st.stepMode = r.enabled;
    st.waiting = r.waiting || [];
  });
}

function nextCall() {
  if (!st.stepMode) return;
  act("step-next", ["faults"], () => api("POST", "/api/cloud/stepmode/release"));
}

function launch() {
  act("launch", ["cloud"], async () => {
    const inst = await api("POST", "/api/cloud/instances");
    st.instances.set(inst.id, inst);
    ui.nodeChoice = inst.privateDNSName || inst.name;
    say(t("action.launched", { id: inst.id }), false);
    dirty("cloud", "nodeinit");
  });
}

function instanceAction(id, op) {
  act("inst:" + id, ["cloud"], async () => {
    const path = "/api/cloud/instances/" + encodeURIComponent(id);
    const inst = op === "terminate" ? await api("DELETE", path) : await api("POST", path + "/" + op);
    st.instances.set(inst.id, inst);
  });
}

function sendRequest() {
  const key = selectedService(st, ui);
  if (!key) return;
  ui.svcChoice = key;
  act("send", ["flow"], async () => {
    addTrace(st, await api("POST", "/api/requests", { service: key, kind: ui.sendKind }));
  });
}

function pickService(delta) {
  const keys = [...flowKeys(st)].sort();
  if (keys.length === 0) return;
  const i = keys.indexOf(selectedService(st, ui));
  ui.svcChoice = keys[(i + delta + keys.length) % keys.length];
  dirty("flow");
}

// The exercise panel can be hidden; presenter mode hides it until it is
// asked for again, and leaving presenter mode restores the choice.
function showExercises(on, remember) {
  document.documentElement.classList.toggle("ex-hidden", !on);
  setAttr(document.querySelector('[data-action="toggle-exercises"]'), "aria-pressed", on ? "true" : "false");
  if (!remember) return;
  ui.exercises = on;
  try {
    localStorage.setItem("ccmlab.exercises", on ? "1" : "0");
  } catch {
    // storage may be off
  }
}

function setPresenter(on) {
  ui.presenter = on;
  showExercises(on ? false : ui.exercises, false);
  document.documentElement.classList.toggle("presenter", on);
  setAttr(document.querySelector('[data-action="presenter"]'), "aria-pressed", on ? "true" : "false");
  try {
    localStorage.setItem("ccmlab.presenter", on ? "1" : "0");
  } catch {
    // storage may be off; the mode still works for this page
  }
}

document.addEventListener("click", (e) => {
  const el = e.target.closest("[data-action]");
  if (!el || el.disabled) return;
  const a = el.getAttribute("data-action");
  if (replayMode && LAB_ACTIONS.has(a)) return;
  switch (a) {
    case "toggle-controller":
      toggleController(el.getAttribute("data-name"));
      break;
    case "fault":
      toggleFault(el.getAttribute("data-fault"));
      break;
    case "stepmode":
      toggleStepMode();
      break;
    case "step-next":
      nextCall();
      break;
    case "launch":
      launch();
      break;
    case "instance":
      instanceAction(el.getAttribute("data-id"), el.getAttribute("data-op"));
      break;
    case "send-request":
      sendRequest();
      break;
    case "pick-service":
      ui.svcChoice = el.getAttribute("data-key");
      dirty("flow");
      document.getElementById("flow").focus();
      break;
    case "presenter":
      setPresenter(!ui.presenter);
      dirty(...Object.keys(renderers));
      break;
    case "help":
      document.getElementById("shortcuts").showModal();
      break;
    case "toggle-exercises": {
      const on = document.documentElement.classList.contains("ex-hidden");
      showExercises(on, !ui.presenter);
      if (on) document.getElementById("ex-h").scrollIntoView({ block: "nearest" });
      break;
    }
  }
});

document.getElementById("send-kind").addEventListener("change", (e) => {
  ui.sendKind = e.target.value;
  dirty("flow");
});
document.getElementById("svc-select").addEventListener("change", (e) => {
  ui.svcChoice = e.target.value;
  dirty("flow");
});

document.getElementById("node-select").addEventListener("change", (e) => {
  ui.nodeChoice = e.target.value;
  dirty("nodeinit");
});

// Keyboard shortcuts work in presenter mode only, so single keys never
// surprise a screen-reader user (WCAG 2.1.4); every one of them is also a
// button on the page.
const keys = {
  s: () => toggleController("service"),
  n: () => toggleController("node"),
  r: () => toggleController("route"),
  l: () => toggleController("nodelifecycle"),
  b: () => toggleController("lbc"),
  d: () => toggleFault("deny-create"),
  t: () => toggleFault("throttle"),
  w: () => toggleFault("latency"),
  m: () => toggleStepMode(),
  ".": () => nextCall(),
  arrowright: () => nextCall(),
  g: () => sendRequest(),
  "[": () => pickService(-1),
  "]": () => pickService(1),
  p: () => setPresenter(false),
  escape: () => setPresenter(false),
  "?": () => document.getElementById("shortcuts").showModal(),
};

document.addEventListener("keydown", (e) => {
  if (!ui.presenter || e.ctrlKey || e.metaKey || e.altKey || e.isComposing) return;
  if (document.querySelector("dialog[open]")) return;
  const tgt = e.target;
  if (tgt.closest && tgt.closest("input, select, textarea, [contenteditable]")) return;
  const fn = keys[e.key.toLowerCase()];
  if (!fn) return;
  if (replayMode && !["p", "escape", "?"].includes(e.key.toLowerCase())) return;
  e.preventDefault();
  fn();
  dirty(...Object.keys(renderers));
});

// --- start ---

const params = new URLSearchParams(location.search);
try {
  ui.exercises = localStorage.getItem("ccmlab.exercises") !== "0";
} catch {
  // ignore
}
const konsole = initConsole();
const exercises = initExercises({
  api,
  fillConsole: konsole.fill,
  onChallenge: (on) => {
    if (challenge.on === on) return;
    challenge.on = on;
    dirty("flow", "nodeinit", "control");
  },
});
// fitAside keeps the exercise panel between where it starts on the
// screen and the docked console (style.css): scrolled to the top the
// header is above it, scrolled down it sticks to the window's top edge,
// and either way its last line is above the console, never behind it.
let fitting = false;
function fitAside() {
  if (fitting) return;
  fitting = true;
  requestAnimationFrame(() => {
    fitting = false;
    const aside = document.getElementById("exercises");
    const top = aside ? Math.max(0, Math.round(aside.getBoundingClientRect().top)) : 0;
    document.documentElement.style.setProperty("--aside-top", top + "px");
  });
}
window.addEventListener("scroll", fitAside, { passive: true });
window.addEventListener("resize", fitAside);
// What sits above the column (the header, which wraps once the profile
// and the connection are known; an alert) moves it without a scroll.
if (typeof ResizeObserver === "function") {
  const above = new ResizeObserver(fitAside);
  for (const el of document.querySelectorAll("body > header, body > .alert")) above.observe(el);
}
fitAside();

// The URL decides first (?presenter=1 or ?presenter=0, a link an
// instructor shares), then the last choice this browser made.
let presenter = false;
const presenterParam = params.get("presenter");
if (presenterParam === "1" || presenterParam === "0") {
  presenter = presenterParam === "1";
} else {
  try {
    presenter = localStorage.getItem("ccmlab.presenter") === "1";
  } catch {
    // storage may be off
  }
}
setPresenter(presenter);

// A hook for the browser tests and for curious students in the console.
window.ccmlab = {
  store: st,
  view: () => view,
  replayLog,
  ui,
  stats,
  exercises: exercises.state,
  renderNow,
  resetMap,
  // mark starts a measurement: the next message starts the clock.
  mark() {
    stats.markMessages = st.messages;
    stats.burstStart = 0;
    return stats.markMessages;
  },
};

dirty(...Object.keys(renderers));
if (replayMode) {
  // ccmlab replay: no lab behind the page, only its recording.
  document.documentElement.classList.add("ex-hidden");
  startRecordingReplay({ setView }).then((r) => {
    window.ccmlab.replay = r;
  });
} else {
  flowReplays = initFlowReplays({ live: st, ui, setView });
  connect({ onMessage, onState });
  exercises.refresh();
  checkHealth();
  setInterval(checkHealth, HEALTH_EVERY);
}
