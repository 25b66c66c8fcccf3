// Players. The page draws one store; a player builds the stores of moments
// past and hands them to the page one by one, at a chosen pace, with play,
// pause, step and a scrubber. Nothing here acts on a lab:
//
// - a flow replay (live page) derives its moments from the steps' recorded
//   times of one LoadBalancer flow or node initialization;
// - a recording replay (`ccmlab replay`, html[data-mode="replay"]) feeds the
//   frames of GET api/recording (docs/protocol.md, "Recordings") into a
//   fresh store, starting at the recording's last moment, paused.
//
// Every view (strip, diagram, tables, map) renders from the store it is
// given, so a replay shows everywhere without a view knowing about it.

import { h, t, setText, setAttr } from "./util.js";
import { createStore, snapshot, apply, cloneStore, markAll } from "./store.js";
import { selectedService } from "./flow.js";
import { selectedNode } from "./nodeinit.js";


// Longest wait between two frames of a recording at speed 1: a lab is
// idle most of the time, and a demo should not be.
const MAX_GAP_MS = 2000;

// Every moment a player showed, for the browser tests and the curious:
// {player, i, at} with at from performance.now().
export const replayLog = [];

// createPlayer builds one player's controls. o: id (its data-testid and
// the prefix of its controls'), label, count (moments), start (first
// moment shown), show(i) (make moment i the page's), delay(i, pace) (ms
// from moment i to i+1), paces [{value, label}], pace, paceLabel,
// describe(i), onClose (adds a "back to live" button).
function createPlayer(o) {
  let i = -1;
  let playing = false;
  let timer = 0;
  let pace = o.pace;
  const id = o.id;
  const btn = (name, text, label, fn) =>
    h("button", { type: "button", class: "btn btn-small", "data-testid": id + "-" + name, "aria-label": label, title: label, text, onclick: fn });
  const first = btn("first", "|◀", t("replay.first"), () => {
    pause();
    go(0);
  });
  const prev = btn("prev", "◀", t("replay.prev"), () => {
    pause();
    go(i - 1);
  });
  const play = h("button", { type: "button", class: "btn btn-small btn-primary", "data-testid": id + "-play", onclick: () => (playing ? pause() : start()) });
  const next = btn("next", "▶|", t("replay.next"), () => {
    pause();
    go(i + 1);
  });
  const paceSel = h(
    "select",
    {
      "data-testid": id + "-pace",
      "aria-label": o.paceLabel,
      onchange: (e) => {
        pace = Number(e.target.value);
        if (playing) {
          clearTimeout(timer);
          tick();
        }
      },
    },
    o.paces.map((p) => h("option", { value: p.value, text: p.label, selected: p.value === pace })),
  );
  const scrub = h("input", {
    type: "range",
    min: 0,
    max: o.count - 1,
    step: 1,
    value: 0,
    class: "player-scrub",
    "data-testid": id + "-scrub",
    "aria-label": t("replay.position"),
    oninput: (e) => {
      const j = Number(e.target.value); // before pause() puts the scrubber back
      pause();
      go(j);
    },
  });
  const where = h("span", { class: "player-at", "data-testid": id + "-at" });
  const close = o.onClose ? h("button", { type: "button", class: "btn btn-small", "data-testid": id + "-close", text: t("replay.live"), onclick: () => o.onClose() }) : null;
  const bar = h(
    "div",
    { class: "player", role: "group", "aria-label": o.label, "data-testid": id, "data-count": o.count },
    first,
    prev,
    play,
    next,
    scrub,
    where,
    h("label", { class: "player-pace" }, h("span", { class: "label", text: o.paceLabel + " " }), paceSel),
    close,
  );

  function update() {
    setText(play, playing ? "⏸ " + t("replay.pause") : "▶ " + t("replay.play"));
    setAttr(bar, "data-state", playing ? "playing" : "paused");
    setAttr(bar, "data-index", i);
    first.disabled = prev.disabled = i <= 0;
    next.disabled = i >= o.count - 1;
    if (Number(scrub.value) !== i) scrub.value = String(i);
    const text = o.describe(i);
    setText(where, text);
    setAttr(scrub, "aria-valuetext", text);
  }

  function go(j) {
    j = Math.max(0, Math.min(o.count - 1, j));
    if (j === i) return;
    i = j;
    o.show(i);
    replayLog.push({ player: id, i, at: performance.now() });
    update();
  }

  function tick() {
    if (i >= o.count - 1) {
      playing = false;
      update();
      return;
    }
    timer = setTimeout(() => {
      go(i + 1);
      tick();
    }, o.delay(i, pace));
  }

  function start() {
    // Like a video at its end: play starts again from the beginning.
    if (i >= o.count - 1) go(0);
    playing = true;
    update();
    tick();
  }

  function pause() {
    playing = false;
    clearTimeout(timer);
    update();
  }

  go(o.start);
  update();
  return {
    el: bar,
    pause,
    destroy() {
      pause();
      bar.remove();
    },
  };
}

