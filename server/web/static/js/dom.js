// Building the page's elements without HTML strings: every value shown goes through
// textContent or a safe attribute, so knowledge text, SQL and rows can never inject markup.

const SAFE_ATTRIBUTES = /^(aria-[a-z-]+|data-[a-z-]+|role|type|name|id|for|href|title|placeholder|value|min|max|step|rows|cols|tabindex|autocomplete|spellcheck|download|hidden|disabled|checked|selected|required|lang|scope|colspan|alt|src|width|height|accept|open)$/;

/** h("button", {class: "x", onclick: fn, "aria-label": "…"}, "text", child, ...) */
export function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") element.className = Array.isArray(value) ? value.filter(Boolean).join(" ") : value;
    else if (name === "text") element.textContent = String(value);
    else if (name.startsWith("on") && typeof value === "function") element.addEventListener(name.slice(2), value);
    else if (name === "dataset") Object.assign(element.dataset, value);
    else if (name === "value" && "value" in element) element.value = String(value);
    else if (SAFE_ATTRIBUTES.test(name)) {
      if ((name === "href" || name === "src") && !isSafeUrl(String(value))) continue;
      element.setAttribute(name, value === true ? "" : String(value));
    } else throw new Error(`h(): attribute ${name} is not allowed`);
  }
  append(element, children);
  return element;
}

export function append(element, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

export function clear(element) {
  while (element.firstChild) element.firstChild.remove();
  return element;
}

function isSafeUrl(url) {
  return url.startsWith("#") || url.startsWith("data:image/") || url.startsWith("blob:")
    || /^(\.{0,2}\/|[a-z0-9_-]+(\/|\.|$))/i.test(url) && !/^\s*javascript:/i.test(url);
}

/** A cell's text: null as an empty mark, numbers as they are, objects as JSON. */
export function show(value) {
  if (value === null || value === undefined) return "∅";
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

export function percent(value) {
  return value === null || value === undefined ? "–" : `${Math.round(value * 100)}%`;
}

export function seconds(value) {
  return value === null || value === undefined ? "–" : `${Number(value).toFixed(2)} s`;
}

export function when(iso) {
  if (!iso) return "–";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? String(iso) : date.toLocaleString();
}

/** A labelled definition list from [label, value] pairs (values may be nodes). */
export function facts(pairs, props = {}) {
  return h("dl", { class: "facts", ...props },
    pairs.filter(Boolean).map(([label, value]) => [h("dt", {}, label), h("dd", {}, value)]));
}
