// Cloud region: instances with their actions, load balancers (listeners,
// the loopback address to curl, targets and health), the route table, the
// call log, and the fault and step-mode switches.

import { h, t, setText, setAttr, list, syncList, emptyRow, shortName, clock, ms, truncate } from "./util.js";

const CALLS_SHOWN = 100;

const STATE_GLYPH = { running: "▶", pending: "…", stopping: "■", stopped: "■", terminated: "✗" };
const HEALTH_GLYPH = { healthy: "✓", unhealthy: "✗", initial: "…", unused: "–" };

export function renderCloud(st) {
  setText(document.getElementById("cloud-region"), st.region ? "— " + t("cloud.region", { name: st.region }) : "");
  const instances = [...st.instances.values()];
  list(document.getElementById("instances-body"), 6, instances, t("instances.empty"), (i) => i.id, createInstanceRow, updateInstanceRow);

  const nodeOf = new Map(instances.map((i) => [i.id, i.privateDNSName]));
  const lbs = [...st.lbs.values()].sort((a, b) => a.name.localeCompare(b.name));
  const lbList = document.getElementById("lbs");
  const listenerSig = (lb) => st.listeners.filter((l) => l.lb === lb.name).map((l) => l.port + "=" + l.address).join(",");
  if (lbs.length === 0) emptyRow(lbList, 1, t("lbs.empty"));
  else syncList(lbList, lbs, (lb) => lb.name, createLB, (el, lb) => updateLB(el, lb, st, nodeOf), listenerSig);

  const routes = [...st.routes].sort((a, b) => a.destinationCIDR.localeCompare(b.destinationCIDR));
  list(
    document.getElementById("routes-body"),
    3,
    routes,
    t("routes.empty"),
    (r) => r.destinationCIDR,
    (r) => h("tr", { "data-testid": "route-" + r.destinationCIDR }, h("th", { scope: "row" }), h("td"), h("td")),
    (tr, r) => {
      setText(tr.children[0], r.destinationCIDR);
      const node = nodeOf.get(r.instanceID);
      setText(tr.children[1], r.instanceID + (node ? ` (${shortName(node)})` : ""));
      setText(tr.children[2], r.state);
    },
  );
}

function createInstanceRow(i) {
  const btn = (op, cls) =>
    h("button", {
      type: "button",
      class: "btn btn-small " + cls,
      "data-action": "instance",
      "data-op": op,
      "data-id": i.id,
      "data-testid": `inst-${op}-${i.id}`,
      "aria-label": t(`action.${op}.label`, { id: i.id }),
      text: t("action." + op),
    });
  return h(
    "tr",
    { "data-testid": "inst-row-" + i.id },
    h("th", { scope: "row" }),
    h("td"),
    h("td"),
    h("td"),
    h("td"),
    h("td", { class: "actions" }, btn("stop", ""), btn("start", ""), btn("terminate", "btn-danger")),
  );
}

function updateInstanceRow(tr, i) {
  const c = tr.children;
  setText(c[0], i.id);
  setAttr(c[0], "title", i.privateDNSName);
  setAttr(tr, "data-state", i.state);
  setText(c[1], (STATE_GLYPH[i.state] || "") + " " + i.state);
  c[1].className = i.state === "running" ? "ok" : i.state === "terminated" ? "bad" : "warn";
  setText(c[2], i.instanceType);
  setText(c[3], i.zone);
  setText(c[4], i.privateIP);
  const [stop, start, term] = c[5].children;
  stop.disabled = i.state !== "running";
  start.disabled = i.state !== "stopped";
  term.disabled = i.state === "terminated";
}

// The kinds of the AWS model's load balancers (cloud.LBKind*).
const LB_KIND_KEY = { classic: "lb.kind.classic", network: "lb.kind.network" };

function createLB(lb) {
  return h(
    "li",
    { class: "lb", "data-testid": "lb-" + lb.name },
    h("div", { class: "lb-head" }, h("strong", { class: "mono" }), h("span", { class: "muted lb-for" })),
    h("div", { class: "mono lb-address", "data-testid": "lb-address" }),
    h("div", { class: "lb-listeners" }),
    h("div", { class: "lb-targets" }),
    h("div", { class: "hint lb-hc" }),
  );
}

