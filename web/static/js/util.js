// Small DOM and text helpers shared by the renderers.

const SVG_NS = "http://www.w3.org/2000/svg"; // an XML namespace name, not a URL the page loads

let strings = {};

// loadStrings reads the catalog the server put into the page (web/strings.go).
// challenge is on while the diagnosis challenge runs (mystery-pending
// reset, its cause not named yet): the strips and the controller panel
// then say what is seen, not which cause is behind it (exercise.js sets
// it from the lab's exercise list).
export const challenge = { on: false };

export function loadStrings() {
  const el = document.getElementById("ccmlab-strings");
  strings = el ? JSON.parse(el.textContent) : {};
}

// t translates key and fills {placeholders} from vars.
export function t(key, vars) {
  let s = strings[key];
  if (s === undefined) return key;
  if (vars) s = s.replace(/\{(\w+)\}/g, (m, k) => (k in vars ? String(vars[k]) : m));
  return s;
}

// traceError says why a traced request failed, in the page's language: the
// data plane sends a key of lab/dataplane/tracetext with its arguments, and
// the English text only for API readers (and for a lab older than this
// page).
export function traceError(trace) {
  if (trace.errorKey) return t(trace.errorKey, trace.errorArgs || {});
  return trace.error || "";
}

// hopText says what happened at a hop of a trace in the page's language:
// the data plane sends a lab/dataplane/tracetext key with its arguments
// (and one for how the packet went on), and the English text only for API
// readers (and for a lab older than this page).
export function hopText(hop) {
  if (!hop.detailKey) return hop.detail || "";
  const what = t(hop.detailKey, hop.detailArgs || {});
  return hop.viaKey ? t("hop.via", { what, via: t(hop.viaKey, hop.viaArgs || {}) }) : what;
}

// h builds an element. attrs: class, text, data-*/aria-*/role and other
// attributes, on<event> handlers; children may be strings, nodes or arrays.
export function h(tag, attrs, ...kids) {
  return build(document.createElement(tag), attrs, kids);
}

// s builds an SVG element the same way.
export function s(tag, attrs, ...kids) {
  return build(document.createElementNS(SVG_NS, tag), attrs, kids);
}

function build(el, attrs, kids) {
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "text") el.textContent = v;
      else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? "" : String(v));
    }
  }
  append(el, kids);
  return el;
}

function append(el, kids) {
  for (const k of kids) {
    if (k === null || k === undefined || k === false) continue;
    if (Array.isArray(k)) append(el, k);
    else el.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
}

// setText and setAttr touch the DOM only when something changed, so a
// render that finds nothing new costs no layout.
export function setText(el, text) {
  text = String(text);
  if (el.textContent !== text) el.textContent = text;
}

export function setAttr(el, name, value) {
  if (value === null || value === undefined || value === false) {
    if (el.hasAttribute(name)) el.removeAttribute(name);
    return;
  }
  value = value === true ? "" : String(value);
  if (el.getAttribute(name) !== value) el.setAttribute(name, value);
}

// keepChildren makes kids parent's children, keeping each child already in
// its place that reads the same (its outerHTML): a redraw then leaves alone
// the elements a person may be pressing. Replacing a button between the
// press and the release loses the click (the browser sends none), and a
// panel redrawn from the live stream does that at any moment. The kept
// element's own listeners stay; they must not hold more than its markup
// says.
export function keepChildren(parent, kids) {
  kids.forEach((k, i) => {
    const o = parent.children[i];
    if (!o) parent.append(k);
    else if (o.outerHTML !== k.outerHTML) o.replaceWith(k);
  });
  while (parent.children.length > kids.length) parent.lastElementChild.remove();
}

export function show(el, visible) {
  if (el.hidden === visible) el.hidden = !visible;
}

// shortName trims the lab's long node names for tight places:
// "ip-10-0-0-4.ap-northeast-1.compute.internal" -> "ip-10-0-0-4".
export function shortName(name) {
  if (!name) return "";
  const i = name.indexOf(".");
  return i > 0 ? name.slice(0, i) : name;
}

export function clock(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "";
  return d.toLocaleTimeString([], { hour12: false }) + "." + String(d.getMilliseconds()).padStart(3, "0");
}

export function ms(ns) {
  if (!ns) return "0 ms";
  const v = ns / 1e6;
  return v < 10 ? v.toFixed(1) + " ms" : Math.round(v) + " ms";
}

export function truncate(str, n) {
  str = String(str ?? "");
  return str.length > n ? str.slice(0, n - 1) + "…" : str;
}

export function reducedMotion() {
  return window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;
}
