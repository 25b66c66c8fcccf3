// The six-step strip of a chosen LoadBalancer Service, its diagram, why it
// is stuck, and the last request sent through its load balancer.

import { h, t, setText, setAttr, show, traceError, hopText, challenge } from "./util.js";
import { createDiagram, updateControl, playStep, playTrace, resetTrace, CONTROL_STEPS } from "./diagram.js";
import { STEP_GLYPH } from "./vocab.js";
import { changed } from "./rows.js";


let diagram = null;
let shown = { key: null, step: -1 };

// flowKeys lists the Services that have a flow, newest first.
export function flowKeys(st) {
  const created = (k) => {
    const s = st.services.get(k);
    return s && s.created ? Date.parse(s.created) || 0 : 0;
  };
  return [...st.serviceFlows.keys()].sort((a, b) => created(b) - created(a) || a.localeCompare(b));
}

// selectedService is the user's pick while it exists, otherwise the newest
// LoadBalancer Service (so a student who just ran kubectl expose sees it).
export function selectedService(st, ui) {
  if (ui.svcChoice && st.serviceFlows.has(ui.svcChoice)) return ui.svcChoice;
  return flowKeys(st)[0] || null;
}

export function renderFlow(st, ui) {
  if (!diagram) diagram = createDiagram(document.getElementById("diagram"), document.getElementById("trace-caption"));
  const keys = flowKeys(st);
  const key = selectedService(st, ui);
  syncSelect(document.getElementById("svc-select"), [...keys].sort(), key);

  const flow = key ? st.serviceFlows.get(key) : null;
  const svc = key ? st.services.get(key) : null;
  const lb = flow && flow.lb ? st.lbs.get(flow.lb) : null;
  show(document.getElementById("flow-empty"), !flow);

  renderStrip(flow);

  const count = document.getElementById("svc-step-count");
  setText(count, flow ? t("flow.stepOf", { n: flow.step }) : "");
  setAttr(count, "data-step", flow ? flow.step : null);
  setText(document.getElementById("svc-handler"), flow ? (flow.handler ? t("flow.handler", { name: flow.handler }) : t("flow.handler.none")) : "");

  renderStuck(document.getElementById("svc-stuck"), flow && flow.step < flow.steps.length ? flow.stuck : null);

  const send = document.getElementById("send-request");
  // ClusterIP and NodePort answer without a load balancer (exercise 3).
  const kind = ui.sendKind || "loadbalancer";
  const canSend = !!(flow && (lb || kind !== "loadbalancer")) && !ui.busy.has("send");
  send.disabled = !canSend;
  setAttr(send, "title", flow && !lb && kind === "loadbalancer" ? t("flow.send.wait") : null);
  setText(send, ui.busy.has("send") ? t("flow.sending") : t("flow.send"));

  const handlerOn = flow && flow.handler === "lbc" ? st.controllers.lbc : st.controllers.service;
  updateControl(diagram, { flow, svc, lb, controllerOn: !!handlerOn });

  // Animate what moved since the last frame, for the same Service only.
  if (key !== shown.key) {
    resetTrace(diagram);
    shown = { key, step: flow ? flow.step : -1 };
  } else if (flow && flow.step > shown.step) {
    playStep(diagram, shown.step, Math.min(flow.step, CONTROL_STEPS), ui.presenter);
    const n = flow.step;
    if (n >= 1 && n <= CONTROL_STEPS) setText(diagram.caption, t("flow.moved", { n, title: t("step." + flow.steps[n - 1].key) }));
    shown.step = flow.step;
  } else if (flow) {
    shown.step = flow.step;
  }

  const trace = latestTrace(st, key, flow);
  if (trace) playTrace(diagram, trace, ui.presenter);
  renderTrace(document.getElementById("trace-result"), trace, st);
}

// latestTrace is the newest request through this Service's load balancer,
// whoever sent it: the page's button, curl at a listener, or a test. A
// trace names its Service when the data plane could tell; one that names
// only the load balancer belongs to the Service whose flow has that LB.
// A request to an earlier Service of the same name (deleted, created
// again) is not this one's: the trace's serviceUID tells them apart.
export function latestTrace(st, key, flow) {
  if (!key) return null;
  const lb = flow && flow.lb;
  const svc = st.services.get(key);
  const uid = svc && svc.uid;
  const ours = (tr) => !(uid && tr.serviceUID && tr.serviceUID !== uid);
  for (let i = st.traces.length - 1; i >= 0; i--) {
    const tr = st.traces[i];
    if ((tr.service === key || (lb && tr.lb === lb)) && ours(tr)) return tr;
  }
  const last = st.lastTrace.get(key);
  return last && ours(last) ? last : null;
}

function syncSelect(sel, keys, selected) {
  const sig = keys.join("|");
  if (changed(sel, sig)) {
    sel.replaceChildren(...keys.map((k) => h("option", { value: k, text: k })));
  }
  sel.disabled = keys.length === 0;
  if (selected && sel.value !== selected) sel.value = selected;
}

function renderStrip(flow) {
  const ol = document.getElementById("svc-strip");
  show(ol, !!flow);
  if (!flow) return;
  if (ol.children.length !== flow.steps.length) {
    ol.replaceChildren(
      ...flow.steps.map((step) =>
        h(
          "li",
          { class: "step", "data-testid": "svc-step-" + step.key, "data-key": step.key },
          h("span", { class: "step-n", "aria-hidden": "true", text: String(step.n) }),
          h("span", { class: "step-status" }),
          h("strong", { class: "step-title", text: t("step." + step.key) }),
          h("span", { class: "step-desc", text: t("step." + step.key + ".desc") }),
          h("span", { class: "step-evidence" }),
        ),
      ),
    );
  }
  const t0 = flow.steps[0] && flow.steps[0].at ? Date.parse(flow.steps[0].at) : 0;
  flow.steps.forEach((step, i) => renderStep(ol.children[i], step, t0));
}

