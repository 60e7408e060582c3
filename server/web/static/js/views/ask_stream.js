// Following a streamed answer (POST …/stream, server-sent events): a row of stages that
// light up as the events arrive, and the run itself, which ends with the final event's data,
// an error event's detail, or a lost connection (the stream ended before its final event).

import { ApiError } from "../api.js";
import { clear, h } from "../dom.js";

/** A stream that ended without its final event: the server went away mid-answer. */
export class StreamLostError extends ApiError {
  constructor(detail = "the connection to the server was lost before the answer came") {
    super(0, detail);
    this.lost = true;
  }
}

/** The stages of an ask stream (ids, labels) and which event marks each one reached. */
export const ASK_STAGES = [
  ["retrieving", "Retrieving knowledge"],
  ["generating", "Generating SQL"],
  ["repairing", "Repairing"],
  ["executing", "Executing"],
  ["voting", "Voting"],
  ["answered", "Answered"],
];

export const ANALYSIS_STAGES = [
  ["typing", "Typing the question"],
  ["planning", "Planning"],
  ["asking", "Asking sub-questions"],
  ["analysing", "Analysing"],
  ["writing", "Writing up"],
  ["answered", "Answered"],
];

/** A list of stages: reach(id, note) makes one current (those before it done), note(id, text)
 * annotates one, finish(failed) closes the current one. */
export function stageList(stages) {
  const items = new Map();
  const list = h("ol", { class: "stages", "aria-label": "Progress", "data-testid": "stages" },
    stages.map(([id, label]) => {
      const note = h("span", { class: "stage-note" });
      const item = h("li", { dataset: { stage: id, state: "waiting" } }, label, note);
      items.set(id, { item, note });
      return item;
    }));
  function mark(id, state) {
    const { item } = items.get(id);
    item.dataset.state = state;
    item.className = state === "waiting" ? "" : state;
  }
  function note(id, text) {
    const entry = items.get(id);
    if (entry) entry.note.textContent = text ? ` · ${text}` : "";
  }
  function reach(id, text) {
    if (!items.has(id)) return;
    for (const [other] of stages) {
      if (other === id) break;
      if (items.get(other).item.dataset.state === "current") mark(other, "done");
    }
    mark(id, "current");
    if (text !== undefined) note(id, text);
  }
  function finish(failed = false) {
    for (const [id] of stages) {
      const state = items.get(id).item.dataset.state;
      if (state === "current") mark(id, failed ? "failed" : "done");
      else if (state === "waiting" && !failed) mark(id, "skipped");
    }
  }
  return { element: list, reach, note, mark, finish };
}

/**
 * Run one stream: each event goes to ``onEvent``; resolves with the final event's ``data``
 * (``finalKey`` of it, e.g. "answer"), rejects with the ApiError of an ``error`` event or
 * with StreamLostError when the stream ends without a final event.
 */
export async function runStream(api, path, body, { signal, onEvent, finals = ["final"] }) {
  for await (const event of api.stream(path, body, { signal })) {
    const data = event.data && typeof event.data === "object" ? event.data : {};
    if (event.event === "error") {
      const detail = typeof data.detail === "string" ? data.detail : JSON.stringify(data.detail ?? "the server failed to answer");
      throw new ApiError(data.status || 500, detail, data);
    }
    onEvent?.(event.event, data);
    if (finals.includes(event.event)) return { event: event.event, data };
  }
  throw new StreamLostError();
}

/** A message box for a failed run: the error's detail, and a retry button when the
 * server was unreachable or the connection was lost. */
export function failureBox(error, retry) {
  const lost = error instanceof ApiError && error.status === 0;
  const status = error instanceof ApiError && error.status ? ` (HTTP ${error.status})` : "";
  return h("div", { class: "card failure", role: "alert", "data-testid": "failure" },
    h("p", { class: "error" }, lost ? "Connection lost: " : "The question failed: ", error.detail || error.message, status),
    lost ? h("p", { class: "hint" }, "The server may have restarted. Your question was not answered; you can ask it again.") : null,
    retry ? h("button", { type: "button", onclick: retry, "data-testid": "retry" }, lost ? "Retry" : "Try again") : null);
}

/** Clear ``area`` and put a "working" line and the stage list in it. */
export function startProgress(area, stages, text) {
  clear(area);
  const progress = stageList(stages);
  const line = h("p", { class: "loading", "aria-live": "polite" }, text);
  area.append(h("div", { class: "card progress-card" }, line, progress.element));
  /** Replace the "working" line (e.g. once the run stopped). */
  progress.say = (said) => {
    line.textContent = said;
    line.className = "hint";
  };
  return progress;
}
