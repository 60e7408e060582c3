// The review queue (#/knowledge/review, knowledge:write): learned entries waiting for a
// decision, with the experiences they were learned from; approve, reject or edit each.

import { h, when } from "../dom.js";
import { entryLink } from "./knowledge_list.js";
import { badge, busy, errorLine, field, fill, items, jsonBlock, pager, text } from "./knowledge_parts.js";

const PAGE = 20;
const REASONS = [["", "every reason"], ["candidate", "mined candidates"], ["rolled_back", "rolled back"],
  ["gate_rejected", "rejected by the regression gate"], ["blamed", "blamed by feedback"]];

function sourcesList(sources) {
  if (!sources.length) return h("p", { class: "hint" }, "No recorded source.");
  return h("ul", { class: "sources" }, sources.map((s) => h("li", { class: "source" },
    !s.found ? [h("code", {}, s.id), " (no longer stored)"]
      : s.type !== "experience" ? [badge(s.type), " ", entryLink(s.id, s.name)]
        : [h("p", { class: "question" }, text(s.question)), h("pre", { class: "sql" }, text(s.sql)),
          h("p", { class: "hint small" }, [s.labeled ? "labeled" : "unlabeled", s.verified ? "verified" : null,
            s.database ? `database ${s.database}` : null].filter(Boolean).join(" · "))])));
}

function editForm(ctx, item, { onSaved, onCancel }) {
  const errors = errorLine();
  const content = h("textarea", { rows: 4, value: item.content });
  const synonyms = h("textarea", { rows: 2, value: item.synonyms.join("\n") });
  const save = h("button", { type: "submit" }, "Save changes");
  return h("form", { class: "edit", onsubmit: (event) => {
    event.preventDefault();
    busy(save, errors, async () => {
      await ctx.api.patch(`v1/knowledge/review/${encodeURIComponent(item.id)}`,
        { content: content.value, synonyms: items(synonyms.value, /\n/) });
      onSaved();
    });
  } }, field(`r-content-${item.id}`, "Content", content), field(`r-syn-${item.id}`, "Synonyms (one a line)", synonyms),
  errors, h("div", { class: "row" }, save, h("button", { type: "button", class: "secondary", onclick: onCancel }, "Cancel")));
}

export function mountReview(root, ctx) {
  let alive = true;
  let offset = 0;
  const errors = errorLine("review-error");
  const list = h("div", { class: "review-list", "aria-live": "polite", dataset: { testid: "review-list" } });
  const reason = h("select", { onchange: () => { offset = 0; load(); } },
    REASONS.map(([v, label]) => h("option", { value: v }, label)));

  function card(item) {
    const extra = h("div", {});
    const itemErrors = errorLine();
    const decide = (verb, body) => async () => {
      await ctx.api.post(`v1/knowledge/review/${encodeURIComponent(item.id)}/${verb}`, body);
      ctx.toast(verb === "approve" ? `Approved "${item.name}": questions use it now.` : `Rejected "${item.name}".`, "good");
      load();
    };
    const approve = h("button", { type: "button", dataset: { testid: "approve" },
      onclick: () => busy(approve, itemErrors, decide("approve")) }, "Approve");
    const reject = h("button", { type: "button", class: "danger", dataset: { testid: "reject" }, onclick: () => {
      const why = window.prompt(`Reject "${item.name}"? Why (optional):`, "");
      if (why === null) return;
      busy(reject, itemErrors, decide("reject", { reason: why }));
    } }, "Reject");
    const edit = h("button", { type: "button", class: "secondary", onclick: () =>
      extra.replaceChildren(editForm(ctx, item, { onSaved: () => { ctx.toast("Saved.", "good"); load(); }, onCancel: () => extra.replaceChildren() })) }, "Edit");
    const show = h("button", { type: "button", class: "secondary", onclick: () => busy(show, itemErrors, async () => {
      const detail = await ctx.api.get(`v1/knowledge/review/${encodeURIComponent(item.id)}`);
      fill(extra, h("h3", {}, "Learned from"), sourcesList(detail.sources));
    }) }, "Learned from…");
    return h("article", { class: "card review-item", dataset: { id: item.id } },
      h("div", { class: "row" }, h("h3", { class: "grow" }, entryLink(item.id, item.name)), badge(item.type),
        item.reasons.map((r) => badge(r, r === "blamed" ? "bad" : "warn"))),
      item.content ? h("pre", { class: "content" }, item.content) : null,
      h("p", { class: "hint small" }, [
        item.synonyms.length ? `synonyms: ${item.synonyms.join(", ")}` : null,
        item.database ? `database ${item.database}` : null, item.miner ? `miner ${item.miner}` : null,
        item.job_id ? `job ${item.job_id}` : null, item.trust !== null && item.trust !== undefined ? `trust ${item.trust}` : null,
        item.feedback ? `credit ${item.feedback.credit ?? 0} · blame ${item.feedback.blame ?? 0}` : null,
        when(item.timestamp)].filter(Boolean).join(" · ")),
      item.gate ? jsonBlock(item.gate) : null,
      h("div", { class: "row" }, approve, reject, edit, show), itemErrors, extra);
  }

  async function load() {
    errors.set(null);
    list.replaceChildren(h("p", { class: "loading" }, "Loading…"));
    let page;
    try {
      page = await ctx.api.get("v1/knowledge/review", { reason: reason.value, limit: PAGE, offset });
    } catch (error) {
      if (!alive) return;
      list.replaceChildren();
      errors.set(error, "The review queue could not be loaded: ");
      return;
    }
    if (!alive) return;
    fill(list,
      page.items.length ? page.items.map(card) : h("p", { class: "hint" }, "Nothing waits for review."),
      page.total > PAGE ? pager({ offset, limit: PAGE, shown: page.count, more: offset + page.count < page.total,
        total: page.total, onPage: (o) => { offset = o; load(); } }) : null);
  }

  root.append(h("h1", {}, "Review queue"),
    h("p", { class: "hint" }, "Learned knowledge waits here until someone decides: mined candidates, rolled-back or gate-rejected entries, and entries blamed by feedback."),
    h("div", { class: "row" }, field("r-reason", "Show", reason)), errors, list);
  load();
  return () => { alive = false; };
}
