// Cluster region: Nodes (with their Pods), Pods without a node, Services
// as `kubectl get svc` prints them, and recent Events.

import { h, t, setText, setAttr, list, shortName, clock, truncate } from "./util.js";
import { timeOf } from "./store.js";

const MAX_EVENTS_SHOWN = 60;

export function renderCluster(st) {
  const byNode = new Map();
  const homeless = [];
  for (const p of st.pods.values()) {
    if (!p.node) homeless.push(p);
    else {
      if (!byNode.has(p.node)) byNode.set(p.node, []);
      byNode.get(p.node).push(p);
    }
  }
  const nodes = [...st.nodes.values()].sort((a, b) => a.name.localeCompare(b.name));
  const podSig = (n) => (byNode.get(n.name) || []).map((p) => p.name + p.phase + p.ready).join(",");
  list(document.getElementById("nodes-body"), 8, nodes, t("nodes.empty"), (n) => n.name, createNodeRow, (el, n) => updateNodeRow(el, n, byNode.get(n.name) || []), podSig);

  const pending = document.getElementById("pending-pods");
  homeless.sort((a, b) => a.name.localeCompare(b.name));
  const sig = homeless.map((p) => p.name + (p.reason || "")).join("|");
  if (pending._sig !== sig) {
    pending._sig = sig;
    pending.replaceChildren(
      h("strong", { text: t("pods.pending") + ": " }),
      homeless.length === 0
        ? t("pods.pending.none")
        : homeless.map((p) => h("span", { class: "chip chip-warn", title: p.reason || "", "data-testid": "pending-pod" }, "… " + p.name + (p.reason ? " — " + truncate(p.reason, 80) : ""))),
    );
  }

  const services = [...st.services.values()].sort((a, b) => (a.namespace + a.name).localeCompare(b.namespace + b.name));
  list(document.getElementById("services-body"), 5, services, t("services.empty"), (s) => s.namespace + "/" + s.name, createServiceRow, updateServiceRow);

  const events = [...st.events.values()].sort((a, b) => timeOf(b) - timeOf(a)).slice(0, MAX_EVENTS_SHOWN);
  list(document.getElementById("events-body"), 6, events, t("events.empty"), (e) => e.namespace + "/" + e.name, () => h("tr", null, h("td"), h("td"), h("td"), h("td"), h("td"), h("td")), updateEventRow);
}

function createNodeRow(n) {
  return h("tr", { "data-testid": "node-row-" + n.name }, h("th", { scope: "row" }), h("td"), h("td"), h("td"), h("td"), h("td"), h("td"), h("td", { class: "pods" }));
}

function updateNodeRow(tr, n, pods) {
  const c = tr.children;
  setText(c[0], shortName(n.name));
  setAttr(c[0], "title", n.name);
  const ready = n.ready === "True";
  setAttr(tr, "data-ready", n.ready);
  c[1].replaceChildren(h("span", { class: ready ? "ok" : "bad" }, ready ? "✓ Ready" : "✗ " + (n.ready === "False" ? t("node.notready") : t("node.unknown"))));
  c[2].replaceChildren(
    ...(n.taints && n.taints.length
      ? n.taints.map((x) => {
          // The lab says which taint is which (NodeView.uninitialized, .shutdown).
          const uninit = x === n.uninitialized;
          const shut = x === n.shutdown;
          return h(
            "span",
            { class: "chip " + (uninit || shut ? "chip-warn" : ""), title: x, "data-testid": uninit ? "taint-uninitialized" : "taint" },
            uninit ? "◷ uninitialized — " + t("taint.uninit.short") : shut ? "■ shutdown — " + t("taint.shutdown.short") : x,
          );
        })
      : [h("span", { class: "muted", text: t("none") })]),
  );
  setField(c[3], n.providerID);
  c[3].setAttribute("data-testid", "node-provider-id");
  setField(c[4], n.zone);
  setField(c[5], n.instanceType);
  setField(c[6], n.podCIDR);
  pods.sort((a, b) => a.name.localeCompare(b.name));
  c[7].replaceChildren(
    ...pods.map((p) =>
      h(
        "span",
        { class: "chip " + (p.ready ? "chip-ok" : "chip-warn"), title: `${p.namespace}/${p.name} ${p.phase} ${p.ip || ""}`, "data-testid": "pod-" + p.namespace + "/" + p.name },
        (p.ready ? "● " : "○ ") + p.name,
      ),
    ),
  );
}

function setField(td, v) {
  setText(td, v || t("none"));
  td.classList.toggle("muted", !v);
}

function createServiceRow(s) {
  const key = s.namespace + "/" + s.name;
  const name =
    s.type === "LoadBalancer"
      ? h("button", { type: "button", class: "linklike", "data-action": "pick-service", "data-key": key, "data-testid": "svc-pick-" + key, text: s.name })
      : h("span", { text: s.name });
  return h(
    "tr",
    { "data-testid": "svc-row-" + key },
    h("th", { scope: "row" }, s.namespace !== "default" ? h("span", { class: "muted", text: s.namespace + "/" }) : null, name),
    h("td"),
    h("td"),
    h("td", { "data-testid": "svc-external-ip" }),
    h("td"),
  );
}

function updateServiceRow(tr, s) {
  const c = tr.children;
  setText(c[1], s.type);
  setText(c[2], s.clusterIP || t("none"));
  setText(c[3], s.externalIP);
  const pending = s.externalIP === "<pending>";
  c[3].classList.toggle("pending", pending);
  setAttr(c[3], "title", pending ? t("services.pending") : null);
  setText(c[4], s.ports);
}

function updateEventRow(tr, e) {
  const c = tr.children;
  setText(c[0], clock(e.time));
  const warn = e.type === "Warning";
  tr.classList.toggle("warn", warn);
  setText(c[1], warn ? "⚠ Warning" : e.type);
  setText(c[2], e.reason);
  setText(c[3], `${e.kind}/${e.object}`);
  setText(c[4], e.source || "");
  setText(c[5], (e.count > 1 ? `(x${e.count}) ` : "") + e.message);
}
