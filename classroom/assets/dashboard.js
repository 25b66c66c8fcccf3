// The instructor's dashboard: the table follows /api/class/events; the
// actions post to the portal, which forwards them to the chosen labs.
const conn = document.getElementById("conn");
const STUCK = 10 * 60; // seconds on one step before a row is flagged

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "text") e.textContent = v;
    else e.setAttribute(k, v);
  }
  for (const k of kids) if (k) e.append(k);
  return e;
}

function fmt(s) {
  if (!s) return "";
  if (s < 60) return s + "s";
  if (s < 3600) return Math.floor(s / 60) + "m";
  return Math.floor(s / 3600) + "h" + String(Math.floor((s % 3600) / 60)).padStart(2, "0");
}

function render(cls) {
  const picked = new Set([...document.querySelectorAll(".pick:checked")].map((c) => c.value));
  const table = document.getElementById("class");
  const head = el("tr", null, el("th", null, el("input", { type: "checkbox", id: "select-all", "aria-label": "Select all" })),
    el("th", { scope: "col", text: "Student" }), el("th", { scope: "col", text: "Lab" }),
    el("th", { scope: "col", text: "Where" }), el("th", { scope: "col", text: "Since last step" }),
    el("th", { scope: "col", text: "Lab says stuck" }),
    ...cls.exercises.map((x) => el("th", { scope: "col", title: x.title, text: x.id })));
  const body = el("tbody");
  for (const s of cls.students) {
    const cur = s.current;
    const cells = cls.exercises.map((x) => {
      const c = s.exercises[x.id] || { stepsPassed: 0, done: false, wrongAnswers: 0, hintsOpened: 0 };
      const wrong = c.wrongAnswers || 0;
      const hints = c.hintsOpened || 0;
      const td = el("td", { class: "steps" + (c.done ? " done" : ""),
        title: `${x.title}: ${c.stepsPassed}/${x.steps} steps, ${wrong} wrong answer(s), ${hints} hint(s) opened`,
        "data-testid": `cell-${s.name}-${x.id}`, "data-passed": String(c.stepsPassed), "data-wrong": String(wrong), "data-hints": String(hints) });
      for (let i = 0; i < x.steps; i++) td.append(el("span", { class: "step" + (i < c.stepsPassed ? " passed" : "") }));
      // How the steps were passed: wrong answers and opened hints.
      if (wrong) td.append(el("span", { class: "count wrong", "data-testid": `wrong-${s.name}-${x.id}`, text: "✗" + wrong }));
      if (hints) td.append(el("span", { class: "count hints", text: "?" + hints }));
      return td;
    });
    const pick = el("input", { type: "checkbox", class: "pick", value: s.name, "aria-label": "Select " + s.name, "data-testid": "pick-" + s.name });
    pick.checked = picked.has(s.name);
    // What the lab itself says cannot happen now, the longest first.
    const st = s.stuck || [];
    const labStuck = el("td", { "data-testid": "labstuck-" + s.name, class: st.length && st[0].seconds >= STUCK ? "stuck" : "",
      title: st.map((x) => `${x.kind} ${x.key}: ${x.message} (${fmt(x.seconds) || "0s"})`).join("\n") });
    if (st.length) {
      labStuck.append(el("span", { class: "reason", text: st[0].reason }), ` ${st[0].key}, ${fmt(st[0].seconds) || "0s"}`);
      if (st.length > 1) labStuck.append(` (+${st.length - 1})`);
    }
    body.append(el("tr", { "data-student": s.name, "data-testid": "student-" + s.name },
      el("td", null, pick),
      el("th", { scope: "row" }, el("a", { href: s.path, target: "_blank", rel: "noopener", text: s.name })),
      el("td", { class: "lab lab-" + s.lab, text: s.lab, "data-testid": "lab-" + s.name }),
      el("td", { text: cur ? cur.exercise + (cur.stepTitle ? ": " + cur.stepTitle : "") + (cur.attempts ? ` (${cur.attempts} checks)` : "") : "" }),
      el("td", { class: cur && cur.stuckSeconds >= STUCK ? "stuck" : "", text: cur ? fmt(cur.stuckSeconds) : "" }),
      labStuck,
      ...cells));
  }
  table.replaceChildren(el("thead", null, head), body);
  document.getElementById("select-all").addEventListener("change", (e) => {
    for (const c of document.querySelectorAll(".pick")) c.checked = e.target.checked;
  });
  const sel = document.getElementById("reset-exercise");
  if (sel.options.length === 0) for (const x of cls.exercises) sel.append(el("option", { value: x.id, text: x.title }));
  if (!causesAsked && cls.students.some((s) => s.lab === "ready")) loadCauses();
}

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
    for (const c of data.causes) sel.append(el("option", { value: c.id, text: c.label[lang] || c.label.en || c.id }));
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
