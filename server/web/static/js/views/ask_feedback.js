// Feedback on an answer: right, wrong, or "Correct the SQL" with the SQL editor — POST
// v1/answers/{id}/feedback — and what came back: whether the experience was labeled, the facts
// the correction taught, the credit or blame counted on the knowledge used, the rows it ran.

import { clear, facts, h } from "../dom.js";

function learnedList(learned) {
  if (!learned?.length) return h("span", { class: "hint" }, "nothing new");
  return h("ul", { class: "learned", "data-testid": "learned" }, learned.map((fact) => h("li", {},
    h("span", { class: "badge" }, fact.kind || "fact"), " ",
    fact.id ? h("a", { href: `#/knowledge/${encodeURIComponent(fact.id)}` }, fact.phrase || fact.id) : fact.phrase,
    fact.description ? h("span", { class: "hint" }, ` — ${fact.description}`) : null,
    fact.status ? h("span", { class: "hint" }, ` (${fact.status}${fact.scope ? `, ${fact.scope}` : ""})`) : null)));
}

function creditText(credit) {
  if (!credit || !credit.count) return "nothing counted";
  const parts = [`${credit.count} counted on ${credit.entries ?? 0} knowledge entries`];
  if (credit.deactivated?.length) parts.push(`deactivated: ${credit.deactivated.join(", ")}`);
  if (credit.flagged?.length) parts.push(`sent to review: ${credit.flagged.join(", ")}`);
  return parts.join("; ");
}

/** What the server said about a feedback. */
export function feedbackOutcome(outcome) {
  const corrected = outcome.labeled ? "stored as a labeled, verified example" : "noted (no example stored)";
  return h("div", { class: "feedback-outcome", role: "status", "data-testid": "feedback-outcome" },
    h("p", { class: "good" }, `Thank you — the answer was marked ${outcome.verdict}: ${corrected}.`),
    facts([
      ["Labeled", outcome.labeled ? "yes" : "no"],
      ["Experience", outcome.experience_id || "–"],
      ["Rows it ran", outcome.row_count ?? "–"],
      ["Visible to", outcome.scope || "–"],
      ["Learned", learnedList(outcome.learned)],
      ["Credit", creditText(outcome.credit)],
    ]));
}

/**
 * The feedback card of answer ``answer`` (needs the "feedback" permission); ``sql`` is the
 * SQL panel (its current() is the corrected SQL, edit() opens the editor).
 */
export function feedbackPanel(answer, { api, sql, toast }) {
  const status = h("div", { "aria-live": "polite" });
  const comment = h("input", { id: `feedback-comment-${answer.id}`, type: "text", class: "grow", placeholder: "optional: what was wrong?", autocomplete: "off" });
  const right = h("button", { type: "button", class: "secondary", onclick: () => send("correct"), "data-testid": "feedback-right" }, "Right");
  const wrong = h("button", { type: "button", class: "secondary", onclick: () => send("wrong"), "data-testid": "feedback-wrong" }, "Wrong");
  const correctButton = h("button", { type: "button", onclick: correct, "data-testid": "feedback-correct" }, "Correct the SQL");
  let correcting = false;

  function correct() {
    if (!correcting) {
      correcting = true;
      sql.edit();
      correctButton.textContent = "Send the corrected SQL";
      clear(status).append(h("p", { class: "hint" }, "Edit the SQL above (re-run it read-only to check it), then send it. The server runs it first and keeps it only if it runs."));
      return;
    }
    send("wrong", sql.current());
  }

  async function send(verdict, correctedSql = null) {
    const buttons = [right, wrong, correctButton];
    buttons.forEach((b) => { b.disabled = true; });
    clear(status).append(h("p", { class: "loading" }, correctedSql ? "Running the corrected SQL and storing it…" : "Sending…"));
    try {
      const body = { verdict, comment: comment.value };
      if (correctedSql !== null) body.corrected_sql = correctedSql;
      const outcome = await api.post(`v1/answers/${encodeURIComponent(answer.id)}/feedback`, body);
      clear(status).append(feedbackOutcome(outcome));
      toast(outcome.labeled ? "Feedback stored as a labeled example" : "Feedback noted", "good");
    } catch (error) {
      clear(status).append(h("p", { class: "error", role: "alert" }, `The feedback was not stored: ${error.detail || error.message}`));
    } finally {
      buttons.forEach((b) => { b.disabled = false; });
    }
  }

  return h("section", { class: "card feedback", "aria-label": "Feedback", "data-testid": "feedback" },
    h("h2", {}, "Is this answer right?"),
    h("div", { class: "row" }, right, wrong, correctButton),
    h("label", { for: comment.id }, "Comment"),
    h("div", { class: "row" }, comment),
    status);
}
