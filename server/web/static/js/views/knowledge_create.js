// A new knowledge entry written by hand (knowledge:write): POST v1/knowledge, then its page.
// The API fills creator and source; its refusal (4xx detail) is shown as it is.

import { h } from "../dom.js";
import { busy, errorLine, field, items } from "./knowledge_parts.js";

const WRITABLE = ["knowledge", "synonym", "rule", "metric", "document", "taxonomy", "predicate"];

export function mountCreate(root, ctx) {
  if (!ctx.can("knowledge:write")) return;
  const errors = errorLine("create-error");
  const type = h("select", {}, WRITABLE.map((t) => h("option", { value: t }, t)));
  const name = h("input", { type: "text", required: true });
  const database = h("input", { type: "text", placeholder: "e.g. concert_singer" });
  const short = h("input", { type: "text" });
  const content = h("textarea", { rows: 4 });
  const synonyms = h("textarea", { rows: 2 });
  const create = h("button", { type: "submit", dataset: { testid: "create-entry" } }, "Create");
  const form = h("form", { onsubmit: (event) => {
    event.preventDefault();
    const entry = { type: type.value, name: name.value.trim(), short_description: short.value.trim(),
      content: content.value, synonyms: items(synonyms.value, /\n/) };
    if (database.value.trim()) entry.tags = [`[DATABASE:${database.value.trim()}]`];
    busy(create, errors, async () => {
      const created = await ctx.api.post("v1/knowledge", entry);
      ctx.toast(`Created "${created.name}".`, "good");
      ctx.navigate(`#/knowledge/${encodeURIComponent(created.id)}`);
    });
  } },
  h("div", { class: "filter-grid" }, field("c-type", "Type", type), field("c-name", "Name", name),
    field("c-database", "Database", database)),
  field("c-short", "Short description", short),
  field("c-content", "Content", content),
  field("c-synonyms", "Synonyms (one a line)", synonyms),
  errors, h("div", { class: "row" }, create));
  root.append(h("details", { class: "card create" }, h("summary", {}, "New entry"), form));
}
