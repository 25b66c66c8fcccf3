// Cloud region: instances with their actions, load balancers (listeners,
// the loopback address to curl, targets and health), the route table, the
// call log, and the fault and step-mode switches.

import { h, t, setText, setAttr, shortName, clock, ms, truncate } from "./util.js";
import { table } from "./rows.js";
import { INSTANCE_GLYPH, HEALTH_GLYPH, CALL_BADGE } from "./vocab.js";

const CALLS_SHOWN = 100;
// CONTROL_PLANE_TAG marks the control-plane instance (lab/kubelet's
// ControlPlaneTag).
const CONTROL_PLANE_TAG = "k8s.io/role/control-plane";

const instanceRows = table({
  body: "instances-body",
  key: (i) => i.id,
  empty: () => t("instances.empty"),
  row: (i) => ({ "data-testid": "inst-row-" + i.id, "data-state": i.state }),
  columns: [
    { key: "id", tag: "th", cell: (i) => ({ text: i.id, title: i.privateDNSName }) },
    {
      key: "state",
      cell: (i) => ({
        text: (INSTANCE_GLYPH[i.state] || "") + " " + i.state,
        class: i.state === "running" ? "ok" : i.state === "terminated" ? "bad" : "warn",
      }),
    },
    { key: "type", cell: (i) => i.instanceType },
    { key: "zone", cell: (i) => i.zone },
    { key: "privateIP", cell: (i) => i.privateIP },
    {
      key: "actions",
      attrs: { class: "actions" },
      // The buttons are built once (focus survives a redraw); a redraw
      // only enables the ones the instance's state allows.
      make: (i) => [instanceButton(i, "stop", ""), instanceButton(i, "start", ""), instanceButton(i, "terminate", "btn-danger")],
      cell: (i, _, td) => {
        // The control-plane instance (kubelet.ControlPlaneTag) runs the
        // lab's own control plane: the page offers no way to end it.
        const cp = !!(i.tags && i.tags[CONTROL_PLANE_TAG]);
        const allowed = { stop: i.state === "running", start: i.state === "stopped", terminate: i.state !== "terminated" && !cp };
        for (const [op, ok] of Object.entries(allowed)) setAttr(td.querySelector(`[data-op="${op}"]`), "disabled", !ok);
        setAttr(td.querySelector('[data-op="terminate"]'), "title", cp ? t("action.terminate.cp") : null);
      },
    },
  ],
});

function instanceButton(i, op, cls) {
  return h("button", {
    type: "button",
    class: "btn btn-small " + cls,
    "data-action": "instance",
    "data-op": op,
    "data-id": i.id,
    "data-testid": `inst-${op}-${i.id}`,
    "aria-label": t(`action.${op}.label`, { id: i.id }),
    text: t("action." + op),
  });
}

// curlHint is how a student's own shell reaches a listener: for a named
// internet-facing load balancer, curl with its name in the URL and the
// connection sent to the listener's loopback address (--connect-to, as
// `ccmlab lbs` prints it); an internal one is out of reach from outside
// the VPC, as on AWS.
export function curlHint(lb, port, address) {
  if (lb.scheme === "internal") return h("span", { class: "curl muted", "data-testid": "lb-curl-internal" }, " " + t("lb.curl.internal"));
  const i = address.lastIndexOf(":");
  // The scheme is joined on, not written out: the page names no URL of
  // another origin (web's TestNoExternalOrigins), only this command.
  const scheme = "http" + "://";
  const line = lb.dnsName
    ? `curl --connect-to ${lb.dnsName}:${port}:${address.slice(0, i)}:${address.slice(i + 1)} ${scheme}${lb.dnsName}${port === 80 ? "" : ":" + port}/`
    : `curl ${address}`;
  return h("span", { class: "curl" }, " " + t("lb.curl") + " ", h("code", { "data-testid": "lb-curl", text: line }));
}

// The kinds of the AWS model's load balancers (cloud.LBKind*).
const LB_KIND_KEY = { classic: "lb.kind.classic", network: "lb.kind.network" };

