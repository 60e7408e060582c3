// The ops view (#/ops/<tab>): jobs, health, and API keys (admins only), one tab at a time.

import { h } from "../dom.js";
import { mountHealth } from "./ops_health.js";
import { mountJobs } from "./ops_jobs.js";
import { mountKeys } from "./ops_keys.js";

const TABS = [
  { name: "jobs", label: "Jobs", mount: mountJobs },
  { name: "health", label: "Health", mount: mountHealth },
  { name: "keys", label: "Keys", mount: mountKeys, permission: "keys" },
];

export function mount(root, ctx) {
  const tabs = TABS.filter((t) => !t.permission || ctx.can(t.permission));
  const current = tabs.find((t) => t.name === ctx.params[0]) || tabs[0];
  if (ctx.params[0] && current.name !== ctx.params[0]) ctx.toast(`The role ${ctx.me.role} cannot open ${ctx.params[0]}.`, "error");
  const buttons = tabs.map((t) => h("button", {
    type: "button", role: "tab", id: `tab-${t.name}`, "aria-selected": String(t === current),
    "aria-controls": "ops-panel", tabindex: t === current ? "0" : "-1", dataset: { tab: t.name },
    onclick: () => ctx.navigate(`#/ops/${t.name}`),
  }, t.label));
  const list = h("div", { class: "tabs", role: "tablist", "aria-label": "Ops" }, buttons);
  // arrow keys move between tabs (the tablist pattern); Enter or Space opens one
  list.addEventListener("keydown", (event) => {
    const at = buttons.indexOf(document.activeElement);
    if (at < 0 || !["ArrowLeft", "ArrowRight", "Home", "End"].includes(event.key)) return;
    event.preventDefault();
    const next = event.key === "Home" ? 0 : event.key === "End" ? buttons.length - 1
      : (at + (event.key === "ArrowRight" ? 1 : -1) + buttons.length) % buttons.length;
    buttons[next].focus();
  });
  const panel = h("section", { id: "ops-panel", role: "tabpanel", "aria-labelledby": `tab-${current.name}`, class: "admin" });
  root.append(h("h1", {}, "Ops"), list, panel);
  return current.mount(panel, ctx);
}
