// A result table: sortable by any column, shown a page of rows at a time (10,000 rows never
// become 10,000 nodes), with a CSV download of all rows. Every cell is text (dom.show).
//
// resultTable(columns, rows, {pageSize, caption, name}) -> Element
//   columns: ["name", …] (or [{name}, …]); rows: [[v, …], …] (or [{column: v}, …]).

import { clear, h, show } from "./dom.js";

const DEFAULT_PAGE_SIZE = 25;

/** The column names of columns given as strings or {name} objects. */
function columnNames(columns) {
  return (columns || []).map((c) => (c && typeof c === "object" ? String(c.name ?? c.column ?? "") : String(c)));
}

/** Rows as arrays in column order (object rows are read by column name). */
function rowArrays(names, rows) {
  return (rows || []).map((row) => (Array.isArray(row) ? row : names.map((n) => (row ? row[n] : null))));
}

function isNumber(value) {
  return typeof value === "number" && Number.isFinite(value);
}

/** Order two cells: nulls last, numbers numerically, the rest as text (natural order). */
function compareCells(a, b) {
  const aNull = a === null || a === undefined;
  const bNull = b === null || b === undefined;
  if (aNull || bNull) return aNull === bNull ? 0 : aNull ? 1 : -1;
  if (isNumber(a) && isNumber(b)) return a - b;
  return show(a).localeCompare(show(b), undefined, { numeric: true, sensitivity: "base" });
}

/** One CSV field (RFC 4180): quoted when it holds a comma, quote or line break. */
function csvField(value) {
  if (value === null || value === undefined) return "";
  const text = typeof value === "object" ? JSON.stringify(value) : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** The whole result as CSV text (header line first). */
export function toCsv(columns, rows) {
  const names = columnNames(columns);
  const lines = [names.map(csvField).join(",")];
  for (const row of rowArrays(names, rows)) lines.push(row.map(csvField).join(","));
  return `${lines.join("\r\n")}\r\n`;
}

export function resultTable(columns, rows, { pageSize = DEFAULT_PAGE_SIZE, caption = null, name = "result" } = {}) {
  const names = columnNames(columns);
  const data = rowArrays(names, rows);
  const numeric = names.map((_, i) => data.some((r) => isNumber(r[i])) && data.every((r) => r[i] == null || isNumber(r[i])));
  const state = { order: data.map((_, i) => i), sortColumn: -1, descending: false, page: 0 };
  const pages = () => Math.max(1, Math.ceil(data.length / pageSize));

  const head = h("thead");
  const body = h("tbody");
  const status = h("span", { class: "hint", "aria-live": "polite", "data-testid": "page-status" });
  const first = h("button", { type: "button", class: "secondary", "aria-label": "First page", onclick: () => go(0) }, "«");
  const previous = h("button", { type: "button", class: "secondary", onclick: () => go(state.page - 1) }, "Previous");
  const next = h("button", { type: "button", class: "secondary", onclick: () => go(state.page + 1) }, "Next");
  const last = h("button", { type: "button", class: "secondary", "aria-label": "Last page", onclick: () => go(pages() - 1) }, "»");
  const download = h("button", { type: "button", class: "secondary", onclick: downloadCsv }, "Download CSV");

  function sortBy(index) {
    state.descending = state.sortColumn === index ? !state.descending : false;
    state.sortColumn = index;
    const sign = state.descending ? -1 : 1;
    state.order.sort((a, b) => sign * compareCells(data[a][index], data[b][index]) || a - b);
    state.page = 0;
    renderHead();
    renderBody();
  }

  function renderHead() {
    clear(head);
    head.append(h("tr", {}, names.map((label, i) => {
      const sorted = state.sortColumn === i ? (state.descending ? "descending" : "ascending") : "none";
      const arrow = sorted === "ascending" ? " ▲" : sorted === "descending" ? " ▼" : "";
      return h("th", { scope: "col", "aria-sort": sorted },
        h("button", { type: "button", title: `Sort by ${label}`, onclick: () => sortBy(i) }, label, arrow));
    })));
  }

  function renderBody() {
    clear(body);
    const start = state.page * pageSize;
    for (const index of state.order.slice(start, start + pageSize)) {
      body.append(h("tr", {}, data[index].map((cell, i) => h("td", { class: [numeric[i] && "num", cell == null && "muted"] }, show(cell)))));
    }
    if (data.length === 0) body.append(h("tr", {}, h("td", { colspan: Math.max(1, names.length), class: "hint" }, "No rows.")));
    const end = Math.min(data.length, start + pageSize);
    status.textContent = data.length ? `Rows ${start + 1}–${end} of ${data.length} · page ${state.page + 1} of ${pages()}` : "0 rows";
    first.disabled = previous.disabled = state.page === 0;
    next.disabled = last.disabled = state.page >= pages() - 1;
  }

  function go(page) {
    state.page = Math.min(pages() - 1, Math.max(0, page));
    renderBody();
  }

  function downloadCsv() {
    const url = URL.createObjectURL(new Blob([toCsv(names, data)], { type: "text/csv;charset=utf-8" }));
    const link = h("a", { href: url, download: `${name}.csv`, hidden: true });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  }

  renderHead();
  renderBody();
  const table = h("table", {}, caption ? h("caption", { class: "hint" }, caption) : null, head, body);
  const pager = h("div", { class: "pager" }, first, previous, next, last, status, h("span", { class: "grow" }), download);
  if (data.length <= pageSize) [first, previous, next, last].forEach((b) => { b.hidden = true; });
  return h("div", { class: "result-table", "data-testid": "result-table" }, h("div", { class: "table-wrap" }, table), pager);
}
