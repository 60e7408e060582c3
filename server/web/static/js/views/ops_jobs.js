// The jobs tab: recent jobs with their progress (refreshed every second while one is queued
// or running), the selected job's log and result, cancel, and the "start a job" form.

import { facts, h, percent, when } from "../dom.js";
import { badge, busy, errorLine, jsonBlock, table, text } from "./knowledge_parts.js";
import { mountStart } from "./ops_start.js";

const LIVE = new Set(["queued", "running"]);
const STATE_KIND = { succeeded: "good", failed: "bad", cancelled: "warn", running: "", queued: "" };
const FAST_MS = 1000;
const SLOW_MS = 10_000;

function progressBar(job, testid) {
  return h("div", { class: "progress-cell" },
    h("progress", { max: 1, value: job.progress || 0, "aria-label": `${job.kind} progress`, dataset: testid ? { testid } : undefined }),
    h("span", { class: "small" }, percent(job.progress)));
}

function resultView(result) {
  if (result === null || result === undefined) return null;
  const scalars = Object.entries(result).filter(([, v]) => v === null || typeof v !== "object");
  const nested = Object.entries(result).filter(([, v]) => v !== null && typeof v === "object");
  return h("div", { dataset: { testid: "job-result" } },
    scalars.length ? facts(scalars.map(([k, v]) => [k.replaceAll("_", " "), text(v)])) : null,
    nested.map(([k, v]) => [h("h4", {}, k.replaceAll("_", " ")), jsonBlock(v)]));
}

export function mountJobs(root, ctx) {
  let alive = true;
  let timer = null;
  let selected = null;
  let kinds = null; // name → permission, to offer cancel only where the role may
  const errors = errorLine("jobs-error");
  const listBox = h("div", { "aria-live": "off", dataset: { testid: "jobs" } }, h("p", { class: "loading" }, "Loading…"));
  const detailBox = h("div", { dataset: { testid: "job-detail" } });
  const refreshed = h("span", { class: "hint small", role: "status" });
  const refresh = h("button", { type: "button", class: "secondary", onclick: () => tick() }, "Refresh");

  const mayCancel = (job) => LIVE.has(job.state) && kinds && ctx.can(kinds[job.kind] || "jobs:write");
  const cancelButton = (job) => {
    const button = h("button", { type: "button", class: "danger small-button", dataset: { testid: "cancel" },
      onclick: () => {
        if (!window.confirm(`Cancel the ${job.kind} job ${job.id}?`)) return;
        busy(button, errors, async () => { await ctx.api.delete(`v1/jobs/${encodeURIComponent(job.id)}`); tick(); });
      } }, "Cancel");
    return button;
  };

  function renderList(jobs) {
    listBox.replaceChildren(table([
      { label: "Job", cell: (j) => h("button", { type: "button", class: "link", "aria-pressed": String(j.id === selected),
        onclick: () => { selected = j.id; tick(); } }, `${j.kind} · ${j.id.slice(0, 8)}`) },
      { label: "State", cell: (j) => badge(j.state, STATE_KIND[j.state] || "") },
      { label: "Progress", cell: (j) => progressBar(j) },
      { label: "Message", class: "desc", cell: (j) => j.error || j.message || "" },
      { label: "By", cell: (j) => text(j.submitted_by?.user) },
      { label: "Created", cell: (j) => when(j.created_at) },
      { label: "", cell: (j) => (mayCancel(j) ? cancelButton(j) : "") },
    ], jobs, { empty: "No job yet.", testid: "jobs-table" }));
  }

  function renderDetail(job) {
    detailBox.replaceChildren(h("section", { class: "card", "aria-label": `Job ${job.id}` },
      h("div", { class: "row" }, h("h2", { class: "grow" }, `${job.kind} `, h("code", {}, job.id)),
        badge(job.state, STATE_KIND[job.state] || ""), mayCancel(job) ? cancelButton(job) : null),
      progressBar(job, "job-progress"),
      h("p", { class: "small", dataset: { testid: "job-message" } }, job.message || ""),
      job.error ? h("p", { class: "error", role: "alert" }, job.error) : null,
      facts([
        ["Parameters", Object.keys(job.params || {}).length ? jsonBlock(job.params) : "none"],
        ["Submitted by", `${text(job.submitted_by?.user)} (${text(job.submitted_by?.role)})`],
        ["Created", when(job.created_at)], ["Started", when(job.started_at)], ["Finished", when(job.finished_at)],
        ["Attempts", `${job.attempts} of ${job.max_attempts}`], ["Worker", text(job.worker_id)],
      ]),
      job.result ? [h("h3", {}, "Result"), resultView(job.result)] : null,
      h("h3", {}, "Log"),
      job.log.length ? h("ol", { class: "log", dataset: { testid: "job-log" } }, job.log.map((line) =>
        h("li", { class: line.level }, h("span", { class: "hint" }, when(line.at)), " ", line.line)))
        : h("p", { class: "hint" }, "No log line yet.")));
  }

  async function tick() {
    clearTimeout(timer);
    let live = false;
    try {
      if (!kinds) {
        const found = await ctx.api.get("v1/jobs/kinds");
        kinds = Object.fromEntries(found.items.map((k) => [k.name, k.permission]));
      }
      const page = await ctx.api.get("v1/jobs", { limit: 50 });
      if (!alive) return;
      renderList(page.items);
      live = page.items.some((j) => LIVE.has(j.state));
      if (selected) {
        const job = await ctx.api.get(`v1/jobs/${encodeURIComponent(selected)}`, { log_lines: 200 });
        if (!alive) return;
        renderDetail(job);
        live = live || LIVE.has(job.state);
      }
      errors.set(null);
      refreshed.textContent = `Updated ${new Date().toLocaleTimeString()}${live ? " · refreshing every second while a job runs" : ""}`;
    } catch (error) {
      if (!alive) return;
      errors.set(error, "The jobs could not be loaded: ");
    }
    if (alive) timer = setTimeout(tick, live ? FAST_MS : SLOW_MS);
  }

  const jobsCard = h("section", { class: "card", "aria-label": "Jobs" },
    h("div", { class: "row" }, h("h2", { class: "grow" }, "Recent jobs"), refreshed, refresh), errors, listBox);
  const startBox = h("div", { class: "start-box" });
  root.append(startBox, jobsCard, detailBox);
  if (ctx.can("jobs:write") || ctx.can("distill")) {
    mountStart(startBox, ctx, { onStarted: (job) => { selected = job.id; tick(); } });
  }
  tick();
  return () => { alive = false; clearTimeout(timer); };
}
