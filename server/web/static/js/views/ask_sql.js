// The answer's SQL: highlighted, editable in a textarea ("Edit" toggles it), and re-runnable
// read-only on the target (POST v1/sql) with its rows in a result table and a chart.

import { clear, facts, h, seconds } from "../dom.js";
import { autoChart, destroyCharts } from "../chart.js";
import { sqlBlock } from "../sql.js";
import { resultTable } from "../table.js";

const RERUN_ROWS = 10_000;

/** The rows of a query (columns, rows, …) as a table, a chart when one fits, and how many. */
export function resultView(result, { caption, name = "result" } = {}) {
  const chart = autoChart(result.columns, result.rows, { label: caption || "Chart of the rows" });
  return [
    resultTable(result.columns, result.rows, { caption, name }),
    chart,
  ];
}

/**
 * The SQL panel of one answer. ``sql``: the answer's SQL. Returns {element, current(),
 * edit()}: current() is the SQL as it now reads (edited or not); edit() opens the editor.
 */
export function sqlPanel(sql, { api, id }) {
  const original = sql || "";
  let text = original;
  const shown = h("div", { class: "sql-shown", "data-testid": "sql" }, sqlBlock(text));
  const editor = h("textarea", {
    id: `sql-editor-${id}`, rows: Math.min(14, Math.max(4, text.split("\n").length + 1)),
    spellcheck: "false", "aria-label": "SQL editor", hidden: true, "data-testid": "sql-editor",
  });
  editor.value = text;
  const edited = h("span", { class: "badge warn", hidden: true }, "edited");
  const editButton = h("button", { type: "button", class: "secondary", "aria-expanded": "false", "aria-controls": editor.id, onclick: toggle }, "Edit");
  const rerunButton = h("button", { type: "button", class: "secondary", onclick: rerun, "data-testid": "rerun" }, "Re-run read-only");
  const resetButton = h("button", { type: "button", class: "secondary", hidden: true, onclick: reset }, "Undo edits");
  const rerunArea = h("div", { class: "rerun", "aria-live": "polite", "data-testid": "rerun-result" });

  function sync() {
    text = editor.value;
    edited.hidden = text === original;
    resetButton.hidden = text === original;
  }

  function toggle() {
    const opening = editor.hidden;
    if (!opening) {
      sync();
      clear(shown).append(sqlBlock(text));
    }
    editor.hidden = !opening;
    shown.hidden = opening;
    editButton.textContent = opening ? "Done editing" : "Edit";
    editButton.setAttribute("aria-expanded", String(opening));
    if (opening) editor.focus();
  }

  function reset() {
    editor.value = original;
    sync();
    clear(shown).append(sqlBlock(text));
  }

  function edit() {
    if (editor.hidden) toggle();
    else editor.focus();
  }

  function current() {
    sync();
    return text;
  }

  async function rerun() {
    const query = current();
    if (!query.trim()) {
      clear(rerunArea).append(h("p", { class: "error" }, "There is no SQL to run."));
      return;
    }
    rerunButton.disabled = true;
    destroyCharts(rerunArea);
    clear(rerunArea).append(h("p", { class: "loading" }, "Running the SQL read-only…"));
    try {
      const result = await api.post("v1/sql", { sql: query, max_rows: RERUN_ROWS });
      const capped = result.truncated ? ` — capped at ${result.max_rows.toLocaleString()} rows; more exist` : "";
      clear(rerunArea).append(h("div", { class: "card rerun-card" },
        h("h3", {}, "Re-run result (read-only)"),
        facts([["Rows", `${result.row_count.toLocaleString()}${capped}`], ["Time", seconds(result.seconds)]]),
        resultView(result, { caption: `Rows of the re-run SQL`, name: "rerun" })));
    } catch (error) {
      clear(rerunArea).append(h("p", { class: "error", role: "alert" }, `The SQL was not run: ${error.detail || error.message}`));
    } finally {
      rerunButton.disabled = false;
    }
  }

  editor.addEventListener("input", sync);
  const element = h("section", { class: "sql-panel", "aria-label": "SQL" },
    h("div", { class: "row" }, h("h3", { class: "grow" }, "SQL ", edited), editButton, resetButton, rerunButton),
    shown, editor, rerunArea);
  return { element, current, edit };
}
