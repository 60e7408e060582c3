// Browse knowledge with filters (GET v1/knowledge, paged by the server) and search it
// (POST v1/knowledge/search: string spans, meaning, tags or graph neighbours, paged here).

import { h } from "../dom.js";
import { mountCreate } from "./knowledge_create.js";
import { mountIO } from "./knowledge_io.js";
import { TYPES, badge, errorLine, field, items, pager, table } from "./knowledge_parts.js";

const PAGE = 25;
const SEARCH_LIMIT = 200;
const MODES = {
  string: { label: "Words and phrases (string)", hint: "A question or phrase: the entries whose names, synonyms or values appear in it." },
  vector: { label: "Meaning (vector)", hint: "Entries that mean something close to the text." },
  facet: { label: "Tags (facet)", hint: "Tags such as [DATABASE:concert_singer], comma separated; * matches anything." },
  graph: { label: "Related entries (graph)", hint: "Entry ids, comma separated: the entries linked to them." },
};
// what the form held when the view was left (coming back from an entry keeps it)
const remembered = { how: "browse", mode: "string", query: "", type: "", name: "", tag: "", synonym: "", active: "true", offset: 0 };

export function entryLink(id, name) {
  return h("a", { href: `#/knowledge/${encodeURIComponent(id)}`, class: "entry-link" }, name || id);
}

function select(options, value) {
  return h("select", {}, options.map(([v, label]) => h("option", { value: v, selected: v === value }, label)));
}

export function mountList(root, ctx) {
  let alive = true;
  const state = remembered;
  const errors = errorLine("knowledge-error");
  const results = h("div", { class: "results", "aria-live": "polite", dataset: { testid: "knowledge-results" } });

  // ---- browse form
  const type = select([["", "any type"], ...TYPES.map((t) => [t, t])], state.type);
  const name = h("input", { type: "text", value: state.name, placeholder: "exact name" });
  const tag = h("input", { type: "text", value: state.tag, placeholder: "[TABLE:singer]" });
  const synonym = h("input", { type: "text", value: state.synonym, placeholder: "starts with…" });
  const active = select([["true", "active"], ["false", "inactive"], ["all", "all"]], state.active);
  const browseForm = h("form", { class: "card filters", "aria-label": "Browse",
    onsubmit: (event) => { event.preventDefault(); state.how = "browse"; state.offset = 0; run(); } },
  h("h2", {}, "Browse"),
  h("div", { class: "filter-grid" },
    field("k-type", "Type", type), field("k-name", "Name", name), field("k-tag", "Tag", tag),
    field("k-synonym", "Synonym", synonym), field("k-active", "State", active)),
  h("div", { class: "row" }, h("button", { type: "submit" }, "Browse")));

  // ---- search form
  const mode = select(Object.entries(MODES).map(([m, d]) => [m, d.label]), state.mode);
  const query = h("input", { type: "search", value: state.query, class: "grow", placeholder: "How many singers are from France?" });
  const modeHint = h("p", { class: "hint small" }, MODES[state.mode].hint);
  mode.addEventListener("change", () => { modeHint.textContent = MODES[mode.value].hint; });
  const searchForm = h("form", { class: "card", role: "search", "aria-label": "Search knowledge",
    onsubmit: (event) => { event.preventDefault(); state.how = "search"; state.offset = 0; run(); } },
  h("h2", {}, "Search"),
  h("div", { class: "row" }, field("k-mode", "Mode", mode), h("div", { class: "grow" }, field("k-query", "Search for", query))),
  modeHint,
  h("div", { class: "row" }, h("button", { type: "submit" }, "Search")));

  function keep() {
    Object.assign(state, { mode: mode.value, query: query.value, type: type.value, name: name.value,
      tag: tag.value, synonym: synonym.value, active: active.value });
  }

  async function browse() {
    const page = await ctx.api.get("v1/knowledge", {
      type: state.type, name: state.name.trim(), tag: state.tag.trim(),
      synonym_prefix: state.synonym.trim(), active: state.active, limit: PAGE, offset: state.offset, total: "true",
    });
    const rows = page.items.map((e) => ({
      id: e.id, name: e.name, type: e.type, description: e.short_description || e.description,
      priority: e.priority, inactive: e.inactive_mark, tags: e.tags,
    }));
    return { rows, more: state.offset + rows.length < page.total, total: page.total, caption: "Highest priority first" };
  }

  async function search() {
    const body = { mode: state.mode, limit: SEARCH_LIMIT, include: "brief" };
    if (state.mode === "facet") body.tags = items(state.query, ",");
    else if (state.mode === "graph") body.seeds = items(state.query, ",");
    else body.query = state.query;
    const found = await ctx.api.post("v1/knowledge/search", body);
    const all = found.hits.map((hit) => ({ ...hit, why: hit.phrase || hit.reason }));
    return {
      rows: all.slice(state.offset, state.offset + PAGE), more: all.length > state.offset + PAGE,
      total: all.length, caption: `${all.length} hit${all.length === 1 ? "" : "s"} (${state.mode})`, search: true,
    };
  }

  async function run() {
    keep();
    errors.set(null);
    results.replaceChildren(h("p", { class: "loading" }, "Loading…"));
    let page;
    try {
      page = state.how === "search" ? await search() : await browse();
    } catch (error) {
      if (!alive) return;
      results.replaceChildren();
      errors.set(error, state.how === "search" ? "The search failed: " : "The list could not be loaded: ");
      return;
    }
    if (!alive) return;
    const columns = [
      { label: "Name", cell: (r) => entryLink(r.id, r.name) },
      { label: "Type", cell: (r) => [badge(r.type), r.inactive ? [" ", badge("inactive", "warn")] : null] },
      page.search ? { label: "Why", cell: (r) => r.why || "" } : null,
      { label: "Description", class: "desc", cell: (r) => r.description || "" },
      page.search ? { label: "Score", class: "num", cell: (r) => Number(r.score).toFixed(3) }
        : { label: "Priority", class: "num", cell: (r) => String(r.priority) },
    ].filter(Boolean);
    results.replaceChildren(
      table(columns, page.rows, { caption: page.caption, empty: "No entry matches.", testid: "knowledge-table" }),
      pager({ offset: state.offset, limit: PAGE, shown: page.rows.length, more: page.more, total: page.total,
        onPage: (offset) => { state.offset = offset; run(); } }));
  }

  root.append(h("h1", {}, "Knowledge"),
    h("div", { class: "split admin-split" }, browseForm, searchForm), errors, results);
  mountCreate(root, ctx);
  const ioCleanup = mountIO(root, ctx, { onImported: () => { state.how = "browse"; state.offset = 0; run(); } });
  run();
  return () => { alive = false; ioCleanup?.(); };
}
