// The ask view: a question box (Enter asks), this tab's questions, and the answer streaming
// in — v1/ask/stream for a question, v1/analyze/stream in "Analyse" mode — with its stages,
// a Cancel button that aborts the stream, and a retry when the connection is lost.

import { clear, h } from "../dom.js";
import { destroyCharts } from "../chart.js";
import { answerView } from "./ask_answer.js";
import { analysisStage, analysisView } from "./ask_analysis.js";
import { ANALYSIS_STAGES, ASK_STAGES, failureBox, runStream, startProgress } from "./ask_stream.js";

const HISTORY_KEY = "almanac.askHistory";
const HISTORY_SIZE = 20;
const MODES = { ask: "Ask", analyse: "Analyse" };

function loadHistory() {
  try {
    const items = JSON.parse(sessionStorage.getItem(HISTORY_KEY) || "[]");
    return Array.isArray(items) ? items.filter((i) => i && typeof i.question === "string") : [];
  } catch {
    return [];
  }
}

/** The stage an ask event reaches, and a note for it. */
function askStage(event, data, seen) {
  if (event === "evidence") return ["generating", `${data.knowledge?.length ?? 0} knowledge entries`];
  if (event === "candidate") {
    const c = data.candidate || {};
    seen.candidates = (seen.candidates || 0) + 1;
    seen.ok = (seen.ok || 0) + (c.ok ? 1 : 0);
    if (c.repairs) seen.repaired = (seen.repaired || 0) + 1;
    return ["executing", `${seen.candidates} run, ${seen.ok} ok`];
  }
  if (event === "vote") return ["voting", `winner's share ${Math.round((data.vote_share || 0) * 100)}%`];
  if (event === "final") return ["answered", ""];
  return [null, ""];
}

export function mount(root, ctx) {
  const { api } = ctx;
  let mode = "ask";
  let controller = null;
  let history = loadHistory();

  const question = h("textarea", {
    id: "question", rows: 2, placeholder: "e.g. How many singers are there in each country?",
    "aria-describedby": "question-hint", autocomplete: "off", "data-testid": "question",
  });
  const samples = h("select", { id: "samples" }, [["", "server default"], ["1", "1"], ["3", "3"], ["5", "5"]].map(([v, l]) => h("option", { value: v }, l)));
  const submit = h("button", { type: "submit", "data-testid": "ask" }, "Ask");
  const cancel = h("button", { type: "button", class: "danger", hidden: true, onclick: stop, "data-testid": "cancel" }, "Cancel");
  const tabs = Object.entries(MODES).map(([name, label]) => h("button", {
    type: "button", role: "tab", "aria-selected": String(name === mode), dataset: { mode: name }, onclick: () => setMode(name),
  }, label));
  const askOptions = h("div", { class: "row ask-options" }, h("label", { for: "samples" }, "Samples"), samples);
  const form = h("form", { class: "card ask-form", "aria-label": "Question" },
    h("div", { class: "tabs", role: "tablist", "aria-label": "Mode" }, tabs),
    h("label", { for: "question" }, "Question"),
    question,
    h("p", { id: "question-hint", class: "hint" }, "Enter asks; Shift+Enter starts a new line."),
    h("div", { class: "row" }, submit, cancel, h("span", { class: "grow" }), askOptions));
  const historyList = h("ol", { class: "history", "data-testid": "history" });
  const area = h("div", { class: "ask-result", "aria-live": "polite", "data-testid": "result" });
  root.append(h("section", { class: "ask-view" },
    h("h1", {}, "Ask"),
    h("div", { class: "ask-layout" },
      h("div", { class: "ask-main" }, form, area),
      h("aside", { class: "card ask-history", "aria-label": "This tab's questions" },
        h("h2", {}, "This tab's questions"), historyList))));

  function setMode(name) {
    mode = name;
    for (const tab of tabs) tab.setAttribute("aria-selected", String(tab.dataset.mode === name));
    submit.textContent = MODES[name];
    askOptions.hidden = name !== "ask";
    question.focus();
  }

  function renderHistory() {
    clear(historyList);
    if (history.length === 0) historyList.append(h("li", { class: "hint" }, "Nothing asked yet in this tab."));
    for (const item of history) {
      historyList.append(h("li", {}, h("button", {
        type: "button", title: `${MODES[item.mode] || "Ask"} again`,
        onclick: () => { setMode(item.mode in MODES ? item.mode : "ask"); question.value = item.question; ask(); },
      }, item.mode === "analyse" ? h("span", { class: "badge" }, "analysis") : null, " ", item.question)));
    }
  }

  function remember(text) {
    history = [{ question: text, mode }, ...history.filter((i) => i.question !== text || i.mode !== mode)].slice(0, HISTORY_SIZE);
    try { sessionStorage.setItem(HISTORY_KEY, JSON.stringify(history)); } catch { /* full or disabled: this view keeps it */ }
    renderHistory();
  }

  function stop() {
    if (controller) controller.abort();
  }

  function busy(on) {
    submit.disabled = on;
    cancel.hidden = !on;
    if (!on) controller = null;
  }

  async function ask() {
    const text = question.value.trim();
    if (!text || controller) return;
    remember(text);
    const analysing = mode === "analyse";
    controller = new AbortController();
    busy(true);
    destroyCharts(area);
    const progress = startProgress(area, analysing ? ANALYSIS_STAGES : ASK_STAGES, analysing ? "Analysing…" : "Answering…");
    progress.reach(analysing ? "typing" : "retrieving");
    const seen = {};
    const body = analysing ? { question: text } : { question: text, options: samples.value ? { n: Number(samples.value) } : {} };
    try {
      const { data } = await runStream(api, analysing ? "v1/analyze/stream" : "v1/ask/stream", body, {
        signal: controller.signal,
        onEvent: (event, payload) => {
          const [stage, note] = (analysing ? analysisStage : askStage)(event, payload, seen);
          if (stage) progress.reach(stage, note);
          if (!analysing && event === "candidate" && seen.repaired) {
            progress.mark("repairing", "done");
            progress.note("repairing", `${seen.repaired} repaired`);
          }
        },
      });
      progress.finish();
      clear(area);
      const onSuggestion = (q) => { setMode("ask"); question.value = q; ask(); };
      // a lookup is answered by the one-SQL chain: shown as an ask answer
      if (analysing && !data.answer.lookup) area.append(analysisView(data.answer));
      else area.append(answerView(analysing ? data.answer.lookup : data.answer, { ...ctx, onSuggestion }));
    } catch (error) {
      progress.finish(true);
      progress.say(error.name === "AbortError" ? "Cancelled." : "Stopped before the answer came.");
      if (error.name === "AbortError") {
        area.append(h("p", { class: "notice", role: "status", "data-testid": "cancelled" }, "Cancelled: the question was not answered."));
      } else {
        area.append(failureBox(error, () => { question.value = text; setMode(analysing ? "analyse" : "ask"); ask(); }));
      }
    } finally {
      busy(false);
    }
  }

  form.addEventListener("submit", (event) => { event.preventDefault(); ask(); });
  question.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      ask();
    }
  });
  renderHistory();
  question.focus();
  return () => {
    stop();
    destroyCharts(area);
  };
}
