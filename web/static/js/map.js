// The live map of cloud and cluster (SVG): the region, one column per
// availability zone, each instance in its zone with its Node's state and
// its Pods, the load balancers in front with a line to each target, the
// route table with a line from each Pod CIDR to its instance, and the CCM
// controllers on top, whose cloud calls flash towards what they touch.
//
// It renders from the store only, so whatever feeds the store (the live
// stream, a replay) drives it. Elements are kept by key and only their
// attributes change, so CSS transitions animate a node joining, a taint
// falling, a load balancer appearing and a target turning unhealthy.

import { s, t, setText, setAttr, shortName, truncate, reducedMotion } from "./util.js";
import { controllerNames } from "./control.js";
import { selectedService } from "./flow.js";
import { NODE_STATE, HEALTH_GLYPH, HEALTH_KEY } from "./vocab.js";



// Load balancers beyond this many show their target lines only for the
// Service picked in the flow, or 50 Services would draw 2,500 lines.
const MAX_LB_LINES = 4;
// Pods named on an instance box; more become a count.
const MAX_POD_NAMES = 2;
// The characters of Pod names an instance box holds on its line.
const MAX_POD_CHARS = 24;
const FLASH_MS = 1400;

const PAD = 16;
const ACTOR_Y = 34;
const ACTOR_H = 40;
// Wide enough for the longest controller's name ("NodeLifecycle
// controller", "LB controller (アドオン)") in full.
const ACTOR_W = 220;
const LB_H = 48;
const ROUTE_ROW = 18;

// Two sizes of instance box: roomy for a classroom lab of a few nodes,
// compact beyond COMPACT_AT so 50 nodes stay readable without scaling the
// text down.
const COMPACT_AT = 12;
const ROOMY = { w: 200, h: 84, gap: 12, font: 13 };
const COMPACT = { w: 150, h: 62, gap: 8, font: 11 };

let m = null; // the map's DOM, made on first render
// flashTimers: per flashing element, the timer that ends its flash.
const flashTimers = new WeakMap();

function init() {
  const svg = document.getElementById("cloud-map");
  const layer = (cls) => svg.appendChild(s("g", { class: cls }));
  m = {
    svg,
    text: document.getElementById("map-text"),
    title: layer("map-region"),
    zones: layer("map-zones"),
    routeLines: layer("map-route-lines"),
    lbLines: layer("map-lb-lines"),
    routes: layer("map-routes"),
    insts: layer("map-insts"),
    lbs: layer("map-lbs"),
    actors: layer("map-actors"),
    flashLayer: layer("map-flashes"),
    keyed: new Map(), // key -> element, per kind ("inst:i-1", "lb:name", ...)
    fresh: new Set(), // elements made in this render, not yet shown
    pos: new Map(), // what a call may touch -> {x, y, el}
    maxSeq: -1,
    epoch: null,
    flashCount: 0,
    textSig: "",
  };
  m.regionLabel = m.title.appendChild(s("text", { x: PAD, y: 22, class: "map-region-label", "data-testid": "map-region" }));
  m.pending = m.title.appendChild(s("text", { x: PAD, y: 22, class: "map-pending", "text-anchor": "end", "data-testid": "map-pending" }));
}

// resetMap forgets the drawing, so the next render draws everything anew
// (the render benchmark's cold case).
export function resetMap() {
  if (!m) return;
  for (const g of [m.title, m.zones, m.routeLines, m.lbLines, m.routes, m.insts, m.lbs, m.actors, m.flashLayer]) g.remove();
  m = null;
}

// keyed returns the drawing for key — {el, ...its named parts} — making
// it with make() the first time, and marks it seen in this render. make
// returns an element, or group(...) for one with parts.
function keyed(parent, key, make, seen) {
  let d = m.keyed.get(key);
  if (!d) {
    const made = make();
    d = made instanceof Element ? { el: made } : made;
    m.fresh.add(d.el);
    m.keyed.set(key, d);
    parent.appendChild(d.el);
  }
  seen.add(key);
  return d;
}

