// Exercise panel: the list with a progress badge per exercise, the chosen
// exercise's steps (body, commands to try, hints on demand and then the
// solution, one request each: the lab sends only what was opened; an answer box for steps that ask for a value
// read in the lab, the results of "check now", the explanation once
// passed), its quiz, and "reset". Every verdict comes from the lab's
// checker: the panel asks /api/exercises when the student acts, and again
// when the stream says an exercise's progress changed (the lab checks by
// itself as it changes, so a step turns green without a click).

import { h, t, setText, setAttr, show, keepChildren } from "./util.js";
import { initMystery, MYSTERY_ID } from "./mystery.js";

const LANG = document.documentElement.lang === "ja" ? "ja" : "en";
const PICK_KEY = "ccmlab.exercise";
const RESET_ARM_MS = 6000;

// The words for a step's status; literal keys so the catalog tests see them.
const STATUS_TEXT = {
  passed: "ex.status.passed",
  failed: "ex.status.failed",
  current: "ex.status.current",
  locked: "ex.status.locked",
};

// restartWords are the flags a restart offer names, for the catalog.
function restartWords(r) {
  return { profile: r.profile, addons: r.addons && r.addons.length ? r.addons.join(",") : "-" };
}

// initExercises wires the panel. api(method, path, body) is app.js's
// same-origin fetch (it throws with the lab's error message); fillConsole
// puts a command into the console's input.
export function initExercises({ api, fillConsole, onChallenge }) {
  const el = {
    panel: document.getElementById("exercises"),
    list: document.getElementById("ex-list"),
    load: document.getElementById("ex-load"),
    detail: document.getElementById("ex-detail"),
    name: document.getElementById("ex-name"),
    goal: document.getElementById("ex-goal"),
    meta: document.getElementById("ex-meta"),
    unavailable: document.getElementById("ex-unavailable"),
    check: document.querySelector('[data-action="ex-check"]'),
    reset: document.querySelector('[data-action="ex-reset"]'),
    progress: document.getElementById("ex-progress"),
    status: document.getElementById("ex-status"),
    setup: document.getElementById("ex-setup"),
    steps: document.getElementById("ex-steps"),
    quizBox: document.getElementById("ex-quiz-box"),
    quiz: document.getElementById("ex-quiz"),
  };
  const ex = {
    list: [],
    chosen: null,
    detail: null,
    reports: {}, // exercise id -> the last CheckReport
    drafts: {}, // "exercise/step" -> what is typed in the answer box
    open: new Set(), // "exercise/step" of steps whose <details> is open
    busy: "", // "check", "reset", "quiz", "load"
    resetArmed: 0,
    restartArmed: 0,
    status: "",
    statusBad: false,
  };
  const q = (path) => path + (path.includes("?") ? "&" : "?") + "lang=" + LANG;
  // The offer to restart the lab into what an unavailable exercise needs,
  // under the box that says why it cannot run here.
  const restartButton = h("button", { type: "button", class: "ex-restart", "data-action": "ex-restart", "data-testid": "ex-restart", hidden: "" });
  el.unavailable.after(restartButton);
  // The diagnosis challenge's box (mystery.js), before the steps.
  const mystery = initMystery({ api, q, host: el.steps, status: setStatus, reload: async () => {
    await Promise.all([loadDetail(ex.chosen), loadList()]);
    render();
  } });

  function setStatus(text, bad) {
    ex.status = text;
    ex.statusBad = !!bad;
  }

  async function loadList() {
    ex.list = await api("GET", q("/api/exercises"));
    // The diagnosis challenge runs from its reset until the cause is named
    // (its first step): the rest of the page must not name the cause.
    const m = ex.list.find((e) => e.id === MYSTERY_ID);
    if (onChallenge) onChallenge(!!(m && m.available && m.started && m.stepsPassed === 0));
  }

  async function loadDetail(id) {
    const d = await api("GET", q("/api/exercises/" + encodeURIComponent(id)));
    if (ex.chosen === id) ex.detail = d;
  }

  async function refresh() {
    try {
      await loadList();
      setText(el.load, "");
      show(el.load, false);
      let id = ex.chosen;
      if (!id) {
        const wanted = new URLSearchParams(location.search).get("exercise") || stored();
        id = (ex.list.find((e) => e.id === wanted) || ex.list.find((e) => e.available && !e.done) || ex.list[0] || {}).id;
      }
      if (id) {
        ex.chosen = id;
        await loadDetail(id);
      }
    } catch (err) {
      setText(el.load, t("ex.none", { msg: err.message }));
      show(el.load, true);
    }
    render();
  }

  function stored() {
    try {
      return localStorage.getItem(PICK_KEY);
    } catch {
      return null;
    }
  }

  async function choose(id) {
    if (id === ex.chosen && ex.detail) return;
    ex.chosen = id;
    ex.detail = null;
    ex.resetArmed = 0;
    setStatus("");
    try {
      localStorage.setItem(PICK_KEY, id);
    } catch {
      // storage may be off
    }
    await run("load", () => loadDetail(id));
  }

  // run does one thing against the lab at a time and redraws around it.
  async function run(what, fn) {
    if (ex.busy) return;
    ex.busy = what;
    render();
    try {
      await fn();
    } catch (err) {
      setStatus(t("ex.failed", { msg: err.message }), true);
    } finally {
      ex.busy = "";
      render();
    }
  }

  function check() {
    const id = ex.chosen;
    if (!id) return;
    setStatus(t("ex.checking"));
    run("check", async () => {
      const rep = await api("POST", q("/api/exercises/" + encodeURIComponent(id) + "/check"));
      ex.reports[id] = rep;
      await Promise.all([loadDetail(id), loadList()]);
      const passed = rep.steps.filter((s) => s.status === "passed").length;
      setStatus(rep.currentStep === "" ? t("ex.alldone") : t("ex.checked", { p: passed, n: rep.steps.length }));
    });
  }

  // armed says whether the button that keeps its deadline in ex[key] is
  // armed; if not, the press arms it for RESET_ARM_MS and says what a
  // second press will do. Reset and restart throw away the student's lab,
  // so the first press only arms them.
  function armed(key, says) {
    if (Date.now() <= ex[key]) {
      ex[key] = 0;
      return true;
    }
    ex[key] = Date.now() + RESET_ARM_MS;
    setStatus(says);
    render();
    setTimeout(() => {
      if (ex[key] && Date.now() >= ex[key]) {
        ex[key] = 0;
        render();
      }
    }, RESET_ARM_MS + 50);
    return false;
  }

  function reset() {
    const id = ex.chosen;
    if (!id || !armed("resetArmed", t("ex.reset.armed"))) return;
    setStatus(t("ex.resetting"));
    run("reset", async () => {
      const d = await api("POST", q("/api/exercises/" + encodeURIComponent(id) + "/reset"), mystery.resetBody(id));
      delete ex.reports[id];
      mystery.forget();
      if (ex.chosen === id) ex.detail = d;
      await loadList();
      setStatus(t("ex.reset.done"));
    });
  }

  // restart asks the lab to restart into the profile and add-ons the
  // chosen exercise needs (Summary.restart). Like reset, the first press
  // only arms it: the cluster starts afresh (progress is kept). Once the
  // lab took it, the page waits for the new lab and loads it.
  function restart() {
    const d = ex.detail;
    if (!d || !d.restart || !armed("restartArmed", t("ex.restart.armed", restartWords(d.restart)))) return;
    setStatus(t("ex.restarting", restartWords(d.restart)));
    run("restart", async () => {
      await api("POST", q("/api/lab/restart"), { profile: d.restart.profile, addons: d.restart.addons });
      await newLab();
      location.reload();
    });
  }

  // newLab resolves once the old lab has gone and the new one answers
  // /healthz (it says 503 while it starts).
  async function newLab() {
    const wait = (ms) => new Promise((r) => setTimeout(r, ms));
    let down = false;
    for (;;) {
      let ok = false;
      try {
        ok = (await fetch("/healthz", { cache: "no-store" })).ok;
      } catch {
        ok = false;
      }
      if (!ok) down = true;
      if (ok && down) return;
      await wait(500);
    }
  }

  function answerStep(step) {
    const id = ex.chosen;
    const key = id + "/" + step;
    const value = (ex.drafts[key] || "").trim();
    if (!value) return;
    run("answer", async () => {
      const res = await api("POST", q("/api/exercises/" + encodeURIComponent(id) + "/steps/" + encodeURIComponent(step) + "/answer"), { answer: value });
      if (res.report) ex.reports[id] = res.report;
      await Promise.all([loadDetail(id), loadList()]);
      setStatus(res.detail, !res.correct);
    });
  }

  // changed: the stream says an exercise's progress changed (the lab's own
  // check, or another tab). Reread it, and say which step just passed.
  let pending = 0;
  function changed(id) {
    clearTimeout(pending);
    pending = setTimeout(async () => {
      if (ex.busy) return changed(id);
      const before = ex.detail && ex.detail.id === id ? new Set(ex.detail.steps.filter((s) => s.passed).map((s) => s.id)) : null;
      try {
        await loadList();
        if (ex.chosen === id) await loadDetail(id);
      } catch {
        return;
      }
      if (before && ex.detail && ex.detail.id === id) {
        const now = ex.detail.steps.find((s) => s.passed && !before.has(s.id));
        if (now) setStatus(t("ex.auto", { step: now.title }));
      }
      render();
    }, 150);
  }

  // hint opens the next hint of a step, or its solution once every hint
  // is open; the lab answers with the exercise as it now shows it.
  async function hint(step) {
    const id = ex.chosen;
    await run("hint", async () => {
      const d = await api("POST", q("/api/exercises/" + encodeURIComponent(id) + "/steps/" + encodeURIComponent(step) + "/hint"));
      if (ex.chosen === id) ex.detail = d;
      if (d.steps.some((s) => s.id === step && !s.solutionHidden)) ex.open.add(id + "/" + step + "/solution");
    });
    const list = el.steps.querySelector(`[data-step="${CSS.escape(step)}"] .ex-hints li:last-child`);
    if (list) list.scrollIntoView({ block: "nearest" });
  }

  function answer(qid, choice) {
    const id = ex.chosen;
    run("quiz", async () => {
      const res = await api("POST", q("/api/exercises/" + encodeURIComponent(id) + "/quiz/" + encodeURIComponent(qid)), { choice });
      if (ex.chosen === id && ex.detail) {
        ex.detail.quiz = ex.detail.quiz.map((x) => (x.id === qid ? res.view : x));
      }
      await loadList();
    });
  }

  // --- drawing ---

  function render() {
    // The panel is rebuilt whole (only what changed reaches the page:
    // keepChildren); keep the keyboard where it was.
    const focused = document.activeElement && el.panel.contains(document.activeElement) ? document.activeElement.getAttribute("data-testid") : null;
    renderList();
    renderDetail();
    if (focused) {
      const again = el.panel.querySelector(`[data-testid="${CSS.escape(focused)}"]`);
      if (again && again !== document.activeElement && !again.disabled) again.focus();
    }
  }

  function renderList() {
    keepChildren(
      el.list,
      ex.list.map((s) => {
        let badge, state;
        if (!s.available) [badge, state] = [t("ex.badge.off"), "off"];
        else if (s.done) [badge, state] = [t("ex.badge.done"), "done"];
        else {
          badge = s.steps > 0 ? t("ex.badge", { p: s.stepsPassed, n: s.steps }) : "";
          if (s.questions > 0) badge += (badge ? " · " : "") + t("ex.badge.quiz", { p: s.questionsCorrect, n: s.questions });
          state = s.stepsPassed > 0 || s.questionsCorrect > 0 ? "progress" : "new";
        }
        return h(
          "li",
          null,
          h(
            "button",
            {
              type: "button",
              class: "ex-pick",
              "data-action": "ex-pick",
              "data-id": s.id,
              "aria-current": s.id === ex.chosen ? "true" : null,
              "data-testid": "ex-pick-" + s.id,
            },
            h("span", { class: "ex-pick-title", text: t("ex.pick", { n: s.order, title: s.title }) }),
            h("span", { class: "ex-badge", "data-state": state, "data-testid": "ex-badge-" + s.id, text: badge }),
          ),
        );
      }),
    );
  }

  function renderDetail() {
    const d = ex.detail;
    mystery.render(d, !!ex.busy);
    show(el.detail, !!d);
    setText(el.status, ex.status);
    el.status.classList.toggle("bad", ex.statusBad);
    if (!d) return;
    setAttr(el.detail, "data-exercise", d.id);
    setText(el.name, t("ex.pick", { n: d.order, title: d.title }));
    setText(el.goal, d.goal);
    const meta = [t("ex.meta.minutes", { n: d.minutes })];
    if (d.profiles && d.profiles.length) meta.push(t("ex.meta.profiles", { list: d.profiles.join(", ") }));
    if (d.requires && d.requires.length) meta.push(t("ex.meta.requires", { list: d.requires.join(", ") }));
    if (d.latency) meta.push(t("ex.meta.pace", { d: d.latency, now: d.cloudLatency }));
    setText(el.meta, meta.join(" · "));
    setText(el.setup, d.setup);
    // The same box says when the last reset did not simply go through.
    const why = [];
    if (!d.available) why.push(t("ex.unavailable", { msg: d.unavailable || "" }));
    if (d.reset && d.reset.state === "failed") why.push(t("ex.reset.failed", { msg: d.reset.note || "" }));
    if (d.reset && d.reset.state === "resumed") why.push(t("ex.reset.resumed"));
    if (d.reset && d.reset.state === "done" && d.reset.note) why.push(d.reset.note);
    setText(el.unavailable, why.join(" "));
    show(el.unavailable, why.length > 0);
    // A reset that went through with a note (what it undid or turned off)
    // is news, not trouble: it is not drawn as a warning.
    const onlyNote = d.available && !(d.reset && d.reset.state !== "done");
    setAttr(el.unavailable, "data-kind", why.length && onlyNote ? "note" : null);
    const offer = !d.available && d.restart;
    show(restartButton, !!offer);
    if (offer) {
      const words = restartWords(d.restart);
      setText(restartButton, ex.restartArmed ? t("ex.restart.confirm", words) : t("ex.restart", words));
      setAttr(restartButton, "data-armed", ex.restartArmed ? "true" : null);
      setAttr(restartButton, "aria-busy", ex.busy === "restart" ? "true" : null);
      restartButton.disabled = !!ex.busy;
    }
    const busy = !!ex.busy;
    el.check.disabled = busy || !d.available || d.steps.length === 0;
    setText(el.check, ex.busy === "check" ? t("ex.checking") : t("ex.check"));
    setAttr(el.check, "aria-busy", ex.busy === "check" ? "true" : null);
    el.reset.disabled = busy || !d.available;
    setText(el.reset, ex.resetArmed ? t("ex.reset.confirm") : t("ex.reset"));
    setAttr(el.reset, "data-armed", ex.resetArmed ? "true" : null);
    setAttr(el.reset, "aria-busy", ex.busy === "reset" ? "true" : null);
    setText(el.progress, d.steps.length ? t("ex.progress", { p: d.stepsPassed, n: d.steps.length }) : "");
    setAttr(el.detail, "data-done", d.steps.length > 0 && d.stepsPassed === d.steps.length ? "true" : "false");

    const rep = ex.reports[d.id];
    keepChildren(el.steps, d.steps.map((s, i) => stepItem(d, s, i, rep)));
    show(el.quizBox, d.quiz.length > 0);
    keepChildren(el.quiz, d.quiz.map((qv) => questionItem(qv)));
    renderEnding(d);
  }

  // The ending comes only with a done exercise (the lab leaves it out
  // before, as it names what the steps ask for); it closes the panel.
  let endingBox = null;
  function renderEnding(d) {
    if (!d.ending) {
      if (endingBox) endingBox.remove();
      endingBox = null;
      return;
    }
    if (!endingBox) endingBox = h("section", { class: "ex-ending", "data-testid": "exercise-ending" });
    endingBox.replaceChildren(h("h4", { text: t("ex.ending") }), h("p", { text: d.ending }));
    if (endingBox.parentNode !== el.detail) el.detail.append(endingBox);
  }

  function stepStatus(s, rep) {
    if (s.passed) return "passed";
    if (s.locked) return "locked";
    const r = rep && rep.steps.find((x) => x.id === s.id);
    return r && r.status === "failed" ? "failed" : "current";
  }

  function stepItem(d, s, i, rep) {
    const status = stepStatus(s, rep);
    const key = d.id + "/" + s.id;
    const r = rep && rep.steps.find((x) => x.id === s.id && x.checked);
    const active = status === "current" || status === "failed";
    const headId = "ex-step-h-" + s.id;

    const parts = [
      h(
        "div",
        { class: "ex-step-head" },
        h("span", { class: "ex-step-n", text: t("ex.step", { n: i + 1 }) }),
        h("h4", { id: headId, class: "ex-step-title", text: s.title }),
        h("span", { class: "ex-step-status", "data-testid": "ex-step-status-" + s.id, text: t(STATUS_TEXT[status]) }),
      ),
    ];
    const body = [h("p", { class: "ex-body", text: s.body }), commandList(s)];
    if (s.checks && s.checks.length) body.push(h("p", { class: "hint", text: t("ex.checks.what", { list: s.checks.join(", ") }) }));
    // A locked step comes with its title only: the lab sends its body once the steps before it pass.
    if (status === "locked") parts.push(h("p", { class: "hint ex-locked", "data-testid": "ex-step-locked-" + s.id, text: t("ex.step.locked") }));
    else if (active) parts.push(...body);
    else {
      const det = h("details", { class: "ex-more", "data-key": key }, h("summary", { text: status === "passed" ? t("ex.commands") : s.title }), ...body);
      det.open = ex.open.has(key);
      det.addEventListener("toggle", () => (det.open ? ex.open.add(key) : ex.open.delete(key)));
      parts.push(det);
    }
    if (r && r.checks && r.checks.length) {
      parts.push(
        h(
          "ul",
          { class: "ex-results", "aria-label": t("ex.checks"), "data-testid": "ex-results-" + s.id },
          r.checks.map((c) =>
            h(
              "li",
              { class: c.pass ? "ok" : "bad", "data-pass": c.pass ? "true" : "false", "data-kind": c.kind, "data-testid": "ex-check-result" },
              h("span", { class: "ex-mark", text: c.pass ? t("ex.check.pass") : t("ex.check.fail") }),
              " ",
              h("code", { text: c.kind }),
              " ",
              c.detail,
            ),
          ),
        ),
      );
    }
    if (active && s.hints.length) {
      parts.push(h("div", { class: "ex-hints", "data-testid": "ex-hints-" + s.id }, h("strong", { text: t("ex.hints") }), h("ul", null, s.hints.map((x) => h("li", { text: x })))));
    }
    // One request reveals the next hint; after the last hint, the solution.
    const more = s.hints.length < s.hintCount;
    if (active && (more || s.solutionHidden)) {
      parts.push(
        h("button", {
          type: "button",
          class: "linklike",
          "data-action": "ex-hint",
          "data-step": s.id,
          disabled: !!ex.busy,
          "data-testid": (more ? "ex-hint-" : "ex-show-solution-") + s.id,
          text: more ? t("ex.hint", { n: s.hints.length + 1, m: s.hintCount }) : t("ex.solution.show"),
        }),
      );
    }
    if (active && s.answer) parts.push(answerBox(key, s));
    if (active && s.solution && s.solution.length) {
      const det = h(
        "details",
        { class: "ex-solution", "data-key": key + "/solution", "data-testid": "ex-solution-" + s.id },
        h("summary", { text: t("ex.solution") }),
        h(
          "ul",
          { class: "ex-cmds" },
          s.solution.map((c) =>
            h(
              "li",
              null,
              c.command
                ? c.console
                  ? h("button", { type: "button", class: "ex-cmd", "data-action": "ex-cmd", "data-line": c.command, "aria-label": t("ex.cmd.copy", { cmd: c.command }) }, h("code", { text: c.command }))
                  : h("code", { class: "ex-cmd ex-cmd-shell", text: c.command })
                : h("span", { text: c.action }),
            ),
          ),
        ),
      );
      det.open = ex.open.has(key + "/solution");
      det.addEventListener("toggle", () => (det.open ? ex.open.add(key + "/solution") : ex.open.delete(key + "/solution")));
      parts.push(det);
    }
    if (s.attempts > 0 && !s.passed) parts.push(h("p", { class: "hint", text: t("ex.attempts", { n: s.attempts }) }));
    if (status === "passed" && s.explanation) {
      parts.push(h("div", { class: "ex-explanation", "data-testid": "ex-explanation-" + s.id }, h("strong", { text: t("ex.explanation") }), h("p", { text: s.explanation })));
    }
    return h("li", { class: "ex-step", "data-status": status, "data-step": s.id, "aria-labelledby": headId, "aria-current": active ? "step" : null, "data-testid": "ex-step-" + s.id }, parts);
  }

  function answerBox(key, s) {
    const a = s.answer;
    const inputId = "ex-answer-" + s.id;
    const input = h("input", {
      id: inputId,
      type: "text",
      class: "ex-answer-input",
      autocomplete: "off",
      spellcheck: "false",
      maxlength: "256",
      "data-key": key,
      "data-testid": "ex-answer-input-" + s.id,
    });
    input.value = ex.drafts[key] !== undefined ? ex.drafts[key] : "";
    input.addEventListener("input", () => (ex.drafts[key] = input.value));
    const result = a.attempts > 0 ? (a.correct ? t("ex.answer.right", { v: a.value }) : t("ex.answer.wrong", { v: a.value })) : "";
    return h(
      "form",
      { class: "ex-answer", "data-step": s.id, "data-testid": "ex-answer-" + s.id },
      h("label", { for: inputId, text: a.prompt }),
      input,
      h("button", { type: "submit", class: "btn btn-small", disabled: !!ex.busy, "data-testid": "ex-answer-submit-" + s.id, text: t("ex.answer.submit") }),
      h("p", { class: "ex-answer-result " + (a.correct ? "ok" : "bad"), role: "status", "data-testid": "ex-answer-result-" + s.id, text: result }),
    );
  }

  function commandList(s) {
    if (!s.commands.length) return null;
    // A terminal needs the lab's variables once (KUBECONFIG, the AWS
    // CLI's): the lab names the file to source (Detail.shell).
    const shell = ex.detail && ex.detail.shell && s.commands.some((c) => !c.console) ? ex.detail.shell : "";
    return h(
      "ul",
      { class: "ex-cmds", "aria-label": t("ex.commands") },
      shell ? h("li", { class: "hint", "data-testid": "ex-shell" }, t("ex.cmd.shell") + " ", h("code", { text: shell })) : null,
      s.commands.map((c) =>
        h(
          "li",
          null,
          c.console
            ? h("button", { type: "button", class: "ex-cmd", "data-action": "ex-cmd", "data-line": c.line, "aria-label": t("ex.cmd.copy", { cmd: c.line }), "data-testid": "ex-cmd" }, h("code", { text: c.line }))
            : h("span", { class: "ex-cmd ex-cmd-shell", "data-testid": "ex-cmd-shell" }, h("code", { text: c.line }), " ", h("span", { class: "ex-tag", title: t("ex.cmd.terminal.hint"), text: t("ex.cmd.terminal") })),
        ),
      ),
    );
  }

  function questionItem(qv) {
    const hid = "ex-q-h-" + qv.id;
    // A locked question comes without its text and choices until the steps pass.
    if (qv.locked) {
      return h("li", { class: "ex-q", "data-locked": "true", "data-testid": "ex-q-" + qv.id }, h("p", { class: "hint ex-locked", text: t("ex.quiz.locked") }));
    }
    const res = qv.answered ? (qv.correct ? t("ex.quiz.correct") : t("ex.quiz.wrong")) : "";
    return h(
      "li",
      { class: "ex-q", "aria-labelledby": hid, "data-answered": qv.answered ? "true" : "false", "data-correct": qv.correct ? "true" : "false", "data-testid": "ex-q-" + qv.id },
      h("p", { id: hid, class: "ex-q-text", text: qv.question }),
      h(
        "ul",
        { class: "ex-choices" },
        qv.choices.map((c, i) => {
          const chosen = qv.answered && qv.choice === i;
          const mark = c.correct === true ? "✓ " : c.correct === false ? "✗ " : "";
          return h(
            "li",
            { "data-correct": c.correct === undefined ? null : String(c.correct) },
            h(
              "button",
              {
                type: "button",
                class: "ex-choice",
                "data-action": "ex-answer",
                "data-q": qv.id,
                "data-choice": i,
                "aria-pressed": chosen ? "true" : "false",
                disabled: !!ex.busy,
                "data-testid": "ex-choice-" + qv.id + "-" + i,
              },
              mark + c.text,
            ),
            chosen ? h("span", { class: "ex-tag", text: t("ex.quiz.chosen") }) : null,
            c.why ? h("p", { class: "ex-why", "data-testid": "ex-why-" + qv.id + "-" + i, text: c.why }) : null,
          );
        }),
      ),
      h("p", { class: "ex-q-result " + (qv.correct ? "ok" : "bad"), role: "status", "data-testid": "ex-q-result-" + qv.id, text: res }),
    );
  }

  el.panel.addEventListener("submit", (e) => {
    const f = e.target.closest("form.ex-answer");
    if (!f) return;
    e.preventDefault();
    answerStep(f.getAttribute("data-step"));
  });

  el.panel.addEventListener("click", (e) => {
    const b = e.target.closest("[data-action]");
    if (!b || b.disabled) return;
    switch (b.getAttribute("data-action")) {
      case "ex-pick":
        choose(b.getAttribute("data-id"));
        break;
      case "ex-check":
        check();
        break;
      case "ex-reset":
        reset();
        break;
      case "ex-restart":
        restart();
        break;
      case "ex-hint":
        hint(b.getAttribute("data-step"));
        break;
      case "ex-cmd":
        fillConsole(b.getAttribute("data-line"));
        break;
      case "ex-answer":
        answer(b.getAttribute("data-q"), Number(b.getAttribute("data-choice")));
        break;
    }
  });

  return { refresh, changed, state: ex };
}
