// One answer (the ask stream's final event): what it says about itself (confidence, vote share,
// samples, tier, time), an abstention or an error, the SQL panel, the rows with a chart, the
// stages' timings, "why this SQL" and the feedback card.

import { facts, h, percent, seconds } from "../dom.js";
import { feedbackPanel } from "./ask_feedback.js";
import { resultView, sqlPanel } from "./ask_sql.js";
import { whyPanel } from "./ask_why.js";

function confidenceBadge(answer) {
  const value = answer.confidence ?? 0;
  const kind = answer.abstained ? "bad" : value >= 0.8 ? "good" : value >= 0.5 ? "warn" : "bad";
  return h("span", { class: `badge ${kind}`, "data-testid": "confidence" }, `confidence ${percent(value)}`);
}

function abstentionBox(answer) {
  const reasons = answer.abstention?.reasons || [];
  const suggestions = answer.abstention?.suggestions || [];
  const clarification = answer.abstention?.clarification;
  return h("div", { class: "notice-box", role: "note", "data-testid": "abstention" },
    h("p", { class: "notice" }, h("strong", {}, "Almanac is not sure and abstained. "),
      answer.withheld_rows ? `${answer.withheld_rows} rows were withheld.` : "No rows are shown."),
    reasons.length ? h("ul", {}, reasons.map((r) => h("li", {}, r))) : null,
    clarification ? h("div", {},
      h("p", {}, h("strong", {}, "Which did you mean? "), clarification.question),
      h("ul", {}, (clarification.options || []).map((o) => h("li", {},
        h("a", { href: `#/knowledge/${encodeURIComponent(o.id)}` }, o.name), ` — ${o.meaning}`)))) : null,
    suggestions.length ? h("div", {}, h("p", {}, "Questions it can answer instead:"),
      h("ul", { class: "suggestions" }, suggestions.map((s) => h("li", {}, h("button", {
        type: "button", class: "link", dataset: { suggestion: s },
      }, s))))) : null);
}

function rowsCaption(answer) {
  if (answer.truncated) {
    return `The first ${answer.rows.length.toLocaleString()} rows: the answer carries at most that many and more exist. Re-run the SQL read-only to see up to 10,000.`;
  }
  return `${answer.row_count.toLocaleString()} ${answer.row_count === 1 ? "row" : "rows"}`;
}

function rowsFact(answer) {
  if (!answer.executed) return "not run";
  if (!answer.truncated) return answer.row_count.toLocaleString();
  return `${answer.row_count.toLocaleString()}+ (${answer.rows.length.toLocaleString()} shown)`;
}

function timings(answer) {
  const stages = answer.stages || [];
  return h("details", { class: "timings", "data-testid": "timings" },
    h("summary", {}, `Timings · ${seconds(answer.seconds)} in all`),
    h("table", { class: "compact" },
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Stage"), h("th", { scope: "col" }, "Seconds"), h("th", { scope: "col" }, "Tokens in / out"))),
      h("tbody", {}, stages.map((s) => h("tr", {},
        h("td", {}, s.stage), h("td", { class: "num" }, Number(s.seconds || 0).toFixed(3)),
        h("td", { class: "num" }, `${s.prompt_tokens || 0} / ${s.completion_tokens || 0}`))))));
}

function candidatesList(answer) {
  const candidates = answer.candidates || [];
  if (candidates.length <= 1) return null;
  return h("details", { class: "candidates" },
    h("summary", {}, `${candidates.length} candidates`),
    h("ol", {}, candidates.map((c) => h("li", {},
      h("span", { class: `badge ${c.ok ? "good" : "bad"}` }, c.ok ? `${c.row_count ?? 0} rows` : "failed"),
      c.repairs ? h("span", { class: "badge warn" }, `${c.repairs} repairs`) : null,
      c.tier ? h("span", { class: "hint" }, ` ${c.tier}`) : null,
      c.error ? h("span", { class: "error" }, ` ${c.error}`) : null))));
}

/** The answer card; ``onSuggestion(question)`` asks a suggested question. */
export function answerView(answer, { api, can, toast, onSuggestion }) {
  const sql = answer.sql ? sqlPanel(answer.sql, { api, id: answer.id || "answer" }) : null;
  const hasRows = answer.executed && !answer.error && !answer.abstained;
  const view = h("article", { class: "answer", "data-testid": "answer", dataset: { answerId: answer.id || "" } },
    h("section", { class: "card" },
      h("div", { class: "row answer-head" },
        h("h2", { class: "grow" }, "Answer"),
        confidenceBadge(answer),
        answer.abstained ? h("span", { class: "badge bad" }, "abstained") : null,
        answer.error ? h("span", { class: "badge bad" }, "failed") : null),
      facts([
        ["Vote share", percent(answer.vote_share)],
        ["Samples", String(answer.samples ?? 0)],
        ["Tier", answer.tier || "–"],
        ["Rows", rowsFact(answer)],
        ["Time", seconds(answer.seconds)],
      ], { class: "facts answer-facts", "data-testid": "answer-facts" }),
      answer.abstained ? abstentionBox(answer) : null,
      answer.error ? h("p", { class: "error", role: "alert", "data-testid": "answer-error" }, `No SQL ran: ${answer.error}`) : null,
      sql ? sql.element : h("p", { class: "hint" }, "The model gave no SQL."),
      answer.reasoning ? h("details", { class: "reasoning" }, h("summary", {}, "The model's reasoning"), h("p", {}, answer.reasoning)) : null,
      hasRows ? h("section", { class: "rows", "aria-label": "Rows" }, h("h3", {}, "Rows"),
        resultView(answer, { caption: rowsCaption(answer), name: "answer" })) : null,
      candidatesList(answer),
      timings(answer)),
    whyPanel(answer.question, answer.knowledge),
    can("feedback") && answer.id && sql ? feedbackPanel(answer, { api, sql, toast }) : null);
  view.addEventListener("click", (event) => {
    const target = event.target.closest("button[data-suggestion]");
    if (target && onSuggestion) onSuggestion(target.dataset.suggestion);
  });
  return view;
}