// A load balancer is a list item whose parts are named like a table's
// columns. ctx: {st, nodeOf, serviceOf}.
const lbRows = table({
  body: "lbs",
  tag: "li",
  key: (lb) => lb.name,
  empty: () => t("lbs.empty"),
  // Its Service and its listeners' real addresses live beside it in the
  // store.
  sig: (lb, { st, serviceOf }) =>
    (serviceOf.get(lb.name) || "") +
    "|" +
    st.listeners
      .filter((l) => l.lb === lb.name)
      .map((l) => l.port + "=" + l.address)
      .join(","),
  row: (lb) => ({ class: "lb", "data-testid": "lb-" + lb.name }),
  columns: [
    {
      key: "head",
      tag: "div",
      attrs: { class: "lb-head" },
      cell: (lb, { serviceOf }) => {
        // The lab's flows say which Service a load balancer is for
        // (ServiceFlow.lb), and the AWS model's ones which kind they are.
        const svc = serviceOf.get(lb.name);
        const kind = LB_KIND_KEY[lb.kind] ? t(LB_KIND_KEY[lb.kind]) : "";
        return {
          kids: [
            h("strong", { class: "mono", text: lb.name }),
            h("span", { class: "muted lb-for", text: [kind, svc ? t("lb.for", { name: svc }) : ""].filter(Boolean).join(" · ") }),
          ],
        };
      },
    },
    { key: "address", tag: "div", attrs: { class: "mono lb-address", "data-testid": "lb-address" }, cell: (lb) => lb.dnsName || lb.ip || "" },
    {
      key: "listeners",
      tag: "div",
      attrs: { class: "lb-listeners" },
      cell: (lb, { st }) => ({
        kids: [
          h("span", { class: "label", text: t("lb.listeners") + ": " }),
          (lb.listeners || []).map((l) => {
            const real = st.listeners.find((x) => x.lb === lb.name && x.port === l.port);
            return h(
              "span",
              { class: "listener" },
              h("span", { class: "mono", text: `${l.port} → ${l.targetPort}/${l.protocol}` }),
              real ? curlHint(lb, l.port, real.address) : null,
            );
          }),
        ],
      }),
    },
    {
      key: "targets",
      tag: "div",
      attrs: { class: "lb-targets" },
      cell: (lb, { nodeOf }) => {
        const ts = lb.targets || [];
        return {
          kids: [
            h("span", { class: "label", text: t("lb.targets", { mode: lb.targetType }) + ": " }),
            ts.length === 0
              ? h("span", { class: "muted", text: t("lb.notargets") })
              : ts.map((x) => {
                  const node = nodeOf.get(x.id);
                  return h(
                    "span",
                    { class: "chip health-" + x.health, title: (node || x.id) + (x.reason ? " — " + x.reason : ""), "data-testid": "lb-target", "data-health": x.health },
                    `${HEALTH_GLYPH[x.health] || ""} ${node ? shortName(node) : x.id}:${x.port} ${t("health." + x.health)}`,
                  );
                }),
          ],
        };
      },
    },
    {
      key: "healthCheck",
      tag: "div",
      attrs: { class: "hint lb-hc" },
      cell: (lb, { st }) =>
        (lb.healthCheck ? t("lb.healthcheck", { proto: lb.healthCheck.protocol, port: lb.healthCheck.port }) : t("lb.nohealthcheck")) +
        (st.hcScale > 1 ? " " + t("lb.hcscale", { n: st.hcScale }) : ""),
    },
  ],
});

const routeRows = table({
  body: "routes-body",
  key: (r) => r.destinationCIDR,
  empty: () => t("routes.empty"),
  row: (r) => ({ "data-testid": "route-" + r.destinationCIDR }),
  columns: [
    { key: "destination", tag: "th", cell: (r) => r.destinationCIDR },
    {
      key: "target",
      cell: (r, nodeOf) => {
        const node = nodeOf.get(r.instanceID);
        return r.instanceID + (node ? ` (${shortName(node)})` : "");
      },
    },
    { key: "state", cell: (r) => r.state },
  ],
});

export function renderCloud(st) {
  setText(document.getElementById("cloud-region"), st.region ? "— " + t("cloud.region", { name: st.region }) : "");
  const instances = [...st.instances.values()];
  instanceRows(instances);

  const nodeOf = new Map(instances.map((i) => [i.id, i.privateDNSName]));
  const serviceOf = new Map();
  for (const f of st.serviceFlows.values()) if (f.lb) serviceOf.set(f.lb, f.service);
  lbRows([...st.lbs.values()].sort((a, b) => a.name.localeCompare(b.name)), { st, nodeOf, serviceOf });

  routeRows([...st.routes].sort((a, b) => a.destinationCIDR.localeCompare(b.destinationCIDR)), nodeOf);
}

// --- call log ---

function isThrottled(c) {
  // ELB and the lab's API answer Throttling, EC2 RequestLimitExceeded.
  return c.errorCode === "Throttling" || c.errorCode === "RequestLimitExceeded";
}