// renderStep fills one box of a strip (shared by the node timeline).
export function renderStep(li, step, t0) {
  setAttr(li, "data-status", step.status);
  setAttr(li, "aria-current", step.status === "current" || step.status === "stuck" ? "step" : null);
  const status = li.querySelector(".step-status");
  const evidence = li.querySelector(".step-evidence");
  setText(status, `${STEP_GLYPH[step.status]} ${t("status." + step.status)}`);
  const proof = evidenceText(step);
  let ev = proof;
  if (step.at && t0) {
    const dt = (Date.parse(step.at) - t0) / 1000;
    if (dt >= 0) ev = (ev ? ev + " · " : "") + t("time.after", { s: dt.toFixed(dt < 10 ? 2 : 1) });
  }
  setText(evidence, ev);
  setAttr(evidence, "title", proof || null);
}

// evidenceText says what proved a step in the page's language: the lab
// sends a key of lab/flow/flowtext with its arguments, and the English
// text only for API readers (and for a lab older than this page).
function evidenceText(step) {
  if (step.evidenceKey) return t(step.evidenceKey, step.evidenceArgs || {});
  return step.evidence || "";
}

// stuckDetail is a stuck step's specifics in the page's language.
function stuckDetail(stuck) {
  if (stuck.messageKey) return t(stuck.messageKey, stuck.messageArgs || {});
  return stuck.message || "";
}

// renderStuck explains a stuck step: the reason in plain words, then the
// controller's or the cloud's own message as detail.
export function renderStuck(box, stuck) {
  show(box, !!stuck);
  // During the diagnosis challenge the reason would name the hidden cause:
  // the box says what is seen instead, and leaves the details out.
  const masked = challenge.on;
  const detail = stuck && !masked ? stuckDetail(stuck) : "";
  const sig = stuck ? (masked ? "symptom:" : "") + stuck.reason + "\n" + detail : "";
  if (!changed(box, sig)) return;
  setAttr(box, "data-reason", stuck ? (masked ? "symptom" : stuck.reason) : null);
  if (!stuck) {
    box.replaceChildren();
    return;
  }
  const key = (masked ? "symptom." : "reason.") + stuck.reason;
  const plain = t(key) === key ? t(masked ? "symptom.unknown" : "reason.unknown") : t(key);
  box.replaceChildren(
    h("strong", { class: "stuck-title", text: "⚠ " + t("stuck.title") }),
    h("p", { class: "stuck-reason", "data-testid": "stuck-reason", text: plain }),
    detail ? h("p", { class: "stuck-detail" }, h("span", { class: "label", text: t("stuck.detail") + ": " }), h("span", { class: "stuck-message", text: detail })) : null,
  );
}

// fromPod names the Pod a request started in (origin "pod": curl, wget
// or nc in a container): the client hop's address is the Pod's IP, which
// the cluster view maps to its name. "" for the request panel's and
// listeners' requests.
export function fromPod(st, tr) {
  if (!tr || tr.origin !== "pod") return "";
  const ip = (tr.hops && tr.hops[0] && tr.hops[0].address) || tr.clientIP || "";
  let name = "";
  if (st && st.pods) {
    for (const p of st.pods.values()) {
      if (p.ip === ip) name = p.namespace + "/" + p.name;
    }
  }
  return t("trace.frompod", { pod: name || "?", ip });
}

function renderTrace(box, tr, st) {
  const from = fromPod(st, tr);
  const sig = tr ? tr.id + "|" + from : "";
  if (!changed(box, sig)) return;
  setAttr(box, "data-status", tr ? tr.status : null);
  setAttr(box, "data-trace", tr ? tr.id : null);
  setAttr(box, "data-origin", tr ? tr.origin || null : null);
  if (!tr) {
    box.replaceChildren(h("p", { class: "muted", text: t("trace.none") }));
    return;
  }
  const ok = tr.status >= 200 && tr.status < 400;
  const facts = [ok ? "✓ " + t("trace.answer", { status: tr.status }) : "✗ " + t("trace.failed", { status: tr.status, error: traceError(tr) })];
  if (tr.pod) facts.push(t("trace.pod", { pod: tr.pod, node: tr.podNode || "" }));
  if (tr.pod) facts.push(tr.extraHop ? t("trace.extra") : t("trace.noextra"));
  if (tr.sourceIPSeenByPod) facts.push(t("trace.source", { ip: tr.sourceIPSeenByPod, policy: tr.policy || "Cluster" }));
  box.replaceChildren(
    h("h3", { text: from ? t("trace.title.pod") : t("trace.title") }),
    from ? h("p", { class: "trace-origin mono", "data-testid": "trace-origin", text: from }) : null,
    h("p", { class: ok ? "ok" : "bad", "data-testid": "trace-summary", text: facts.join(" · ") }),
    h(
      "ol",
      { class: "hops-list" },
      (tr.hops || []).map((hop) => h("li", null, h("strong", { text: t("hop." + hop.kind) }), " ", h("span", { class: "mono", text: hopText(hop) }))),
    ),
  );
}
