// An analysis answer (POST v1/analyze/stream's final event, AnalysisAnswer): the short
// answer, the findings with the evidence they cite and a chart each (the finding's Vega-Lite
// spec drawn with Chart.js from its data), the caveats, and every evidence query (its SQL and
// rows). A lookup is answered by the one-SQL chain: ask.js shows that answer as an ask answer.

import { facts, h, seconds } from "../dom.js";
import { specChart } from "../chart.js";
import { sqlBlock } from "../sql.js";
import { resultTable } from "../table.js";

/** The stage an analysis event reaches, and a note for it. */
export function analysisStage(event, data, seen) {
  switch (event) {
    case "typing": return ["typing", data.typing?.type || ""];
    case "plan": return ["planning", `${data.plan?.steps?.length ?? 0} steps`];
    case "subquestion": seen.subquestions = (seen.subquestions || 0) + 1; return ["asking", `${seen.subquestions} answered`];
    case "analysis": return ["analysing", `${data.facts?.length ?? 0} facts`];
    case "narrative": return ["writing", ""];
    case "final": case "refused": return ["answered", event === "refused" ? "refused" : ""];
    default: return [null, ""];
  }
}

function evidenceCard(item) {
  const body = item.error
    ? h("p", { class: "error" }, `No rows: ${item.error}`)
    : resultTable(item.columns, item.rows, {
      pageSize: 10, name: `evidence-${item.id}`,
      caption: `${item.row_count} ${item.row_count === 1 ? "row" : "rows"}${item.truncated ? " (more exist; only these were kept)" : ""}`,
    });
  return h("details", { class: "evidence", id: `evidence-${item.id}`, dataset: { evidence: item.id } },
    h("summary", {}, h("span", { class: "badge" }, item.id), " ", item.question,
      item.error ? h("span", { class: "badge bad" }, "no rows") : null),
    item.purpose ? h("p", { class: "hint" }, item.purpose) : null,
    item.sql ? sqlBlock(item.sql) : h("p", { class: "hint" }, "No SQL."),
    body,
    h("p", { class: "hint" }, seconds(item.seconds)));
}

function findingItem(finding, openEvidence) {
  const chart = finding.chart ? specChart(finding.chart, { label: `Chart of the finding: ${finding.text}` }) : null;
  return h("li", { class: "finding", "data-testid": "finding" },
    h("p", {}, finding.text),
    finding.evidence?.length ? h("p", { class: "hint" }, "Evidence: ",
      finding.evidence.map((id) => h("button", { type: "button", class: "link", onclick: () => openEvidence(id) }, id))) : null,
    chart || (finding.chart ? h("p", { class: "hint" }, "A chart spec came with this finding, but it has nothing to draw.") : null));
}

/** The analysis card. */
export function analysisView(answer) {
  const evidence = h("div", { class: "evidence-list", "data-testid": "evidence" }, (answer.evidence || []).map(evidenceCard));
  function openEvidence(id) {
    const box = evidence.querySelector(`[data-evidence="${CSS.escape(id)}"]`);
    if (!box) return;
    box.open = true;
    box.querySelector("summary").focus();
    box.scrollIntoView({ block: "nearest" });
  }
  const refused = answer.refused;
  return h("article", { class: "analysis", "data-testid": "analysis" },
    h("section", { class: "card" },
      h("div", { class: "row" }, h("h2", { class: "grow" }, "Analysis"),
        h("span", { class: "badge" }, answer.type),
        answer.narrative_by && answer.narrative_by !== "none" ? h("span", { class: "badge", title: "who wrote the narrative" }, `written from ${answer.narrative_by === "llm" ? "the model" : "the facts"}`) : null),
      refused ? h("p", { class: "notice", role: "note", "data-testid": "refused" }, `Not analysed: ${refused}`) : null,
      answer.short_answer ? h("p", { class: "short-answer", "data-testid": "short-answer" }, answer.short_answer) : null,
      facts([["Queries run", String(answer.sql_calls ?? 0)], ["Time", seconds(answer.seconds)]])),
    answer.findings?.length ? h("section", { class: "card" }, h("h2", {}, "Findings"),
      h("ol", { class: "findings" }, answer.findings.map((f) => findingItem(f, openEvidence)))) : null,
    answer.caveats?.length ? h("section", { class: "card", "data-testid": "caveats" }, h("h2", {}, "Caveats"),
      h("ul", {}, answer.caveats.map((c) => h("li", {}, c)))) : null,
    answer.dropped?.length ? h("details", { class: "card" }, h("summary", {}, `${answer.dropped.length} findings dropped by the number check`),
      h("ul", {}, answer.dropped.map((d) => h("li", {}, d.text, h("span", { class: "hint" }, ` — ${d.reason}${d.number ? ` (${d.number})` : ""}`))))) : null,
    answer.evidence?.length ? h("section", { class: "card" }, h("h2", {}, "Evidence queries"), evidence) : null);
}
