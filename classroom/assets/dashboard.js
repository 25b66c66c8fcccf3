// The instructor's dashboard: the table follows /api/class/events; the
// actions post to the portal, which forwards them to the chosen labs.
const conn = document.getElementById("conn");

// The class table is rendered by the portal (dashboard.templ), on the first
// load and again on every change: this script only brings the changes in,
// one fetch at a time.
let fetching = false;
let again = false;
async function refreshTable() {
  if (fetching) {
    again = true;
    return;
  }
  fetching = true;
  try {
    do {
      again = false;
      const res = await fetch("class/table", { credentials: "same-origin", cache: "no-store" });
      if (!res.ok) throw new Error(res.statusText);
      const doc = new DOMParser().parseFromString(await res.text(), "text/html");
      const fresh = doc.getElementById("class");
      if (!fresh) continue;
      patchTable(document.getElementById("class"), fresh);
    } while (again);
  } catch (e) {
    conn.textContent = "reconnecting… (" + e.message + ")";
  } finally {
    fetching = false;
  }
}

// patchTable brings the fresh table's changes into the one on the page,
// cell by cell, and keeps every element that did not change: the students'
// checkboxes above all. Swapping the whole table lost the instructor's
// click when an update landed between the press and the release (the
// pressed checkbox left the document, so the browser sent no click), and
// the class changes every few seconds while a class works.
function patchTable(cur, fresh) {
  const same = (a, b) => a.outerHTML === b.outerHTML;
  if (!same(cur.tHead, fresh.tHead)) cur.tHead.replaceWith(document.adoptNode(fresh.tHead));
  const body = cur.tBodies[0];
  const old = new Map([...body.rows].map((r) => [r.dataset.student, r]));
  const rows = [...fresh.tBodies[0].rows].map((fr) => {
    const r = old.get(fr.dataset.student);
    if (!r) return document.adoptNode(fr);
    // The first cell holds the checkbox and never changes with the class.
    const have = [...r.cells].slice(1);
    const want = [...fr.cells].slice(1);
    want.forEach((c, i) => {
      if (!have[i]) r.append(document.adoptNode(c));
      else if (!same(have[i], c)) have[i].replaceWith(document.adoptNode(c));
    });
    for (const extra of have.slice(want.length)) extra.remove();
    return r;
  });
  // Rows move only when the class's order changed: a moved row leaves the
  // document for a moment.
  if (rows.length !== body.rows.length || rows.some((r, i) => body.rows[i] !== r)) body.replaceChildren(...rows);
}

function render(cls) {
  refreshTable();
  // The exercises are known once a lab answered; the first render may
  // have had none.
  const sel = document.getElementById("reset-exercise");
  if (sel.options.length === 0) for (const x of cls.exercises) sel.append(new Option(x.title, x.id));
  if (!causesAsked && cls.students.some((s) => s.lab === "ready")) loadCauses();
}

// "Select all" is in the table, which is swapped on every change: listen
// on the document.
document.addEventListener("change", (e) => {
  if (e.target.id !== "select-all") return;
  for (const c of document.querySelectorAll(".pick")) c.checked = e.target.checked;
});

// The challenge's causes come from a running lab (the labs' ccmlab
// defines them); a lab without the challenge says so here.
let causesAsked = false;
async function loadCauses() {
  causesAsked = true;
  const status = document.getElementById("challenge-status");
  try {
    const res = await fetch("api/challenge", { credentials: "same-origin" });
    const data = await res.json();
    if (!res.ok) throw new Error(data.error || res.statusText);
    const sel = document.getElementById("challenge-cause");
    const lang = (navigator.language || "en").startsWith("ja") ? "ja" : "en";
    for (const c of data.causes) sel.append(new Option(c.label[lang] || c.label.en || c.id, c.id));
    status.textContent = "";
  } catch (e) {
    status.textContent = e.message;
    if (/no lab is running/.test(e.message)) causesAsked = false; // ask again when one is
  }
}

function selected() {
  return [...document.querySelectorAll(".pick:checked")].map((c) => c.value);
}

async function act(method, path, body) {
  const out = document.getElementById("action-result");
  out.textContent = "…";
  try {
    const res = await fetch(path, { method, headers: { "Content-Type": "application/json" }, body: JSON.stringify(body), credentials: "same-origin" });
    const data = await res.json();
    if (!res.ok) throw new Error(data.error || res.statusText);
    const failed = data.filter((r) => !r.ok);
    out.textContent = `${data.length - failed.length} done` + (failed.length ? `; ${failed.map((r) => r.student + ": " + r.error).join("; ")}` : "");
  } catch (e) {
    out.textContent = e.message;
  }
}

document.getElementById("reset-form").addEventListener("submit", (e) => {
  e.preventDefault();
  act("POST", "api/actions/reset", { exercise: document.getElementById("reset-exercise").value, students: selected() });
});
document.getElementById("challenge-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const cause = document.getElementById("challenge-cause").value;
  act("POST", "api/actions/challenge", cause ? { cause, students: selected() } : { students: selected() });
});
document.getElementById("latency-form").addEventListener("submit", (e) => {
  e.preventDefault();
  act("PUT", "api/actions/latency", { latency: document.getElementById("latency").value, students: selected() });
});

const events = new EventSource("api/class/events");
events.addEventListener("class", (e) => {
  conn.textContent = "live";
  render(JSON.parse(e.data));
});
events.onerror = () => { conn.textContent = "reconnecting…"; };
