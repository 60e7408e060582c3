// "Why this SQL": the knowledge an answer used. The question is shown with the spans that
// matched knowledge marked (<mark> built with h()); each marked phrase lists the entries it
// matched, and every entry used (matched or retrieved) links to #/knowledge/<id>.

import { h } from "../dom.js";

/** Segments of ``question`` by the spans of ``knowledge``: [{text, entries}] where entries
 * are the indices of the knowledge entries whose spans cover the segment (offsets count
 * code points, as the server's Python strings do). */
export function questionSegments(question, knowledge) {
  const chars = Array.from(question || "");
  const bounds = new Set([0, chars.length]);
  knowledge.forEach((k) => (k.spans || []).forEach(([start, end]) => {
    if (end > start) { bounds.add(Math.max(0, Math.min(start, chars.length))); bounds.add(Math.max(0, Math.min(end, chars.length))); }
  }));
  const cuts = [...bounds].sort((a, b) => a - b);
  const segments = [];
  for (let i = 0; i + 1 < cuts.length; i += 1) {
    const [from, to] = [cuts[i], cuts[i + 1]];
    if (to <= from) continue;
    const entries = knowledge.flatMap((k, index) => ((k.spans || []).some(([s, e]) => s <= from && to <= e) ? [index] : []));
    const last = segments[segments.length - 1];
    if (last && last.entries.join() === entries.join()) last.text += chars.slice(from, to).join("");
    else segments.push({ text: chars.slice(from, to).join(""), entries });
  }
  return segments;
}

function entryLink(entry) {
  return h("a", { href: `#/knowledge/${encodeURIComponent(entry.id)}`, class: "entry-link", title: `Open ${entry.type} ${entry.name}` }, entry.name || entry.id);
}

function typeBadge(entry) {
  return h("span", { class: `badge kind kind-${String(entry.type).replace(/[^a-z_-]/gi, "")}` }, entry.type);
}

function entryLine(entry) {
  return h("li", { class: "why-entry", dataset: { id: entry.id } },
    typeBadge(entry), " ", entryLink(entry),
    entry.mined ? h("span", { class: `badge ${entry.mined === "unlabeled" ? "warn" : "good"}`, title: "mined from the query log" }, `mined · ${entry.mined}`) : null,
    entry.reasons?.length ? h("span", { class: "hint" }, ` — ${entry.reasons.join("; ")}`) : null,
    entry.phrases?.length ? h("span", { class: "hint" }, ` (phrases: ${entry.phrases.join(", ")})`) : null);
}

/** The "why this SQL" card of an answer's question and knowledge. */
export function whyPanel(question, knowledge = []) {
  const used = knowledge || [];
  const segments = questionSegments(question, used);
  const marked = segments.filter((s) => s.entries.length > 0);
  const matches = h("ol", { class: "why-matches", "data-testid": "why-matches" });
  const sentence = h("p", { class: "why-question", "data-testid": "why-question" });
  marked.forEach((segment, n) => {
    const names = segment.entries.map((i) => `${used[i].type} ${used[i].name}`).join(", ");
    const item = h("li", { tabindex: "-1", dataset: { phrase: segment.text } },
      h("q", {}, segment.text), " matched ",
      h("ul", { class: "why-entries" }, segment.entries.map((i) => entryLine(used[i]))));
    matches.append(item);
    segment.mark = h("mark", {
      tabindex: "0", role: "button", title: `matched ${names}`, "aria-label": `${segment.text}: matched ${names}`,
      dataset: { match: String(n + 1) },
      onclick: () => reveal(item),
      onkeydown: (event) => { if (event.key === "Enter" || event.key === " ") { event.preventDefault(); reveal(item); } },
    }, segment.text, h("sup", {}, String(n + 1)));
  });
  for (const segment of segments) sentence.append(segment.mark || segment.text);

  function reveal(item) {
    for (const other of matches.children) other.classList.remove("picked");
    item.classList.add("picked");
    item.focus();
  }

  const spanned = new Set(marked.flatMap((s) => s.entries));
  const others = used.filter((_, i) => !spanned.has(i));
  return h("details", { class: "card why", open: true, "data-testid": "why" },
    h("summary", {}, h("h2", { class: "inline" }, "Why this SQL"),
      h("span", { class: "hint" }, ` · ${used.length} knowledge ${used.length === 1 ? "entry" : "entries"} used`)),
    used.length === 0 ? h("p", { class: "hint" }, "No knowledge entry went into this answer's prompt.") : [
      sentence,
      marked.length ? matches : h("p", { class: "hint" }, "No phrase of the question matched an entry by its words."),
      others.length ? [h("h3", {}, "Also used (retrieved, not matched by a phrase)"),
        h("ul", { class: "why-entries", "data-testid": "why-others" }, others.map(entryLine))] : null,
    ]);
}
