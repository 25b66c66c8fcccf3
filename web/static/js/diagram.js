// The SVG diagram of one LoadBalancer Service. Top row, the control path
// (steps 1-5): Service -> controller -> cloud LB -> targets -> EXTERNAL-IP.
// Bottom row, the data path (step 6), laid out from a real trace's hops:
// client -> LB -> node -> NodePort -> DNAT (-> other node) -> Pod.
// A token runs along the top row when a step is reached; a packet runs
// along the bottom row when a request is traced.

import { s, t, setText, setAttr, shortName, truncate, reducedMotion, traceError, hopText } from "./util.js";
import { STEP_GLYPH } from "./vocab.js";

const BOX_W = 160;
const BOX_H = 78;
const STEP_X = 196;
const TOP_Y = 40;
const DATA_Y = 214;
const LEFT = 20;
const WIDTH = 960;

const CONTROL_KEYS = ["service", "controller", "lb", "targets", "status"];
// CONTROL_STEPS is how many of a flow's steps the top row draws, one box
// each; the flow's last step is the data path below.
export const CONTROL_STEPS = CONTROL_KEYS.length;
const TEMPLATE_HOPS = ["client", "lb", "node", "nodeport", "dnat", "pod"].map((kind) => ({ kind }));

export function createDiagram(svg, caption) {
  const d = { svg, caption, boxes: [], hops: [], anim: null, tokenAnim: null, traceId: null };

  svg.append(
    s("text", { x: LEFT, y: 24, class: "row-label", text: t("dg.control") }),
    // The data-path heading sits at the right end of its row: the link
    // from the cloud LB box comes down on the left half (to the LB hop,
    // always the second), so the two never cross.
    (d.dataLabel = s("text", { x: LEFT + WIDTH, y: DATA_Y - 16, class: "row-label", "text-anchor": "end", "data-testid": "dg-data-label", text: t("dg.data") })),
  );
  for (let i = 0; i < 5; i++) {
    const x = LEFT + i * STEP_X;
    if (i > 0) svg.append(s("line", { x1: x - (STEP_X - BOX_W) + 4, y1: TOP_Y + BOX_H / 2, x2: x - 6, y2: TOP_Y + BOX_H / 2, class: "arrow", "data-step": i + 1 }));
    d.boxes.push(box(svg, x, TOP_Y, BOX_W, t("dg." + CONTROL_KEYS[i]), "dg-" + CONTROL_KEYS[i]));
  }
  // Where the two rows meet: the LB box above, and the LB hop below.
  d.link = s("line", { class: "link", x1: 0, y1: 0, x2: 0, y2: 0, "data-testid": "dg-link" });
  d.hopLayer = s("g", { class: "hops" });
  d.token = s("circle", { r: 8, class: "token", cx: -20, cy: -20, "data-testid": "token" });
  d.packet = s("circle", { r: 11, class: "packet", cx: -20, cy: -20, "data-testid": "packet", "data-state": "idle" });
  svg.append(d.link, d.hopLayer, d.token, d.packet);
  layoutHops(d, TEMPLATE_HOPS, true);
  return d;
}

function box(parent, x, y, w, title, testid) {
  const g = s("g", { class: "box", "data-status": "pending", "data-testid": testid });
  const tip = s("title");
  const status = s("text", { x: x + 12, y: y + 46, class: "box-status" });
  const value = s("text", { x: x + 12, y: y + 66, class: "box-value", "data-testid": testid + "-value" });
  g.append(tip, s("rect", { x, y, width: w, height: BOX_H, rx: 10 }), s("text", { x: x + 12, y: y + 24, class: "box-title", text: title }), status, value);
  parent.append(g);
  return { g, x, y, w, tip, status, value };
}

function center(b) {
  return [b.x + b.w / 2, b.y + BOX_H / 2];
}

// rail is where the token and the packet travel: just under a row of
// boxes, so they never cover what a box says.
function rail(b) {
  return [b.x + b.w / 2, b.y + BOX_H + 12];
}

// updateControl paints the top row from the flow: each box's status with a
// glyph and a word (never colour alone), and what it holds right now.
export function updateControl(d, { flow, svc, lb, controllerOn }) {
  const steps = flow ? flow.steps : [];
  const values = [
    svc ? `${svc.name} ${svc.ports}` : "",
    flow && flow.handler ? flow.handler + (controllerOn ? "" : " (OFF)") : t("dg.nobody"),
    lb ? lb.name : t("dg.nolb"),
    lb ? t("dg.ntargets", { n: (lb.targets || []).length, h: (lb.targets || []).filter((x) => x.health === "healthy").length }) : "–",
    svc ? svc.externalIP : "",
  ];
  d.boxes.forEach((b, i) => {
    const st = (steps[i] && steps[i].status) || "pending";
    setAttr(b.g, "data-status", st);
    setText(b.status, `${STEP_GLYPH[st]} ${t("status." + st)}`);
    setText(b.value, truncate(values[i], 20));
    setText(b.tip, values[i]);
  });
  const arrows = d.svg.querySelectorAll(".arrow");
  arrows.forEach((a) => {
    const n = Number(a.getAttribute("data-step"));
    const st = (steps[n] && steps[n].status) || "pending";
    setAttr(a, "data-status", st);
  });
  const last = steps[steps.length - 1];
  const traffic = (last && last.status) || "pending";
  setText(d.dataLabel, `${t("dg.data")} — ${STEP_GLYPH[traffic]} ${t("status." + traffic)}`);
}