// callKind is how a call ended, or where it stands: ok, error, throttled,
// waiting (step mode) or running.
function callKind(c) {
  if (c.state !== "done") return c.state;
  if (isThrottled(c)) return "throttled";
  if (c.error) return "error";
  return "ok";
}

const callRows = table({
  body: "calls-body",
  key: (c) => c.seq,
  empty: () => t("calls.empty"),
  row: (c) => {
    const kind = callKind(c);
    return { "data-testid": "call-" + c.seq, "data-method": c.method || null, "data-state": kind, "data-error-code": c.errorCode || null, class: "call-" + kind };
  },
  columns: [
    { key: "seq", tag: "th", cell: (c) => c.seq },
    { key: "time", cell: (c) => clock(c.time) },
    { key: "caller", cell: (c) => c.caller },
    // The cloudprovider.Interface method behind a CCM call, e.g.
    // "LoadBalancer.EnsureLoadBalancer → CreateLoadBalancer".
    { key: "action", attrs: { class: "mono" }, cell: (c) => (c.method ? c.method + " → " + c.action : c.action) },
    { key: "request", attrs: { class: "mono" }, cell: (c) => ({ text: truncate(c.request, 90), title: c.request }) },
    {
      key: "result",
      cell: (c) => {
        const kind = callKind(c);
        const badge = CALL_BADGE[kind];
        const text = c.error ? `${c.errorCode ? c.errorCode + ": " : ""}${c.error}` : c.result || "";
        return {
          kids: [badge ? h("span", { class: "badge badge-" + kind, text: badge.glyph + " " + t(badge.key) }) : "", " ", truncate(text, 120)],
          title: text || null,
        };
      },
    },
    { key: "duration", cell: (c) => (c.state === "done" ? ms(c.durationNs) : "") },
  ],
});

export function renderCalls(st) {
  const all = [...st.calls.values()].sort((a, b) => b.seq - a.seq);
  let errors = 0;
  let throttled = 0;
  for (const c of all) {
    if (c.error) errors++;
    if (isThrottled(c)) throttled++;
  }
  const summary = document.getElementById("calls-summary");
  setText(summary, t("calls.summary", { n: all.length, e: errors, t: throttled }));
  summary.classList.toggle("bad", throttled > 0 || errors > 0);
  callRows(all.slice(0, CALLS_SHOWN));
}

// --- faults and step mode ---

export function faultState(f, name) {
  switch (name) {
    case "deny-create":
      return (f.deny || []).includes("CreateLoadBalancer");
    case "throttle":
      return f.qps > 0;
    case "latency":
      return !!f.latency && f.latency !== "0s";
  }
  return false;
}

function setSwitch(el, on, busy) {
  setAttr(el, "aria-checked", on ? "true" : "false");
  setAttr(el, "aria-busy", busy ? "true" : null);
  setText(el.querySelector(".switch-state"), busy ? t("ctrl.busy") : on ? t("ctrl.on") : t("ctrl.off"));
}

export function renderFaults(st, ui) {
  const f = st.faults;
  for (const el of document.querySelectorAll('[data-action="fault"]')) {
    const name = el.getAttribute("data-fault");
    setSwitch(el, faultState(f, name), ui.busy.has("fault"));
  }
  const parts = [];
  if (f.deny && f.deny.length) parts.push("deny " + f.deny.join(","));
  if (f.qps > 0) parts.push(`qps ${f.qps} burst ${f.burst}`);
  if (f.latency && f.latency !== "0s") parts.push("latency " + f.latency);
  if (f.failNext) for (const [a, n] of Object.entries(f.failNext)) parts.push(`failNext ${a}×${n}`);
  setText(document.getElementById("faults-now"), t("fault.current", { text: parts.length ? parts.join("; ") : t("fault.none") }));

  setSwitch(document.querySelector('[data-action="stepmode"]'), st.stepMode, ui.busy.has("stepmode"));
  const next = document.querySelector('[data-action="step-next"]');
  next.disabled = !st.stepMode || st.waiting.length === 0 || ui.busy.has("step-next");
  const waiting = document.getElementById("stepmode-waiting");
  if (!st.stepMode) setText(waiting, t("stepmode.off"));
  else if (st.waiting.length === 0) setText(waiting, t("stepmode.none"));
  else {
    const first = st.waiting[0];
    setText(waiting, `${t("stepmode.waiting", { n: st.waiting.length })}: #${first.seq} ${first.action} ← ${first.caller}`);
  }
}