// group makes an SVG group with attrs whose children are parts, in the
// order given, and returns it as {el, ...parts}: the renderers reach a
// part by its name, never by its position.
function group(attrs, parts) {
  const el = s("g", attrs);
  el.append(...Object.values(parts));
  return { el, ...parts };
}

// nodeState is what the map says of an instance and its Node.
export function nodeState(inst, node) {
  const st = inst ? inst.state : "running";
  if (st === "terminated" || st === "shutting-down") return "gone";
  if (st === "stopped" || st === "stopping") return "shutdown";
  if (node) {
    if (node.shutdown) return "shutdown";
    if (node.uninitialized) return "uninitialized";
    return node.ready === "True" ? "ready" : "notready";
  }
  return st === "pending" ? "launching" : "booting";
}

// model turns the store into what the map draws: zones with their
// instances (and each instance's Node and Pods), load balancers with their
// targets resolved to instances, and routes.
export function model(st) {
  const nodeByName = new Map();
  for (const n of st.nodes.values()) nodeByName.set(n.name, n);
  const podsOn = new Map(); // node name -> [pod]
  let unscheduled = 0;
  for (const p of st.pods.values()) {
    if (!p.node) {
      unscheduled++;
      continue;
    }
    if (!podsOn.has(p.node)) podsOn.set(p.node, []);
    podsOn.get(p.node).push(p);
  }
  const insts = [];
  const instByID = new Map();
  const claimed = new Set();
  const vmiByName = new Map(((st.management && st.management.vmis) || []).map((v) => [v.name, v]));
  for (const inst of st.instances.values()) {
    const nodeName = inst.privateDNSName || inst.name;
    const node = nodeByName.get(nodeName) || null;
    if (node) claimed.add(node.name);
    const x = { id: inst.id, inst, node, nodeName, zone: inst.zone || (node && node.zone) || "?", pods: podsOn.get(nodeName) || [] };
    x.state = nodeState(inst, node);
    // kubeadm's control-plane taint: that node holds the mirror Pods of the
    // control plane and the CCM, and the map says so, or its "5 Pods" would
    // puzzle a student.
    x.controlPlane = !!node && !!node.controlPlane;
    // The kubevirt profile: the VM is a VMI of the management cluster.
    x.vmi = vmiByName.get(nodeName) || null;
    insts.push(x);
    instByID.set(inst.id, x);
  }
  // A Node with no instance the cloud knows (it should not happen here,
  // and is worth seeing when it does).
  for (const node of nodeByName.values()) {
    if (claimed.has(node.name)) continue;
    const x = { id: node.name, inst: null, node, nodeName: node.name, zone: node.zone || "?", pods: podsOn.get(node.name) || [] };
    x.state = nodeState(null, node);
    insts.push(x);
  }
  const zones = new Map();
  for (const x of insts) {
    if (!zones.has(x.zone)) zones.set(x.zone, []);
    zones.get(x.zone).push(x);
  }
  const zoneList = [...zones.keys()].sort().map((name) => ({ name, insts: zones.get(name) }));
  for (const z of zoneList) z.insts.sort((a, b) => a.id.localeCompare(b.id));

  const instByPodIP = new Map();
  for (const x of insts) for (const p of x.pods) if (p.ip) instByPodIP.set(p.ip, x);
  const lbs = [...st.lbs.values()]
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((lb) => ({
      lb,
      targets: (lb.targets || []).map((tg) => ({ tg, to: lb.targetType === "ip" ? instByPodIP.get(tg.id) : instByID.get(tg.id) })),
    }));
  for (const { lb, targets } of lbs) for (const { tg, to } of targets) if (to) (to.marks ||= []).push({ lb: lb.name, health: tg.health || "initial" });
  const routes = [...st.routes].sort((a, b) => a.destinationCIDR.localeCompare(b.destinationCIDR)).map((r) => ({ r, to: instByID.get(r.instanceID) }));
  return { zones: zoneList, insts, lbs, routes, unscheduled, instByID };
}