// playStep moves the token from the box of step `from` to the box of step
// `to` (1-5), announcing what moved.
export function playStep(d, from, to, slow) {
  if (to < 1 || to > CONTROL_STEPS) return;
  const start = Math.max(from, 1) - 1;
  const pts = [];
  for (let i = start; i <= to - 1; i++) pts.push(rail(d.boxes[i]));
  cancel(d.tokenAnim);
  setAttr(d.token, "data-state", "moving");
  d.tokenAnim = animate(d.token, pts, slow ? 700 : 380, null, () => {
    setAttr(d.token, "data-state", "done");
  });
}

function layoutHops(d, hops, template) {
  d.hopLayer.replaceChildren();
  d.hops = [];
  const n = hops.length;
  const gap = 22;
  const w = (WIDTH - (n - 1) * gap) / n;
  hops.forEach((hop, i) => {
    const x = LEFT + i * (w + gap);
    if (i > 0) d.hopLayer.append(s("line", { x1: x - gap + 3, y1: DATA_Y + BOX_H / 2, x2: x - 4, y2: DATA_Y + BOX_H / 2, class: "arrow" }));
    const b = box(d.hopLayer, x, DATA_Y, w, t("hop." + hop.kind), "hop-" + i);
    setAttr(b.g, "data-kind", hop.kind);
    setAttr(b.g, "class", "box hop" + (template ? " template" : ""));
    const where = hop.node ? shortName(hop.node) : hop.address || "";
    setText(b.status, truncate(where, Math.max(8, Math.floor(w / 8))));
    setText(b.value, hop.address && hop.node ? truncate(hop.address, Math.floor(w / 8)) : "");
    setText(b.tip, template ? t("dg.template") : hopText(hop));
    d.hops.push(b);
  });
  const lbHop = hops.findIndex((h) => h.kind === "lb");
  if (lbHop >= 0) {
    const [x1] = center(d.boxes[2]);
    const [x2] = center(d.hops[lbHop]);
    setAttr(d.link, "x1", x1);
    setAttr(d.link, "y1", TOP_Y + BOX_H);
    setAttr(d.link, "x2", x2);
    setAttr(d.link, "y2", DATA_Y);
  }
}

// playTrace lays the bottom row out from the trace and runs the packet
// along it, hop by hop, telling the caption what happens at each one.
export function playTrace(d, trace, slow) {
  if (d.traceId === trace.id) return;
  d.traceId = trace.id;
  const hops = trace.hops && trace.hops.length ? trace.hops : TEMPLATE_HOPS;
  layoutHops(d, hops, false);
  cancel(d.anim);
  const ok = trace.status >= 200 && trace.status < 400;
  setAttr(d.packet, "data-state", "moving");
  setAttr(d.packet, "data-trace", trace.id);
  d.anim = animate(
    d.packet,
    d.hops.map(rail),
    slow ? 900 : 450,
    (i) => {
      d.hops[i].g.classList.add("hit");
      const hop = hops[i];
      setText(d.caption, `${t("hop." + hop.kind)}: ${hopText(hop)}`);
    },
    () => {
      const last = d.hops[d.hops.length - 1];
      if (last) last.g.classList.add(ok ? "arrived" : "failed");
      setAttr(d.packet, "data-state", ok ? "arrived" : "failed");
      setText(d.caption, ok ? t("trace.answer", { status: trace.status }) : t("trace.failed", { status: trace.status, error: traceError(trace) }));
    },
  );
}

// resetTrace goes back to the template row (another Service was picked).
export function resetTrace(d) {
  cancel(d.anim);
  d.traceId = null;
  layoutHops(d, TEMPLATE_HOPS, true);
  setAttr(d.packet, "data-state", "idle");
  setAttr(d.packet, "cx", -20);
  setAttr(d.packet, "cy", -20);
  setText(d.caption, "");
}

// animate moves el through pts, segMs per segment, calling onReach(i) as it
// reaches point i. With reduced motion it jumps straight to the end.
function animate(el, pts, segMs, onReach, done) {
  const a = { cancelled: false };
  if (pts.length === 0) {
    done();
    return a;
  }
  const place = ([x, y]) => {
    el.setAttribute("cx", x.toFixed(1));
    el.setAttribute("cy", y.toFixed(1));
  };
  if (reducedMotion() || pts.length === 1) {
    pts.forEach((p, i) => onReach && onReach(i));
    place(pts[pts.length - 1]);
    done();
    return a;
  }
  place(pts[0]);
  if (onReach) onReach(0);
  let reached = 0;
  const t0 = performance.now();
  const total = segMs * (pts.length - 1);
  const frame = (now) => {
    if (a.cancelled) return;
    // A frame's timestamp is when the frame began, which may be just
    // before t0: clamp, or seg would be -1.
    const el2 = Math.max(0, Math.min(now - t0, total));
    const seg = Math.min(Math.floor(el2 / segMs), pts.length - 2);
    const f = (el2 - seg * segMs) / segMs;
    const ease = f < 0.5 ? 2 * f * f : 1 - (-2 * f + 2) ** 2 / 2;
    const [x1, y1] = pts[seg];
    const [x2, y2] = pts[seg + 1];
    place([x1 + (x2 - x1) * ease, y1 + (y2 - y1) * ease]);
    const nowReached = el2 >= total ? pts.length - 1 : seg;
    while (reached < nowReached) {
      reached++;
      if (onReach) onReach(reached);
    }
    if (el2 >= total) done();
    else requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
  return a;
}

function cancel(a) {
  if (a) a.cancelled = true;
}
