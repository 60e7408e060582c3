// Import (a JSON Lines file → POST v1/knowledge/import, all or nothing; knowledge:write) and
// export (GET v1/knowledge/export → a .jsonl download) of the knowledge the key may see.

import { h } from "../dom.js";
import { TYPES, busy, download, errorLine, field, fill } from "./knowledge_parts.js";

/** The bad lines of a refused import, as the API lists them ({line, error}), else []. */
function badLines(error) {
  const listed = error && error.body && Array.isArray(error.body.errors) ? error.body.errors : [];
  return listed.filter((e) => e && Number.isInteger(e.line));
}

export function mountIO(root, ctx, { onImported }) {
  const exportType = h("select", {}, h("option", { value: "" }, "every type"), TYPES.map((t) => h("option", { value: t }, t)));
  const exportErrors = errorLine("export-error");
  const exportButton = h("button", { type: "button", class: "secondary", dataset: { testid: "export" },
    onclick: () => busy(exportButton, exportErrors, async () => {
      const blob = await ctx.api.blob("v1/knowledge/export", { type: exportType.value });
      download(blob, `knowledge${exportType.value ? `-${exportType.value}` : ""}.jsonl`);
      ctx.toast("Export downloaded.", "good");
    }) }, "Export .jsonl");
  const card = h("section", { class: "card io", "aria-label": "Import and export" },
    h("h2", {}, ctx.can("knowledge:write") ? "Import and export" : "Export"),
    h("div", { class: "row" }, field("k-export-type", "Export", exportType), exportButton),
    h("p", { class: "hint small" }, "Every entry you may see, as canonical JSON Lines (one entry a line)."),
    exportErrors);
  root.append(card);
  if (!ctx.can("knowledge:write")) return null;

  const file = h("input", { type: "file", accept: ".jsonl,.ndjson,.json,.txt,application/x-ndjson" });
  const outcome = h("div", { role: "status", dataset: { testid: "import-outcome" } });
  const importButton = h("button", { type: "submit", dataset: { testid: "import" } }, "Import");
  const form = h("form", { class: "import", onsubmit: (event) => {
    event.preventDefault();
    const chosen = file.files[0];
    if (!chosen) { outcome.replaceChildren(h("p", { class: "error" }, "Choose a .jsonl file first.")); return; }
    busy(importButton, null, async () => {
      outcome.replaceChildren(h("p", { class: "loading" }, `Importing ${chosen.name}…`));
      const body = await chosen.text();
      try {
        const done = await ctx.api.upload("v1/knowledge/import", body, "application/x-ndjson");
        outcome.replaceChildren(h("p", { class: "good" }, `Imported ${done.imported} entr${done.imported === 1 ? "y" : "ies"} from ${chosen.name} (store version ${done.store_version}).`));
        file.value = "";
        onImported();
      } catch (error) {
        const lines = badLines(error);
        fill(outcome,
          h("p", { class: "error", role: "alert", dataset: { testid: "import-error" } },
            lines.length ? `The import was refused: ${lines.length === 1 ? "one line is" : `${error.body.error_count} lines are`} not valid, so nothing was imported.`
              : `The import was refused; nothing was imported. ${error.detail || error.message}`),
          lines.length ? h("ul", { class: "line-problems", "aria-label": "Lines with problems" },
            lines.map((e) => h("li", {}, `line ${e.line}: ${e.error}`))) : null,
          lines.length && error.body.error_count > lines.length
            ? h("p", { class: "hint small" }, `${error.body.error_count - lines.length} more bad lines are not listed.`) : null);
      }
    });
  } }, field("k-import-file", "Import JSON Lines", file,
    "All lines are checked first; one bad line refuses the whole file."), h("div", { class: "row" }, importButton), outcome);
  card.append(form);
  return null;
}