function layout(md, presenter) {
  const total = md.insts.length;
  const box = total > COMPACT_AT ? COMPACT : ROOMY;
  const most = Math.max(1, ...md.zones.map((z) => z.insts.length));
  // Columns inside a zone: as few as keep a zone at most ~9 boxes tall.
  const cols = Math.min(4, Math.max(1, Math.ceil(most / (presenter ? 7 : 9))));
  const zoneW = cols * (box.w + box.gap) + box.gap;
  const rows = Math.ceil(most / cols);

  const actorsCount = Math.max(1, md.actors.length);
  const lbW = 190;
  const zonesW = Math.max(1, md.zones.length) * (zoneW + 10);
  const routeW = md.routes.length ? 280 : 0;
  const width = Math.max(PAD * 2 + zonesW + routeW, PAD * 2 + actorsCount * (ACTOR_W + 10), 720);
  const lbPerRow = Math.max(1, Math.floor((width - PAD * 2) / (lbW + 12)));
  const lbRows = Math.ceil(md.lbs.length / lbPerRow);
  const lbTop = ACTOR_Y + ACTOR_H + 28;
  const zoneTop = lbTop + Math.max(1, lbRows) * (LB_H + 12) + 40;
  const zoneH = 30 + rows * (box.h + box.gap) + box.gap;
  const routeH = 30 + md.routes.length * ROUTE_ROW + 8;
  const height = zoneTop + Math.max(zoneH, routeH, 90) + PAD;
  return { box, cols, zoneW, zoneTop, zoneH, width, height, lbW, lbPerRow, lbTop, routeX: PAD + zonesW + 20, routeW };
}

// renderMap draws the map from the store. callsOnly: nothing but cloud
// calls changed, so the drawing stands and only the new calls flash.
export function renderMap(st, ui, callsOnly) {
  if (m && callsOnly) {
    flashCalls(st);
    return;
  }
  if (!m) init();
  const md = model(st);
  md.actors = controllerNames(st);
  const L = layout(md, ui.presenter);
  setAttr(m.svg, "viewBox", `0 0 ${L.width} ${L.height}`);
  setAttr(m.svg, "data-compact", L.box === COMPACT ? "true" : "false");
  const seen = new Set();
  m.pos.clear();

  setText(m.regionLabel, t("map.region", { region: st.region || "?" }));
  setAttr(m.pending, "x", L.width - PAD);
  setText(m.pending, md.unscheduled ? "⏸ " + t("map.unscheduled", { n: md.unscheduled }) : "");

  drawActors(st, md, L, seen);
  drawManagement(st, md, seen);
  drawZones(md, L, seen);
  drawLBs(st, ui, md, L, seen);
  drawRoutes(md, L, seen);

  for (const [k, d] of m.keyed) {
    if (!seen.has(k)) {
      d.el.remove();
      m.keyed.delete(k);
      m.fresh.delete(d.el);
    }
  }
  // New elements start in their "entering" look and move to their normal
  // one on the next frame, which the CSS animates.
  const fresh = [...m.fresh];
  m.fresh.clear();
  for (const el of fresh) el.classList.add("entering");
  if (fresh.length) {
    requestAnimationFrame(() => requestAnimationFrame(() => fresh.forEach((el) => el.classList.remove("entering"))));
  }

  flashCalls(st);
  renderText(st, md);
}

function drawActors(st, md, L, seen) {
  const w = ACTOR_W;
  md.actors.forEach((name, i) => {
    const x = PAD + i * (w + 10);
    const {
      el: g,
      tip,
      rect,
      label,
      sub,
    } = keyed(
      m.actors,
      "actor:" + name,
      () =>
        group(
          { class: "map-actor", "data-testid": "map-actor-" + name, "data-name": name },
          { tip: s("title"), rect: s("rect", { rx: 20, height: ACTOR_H }), label: s("text", { class: "map-actor-name" }), sub: s("text", { class: "map-actor-state" }) },
        ),
      seen,
    );
    const on = !!st.controllers[name];
    const present = name in st.controllers;
    const state = present ? (on ? "on" : "off") : "absent";
    setAttr(g, "data-state", state);
    setAttr(rect, "x", x);
    setAttr(rect, "y", ACTOR_Y);
    setAttr(rect, "width", w);
    setAttr(label, "x", x + 12);
    setAttr(label, "y", ACTOR_Y + 17);
    setText(label, t("ctrl." + name));
    setAttr(sub, "x", x + 12);
    setAttr(sub, "y", ACTOR_Y + 33);
    setText(sub, state === "on" ? "● " + t("ctrl.on") : state === "off" ? "○ " + t("ctrl.off") : "–");
    setText(tip, t("ctrl." + name));
    const caller = callerOf(name);
    m.pos.set("actor:" + caller, { x: x + w / 2, y: ACTOR_Y + ACTOR_H, el: g });
  });
}

