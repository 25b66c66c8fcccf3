// Control plane region: the four core components and one switch per CCM
// controller, each saying what is waiting on it.

import { h, t, setText, setAttr, challenge } from "./util.js";
import { syncList } from "./rows.js";

const KNOWN = ["node", "nodelifecycle", "route", "service"];

// controllerNames lists the switches to show: the profile's controllers,
// then any extra the lab reports (the lbc add-on).
export function controllerNames(st) {
  const names = [...(st.profile.controllers || [])];
  for (const n of Object.keys(st.controllers)) if (!names.includes(n)) names.push(n);
  return names;
}

function waitingOn(st, name) {
  // During the diagnosis challenge "N waiting on this switch" would name
  // the hidden cause.
  if (challenge.on) return 0;
  let n = 0;
  switch (name) {
    case "service":
    case "lbc": {
      const reason = name === "service" ? "no-service-controller" : "class-unhandled";
      for (const f of st.serviceFlows.values()) if (f.stuck && f.stuck.reason === reason) n++;
      break;
    }
    case "node":
      for (const node of st.nodes.values()) if (node.uninitialized) n++;
      break;
    case "route": {
      const have = new Set(st.routes.map((r) => r.destinationCIDR));
      for (const node of st.nodes.values()) if (node.podCIDR && !have.has(node.podCIDR)) n++;
      break;
    }
    case "nodelifecycle":
      for (const node of st.nodes.values()) if (node.ready !== "True") n++;
      break;
  }
  return n;
}

export function renderControl(st, ui) {
  for (const li of document.querySelectorAll(".component")) {
    const up = ui.conn === "live";
    setAttr(li, "data-state", up ? "running" : "unknown");
    setText(li.querySelector(".component-state"), up ? t("cp.running") : t("cp.unknown"));
  }
  const profileEl = document.getElementById("profile");
  setText(profileEl, st.profile.name ? t("app.profile", { name: st.profile.name }) : "");
  setAttr(profileEl, "title", st.profile.description || null);

  const names = controllerNames(st);
  const absent = KNOWN.filter((n) => !names.includes(n));
  const items = [...names.map((name) => ({ name, absent: false })), ...absent.map((name) => ({ name, absent: true }))];
  // Signature: what this card shows depends on more than its own item.
  const sig = (it) =>
    it.absent ? "absent" : `${st.controllers[it.name] ? 1 : 0}|${ui.busy.has(it.name) ? 1 : 0}|${waitingOn(st, it.name)}`;
  syncList(document.getElementById("controllers"), items.map((it) => ({ ...it, key: it.name + (it.absent ? "!" : "") })), (it) => it.key, createCard, (row, it) => updateCard(row.el, it, st, ui), sig);
}

function createCard(it) {
  const name = it.name;
  if (it.absent) {
    return h(
      "li",
      { class: "controller absent", "data-testid": "ctrl-" + name, "data-state": "absent" },
      h("strong", { text: t("ctrl." + name) }),
      h("p", { class: "hint", text: t("ctrl.absent", { name: t("ctrl." + name) }) }),
    );
  }
  const descId = "ctrl-desc-" + name;
  return h(
    "li",
    { class: "controller", "data-testid": "ctrl-" + name },
    h(
      "button",
      {
        type: "button",
        class: "switch",
        role: "switch",
        "aria-checked": "false",
        "aria-describedby": descId,
        "data-action": "toggle-controller",
        "data-name": name,
        "data-testid": "ctrl-switch-" + name,
      },
      h("span", { class: "knob", "aria-hidden": "true" }),
      h("span", { class: "switch-state" }),
      h("span", { class: "switch-label", text: t("ctrl." + name) }),
    ),
    h("p", { class: "hint", id: descId, text: t("ctrl." + name + ".desc") }),
    h("p", { class: "deps", "data-testid": "ctrl-deps-" + name, "aria-live": "polite" }),
  );
}

function updateCard(el, it, st, ui) {
  if (it.absent) return;
  const name = it.name;
  const on = !!st.controllers[name];
  const busy = ui.busy.has(name);
  setAttr(el, "data-state", on ? "on" : "off");
  const sw = el.querySelector(".switch");
  setAttr(sw, "aria-checked", on ? "true" : "false");
  setAttr(sw, "aria-busy", busy ? "true" : null);
  setText(sw.querySelector(".switch-state"), busy ? t("ctrl.busy") : on ? t("ctrl.on") : t("ctrl.off"));
  const n = waitingOn(st, name);
  const deps = el.querySelector(".deps");
  let text = "";
  if (n > 0) text = "⚠ " + t("dep." + name, { n });
  else if (!on) text = t("ctrl.stopped");
  setText(deps, text);
  setAttr(deps, "data-count", n);
}
