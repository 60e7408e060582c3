// The health tab: GET v1/health with its details (store, job counts, indices, warm-up
// components, workers, LLM tiers, target) for keys with the metrics permission.

import { facts, h, seconds } from "../dom.js";
import { badge, busy, errorLine, jsonBlock, table, text } from "./knowledge_parts.js";

const STATUS_KIND = { ready: "good", warming: "warn", starting: "warn", degraded: "bad", unavailable: "bad", failed: "bad" };

function section(title, ...children) {
  return h("section", { class: "card", "aria-label": title }, h("h2", {}, title), ...children);
}

function nested(value) {
  if (value === null || value === undefined) return "–";
  if (typeof value !== "object") return text(value);
  return facts(Object.entries(value).map(([k, v]) => [k.replaceAll("_", " "),
    typeof v === "object" && v !== null ? jsonBlock(v) : text(v)]));
}

function render(body) {
  const parts = [h("div", { class: "row health-head" }, h("span", {}, "Status"),
    h("span", { class: ["badge", "big", STATUS_KIND[body.status] || ""], dataset: { testid: "health-status" } }, body.status),
    body.version ? h("span", { class: "hint" }, `Almanac ${body.version} · up ${seconds(body.uptime_s)}`) : null)];
  if (!body.store) {
    parts.push(h("p", { class: "hint" }, "Details need a key with the metrics permission."));
    return parts;
  }
  const components = Object.entries(body.components || {});
  parts.push(h("div", { class: "health-grid" },
    section("Components", table([
      { label: "Component", cell: ([name]) => name },
      { label: "State", cell: ([, c]) => badge(text(c.state), STATUS_KIND[c.state] || "") },
      { label: "Detail", class: "desc", cell: ([, c]) => Object.entries(c).filter(([k]) => k !== "state").map(([k, v]) => `${k}: ${text(v)}`).join(" · ") },
    ], components, { empty: "No component reported." })),
    section("Store", nested(body.store)),
    section("Jobs", nested(Object.keys(body.jobs || {}).length ? body.jobs : { jobs: "none yet" })),
    section("Indices", nested(body.indices)),
    section("Models", body.llm_tiers?.length ? table([
      { label: "Tier", cell: (t) => text(t.name ?? t.tier) },
      { label: "Model", cell: (t) => text(t.model) },
      { label: "Details", class: "desc", cell: (t) => Object.entries(t).filter(([k]) => !["name", "tier", "model"].includes(k)).map(([k, v]) => `${k}: ${text(v)}`).join(" · ") },
    ], body.llm_tiers) : h("p", { class: "hint" }, "No LLM tier is configured.")),
    section("Workers and target", facts([
      ["Target", text(body.target)],
      ["Workers", body.workers?.length ? h("ul", { class: "plain" }, body.workers.map((w) => h("li", {}, `${w.id}: ${w.job || "idle"}`))) : "none"],
    ]))));
  return parts;
}

const SETTLING_MS = 3000; // re-checked this often while starting or warming

export function mountHealth(root, ctx) {
  let alive = true;
  let timer = null;
  const errors = errorLine("health-error");
  const box = h("div", { dataset: { testid: "health" } }, h("p", { class: "loading" }, "Loading…"));
  const refresh = h("button", { type: "button", class: "secondary", onclick: () => busy(refresh, null, load) }, "Refresh");
  const checked = h("span", { class: "hint small", role: "status" });

  async function load() {
    clearTimeout(timer);
    errors.set(null);
    let body;
    try {
      body = await ctx.api.get("v1/health");
    } catch (error) {
      if (!alive) return;
      // 503 still carries the body: the store is unreachable
      if (error.body && typeof error.body === "object" && error.body.status) body = error.body;
      else { box.replaceChildren(); errors.set(error, "Health could not be read: "); return; }
    }
    if (!alive) return;
    box.replaceChildren(...render(body));
    const settling = body.status === "starting" || body.status === "warming";
    checked.textContent = `Checked ${new Date().toLocaleTimeString()}${settling ? " · checking again every few seconds" : ""}`;
    if (settling) timer = setTimeout(load, SETTLING_MS);
  }

  root.append(h("div", { class: "row" }, h("h2", { class: "grow" }, "Health"), checked, refresh), errors, box);
  load();
  return () => { alive = false; clearTimeout(timer); };
}