// callerOf is the name a controller's cloud calls carry (controllers.Caller).
function callerOf(name) {
  return name === "lbc" ? "load-balancer-controller" : name + "-controller";
}

// mgmtText is what the map says of the management cluster (the kubevirt
// profile): where the CCM the switches above act on really runs.
function mgmtText(mg) {
  const c = mg.ccm || {};
  return c.deployment
    ? t("map.mgmt", { ns: mg.namespace, name: c.deployment, ready: c.ready || 0, pod: c.pod || "–", node: c.node || "–" })
    : t("map.mgmt.none", { ns: mg.namespace });
}

// drawManagement frames the CCM's controllers as the management cluster's
// (kubevirt profile): they run outside the tenant, in its Deployment
// there. The words go to the right of the frame (this profile has two
// controllers, so there is room); the Pod and its node are in the tip.
function drawManagement(st, md, seen) {
  const mg = st.management;
  if (!mg) return;
  const { el: g, tip, frame, l1, l2, l3 } = keyed(
    m.actors,
    "mgmt",
    () =>
      group(
        { class: "map-mgmt", "data-testid": "map-mgmt" },
        {
          tip: s("title"),
          frame: s("rect", { class: "map-mgmt-frame", rx: 10 }),
          l1: s("text", { class: "map-mgmt-label map-mgmt-title", "data-testid": "map-mgmt-label" }),
          l2: s("text", { class: "map-mgmt-label" }),
          l3: s("text", { class: "map-mgmt-label", "data-testid": "map-mgmt-ccm" }),
        },
      ),
    seen,
  );
  const n = Math.max(1, md.actors.length);
  const w = n * (ACTOR_W + 10) + 2;
  setAttr(frame, "x", PAD - 6);
  setAttr(frame, "y", ACTOR_Y - 6);
  setAttr(frame, "width", w);
  setAttr(frame, "height", ACTOR_H + 12);
  const c = mg.ccm || {};
  const x = PAD - 6 + w + 10;
  [l1, l2, l3].forEach((el, i) => {
    setAttr(el, "x", x);
    setAttr(el, "y", ACTOR_Y + 8 + i * 15);
  });
  setText(l1, t("map.mgmt.title", { ns: mg.namespace }));
  setText(l2, t("map.mgmt.outside"));
  setText(l3, c.deployment ? `${c.deployment} ${c.ready || 0}/1` : t("map.mgmt.noccm"));
  setAttr(g, "data-ready", String(c.ready || 0));
  setText(tip, mgmtText(mg));
}

function drawZones(md, L, seen) {
  const { box } = L;
  md.zones.forEach((z, zi) => {
    const zx = PAD + zi * (L.zoneW + 10);
    const {
      el: col,
      rect,
      label,
    } = keyed(m.zones, "zone:" + z.name, () => group({ class: "map-zone", "data-testid": "map-zone-" + z.name, "data-zone": z.name }, { rect: s("rect", { rx: 10 }), label: s("text", { class: "map-zone-label" }) }), seen);
    setAttr(rect, "x", zx);
    setAttr(rect, "y", L.zoneTop);
    setAttr(rect, "width", L.zoneW);
    setAttr(rect, "height", L.zoneH);
    setAttr(label, "x", zx + 10);
    setAttr(label, "y", L.zoneTop + 20);
    setText(label, t("map.zone", { zone: z.name }));
    m.pos.set("zone:" + z.name, { x: zx + L.zoneW / 2, y: L.zoneTop, el: col });

    z.insts.forEach((x, i) => {
      const ix = zx + box.gap + (i % L.cols) * (box.w + box.gap);
      const iy = L.zoneTop + 30 + Math.floor(i / L.cols) * (box.h + box.gap);
      drawInstance(x, ix, iy, box, seen);
    });
  });
}

