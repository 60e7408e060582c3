// The "start a job" form: the kinds the caller may submit (GET v1/jobs/kinds), a field per
// parameter from the kind's JSON Schema, POST v1/jobs {kind, params}.

import { h } from "../dom.js";
import { busy, errorLine, field } from "./knowledge_parts.js";

/** The JSON type of a schema property ("string", "integer", …), nullable or not. */
function typeOf(prop) {
  if (prop.type) return prop.type;
  const kinds = (prop.anyOf || []).map((p) => p.type).filter((t) => t && t !== "null");
  return kinds[0] || "string";
}

function control(prop) {
  const kind = typeOf(prop);
  const hint = prop.default !== undefined && prop.default !== null ? `default ${JSON.stringify(prop.default)}` : "optional";
  if (prop.enum) return h("select", {}, h("option", { value: "" }, hint), prop.enum.map((v) => h("option", { value: v }, String(v))));
  if (kind === "boolean") return h("select", {}, h("option", { value: "" }, hint), h("option", { value: "true" }, "yes"), h("option", { value: "false" }, "no"));
  if (kind === "integer" || kind === "number") return h("input", { type: "number", step: kind === "integer" ? 1 : "any", placeholder: hint });
  if (kind === "array" || kind === "object") return h("input", { type: "text", placeholder: `JSON ${kind}; ${hint}`, class: "wide" });
  return h("input", { type: "text", placeholder: hint, class: "wide" });
}

function valueOf(prop, raw) {
  const kind = typeOf(prop);
  if (raw === "") return undefined;
  if (kind === "boolean") return raw === "true";
  if (kind === "integer" || kind === "number") return Number(raw);
  if (kind === "array" || kind === "object") {
    try { return JSON.parse(raw); } catch { return raw; } // the API names the bad field
  }
  return raw;
}

export function mountStart(root, ctx, { onStarted }) {
  const errors = errorLine("start-error");
  const body = h("div", {}, h("p", { class: "loading" }, "Loading the job kinds…"));
  root.append(h("section", { class: "card", "aria-label": "Start a job" }, h("h2", {}, "Start a job"), body, errors));

  ctx.api.get("v1/jobs/kinds").then((found) => {
    const kinds = found.items.filter((k) => k.allowed);
    if (!kinds.length) { body.replaceChildren(h("p", { class: "hint" }, `The role ${ctx.me.role} may not start jobs.`)); return; }
    const kind = h("select", { dataset: { testid: "job-kind" } }, kinds.map((k) =>
      h("option", { value: k.name, disabled: Boolean(k.unavailable) }, k.unavailable ? `${k.name} (unavailable: ${k.unavailable})` : k.name)));
    const first = kinds.find((k) => !k.unavailable);
    if (first) kind.value = first.name;
    const about = h("p", { class: "hint small" });
    const params = h("div", { class: "filter-grid" });
    let inputs = [];
    const start = h("button", { type: "submit", dataset: { testid: "start-job" } }, "Start");
    const show = () => {
      const chosen = kinds.find((k) => k.name === kind.value);
      about.textContent = chosen ? chosen.description : "";
      const props = Object.entries(chosen?.params?.properties || {});
      inputs = props.map(([name, prop]) => [name, prop, control(prop)]);
      params.replaceChildren(...inputs.map(([name, prop, input]) =>
        field(`p-${name}`, name.replaceAll("_", " "), input, prop.description)));
      if (!props.length) params.append(h("p", { class: "hint small" }, "No parameters."));
    };
    kind.addEventListener("change", show);
    show();
    body.replaceChildren(h("form", { onsubmit: (event) => {
      event.preventDefault();
      const values = {};
      for (const [name, prop, input] of inputs) {
        const value = valueOf(prop, input.value.trim());
        if (value !== undefined) values[name] = value;
      }
      busy(start, errors, async () => {
        const job = await ctx.api.post("v1/jobs", { kind: kind.value, params: values });
        ctx.toast(`Started ${job.kind} (${job.id}).`, "good");
        onStarted(job);
      });
    } }, field("job-kind", "Kind", kind), about, params, h("div", { class: "row" }, start)));
  }, (error) => { body.replaceChildren(); errors.set(error, "The job kinds could not be loaded: "); });
}
