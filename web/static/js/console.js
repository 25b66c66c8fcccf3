// kubectl console: a line typed here goes to POST /api/console, which runs
// it with the lab's embedded kubectl (kubectl verbs only, never a shell);
// the output, or why the lab refused the line, is appended to the
// scrollback. ↑ and ↓ walk the history, which survives a reload.

import { h, t } from "./util.js";

const LANG = document.documentElement.lang === "ja" ? "ja" : "en";
const HISTORY_KEY = "ccmlab.console.history";
const MAX_HISTORY = 100;
const MAX_ENTRIES = 80;

export function initConsole() {
  const form = document.getElementById("console-form");
  const input = document.getElementById("console-input");
  const out = document.getElementById("console-output");
  let history = [];
  try {
    history = JSON.parse(localStorage.getItem(HISTORY_KEY) || "[]").filter((x) => typeof x === "string");
  } catch {
    history = [];
  }
  let pos = history.length;
  let draft = "";

  function remember(line) {
    if (history[history.length - 1] !== line) history.push(line);
    if (history.length > MAX_HISTORY) history = history.slice(-MAX_HISTORY);
    pos = history.length;
    draft = "";
    try {
      localStorage.setItem(HISTORY_KEY, JSON.stringify(history));
    } catch {
      // storage may be off; the history still works for this page
    }
  }

  function recall(to) {
    if (to < 0 || to > history.length) return;
    if (pos === history.length) draft = input.value;
    pos = to;
    input.value = pos === history.length ? draft : history[pos];
    const end = input.value.length;
    input.setSelectionRange(end, end);
  }

  input.addEventListener("keydown", (e) => {
    if (e.isComposing || e.altKey || e.ctrlKey || e.metaKey) return;
    if (e.key === "ArrowUp") {
      e.preventDefault();
      recall(pos - 1);
    } else if (e.key === "ArrowDown") {
      e.preventDefault();
      recall(pos + 1);
    } else if (e.key === "Escape" && input.value) {
      e.preventDefault();
      input.value = "";
      pos = history.length;
    }
  });

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const line = input.value.trim();
    if (!line) return;
    remember(line);
    input.value = "";
    run(line);
  });

  document.addEventListener("click", (e) => {
    if (e.target.closest('[data-action="console-clear"]')) {
      out.replaceChildren();
      input.focus();
    }
  });

  function atBottom() {
    return out.scrollHeight - out.scrollTop - out.clientHeight < 40;
  }

  async function run(line) {
    const result = h("pre", { class: "console-out", text: t("console.running") });
    const entry = h(
      "div",
      { class: "console-entry", "data-state": "running", "data-command": line, "data-testid": "console-entry" },
      h("div", { class: "console-cmd" }, h("span", { class: "console-prompt", "aria-hidden": "true", text: "$ " }), h("kbd", { text: line })),
      result,
    );
    out.append(entry);
    while (out.querySelectorAll(".console-entry").length > MAX_ENTRIES) out.querySelector(".console-entry").remove();
    out.scrollTop = out.scrollHeight;

    let state, text, notes = [];
    try {
      const res = await fetch("api/console?lang=" + LANG, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ command: line }),
        credentials: "same-origin",
      });
      let data = null;
      try {
        data = await res.json();
      } catch {
        // no body
      }
      if (res.status === 400) {
        state = "refused";
        text = t("console.refused", { msg: (data && data.error) || res.statusText });
      } else if (!res.ok) {
        state = "error";
        text = t("console.error", { msg: (data && data.error) || res.status + " " + res.statusText });
      } else {
        state = data.exitCode === 0 ? "ok" : "failed";
        text = data.output || t("console.empty");
        entry.setAttribute("data-exit-code", String(data.exitCode));
        if (data.exitCode !== 0) notes.push(t("console.exit", { n: data.exitCode }));
        if (data.timedOut) notes.push(t("console.timeout"));
        if (data.truncated) notes.push(t("console.cut"));
      }
    } catch {
      state = "error";
      text = t("console.error", { msg: t("action.offline") });
    }
    const follow = atBottom() || entry === out.lastElementChild;
    result.textContent = text.replace(/\n$/, "");
    if (notes.length) entry.append(h("p", { class: "console-note", text: notes.join(" · ") }));
    entry.setAttribute("data-state", state);
    if (follow) out.scrollTop = out.scrollHeight;
  }

  return {
    // fill puts a command into the input, ready to run with Enter.
    fill(line) {
      input.value = line;
      pos = history.length;
      draft = "";
      input.focus();
      input.setSelectionRange(line.length, line.length);
      input.scrollIntoView({ block: "nearest" });
    },
  };
}
