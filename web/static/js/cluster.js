// Cluster region: Nodes (with their Pods), Pods without a node, Services
// as `kubectl get svc` prints them, and recent Events.

import { h, t, shortName, clock, truncate } from "./util.js";
import { table, changed } from "./rows.js";
import { timeOf } from "./store.js";
import { READY_GLYPH, TAINT_GLYPH } from "./vocab.js";

const MAX_EVENTS_SHOWN = 60;

// field is a cell that may be empty: the "none" word, muted.
const field = (v) => ({ text: v || t("none"), class: v ? null : "muted" });

const podsOf = (byNode, n) => byNode.get(n.name) || [];

const nodeRows = table({
  body: "nodes-body",
  key: (n) => n.name,
  empty: () => t("nodes.empty"),
  // A node's row shows its Pods too, so it redraws when they change.
  sig: (n, byNode) => podsOf(byNode, n).map((p) => p.name + p.phase + p.ready).join(","),
  row: (n) => ({ "data-testid": "node-row-" + n.name, "data-ready": n.ready }),
  columns: [
    { key: "name", tag: "th", cell: (n) => ({ text: shortName(n.name), title: n.name }) },
    {
      key: "ready",
      cell: (n) => {
        const ready = n.ready === "True";
        const word = ready ? "Ready" : n.ready === "False" ? t("node.notready") : t("node.unknown");
        return { kids: h("span", { class: ready ? "ok" : "bad" }, (ready ? READY_GLYPH.yes : READY_GLYPH.no) + " " + word) };
      },
    },
    { key: "taints", cell: (n) => ({ kids: taintChips(n) }) },
    { key: "providerID", attrs: { "data-testid": "node-provider-id" }, cell: (n) => field(n.providerID) },
    { key: "zone", cell: (n) => field(n.zone) },
    { key: "instanceType", cell: (n) => field(n.instanceType) },
    { key: "podCIDR", cell: (n) => field(n.podCIDR) },
    {
      key: "pods",
      attrs: { class: "pods" },
      cell: (n, byNode) => ({
        kids: [...podsOf(byNode, n)]
          .sort((a, b) => a.name.localeCompare(b.name))
          .map((p) =>
            h(
              "span",
              { class: "chip " + (p.ready ? "chip-ok" : "chip-warn"), title: `${p.namespace}/${p.name} ${p.phase} ${p.ip || ""}`, "data-testid": "pod-" + p.namespace + "/" + p.name },
              (p.ready ? READY_GLYPH.podReady : READY_GLYPH.podNotReady) + " " + p.name,
            ),
          ),
      }),
    },
  ],
});

// taintChips names a node's taints; the lab says which taint is which
// (NodeView.uninitialized, .shutdown).
function taintChips(n) {
  if (!n.taints || n.taints.length === 0) return h("span", { class: "muted", text: t("none") });
  return n.taints.map((x) => {
    const uninit = x === n.uninitialized;
    const shut = x === n.shutdown;
    return h(
      "span",
      { class: "chip " + (uninit || shut ? "chip-warn" : ""), title: x, "data-testid": uninit ? "taint-uninitialized" : "taint" },
      uninit
        ? TAINT_GLYPH.uninitialized + " uninitialized — " + t("taint.uninit.short")
        : shut
          ? TAINT_GLYPH.shutdown + " shutdown — " + t("taint.shutdown.short")
          : x,
    );
  });
}

const svcKey = (s) => s.namespace + "/" + s.name;

const serviceRows = table({
  body: "services-body",
  key: svcKey,
  empty: () => t("services.empty"),
  row: (s) => ({ "data-testid": "svc-row-" + svcKey(s) }),
  columns: [
    {
      key: "name",
      tag: "th",
      // Built once, so the pick button keeps focus across redraws.
      make: (s) => {
        const key = svcKey(s);
        const name =
          s.type === "LoadBalancer"
            ? h("button", { type: "button", class: "linklike", "data-action": "pick-service", "data-key": key, "data-testid": "svc-pick-" + key, text: s.name })
            : h("span", { text: s.name });
        return [s.namespace !== "default" ? h("span", { class: "muted", text: s.namespace + "/" }) : null, name];
      },
      cell: () => null,
    },
    { key: "type", cell: (s) => s.type },
    { key: "clusterIP", cell: (s) => s.clusterIP || t("none") },
    {
      key: "externalIP",
      attrs: { "data-testid": "svc-external-ip" },
      cell: (s) => {
        const pending = s.externalIP === "<pending>";
        return { text: s.externalIP, class: pending ? "pending" : null, title: pending ? t("services.pending") : null };
      },
    },
    { key: "ports", cell: (s) => s.ports },
  ],
});

const eventRows = table({
  body: "events-body",
  key: (e) => e.namespace + "/" + e.name,
  empty: () => t("events.empty"),
  row: (e) => ({ class: e.type === "Warning" ? "warn" : null }),
  columns: [
    { key: "time", cell: (e) => clock(e.time) },
    { key: "type", cell: (e) => (e.type === "Warning" ? READY_GLYPH.warning + " Warning" : e.type) },
    { key: "reason", cell: (e) => e.reason },
    { key: "object", cell: (e) => `${e.kind}/${e.object}` },
    { key: "source", cell: (e) => e.source || "" },
    { key: "message", cell: (e) => (e.count > 1 ? `(x${e.count}) ` : "") + e.message },
  ],
});

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
  nodeRows([...st.nodes.values()].sort((a, b) => a.name.localeCompare(b.name)), byNode);

  const pending = document.getElementById("pending-pods");
  homeless.sort((a, b) => a.name.localeCompare(b.name));
  if (changed(pending, homeless.map((p) => p.name + (p.reason || "")).join("|"))) {
    pending.replaceChildren(
      h("strong", { text: t("pods.pending") + ": " }),
      homeless.length === 0
        ? t("pods.pending.none")
        : homeless.map((p) =>
            h("span", { class: "chip chip-warn", title: p.reason || "", "data-testid": "pending-pod" }, READY_GLYPH.pending + " " + p.name + (p.reason ? " — " + truncate(p.reason, 80) : "")),
          ),
    );
  }

  serviceRows([...st.services.values()].sort((a, b) => svcKey(a).localeCompare(svcKey(b))));
  eventRows([...st.events.values()].sort((a, b) => timeOf(b) - timeOf(a)).slice(0, MAX_EVENTS_SHOWN));
}