function updateLB(el, lb, st, nodeOf) {
  const [head, addr, listeners, targets, hc] = el.children;
  setText(head.children[0], lb.name);
  const svc = lb.tags && lb.tags["kubernetes.io/service-name"];
  // The AWS model's load balancers (upstream provider) say which kind they are.
  const kind = LB_KIND_KEY[lb.kind] ? t(LB_KIND_KEY[lb.kind]) : "";
  setText(head.children[1], [kind, svc ? t("lb.for", { name: svc }) : ""].filter(Boolean).join(" · "));
  setText(addr, lb.dnsName || lb.ip || "");
  listeners.replaceChildren(
    h("span", { class: "label", text: t("lb.listeners") + ": " }),
    ...(lb.listeners || []).map((l) => {
      const real = st.listeners.find((x) => x.lb === lb.name && x.port === l.port);
      return h(
        "span",
        { class: "listener" },
        h("span", { class: "mono", text: `${l.port} → ${l.targetPort}/${l.protocol}` }),
        real ? h("span", { class: "curl" }, " " + t("lb.curl") + " ", h("code", { "data-testid": "lb-curl", text: `curl ${real.address}` })) : null,
      );
    }),
  );
  const ts = lb.targets || [];
  targets.replaceChildren(
    h("span", { class: "label", text: t("lb.targets", { mode: lb.targetType }) + ": " }),
    ...(ts.length === 0
      ? [h("span", { class: "muted", text: t("lb.notargets") })]
      : ts.map((x) => {
          const node = nodeOf.get(x.id);
          return h(
            "span",
            { class: "chip health-" + x.health, title: (node || x.id) + (x.reason ? " — " + x.reason : ""), "data-testid": "lb-target", "data-health": x.health },
            `${HEALTH_GLYPH[x.health] || ""} ${node ? shortName(node) : x.id}:${x.port} ${t("health." + x.health)}`,
          );
        })),
  );
  setText(hc, lb.healthCheck ? t("lb.healthcheck", { proto: lb.healthCheck.protocol, port: lb.healthCheck.port }) : t("lb.nohealthcheck"));
}

// --- call log ---

function isThrottled(c) {
  // ELB and the lab's API answer Throttling, EC2 RequestLimitExceeded.
  return c.errorCode === "Throttling" || c.errorCode === "RequestLimitExceeded";
}

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
  list(document.getElementById("calls-body"), 7, all.slice(0, CALLS_SHOWN), t("calls.empty"), (c) => c.seq, createCallRow, updateCallRow);
}

function createCallRow(c) {
  return h("tr", { "data-testid": "call-" + c.seq }, h("th", { scope: "row" }), h("td"), h("td"), h("td", { class: "mono" }), h("td", { class: "mono" }), h("td"), h("td"));
}

function updateCallRow(tr, c) {
  const col = tr.children;
  setText(col[0], c.seq);
  setText(col[1], clock(c.time));
  setText(col[2], c.caller);
  // The cloudprovider.Interface method behind a CCM call, e.g.
  // "LoadBalancer.EnsureLoadBalancer → CreateLoadBalancer".
  setText(col[3], c.method ? c.method + " → " + c.action : c.action);
  setAttr(tr, "data-method", c.method || null);
  setText(col[4], truncate(c.request, 90));
  setAttr(col[4], "title", c.request);
  let kind = "ok";
  if (c.state !== "done") kind = c.state;
  else if (isThrottled(c)) kind = "throttled";
  else if (c.error) kind = "error";
  setAttr(tr, "data-state", kind);
  setAttr(tr, "data-error-code", c.errorCode || null);
  tr.className = "call-" + kind;
  const badge = {
    ok: null,
    error: "✖ " + t("call.error"),
    throttled: "◷ " + t("call.throttled"),
    waiting: "‖ " + t("call.waiting"),
    running: "… " + t("call.running"),
  }[kind];
  const text = c.error ? `${c.errorCode ? c.errorCode + ": " : ""}${c.error}` : c.result || "";
  col[5].replaceChildren(badge ? h("span", { class: "badge badge-" + kind, text: badge }) : "", " ", truncate(text, 120));
  setAttr(col[5], "title", text || null);
  setText(col[6], c.state === "done" ? ms(c.durationNs) : "");
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
