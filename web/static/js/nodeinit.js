// Node initialization timeline for a chosen node: VM launch -> Node
// registered with the uninitialized taint -> cloud queried -> details
// written -> taint removed -> first Pod.

import { h, t, setText, setAttr, show, shortName } from "./util.js";
import { renderStep, renderStuck } from "./flow.js";
import { changed } from "./rows.js";


function launchedAt(f) {
  return f.steps && f.steps[0] && f.steps[0].at ? Date.parse(f.steps[0].at) || 0 : 0;
}

// selectedNode is the user's pick (or the node of an instance launched from
// this page) while it exists, else the most recently launched node.
export function selectedNode(st, ui) {
  if (ui.nodeChoice && st.nodeFlows.has(ui.nodeChoice)) return ui.nodeChoice;
  let best = null;
  for (const f of st.nodeFlows.values()) if (!best || launchedAt(f) > launchedAt(best) || (launchedAt(f) === launchedAt(best) && f.node > best.node)) best = f;
  return best ? best.node : null;
}

export function renderNodeInit(st, ui) {
  const name = selectedNode(st, ui);
  const flows = [...st.nodeFlows.values()].sort((a, b) => a.node.localeCompare(b.node));
  const sel = document.getElementById("node-select");
  const sig = flows.map((f) => f.node + ":" + f.step).join("|");
  if (changed(sel, sig)) {
    sel.replaceChildren(...flows.map((f) => h("option", { value: f.node, text: `${shortName(f.node)} (${f.step}/${f.steps.length})` })));
  }
  sel.disabled = flows.length === 0;
  if (name && sel.value !== name) sel.value = name;

  const flow = name ? st.nodeFlows.get(name) : null;
  show(document.getElementById("node-empty"), !flow);
  const ol = document.getElementById("node-timeline");
  show(ol, !!flow);
  const taint = document.getElementById("node-taint");
  show(taint, !!flow);
  setAttr(ol, "data-node", name);
  if (!flow) {
    renderStuck(document.getElementById("node-stuck"), null);
    setText(document.getElementById("node-facts"), "");
    return;
  }
  if (ol.children.length !== flow.steps.length) {
    ol.replaceChildren(
      ...flow.steps.map((step) =>
        h(
          "li",
          { class: "step", "data-testid": "node-step-" + step.key, "data-key": step.key },
          h("span", { class: "step-n", "aria-hidden": "true", text: String(step.n) }),
          h("span", { class: "step-status" }),
          h("strong", { class: "step-title", text: t("nodestep." + step.key) }),
          h("span", { class: "step-desc", text: t("nodestep." + step.key + ".desc") }),
          h("span", { class: "step-evidence" }),
        ),
      ),
    );
  }
  const t0 = launchedAt(flow);
  flow.steps.forEach((step, i) => renderStep(ol.children[i], step, t0));
  renderStuck(document.getElementById("node-stuck"), flow.step < flow.steps.length ? flow.stuck : null);

  const node = st.nodes.get(name);
  let state = "none";
  let label = t("taint.notyet");
  let text = t("taint.uninit.full");
  if (node) {
    const x = node.uninitialized;
    if (x) {
      state = "present";
      label = t("taint.present");
      text = x;
    } else {
      state = "removed";
      label = t("taint.removed");
    }
  }
  setAttr(taint, "data-state", state);
  const tsig = state + text;
  if (changed(taint, tsig)) {
    taint.replaceChildren(
      h("span", { class: "label", text: t("nodeinit.taint") + ": " }),
      h(state === "removed" ? "del" : "code", { class: "taint-text", text }),
      " ",
      h("span", { class: "taint-state", text: (state === "present" ? "◷ " : state === "removed" ? "✓ " : "… ") + label }),
    );
  }
  const facts = document.getElementById("node-facts");
  setText(
    facts,
    node
      ? t("nodeinit.facts", { pid: node.providerID || "<none>", zone: node.zone || "<none>", type: node.instanceType || "<none>", cidr: node.podCIDR || "<none>" })
      : flow.instanceID || "",
  );
}