function drawInstance(x, ix, iy, box, seen) {
  const {
    el: g,
    tip,
    rect,
    id,
    state,
    pods,
    taint,
  } = keyed(
    m.insts,
    "inst:" + x.id,
    () =>
      group(
        { class: "map-inst", "data-testid": "map-inst-" + x.id, "data-id": x.id },
        {
          tip: s("title"),
          rect: s("rect", { class: "map-inst-box", rx: 8 }),
          id: s("text", { class: "map-inst-id", x: 8, y: 16 }),
          state: s("text", { class: "map-inst-state", x: 8, y: 33, "data-testid": "map-inst-state" }),
          pods: s("text", { class: "map-inst-pods", x: 8, y: 50, "data-testid": "map-inst-pods" }),
          taint: s("text", { class: "map-inst-taint", x: 8, y: 67, "data-testid": "map-inst-taint" }),
        },
      ),
    seen,
  );
  // The position is a transform, so a box that moves glides (CSS).
  g.style.transform = `translate(${ix}px, ${iy}px)`;
  setAttr(g, "data-state", x.state);
  setAttr(g, "data-zone", x.zone);
  setAttr(g, "data-node", x.node ? x.node.name : null);
  setAttr(rect, "width", box.w);
  setAttr(rect, "height", box.h);
  const compact = box === COMPACT;
  setText(id, compact ? truncate(x.id, 19) : x.id);
  const S = NODE_STATE[x.state];
  setText(state, `${S.glyph} ${t(S.key)}`);
  const n = x.pods.length;
  let podText;
  if (n === 0) podText = t("map.pods.none");
  else if (n <= MAX_POD_NAMES && !compact) podText = x.pods.map((p) => truncate(p.name, 14)).join(", ");
  // Names only while they fit the box (kube-proxy and CoreDNS share most
  // nodes with the student's Pods now); past that, a count.
  if (n > 0 && (podText === undefined || podText.length > MAX_POD_CHARS)) podText = t("map.pods", { n });
  setText(pods, "▣ " + podText);
  setAttr(pods, "data-count", n);
  const tainted = x.state === "uninitialized";
  setAttr(taint, "data-on", tainted ? "true" : "false");
  setAttr(taint, "y", compact ? 58 : 67);
  // Compact boxes have no room for the taint line (the state says it);
  // they show how each load balancer sees the instance instead, since
  // their lines go to the zone, not to every box.
  const marks = (x.marks || []).map((k) => HEALTH_GLYPH[k.health] || "?").join("");
  setAttr(taint, "data-marks", compact ? marks : null);
  const vmi = x.vmi ? t("map.vmi", { phase: x.vmi.phase || "?", node: x.vmi.node || "?" }) : "";
  setAttr(g, "data-vmi", x.vmi ? x.vmi.phase || "?" : null);
  // The box has room for the VMI's phase; its management node is in the tip.
  const line4 = tainted ? "⚑ " + t("map.taint") : x.controlPlane ? "⚙ " + t("map.controlPlane") : x.vmi ? "VMI " + (x.vmi.phase || "?") : x.node ? shortName(x.node.name) : "";
  setText(taint, compact ? (marks ? "⇄ " + marks : "") : line4);
  if (compact) setAttr(pods, "y", 46);
  else setAttr(pods, "y", 50);
  setText(
    tip,
    [x.id, x.node ? x.node.name : "", `${S.glyph} ${t(S.key)}`, vmi, x.pods.map((p) => p.namespace + "/" + p.name).join("\n")].filter(Boolean).join("\n"),
  );
  const cx = ix + box.w / 2;
  const at = { x: cx, y: iy, el: g, top: [cx, iy], right: [ix + box.w, iy + box.h / 2], box: [ix, iy, box.w, box.h] };
  m.pos.set(x.id, at);
  if (x.inst && x.inst.privateDNSName) m.pos.set(x.inst.privateDNSName, at);
  if (x.node) m.pos.set(x.node.name, at);
}

// lbServices maps each load balancer's name to its Service
// (namespace/name), from the flows, which know it by the Service's UID.
function lbServices(st) {
  const out = new Map();
  for (const f of st.serviceFlows.values()) if (f.lb) out.set(f.lb, f.service);
  return out;
}

