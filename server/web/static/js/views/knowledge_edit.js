// The edit form of an entry: its non-identity fields, sent as PATCH v1/knowledge/<id> with
// only what changed; the API's refusal (4xx detail) is shown as it is.

import { h } from "../dom.js";
import { busy, errorLine, field, items } from "./knowledge_parts.js";

const sameList = (a, b) => a.length === b.length && a.every((v, i) => v === b[i]);

export function mountEdit(root, ctx, entry, { onSaved, onCancel }) {
  const errors = errorLine("edit-error");
  const short = h("input", { type: "text", value: entry.short_description, class: "wide" });
  const description = h("textarea", { rows: 3, value: entry.description });
  const content = h("textarea", { rows: 6, value: entry.content });
  const synonyms = h("textarea", { rows: 3, value: entry.synonyms.join("\n") });
  const priority = h("input", { type: "number", step: 1, value: entry.priority });
  const notes = h("input", { type: "text", value: entry.notes, class: "wide" });
  const save = h("button", { type: "submit", dataset: { testid: "save" } }, "Save");

  function changes() {
    const changed = {};
    if (short.value !== entry.short_description) changed.short_description = short.value;
    if (description.value !== entry.description) changed.description = description.value;
    if (content.value !== entry.content) changed.content = content.value;
    if (notes.value !== entry.notes) changed.notes = notes.value;
    const list = items(synonyms.value, /\n/);
    if (!sameList(list, entry.synonyms)) changed.synonyms = list;
    if (priority.value === "" || !Number.isInteger(Number(priority.value))) changed.priority = priority.value; // the API says why
    else if (Number(priority.value) !== entry.priority) changed.priority = Number(priority.value);
    return changed;
  }

  const form = h("form", { class: "card edit", "aria-label": `Edit ${entry.name}`,
    onsubmit: (event) => {
      event.preventDefault();
      const changed = changes();
      if (!Object.keys(changed).length) { errors.set(new Error("Nothing changed.")); return; }
      busy(save, errors, async () => {
        await ctx.api.patch(`v1/knowledge/${encodeURIComponent(entry.id)}`, changed);
        onSaved();
      });
    } },
  h("h2", {}, "Edit"),
  h("p", { class: "hint small" }, "Name, type, tags, owner and workspace make the entry's id and cannot change here."),
  field("e-short", "Short description", short),
  field("e-description", "Description", description),
  field("e-content", "Content", content),
  field("e-synonyms", "Synonyms (one a line)", synonyms),
  h("div", { class: "row" }, field("e-priority", "Priority", priority), h("div", { class: "grow" }, field("e-notes", "Notes", notes))),
  errors,
  h("div", { class: "row" }, save, h("button", { type: "button", class: "secondary", onclick: onCancel }, "Cancel")));
  root.replaceChildren(form);
  short.focus();
}
