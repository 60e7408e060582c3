// SQL shown highlighted: a small tokenizer splits the text into keywords, strings, numbers,
// comments and the rest, and each becomes a text node or a <span class="kw|str|num|cmt">
// built with h() — the SQL is never parsed as HTML.

import { h } from "./dom.js";

const KEYWORDS = new Set((
  "select from where group by order having limit offset join inner left right full outer cross on using as "
  + "and or not in is null like ilike between exists case when then else end distinct all union intersect except "
  + "with recursive asc desc nulls first last count sum avg min max cast over partition window rows range "
  + "insert update delete into values set create drop alter table view index true false filter lateral natural "
  + "coalesce nullif extract interval date time timestamp current_date current_timestamp fetch next only top glob escape"
).split(" "));

const PATTERNS = [
  ["cmt", /--[^\n]*|\/\*[\s\S]*?(?:\*\/|$)/y],
  ["str", /'(?:[^']|'')*(?:'|$)/y],
  ["ident", /"(?:[^"]|"")*(?:"|$)|`[^`]*(?:`|$)|\[[^\]\n]*\]/y],
  ["num", /(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\b/y],
  ["word", /[A-Za-z_][A-Za-z0-9_$]*/y],
  ["space", /\s+/y],
  ["other", /[^\sA-Za-z0-9_'"`\[\-/.]+|./y],
];

/** The tokens of ``sql``: [{kind, text}] where kind is kw, str, num, cmt or text; their
 * texts joined give ``sql`` back exactly. */
export function sqlTokens(sql) {
  const text = String(sql ?? "");
  const tokens = [];
  let at = 0;
  while (at < text.length) {
    for (const [kind, pattern] of PATTERNS) {
      pattern.lastIndex = at;
      const match = pattern.exec(text);
      if (!match || match[0].length === 0) continue;
      let shown = kind;
      if (kind === "word") shown = KEYWORDS.has(match[0].toLowerCase()) ? "kw" : "text";
      else if (kind === "ident" || kind === "space" || kind === "other") shown = "text";
      const last = tokens[tokens.length - 1];
      if (shown === "text" && last && last.kind === "text") last.text += match[0];
      else tokens.push({ kind: shown, text: match[0] });
      at += match[0].length;
      break;
    }
  }
  return tokens;
}

/** The SQL as highlighted nodes (text and spans). */
export function highlighted(sql) {
  return sqlTokens(sql).map((t) => (t.kind === "text" ? t.text : h("span", { class: t.kind }, t.text)));
}

/** A <pre class="sql"> block of the highlighted SQL. */
export function sqlBlock(sql, props = {}) {
  return h("pre", { class: "sql", ...props }, h("code", {}, highlighted(sql)));
}
