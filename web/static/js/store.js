// The store: everything the page knows, built from a `snapshot` and kept
// current by the messages after it (docs/protocol.md). Every message
// carries whole objects, so applying one twice is harmless.
//
// apply() only changes data and records which regions must be redrawn;
// the renderers run later, once per animation frame.

const MAX_CALLS = 300;
const MAX_EVENTS = 200;
const MAX_TRACES = 20;

export function createStore() {
  const st = {
    epoch: "",
    seq: 0,
    profile: { name: "", controllers: [], ingressIP: false, description: "" },
    controllers: {},
    nodes: new Map(), // name -> NodeView
    pods: new Map(), // ns/name -> PodView
    services: new Map(), // ns/name -> ServiceView
    events: new Map(), // ns/name -> EventView
    serviceFlows: new Map(), // ns/name -> ServiceFlow
    nodeFlows: new Map(), // node name -> NodeFlow
    instances: new Map(), // id -> Instance
    lbs: new Map(), // name -> LoadBalancer
    routes: [],
    faults: { deny: [], latency: "0s", qps: 0, burst: 0 },
    stepMode: false,
    waiting: [],
    calls: new Map(), // seq -> Call
    listeners: [],
    region: "",
    hcScale: 0,
    traces: [], // newest last
    management: null, // the kubevirt profile's management cluster (Management), else null
    lastTrace: new Map(), // service key -> Trace
    messages: 0, // messages applied since load (for the responsiveness test)
  };
  st.dirty = new Set();
  return st;
}

const ALL = ["control", "cluster", "cloud", "calls", "faults", "flow", "nodeinit"];

function byKey(list, key) {
  const m = new Map();
  for (const x of list || []) m.set(key(x), x);
  return m;
}

const podKey = (p) => p.namespace + "/" + p.name;
const svcKey = (s) => s.namespace + "/" + s.name;

// snapshot replaces the whole state with the data of a `snapshot` message
// (what GET /api/state returns).
export function snapshot(st, d) {
  st.epoch = d.epoch || "";
  st.seq = d.seq || 0;
  st.profile = d.profile || st.profile;
  st.controllers = d.controllers || {};
  st.nodes = byKey(d.nodes, (n) => n.name);
  st.pods = byKey(d.pods, podKey);
  st.services = byKey(d.services, svcKey);
  st.events = byKey(d.events, podKey);
  st.serviceFlows = byKey(d.serviceFlows, (f) => f.service);
  st.nodeFlows = byKey(d.nodeFlows, (f) => f.node);
  const c = d.cloud || {};
  st.instances = byKey(c.instances, (i) => i.id);
  st.lbs = byKey(c.loadBalancers, (lb) => lb.name);
  st.routes = c.routes || [];
  st.faults = c.faults || st.faults;
  st.stepMode = !!c.stepMode;
  st.waiting = c.waiting || [];
  st.calls = byKey(c.calls, (x) => x.seq);
  st.listeners = c.listeners || [];
  st.region = c.region || "";
  st.hcScale = c.healthCheckTimeScale || 0;
  st.management = d.management || null;
  // The snapshot carries the most recent traces (a request sent with curl
  // before the page opened); keep the ones seen too, they are still true
  // about the past.
  for (const tr of d.traces || []) addTrace(st, tr);
  for (const r of ALL) st.dirty.add(r);
  st.messages++;
}

function upsert(map, op, key, data) {
  if (op === "delete") map.delete(key);
  else map.set(key, data);
}

// apply applies one live message. Unknown types are ignored, as the
// protocol asks.
export function apply(st, m) {
  const d = m.data;
  if (m.seq) st.seq = m.seq;
  st.messages++;
  if (!d) return;
  const mark = (...rs) => rs.forEach((r) => st.dirty.add(r));
  switch (m.type) {
    case "node":
      upsert(st.nodes, d.op, d.key, d.data);
      mark("cluster", "control", "nodeinit");
      break;
    case "pod":
      upsert(st.pods, d.op, d.key, d.data);
      mark("cluster");
      break;
    case "service":
      upsert(st.services, d.op, d.key, d.data);
      mark("cluster", "control", "flow");
      break;
    case "event":
      upsert(st.events, d.op, d.key, d.data);
      if (st.events.size > MAX_EVENTS) trimOldestEvents(st);
      mark("cluster");
      break;
    case "serviceflow":
      upsert(st.serviceFlows, d.op, d.key, d.data);
      mark("flow", "control");
      break;
    case "nodeflow":
      upsert(st.nodeFlows, d.op, d.key, d.data);
      mark("nodeinit");
      break;
    case "call":
      st.calls.set(d.seq, d);
      if (st.calls.size > MAX_CALLS) {
        const drop = [...st.calls.keys()].sort((a, b) => a - b).slice(0, st.calls.size - MAX_CALLS);
        for (const k of drop) st.calls.delete(k);
      }
      mark("calls");
      break;
    case "cloud":
      if (d.kind === "instance") {
        upsert(st.instances, d.op, d.id, d.object);
        mark("cloud", "nodeinit", "control");
      } else if (d.kind === "loadbalancer") {
        upsert(st.lbs, d.op, d.id, d.object);
        mark("cloud", "flow");
      } else if (d.kind === "routes") {
        st.routes = d.routes || [];
        mark("cloud", "control");
      }
      break;
    case "faults":
      st.faults = d;
      mark("faults");
      break;
    case "stepmode":
      st.stepMode = !!d.enabled;
      st.waiting = d.waiting || [];
      mark("faults");
      break;
    case "controllers":
      st.controllers = d;
      mark("control", "flow");
      break;
    case "management":
      st.management = d;
      mark("cloud");
      break;
    case "listeners":
      st.listeners = d || [];
      mark("cloud", "flow");
      break;
    case "trace":
      addTrace(st, d);
      break;
    default:
    // not ours: ignore
  }
}

// addTrace records a data-plane trace (from the stream or from the answer
// to our own POST /api/requests; the same id twice is kept once).
export function addTrace(st, tr) {
  if (!tr || !tr.id) return;
  if (st.traces.some((x) => x.id === tr.id)) return;
  st.traces.push(tr);
  if (st.traces.length > MAX_TRACES) st.traces.shift();
  if (tr.service) st.lastTrace.set(tr.service, tr);
  st.dirty.add("flow");
}

function trimOldestEvents(st) {
  const sorted = [...st.events.entries()].sort((a, b) => timeOf(a[1]) - timeOf(b[1]));
  for (const [k] of sorted.slice(0, st.events.size - MAX_EVENTS)) st.events.delete(k);
}

function timeOf(e) {
  return e && e.time ? Date.parse(e.time) || 0 : 0;
}

export { podKey, svcKey, timeOf };

// --- for players (player.js): a replay feeds its own store, never the live one ---

// markAll asks for every region to be redrawn (a player switched stores).
export function markAll(st) {
  for (const r of ALL) st.dirty.add(r);
}

// cloneStore copies a store deeply enough that a player may change its
// maps and lists without touching the original; the objects in them are
// shared and must be replaced, not mutated.
export function cloneStore(src) {
  const st = createStore();
  for (const [k, v] of Object.entries(src)) {
    if (k === "dirty") continue;
    st[k] = v instanceof Map ? new Map(v) : Array.isArray(v) ? [...v] : v;
  }
  markAll(st);
  return st;
}
