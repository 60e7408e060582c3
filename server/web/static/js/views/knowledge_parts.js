// Small parts the knowledge and ops views share: tables of rows, pagers, error lines,
// badges, JSON blocks and downloads. Every value goes in as text (dom.js's h()).

import { append, clear, h, show } from "../dom.js";

/** The UKF types (the store's templates). */
export const TYPES = ["table", "column", "enum", "knowledge", "document", "synonym", "metric",
  "rule", "taxonomy", "predicate", "experience"];

/** Replace the children of `element` (nested arrays flattened; null and false skipped). */
export function fill(element, ...children) {
  return append(clear(element), children);
}

/** The message of an error from the API (its detail) or from the page itself. */
export function messageOf(error) {
  return (error && (error.detail || error.message)) || String(error);
}

/** An error line that is empty until set; set(null) clears it. */
export function errorLine(testid) {
  const line = h("p", { class: "error", role: "alert", hidden: true, dataset: testid ? { testid } : undefined });
  line.set = (error, prefix = "") => {
    line.hidden = !error;
    line.textContent = error ? `${prefix}${messageOf(error)}` : "";
  };
  return line;
}

export function badge(text, kind = "") {
  return h("span", { class: ["badge", kind] }, text);
}

/** A table: columns are {label, cell(row) -> node|text, class?}; rows an array. */
export function table(columns, rows, { caption, empty = "Nothing to show.", testid } = {}) {
  if (!rows.length) return h("p", { class: "hint", dataset: testid ? { testid } : undefined }, empty);
  return h("div", { class: "table-wrap" },
    h("table", { dataset: testid ? { testid } : undefined },
      caption ? h("caption", { class: "hint" }, caption) : null,
      h("thead", {}, h("tr", {}, columns.map((c) => h("th", { scope: "col" }, c.label)))),
      h("tbody", {}, rows.map((row) => h("tr", {},
        columns.map((c) => h("td", { class: c.class || "" }, c.cell(row))))))));
}

/** Previous/next buttons for a page of `limit` rows at `offset`; `more` says a next page exists. */
export function pager({ offset, limit, shown, more, total, onPage }) {
  const first = shown ? offset + 1 : 0;
  const range = total !== undefined && total !== null ? `${first}–${offset + shown} of ${total}` : `${first}–${offset + shown}`;
  return h("div", { class: "pager", role: "navigation", "aria-label": "Pages" },
    h("button", { type: "button", class: "secondary", disabled: offset === 0,
      onclick: () => onPage(Math.max(0, offset - limit)) }, "← Previous"),
    h("span", { class: "hint" }, range),
    h("button", { type: "button", class: "secondary", disabled: !more,
      onclick: () => onPage(offset + limit) }, "Next →"));
}

/** A value as readable JSON in a scrolling block. */
export function jsonBlock(value, testid) {
  return h("pre", { class: "json", dataset: testid ? { testid } : undefined },
    typeof value === "string" ? value : JSON.stringify(value, null, 2));
}

/** A scalar as text, an object as JSON. */
export function text(value) {
  return value === undefined ? "–" : show(value);
}

/** Save a Blob under `filename` through a blob: URL (no server round trip). */
export function download(blob, filename) {
  const href = URL.createObjectURL(blob);
  const link = h("a", { href, download: filename, hidden: true });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(href), 10_000);
}

/** Run `work` with `button` disabled meanwhile; errors go to `errors` (an errorLine). */
export async function busy(button, errors, work) {
  button.disabled = true;
  errors?.set(null);
  try {
    return await work();
  } catch (error) {
    if (errors) errors.set(error);
    else throw error;
    return undefined;
  } finally {
    button.disabled = false;
  }
}

/** A labelled form field: returns [label, control] with the control's id set. */
export function field(id, label, control, hint) {
  control.id = id;
  return h("div", { class: "field" }, h("label", { for: id }, label), control,
    hint ? h("p", { class: "hint small" }, hint) : null);
}

/** Split "a, b\nc" into trimmed, non-empty items. */
export function items(textValue, separator = /[\n,]/) {
  return String(textValue || "").split(separator).map((s) => s.trim()).filter(Boolean);
}
