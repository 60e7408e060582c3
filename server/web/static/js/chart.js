// Automatic charts with the vendored Chart.js (window.Chart): a time column and a measure is a
// line (one per category when there is a category too), a category and a measure a bar chart
// (up to 60 bars), anything else no chart — the same rule as the server's charts (agents/analysis/charts.py),
// which also lets an analysis finding's Vega-Lite spec be drawn here from its data.

import { h, show } from "./dom.js";

const MAX_POINTS = 500;
const MAX_BARS = 60; // more categories than this make no readable bar chart: none is drawn
const TIME_NAMES = /^((\w*_)?(date|datetime|timestamp|time|year|month|quarter|week|day|period|created|updated)(_\w*|s)?|\w+_(at|on|dt))$/i;
const COLORS = ["#2459c7", "#c75a24", "#1f7a3f", "#8a2bb0", "#b3261e", "#1f6f8b", "#8a5a00", "#5b6573"];

function isNumeric(value) {
  return typeof value === "number" ? Number.isFinite(value) : typeof value === "string" && value.trim() !== "" && Number.isFinite(Number(value));
}

/** The time, category and measure columns of a result (null when absent): the measure is the
 * last numeric column that is not a time; the time a column named like one or whose values
 * all look like dates (YYYY-MM…). */
export function chartRoles(columns, rows) {
  const found = { time: null, category: null, measure: null };
  if (!rows || rows.length === 0) return found;
  columns.forEach((name, i) => {
    const values = rows.map((r) => r[i]).filter((v) => v !== null && v !== undefined);
    const dates = values.length > 0 && values.every((v) => typeof v === "string" && /^\d{4}-\d{2}/.test(v));
    if (found.time === null && (TIME_NAMES.test(String(name)) || dates)) found.time = i;
    else if (values.length > 0 && values.every(isNumeric)) found.measure = i;
    else if (found.category === null) found.category = i;
  });
  return found;
}

/** The Chart.js config of a result, or null when it suits no chart. */
export function chartConfig(columns, rows, title = "") {
  if (!rows || rows.length < 2) return null;
  const { time, category, measure } = chartRoles(columns, rows);
  if (measure === null || (time === null && category === null)) return null;
  const points = rows.slice(0, MAX_POINTS);
  const number = (v) => (v === null || v === undefined ? null : Number(v));
  let type;
  let labels;
  let datasets;
  if (time !== null) {
    type = "line";
    labels = [...new Set(points.map((r) => show(r[time])))].sort();
    const groups = new Map();
    for (const r of points) {
      const key = category === null ? columns[measure] : show(r[category]);
      if (!groups.has(key)) groups.set(key, new Map());
      groups.get(key).set(show(r[time]), number(r[measure]));
    }
    datasets = [...groups.entries()].slice(0, COLORS.length).map(([label, byTime], i) => ({
      label, data: labels.map((t) => byTime.get(t) ?? null), borderColor: COLORS[i], backgroundColor: COLORS[i], spanGaps: true,
    }));
  } else {
    if (rows.length > MAX_BARS) return null;
    type = "bar";
    labels = points.map((r) => show(r[category]));
    datasets = [{ label: columns[measure], data: points.map((r) => number(r[measure])), backgroundColor: COLORS[0] }];
  }
  return {
    type,
    data: { labels, datasets },
    options: {
      responsive: true,
      maintainAspectRatio: false,
      animation: false,
      plugins: { legend: { display: datasets.length > 1 }, title: { display: Boolean(title), text: title } },
      scales: { x: { title: { display: true, text: String(columns[time ?? category]) } }, y: { beginAtZero: true, title: { display: true, text: String(columns[measure]) } } },
    },
  };
}

/** A Vega-Lite spec made by the server (data.values, mark line|bar, encoding x/y/color) as
 * columns and rows, so it is drawn by the same rule. */
export function specData(spec) {
  const values = spec?.data?.values;
  const encoding = spec?.encoding || {};
  if (!Array.isArray(values) || !encoding.x?.field || !encoding.y?.field) return null;
  const columns = [encoding.x.field, encoding.color?.field, encoding.y.field].filter(Boolean);
  return { columns, rows: values.map((v) => columns.map((c) => v[c])) };
}

/** A chart box (figure with a canvas, drawn by Chart.js) for a result, or null when the
 * result suits no chart or Chart.js is not loaded. Destroy it with destroyCharts(). */
export function autoChart(columns, rows, { title = "", label = "Chart of the result" } = {}) {
  const config = chartConfig(columns, rows, title);
  if (!config || typeof window.Chart !== "function") return null;
  const canvas = h("canvas", { role: "img", "aria-label": `${label}: ${config.type} chart of ${config.data.datasets.map((d) => d.label).join(", ")}` });
  const box = h("figure", { class: "chart-box", "data-chart": config.type, "data-testid": "chart" }, canvas);
  box.chart = new window.Chart(canvas, config);
  return box;
}

/** The chart of an analysis finding's Vega-Lite spec, or null. */
export function specChart(spec, options = {}) {
  const data = specData(spec);
  return data ? autoChart(data.columns, data.rows, { title: spec.title || "", ...options }) : null;
}

/** Destroy the charts drawn under ``root`` (before it is cleared). */
export function destroyCharts(root) {
  for (const box of root.querySelectorAll(".chart-box")) {
    if (box.chart) {
      box.chart.destroy();
      box.chart = null;
    }
  }
}