// shortService drops the default namespace, as kubectl does.
function shortService(key) {
  return key.startsWith("default/") ? key.slice("default/".length) : key;
}

function drawLBs(st, ui, md, L, seen) {
  const selected = selectedService(st, ui);
  const flow = selected ? st.serviceFlows.get(selected) : null;
  const focusLB = flow && flow.lb;
  const allLines = md.lbs.length <= MAX_LB_LINES;
  setAttr(m.svg, "data-lb-lines", allLines ? "all" : "selected");
  const serviceOf = lbServices(st);
  md.lbs.forEach(({ lb, targets }, i) => {
    const x = PAD + (i % L.lbPerRow) * (L.lbW + 12);
    const y = L.lbTop + Math.floor(i / L.lbPerRow) * (LB_H + 12);
    const {
      el: g,
      tip,
      rect,
      name,
      sum,
    } = keyed(
      m.lbs,
      "lb:" + lb.name,
      () =>
        group(
          { class: "map-lb", "data-testid": "map-lb-" + lb.name, "data-name": lb.name },
          { tip: s("title"), rect: s("rect", { rx: 6, height: LB_H }), name: s("text", { class: "map-lb-name" }), sum: s("text", { class: "map-lb-sum" }) },
        ),
      seen,
    );
    setAttr(rect, "x", x);
    setAttr(rect, "y", y);
    setAttr(rect, "width", L.lbW);
    setAttr(name, "x", x + 10);
    setAttr(name, "y", y + 19);
    // A load balancer's name is a hash of its Service's UID: the box
    // names the Service, the hash stays in the tooltip and the text.
    const svc = serviceOf.get(lb.name) || "";
    setAttr(g, "data-service", svc || null);
    setText(name, "⇄ " + truncate(svc ? shortService(svc) : lb.name, 22));
    const healthy = targets.filter((x) => x.tg.health === "healthy").length;
    setAttr(sum, "x", x + 10);
    setAttr(sum, "y", y + 38);
    setText(sum, t("map.lb.targets", { n: targets.length, h: healthy }));
    setText(tip, [svc ? t("lb.for", { name: svc }) : "", lb.name, lb.dnsName || lb.ip || "", lb.targetType].filter(Boolean).join("\n"));
    setAttr(g, "data-selected", lb.name === focusLB ? "true" : null);
    const cx = x + L.lbW / 2;
    m.pos.set(lb.name, { x: cx, y, el: g });
    if (!allLines && lb.name !== focusLB) return;
    if (L.box === COMPACT) {
      zoneLines(lb, targets, i, cx, y + LB_H, L, seen);
      return;
    }
    targets.forEach(({ tg, to }) => {
      if (!to) return;
      const at = m.pos.get(to.id);
      if (!at) return;
      const key = "lbline:" + lb.name + "|" + tg.id + "|" + tg.port;
      const {
        el: line,
        tip: ltip,
        ln,
        glyph,
      } = keyed(
        m.lbLines,
        key,
        () => group({ class: "map-lb-line", "data-testid": "map-lb-line", "data-lb": lb.name, "data-target": tg.id }, { tip: s("title"), ln: s("line"), glyph: s("text", { class: "map-health-glyph" }) }),
        seen,
      );
      const health = tg.health || "initial";
      setAttr(line, "data-health", health);
      setAttr(line, "data-instance", to.id);
      // Spread the ends over the box's top so lines from several LBs to one
      // instance stay apart.
      const [bx, by, bw] = at.box;
      const ex = bx + bw / 2 + ((i % 5) - 2) * Math.min(14, bw / 6);
      setAttr(ln, "x1", cx);
      setAttr(ln, "y1", y + LB_H);
      setAttr(ln, "x2", ex);
      setAttr(ln, "y2", by);
      setAttr(glyph, "x", ex + 3);
      setAttr(glyph, "y", by - 4);
      setText(glyph, HEALTH_GLYPH[health] || "?");
      setText(ltip, `${lb.name} → ${tg.id}:${tg.port} ${t(HEALTH_KEY[health] || "health.initial")}${tg.reason ? " (" + tg.reason + ")" : ""}`);
    });
  });
}