// --- flow replays in the live page ---

const PACES = [0.25, 0.5, 1, 2, 3];

// truncate is a flow as it stood when its first k steps were done.
function truncate(flow, k) {
  const steps = flow.steps.map((s, i) => {
    if (i < k) return { ...s, status: "done" };
    return { n: s.n, key: s.key, status: i === k ? "current" : "pending" };
  });
  return { ...flow, step: k, steps, stuck: undefined };
}

// undone reports whether, of flow's first k steps, none is the step key:
// what that step brought is not there yet. Steps are found by the key the
// lab gives them (lab/flow's step keys), not by their position.
function undone(flow, k, key) {
  const i = flow.steps.findIndex((s) => s.key === key);
  return i < 0 || k <= i;
}

// serviceMoment is the page's state with the LoadBalancer flow of key as it
// stood after k steps: what the later steps brought (the load balancer, its
// targets, EXTERNAL-IP, the request) is taken out again.
function serviceMoment(live, key, flow, k) {
  const st = cloneStore(live);
  st.serviceFlows.set(key, truncate(flow, k));
  const lb = flow.lb ? st.lbs.get(flow.lb) : null;
  if (lb && undone(flow, k, "create")) {
    st.lbs.delete(flow.lb);
    st.listeners = st.listeners.filter((l) => l.lb !== flow.lb);
  } else if (lb && undone(flow, k, "targets")) st.lbs.set(flow.lb, { ...lb, targets: [] });
  const svc = st.services.get(key);
  if (svc && undone(flow, k, "status")) st.services.set(key, { ...svc, ingress: [], externalIP: "<pending>" });
  if (undone(flow, k, "traffic")) {
    st.lastTrace.delete(key);
    st.traces = st.traces.filter((tr) => tr.service !== key);
  }
  return st;
}

// nodeMoment is the page's state with node name's initialization as it
// stood after k steps: no instance before launch, no Node before it
// registered, no cloud details before they were written, the
// uninitialized taint until it fell, no Pod before the first one.
function nodeMoment(live, name, flow, k) {
  const st = cloneStore(live);
  st.nodeFlows.set(name, truncate(flow, k));
  if (undone(flow, k, "launched") && flow.instanceID) {
    st.instances.delete(flow.instanceID);
    st.routes = st.routes.filter((r) => r.instanceID !== flow.instanceID);
  }
  const node = st.nodes.get(name);
  if (node && undone(flow, k, "registered")) st.nodes.delete(name);
  else if (node) {
    let n = node;
    if (undone(flow, k, "written")) n = { ...n, providerID: "", zone: "", region: "", instanceType: "" };
    if (undone(flow, k, "untainted") && !n.uninitialized) {
      const taint = t("taint.uninit.full");
      n = { ...n, uninitialized: taint, taints: [...(n.taints || []), taint] };
    }
    if (n !== node) st.nodes.set(name, n);
  }
  if (undone(flow, k, "scheduled")) for (const [pk, p] of st.pods) if (p.node === name) st.pods.delete(pk);
  return st;
}

function stepTime(flow, i) {
  const s = flow.steps[i - 1];
  if (!s || !s.at) return "";
  const t0 = flow.steps[0] && flow.steps[0].at ? Date.parse(flow.steps[0].at) : 0;
  const dt = (Date.parse(s.at) - t0) / 1000;
  return t0 && dt >= 0 ? " · " + t("time.after", { s: dt.toFixed(dt < 10 ? 2 : 1) }) : "";
}

