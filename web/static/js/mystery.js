// Diagnosis challenge box (mystery-pending) in the exercise panel: the
// Service to diagnose, the causes to choose from, "name it" (only the
// first answer counts: it ends the diagnosis, right or wrong, and the
// hidden cause shows), and, for the instructor only (d.plant), which
// cause the next reset plants. The hidden cause is never
// in the page before it is named: the lab does not send it.

import { h, t, keepChildren } from "./util.js";

const LANG = document.documentElement.lang === "ja" ? "ja" : "en";
export const MYSTERY_ID = "mystery-pending";

// initMystery wires the box. host is the element the box goes before;
// api(method, path, body) is app.js's fetch; reload() rereads the exercise
// and redraws; status(text, bad) sets the panel's status line.
export function initMystery({ api, q, host, reload, status }) {
  const box = h("section", { class: "ex-mystery", "data-testid": "mx-box", hidden: true });
  host.before(box);
  const st = { pick: "", plant: "", busy: false };

  const label = (c) => (c.label && (c.label[LANG] || c.label.en)) || c.id;

  async function name() {
    if (!st.pick || st.busy) return;
    st.busy = true;
    try {
      const v = await api("POST", q("/api/exercises/" + MYSTERY_ID + "/cause"), { cause: st.pick });
      status(v.correct ? t("mx.named.right") : t("mx.named.wrong"), !v.correct);
      await reload();
    } catch (err) {
      status(t("ex.failed", { msg: err.message }), true);
    } finally {
      st.busy = false;
    }
  }

  box.addEventListener("change", (e) => {
    const el = e.target;
    if (el.name === "mx-cause") st.pick = el.value;
    if (el.name === "mx-plant") st.plant = el.value;
    render(last, false);
  });
  box.addEventListener("click", (e) => {
    const b = e.target.closest('[data-action="mx-name"]');
    if (b && !b.disabled) name();
  });

  let last = null;
  // render draws the box for exercise detail d (hidden for the others).
  function render(d, busy) {
    last = d;
    if (!d || d.id !== MYSTERY_ID || !d.causes) {
      box.hidden = true;
      return;
    }
    box.hidden = false;
    const kids = [h("h4", { text: t("mx.title") }), h("p", { "data-testid": "mx-service", text: t("mx.service", { svc: d.service }) })];
    const answer = d.answer ? d.causes.find((c) => c.id === d.answer) : null;
    const verdict = () =>
      h("p", { class: "ex-q-result " + (d.correct ? "ok" : "bad"), role: "status", "data-testid": "mx-result", "data-correct": d.correct ? "true" : "false",
        text: (d.correct ? t("mx.named.right") : t("mx.named.wrong")) + " " + t("mx.answer", { c: answer ? label(answer) : d.answer }) });
    if (d.misses) kids.push(h("p", { class: "hint", "data-testid": "mx-misses", text: t("mx.misses", { n: d.misses }) }));
    if (d.named) {
      const cause = d.causes.find((c) => c.id === d.cause);
      kids.push(
        verdict(),
        h("p", { "data-testid": "mx-cause", text: t("mx.cause", { c: cause ? label(cause) : d.cause || "?" }) }),
        h("p", { class: "ex-body", text: d.why || "" }),
      );
    } else {
      if (d.answer) kids.push(verdict(), h("p", { class: "ex-body", "data-testid": "mx-nudge", text: t("mx.nudge", { text: d.nudge || "" }) }));
      kids.push(
        h("p", { class: "hint", text: t("mx.pick") }),
        h(
          "ul",
          { class: "ex-choices" },
          d.causes.map((c) =>
            h(
              "li",
              null,
              h(
                "label",
                null,
                h("input", { type: "radio", name: "mx-cause", value: c.id, checked: st.pick === c.id ? "" : null, "data-testid": "mx-cause-" + c.id }),
                " ",
                label(c),
              ),
            ),
          ),
        ),
        h("button", { type: "button", "data-action": "mx-name", "data-testid": "mx-name", disabled: busy || st.busy || !st.pick || !d.available ? "" : null, text: t("mx.name") }),
      );
    }
    // The instructor's choice for the next reset: the lab offers it (d.plant) to an instructor, never to a student.
    if (!d.plant) st.plant = "";
    if (d.plant) kids.push(
      h(
        "label",
        { class: "hint" },
        t("mx.plant"),
        " ",
        h(
          "select",
          { name: "mx-plant", "data-testid": "mx-plant" },
          h("option", { value: "", text: t("mx.plant.random"), selected: st.plant === "" ? "" : null }),
          ...d.causes.map((c) => h("option", { value: c.id, text: label(c), selected: st.plant === c.id ? "" : null })),
        ),
      ),
    );
    keepChildren(box, kids);
  }

  // resetBody is the body of the next reset of id (the planted cause).
  function resetBody(id) {
    return id === MYSTERY_ID && st.plant ? { cause: st.plant } : undefined;
  }

  return { render, resetBody, forget: () => (st.pick = "") };
}