// zoneLines is the crowded map's way to show targets: one line per zone,
// saying how many of the load balancer's targets there are healthy.
function zoneLines(lb, targets, i, x1, y1, L, seen) {
  const byZone = new Map();
  for (const { tg, to } of targets) {
    if (!to) continue;
    if (!byZone.has(to.zone)) byZone.set(to.zone, []);
    byZone.get(to.zone).push(tg);
  }
  for (const [zone, tgs] of byZone) {
    const col = m.pos.get("zone:" + zone);
    if (!col) continue;
    const healthy = tgs.filter((x) => x.health === "healthy").length;
    const health = healthy === tgs.length ? "healthy" : tgs.some((x) => x.health === "unhealthy") ? "unhealthy" : "initial";
    const {
      el: line,
      tip,
      ln,
      glyph,
    } = keyed(
      m.lbLines,
      "lbzone:" + lb.name + "|" + zone,
      () => group({ class: "map-lb-line", "data-testid": "map-lb-zone-line", "data-lb": lb.name, "data-zone": zone }, { tip: s("title"), ln: s("line"), glyph: s("text", { class: "map-health-glyph" }) }),
      seen,
    );
    const ex = col.x + ((i % 3) - 1) * Math.min(90, L.zoneW / 3.4) - 20;
    setAttr(line, "data-health", health);
    setAttr(ln, "x1", x1);
    setAttr(ln, "y1", y1);
    setAttr(ln, "x2", ex);
    setAttr(ln, "y2", col.y);
    setAttr(glyph, "x", ex + 4);
    setAttr(glyph, "y", col.y - 4);
    setText(glyph, `${HEALTH_GLYPH[health]} ${healthy}/${tgs.length}`);
    setText(tip, `${lb.name} → ${t("map.zone", { zone })}: ${t("map.lb.targets", { n: tgs.length, h: healthy })}`);
  }
}

function drawRoutes(md, L, seen) {
  const { el: head } = keyed(m.routes, "routes:head", () => s("text", { class: "map-routes-label", "data-testid": "map-routes" }), seen);
  setAttr(head, "x", L.routeX);
  setAttr(head, "y", L.zoneTop + 20);
  setText(head, md.routes.length ? t("map.routes") : "");
  md.routes.forEach(({ r, to }, i) => {
    const y = L.zoneTop + 30 + i * ROUTE_ROW + 12;
    const {
      el: row,
      tip,
      text,
    } = keyed(m.routes, "route:" + r.destinationCIDR, () => group({ class: "map-route", "data-testid": "map-route-" + r.destinationCIDR, "data-cidr": r.destinationCIDR }, { tip: s("title"), text: s("text") }), seen);
    const state = r.state || "active";
    setAttr(row, "data-state", state);
    setAttr(text, "x", L.routeX + 14);
    setAttr(text, "y", y);
    setText(text, (state === "blackhole" ? "⊘ " : "→ ") + r.destinationCIDR);
    setText(tip, `${r.destinationCIDR} → ${r.instanceID} (${state})`);
    m.pos.set(r.destinationCIDR, { x: L.routeX + 8, y: y - 4, el: row });
    const at = to && m.pos.get(to.id);
    const { el: line } = keyed(m.routeLines, "rline:" + r.destinationCIDR, () => s("line", { class: "map-route-line", "data-cidr": r.destinationCIDR }), seen);
    setAttr(line, "data-state", state);
    if (at) {
      setAttr(line, "x1", L.routeX + 10);
      setAttr(line, "y1", y - 4);
      setAttr(line, "x2", at.right[0]);
      setAttr(line, "y2", at.right[1]);
      setAttr(line, "visibility", null);
    } else {
      setAttr(line, "visibility", "hidden");
    }
  });
}