// initFlowReplays adds a "Replay" button to the LoadBalancer strip and to
// the node timeline. page: { live, ui, setView }. It returns sync(), to
// call after every render of the live store, which keeps the buttons
// enabled only when there is something to replay.
export function initFlowReplays(page) {
  let active = null; // { kind, player }
  const kinds = {
    flow: {
      anchor: "send-request",
      before: "svc-strip",
      pick: (st, ui) => {
        const key = selectedService(st, ui);
        return key ? { key, flow: st.serviceFlows.get(key) } : null;
      },
      pin: (key) => (page.ui.svcChoice = key),
      moment: serviceMoment,
    },
    node: {
      anchor: "node-select",
      before: "node-timeline",
      pick: (st, ui) => {
        const key = selectedNode(st, ui);
        return key ? { key, flow: st.nodeFlows.get(key) } : null;
      },
      pin: (key) => (page.ui.nodeChoice = key),
      moment: nodeMoment,
    },
  };
  const buttons = {};
  for (const [kind, k] of Object.entries(kinds)) {
    const b = h("button", {
      type: "button",
      class: "btn",
      "data-testid": kind + "-replay",
      title: t("replay.flow.tip"),
      text: "⟲ " + t("replay.flow"),
      disabled: true,
      onclick: () => begin(kind),
    });
    const anchor = document.getElementById(k.anchor);
    if (anchor) anchor.after(" ", b);
    buttons[kind] = b;
  }

  // The lab's recent history, for `ccmlab replay` where no lab runs.
  const tools = document.querySelector("nav.tools");
  if (tools) tools.prepend(h("a", { href: "api/recording", download: "", class: "btn", "data-testid": "recording-download", title: t("replay.download.tip"), text: "⤓ " + t("replay.download") }));

  function end() {
    if (!active) return;
    active.player.destroy();
    active = null;
    page.setView(null);
    sync();
  }

  function begin(kind) {
    end();
    const k = kinds[kind];
    const picked = k.pick(page.live, page.ui);
    if (!picked || !picked.flow || picked.flow.step < 1) return;
    const { key, flow } = picked;
    k.pin(key);
    const frozen = cloneStore(page.live); // the replay does not change while live messages come
    const n = flow.step;
    const player = createPlayer({
      id: kind + "-player",
      label: t("replay.flow.label", { name: key }),
      count: n + 1,
      start: 0,
      pace: 1,
      paces: PACES.map((s) => ({ value: s, label: t("replay.pace.s", { s }) })),
      paceLabel: t("replay.pace"),
      delay: (_i, pace) => pace * 1000,
      describe: (i) => t("replay.step", { i, n }) + stepTime(flow, i),
      show: (i) => page.setView(k.moment(frozen, key, flow, i)),
      onClose: end,
    });
    active = { kind, player };
    const before = document.getElementById(k.before);
    before.before(player.el);
    sync();
  }

  function sync() {
    for (const [kind, k] of Object.entries(kinds)) {
      const picked = k.pick(page.live, page.ui);
      const can = !!(picked && picked.flow && picked.flow.step >= 1);
      buttons[kind].disabled = !can;
    }
  }

  return { sync, end, active: () => active };
}

// --- recording replays (ccmlab replay) ---

const SPEEDS = [0.1, 0.25, 0.5, 1, 2, 5, 10];

// parseRecording reads NDJSON: an optional "recording" header, the base
// snapshot, then the frames after it.
export function parseRecording(text) {
  let header = null;
  let base = null;
  const frames = [];
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    const m = JSON.parse(line);
    if (!base && m.type === "recording") header = m.data || {};
    else if (!base && m.type === "snapshot") base = m;
    else if (base) frames.push(m);
  }
  if (!base) throw new Error("no snapshot in the recording");
  return { header, base, frames };
}

// startRecordingReplay loads api/recording and mounts the player at the
// top of the page, showing the last moment, paused. page: { setView }.
export async function startRecordingReplay(page) {
  const conn = document.getElementById("conn");
  setAttr(conn, "data-state", "replay");
  setText(conn, t("replay.loading"));
  let rec;
  try {
    const res = await fetch("api/recording", { credentials: "same-origin" });
    if (!res.ok) throw new Error(`${res.status} ${res.statusText}`);
    rec = parseRecording(await res.text());
  } catch (err) {
    setText(conn, t("replay.failed", { msg: err.message }));
    setAttr(conn, "data-state", "failed");
    return null;
  }
  setText(conn, t("replay.mode"));
  const { base, frames } = rec;
  const timeOf = (i) => Date.parse(i === 0 ? base.time : frames[i - 1].time) || 0;
  let st = null;
  let at = -1; // the moment st holds
  function storeAt(i) {
    if (!st || i < at) {
      st = createStore();
      snapshot(st, base.data || {});
      at = 0;
    }
    for (; at < i; at++) apply(st, frames[at]);
    return st;
  }
  const lang = document.documentElement.lang || undefined;
  const player = createPlayer({
    id: "player",
    label: t("replay.bar"),
    count: frames.length + 1,
    start: frames.length,
    pace: 1,
    paces: SPEEDS.map((s) => ({ value: s, label: "×" + s })),
    paceLabel: t("replay.speed"),
    delay: (i, speed) => Math.min(MAX_GAP_MS, Math.max(0, timeOf(i + 1) - timeOf(i))) / speed,
    describe: (i) => t("replay.at", { time: new Date(timeOf(i)).toLocaleTimeString(lang), i, n: frames.length }),
    show: (i) => {
      const before = st;
      const s = storeAt(i);
      if (s !== before) markAll(s);
      page.setView(s);
    },
  });
  document.querySelector("header.top").after(player.el);
  return { player, recording: rec };
}

