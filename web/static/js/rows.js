// Keyed rows from one declarative description per table.
//
// A table (or list) is described once: how a row is keyed, the row's own
// attributes, and its columns, each named by a key and rendered by a
// function of the view. Rows are kept by the object's key, so a redraw
// reuses them (focus and selection survive) and touches the DOM only where
// a text or an attribute changed; a column's cell is found by its name,
// never by its position. What the renderer remembers about a row lives in
// Maps here, keyed by the object's key, not on the DOM nodes.

import { h, setText, setAttr } from "./util.js";

// rowsOf remembers, per container, its rows by key: {el, item, sig,
// cells} (cells: column key -> element, for tables).
const rowsOf = new WeakMap();
// placeholderOf remembers, per container, its "empty" placeholder:
// {el, label}.
const placeholderOf = new WeakMap();

// syncList makes parent's children mirror items, keyed by key(item). Rows
// are created with create(item) — an element, or {el, ...} to remember
// more about the row — and refreshed with update(row, item) only when the
// item changed (the store replaces objects, so identity is enough) or when
// sig(item), a cheap signature of related data, changed.
export function syncList(parent, items, key, create, update, sig) {
  const old = rowsOf.get(parent) || new Map();
  const rows = new Map();
  let prev = null;
  for (const item of items) {
    const k = key(item);
    const s = sig ? sig(item) : undefined;
    let row = old.get(k);
    if (!row) {
      const made = create(item);
      row = made instanceof Node ? { el: made } : made;
      update(row, item);
    } else if (row.item !== item || row.sig !== s) {
      update(row, item);
    }
    row.item = item;
    row.sig = s;
    rows.set(k, row);
    const want = prev ? prev.nextSibling : parent.firstChild;
    if (want !== row.el) parent.insertBefore(row.el, want);
    prev = row.el;
  }
  for (const [k, row] of old) if (!rows.has(k)) row.el.remove();
  // Whatever is left after the last row (an "empty" placeholder) goes.
  let rest = prev ? prev.nextSibling : parent.firstChild;
  while (rest) {
    const next = rest.nextSibling;
    rest.remove();
    rest = next;
  }
  rowsOf.set(parent, rows);
}

// placeholder shows text in a container that has no rows: a row spanning
// cols columns in a table body, an item in a list.
export function placeholder(parent, cols, text) {
  const p = placeholderOf.get(parent);
  if (p && parent.firstChild === p.el && !p.el.nextSibling) {
    setText(p.label, text);
    return;
  }
  let el, label;
  if (parent.tagName === "TBODY") {
    label = h("td", { colspan: cols, text });
    el = h("tr", { class: "empty-row" }, label);
  } else {
    el = label = h("li", { class: "empty-row", text });
  }
  placeholderOf.set(parent, { el, label });
  parent.replaceChildren(el);
  rowsOf.set(parent, new Map());
}

// changed says whether sig differs from what el last showed, and
// remembers it: for a part of the page redrawn whole when its signature
// moves.
const sigOf = new WeakMap();
export function changed(el, sig) {
  if (sigOf.get(el) === sig) return false;
  sigOf.set(el, sig);
  return true;
}

// table describes a keyed table (or list) once and returns its renderer,
// render(items, ctx). spec:
//
//	body      the container's id (a <tbody>, or a <ul> with tag "li")
//	tag       the row's tag, "tr" by default
//	key       item -> the row's key
//	empty     () -> the placeholder's text when there are no items
//	row       (item, ctx) -> the row element's attributes (optional)
//	sig       (item, ctx) -> a signature of related data (optional)
//	columns   [{key, tag, attrs, make, cell}]: the cells in order. tag is
//	          "td" by default ("th" gets scope=row); attrs are static
//	          attributes; make(item) builds children kept for the row's
//	          life (e.g. buttons); cell(item, ctx, el) returns the cell's
//	          content: a string or number (its text), or {text} or {kids}
//	          with any attributes beside (null removes one; class adds to
//	          the static class).
export function table(spec) {
  const tag = spec.tag || "tr";
  const create = (item) => {
    const cells = new Map();
    const el = h(tag, null);
    for (const col of spec.columns) {
      const ctag = col.tag || "td";
      const cell = h(ctag, { scope: ctag === "th" ? "row" : null, ...col.attrs }, col.make ? col.make(item) : null);
      cells.set(col.key, cell);
      el.append(cell);
    }
    return { el, cells };
  };
  return function render(items, ctx) {
    const parent = document.getElementById(spec.body);
    if (items.length === 0) {
      placeholder(parent, spec.columns.length, spec.empty());
      return;
    }
    const update = (row, item) => {
      if (spec.row) apply(row.el, null, spec.row(item, ctx));
      for (const col of spec.columns) {
        const el = row.cells.get(col.key);
        apply(el, col.attrs && col.attrs.class, col.cell(item, ctx, el));
      }
    };
    syncList(parent, items, spec.key, create, update, spec.sig && ((item) => spec.sig(item, ctx)));
  };
}

// apply puts a cell's content and attributes on el, touching only what
// changed (setText, setAttr).
function apply(el, staticClass, c) {
  if (c === undefined || c === null) return;
  if (typeof c !== "object") {
    setText(el, c);
    return;
  }
  for (const [name, v] of Object.entries(c)) {
    if (name === "text") setText(el, v ?? "");
    else if (name === "kids") el.replaceChildren(...[v].flat(Infinity).filter((k) => k !== null && k !== undefined && k !== false));
    else if (name === "class") setAttr(el, "class", [staticClass, v].filter(Boolean).join(" ") || null);
    else setAttr(el, name, v);
  }
}