// flashCalls shows the cloud calls made since the last render: a line from
// the controller to each thing the call addressed, fading out. Calls seen
// in the first render (or before a new lab run) are history, not news.
function flashCalls(st) {
  let max = -1;
  for (const k of st.calls.keys()) if (k > max) max = k;
  if (m.epoch !== st.epoch || m.maxSeq < 0 || max < m.maxSeq) {
    m.epoch = st.epoch;
    m.maxSeq = max;
    return;
  }
  if (max <= m.maxSeq) return;
  const fresh = [...st.calls.values()].filter((c) => c.seq > m.maxSeq).sort((a, b) => a.seq - b.seq);
  m.maxSeq = max;
  for (const c of fresh.slice(-12)) flash(c);
}

function flash(call) {
  const from = m.pos.get("actor:" + call.caller);
  const targets = (call.resources || []).map((r) => m.pos.get(r)).filter(Boolean);
  m.flashCount++;
  setAttr(m.svg, "data-flashes", m.flashCount);
  setAttr(m.svg, "data-last-call", `${call.caller} ${call.action}`);
  const els = [];
  if (from) els.push(from.el);
  for (const to of targets) {
    els.push(to.el);
    if (!from) continue;
    const line = s("line", { class: "map-flash", x1: from.x, y1: from.y, x2: to.x, y2: to.y, "data-action": call.action, "data-caller": call.caller });
    line.append(s("title", { text: `${call.caller}: ${call.action}` }));
    m.flashLayer.appendChild(line);
    setTimeout(() => line.remove(), reducedMotion() ? FLASH_MS / 2 : FLASH_MS);
  }
  // The lines the call is about flash too: a load balancer's lines to its
  // targets, a route's line to its instance.
  for (const r of call.resources || []) {
    const sel = `.map-lb-line[data-lb="${CSS.escape(r)}"], .map-route-line[data-cidr="${CSS.escape(r)}"]`;
    for (const ln of m.svg.querySelectorAll(sel)) els.push(ln);
  }
  for (const el of els) {
    // An element still flashing keeps its animation a while longer (a
    // restart would force a layout of the whole page).
    el.classList.add("flashing");
    clearTimeout(flashTimers.get(el));
    flashTimers.set(
      el,
      setTimeout(() => {
        el.classList.remove("flashing");
        flashTimers.delete(el);
      }, FLASH_MS),
    );
  }
}

// renderText writes the map as a list, for screen readers and for anyone
// who prefers text: the same facts the drawing shows.
function renderText(st, md) {
  const lines = [];
  if (st.management) lines.push(mgmtText(st.management));
  lines.push(t("map.region", { region: st.region || "?" }));
  for (const z of md.zones) {
    lines.push(t("map.zone", { zone: z.name }) + ":");
    for (const x of z.insts) {
      const S = NODE_STATE[x.state];
      const vmi = x.vmi ? "; " + t("map.vmi", { phase: x.vmi.phase || "?", node: x.vmi.node || "?" }) : "";
      lines.push(`  ${x.id}${x.node ? " (" + x.node.name + ")" : ""}${x.controlPlane ? ", " + t("map.controlPlane") : ""}: ${t(S.key)}; ${x.pods.length ? t("map.pods", { n: x.pods.length }) : t("map.pods.none")}${vmi}`);
    }
  }
  const serviceOf = lbServices(st);
  for (const { lb, targets } of md.lbs) {
    const healthy = targets.filter((x) => x.tg.health === "healthy").length;
    const svc = serviceOf.get(lb.name);
    const name = svc ? `${lb.name} (${t("lb.for", { name: svc })})` : lb.name;
    lines.push(`${t("map.text.lb", { name })}: ${t("map.lb.targets", { n: targets.length, h: healthy })}`);
    // Many targets: only those not healthy, which are the news.
    for (const { tg, to } of targets) {
      if (targets.length > 12 && tg.health === "healthy") continue;
      lines.push(`  → ${to ? to.id : tg.id}:${tg.port} ${t(HEALTH_KEY[tg.health] || "health.initial")}`);
    }
  }
  if (md.routes.length) {
    lines.push(t("map.routes") + ":");
    for (const { r } of md.routes) lines.push(`  ${r.destinationCIDR} → ${r.instanceID} (${r.state || "active"})`);
  }
  const sig = lines.join("\n");
  if (sig === m.textSig) return;
  m.textSig = sig;
  m.text.replaceChildren(...lines.map((l) => Object.assign(document.createElement("li"), { textContent: l })));
}
