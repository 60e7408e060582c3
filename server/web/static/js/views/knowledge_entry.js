// One knowledge entry (#/knowledge/<id>): its fields and content, the text prompts see,
// provenance, credit and blame; edit, deactivate and reactivate for knowledge:write.

import { facts, h, when } from "../dom.js";
import { mountEdit } from "./knowledge_edit.js";
import { badge, busy, errorLine, jsonBlock, text } from "./knowledge_parts.js";

const BASE_FIELDS = new Set(["id", "content_hash", "type", "name", "version", "variant", "notes",
  "short_description", "description", "content", "content_resources", "content_composers", "source",
  "parents", "owner", "workspace", "creator", "collection", "tags", "synonyms", "triggers", "priority",
  "related", "auths", "timefluid", "timestamp", "last_verified", "expiration", "inactive_mark",
  "metadata", "profile"]);

const NAMED_LINKS = 30; // related entries named by a lookup each; beyond, their ids

/** Links to other entries, shown by id and renamed "name (type)" once looked up. */
function linker(ctx) {
  let lookups = 0;
  return (id) => {
    const a = h("a", { href: `#/knowledge/${encodeURIComponent(id)}`, class: "entry-link" }, id);
    if (lookups++ < NAMED_LINKS) {
      ctx.api.get(`v1/knowledge/${encodeURIComponent(id)}`).then(
        (found) => { a.textContent = `${found.name} (${found.type})`; a.title = id; },
        () => { /* not visible or gone: the id stays */ });
    }
    return a;
  };
}
const isEmpty = (v) => v === null || v === undefined || v === "" ||
  (Array.isArray(v) && !v.length) || (typeof v === "object" && !Array.isArray(v) && !Object.keys(v).length);

function chips(values, kind, label) {
  if (!values || !values.length) return h("span", { class: "hint" }, "none");
  return h("ul", { class: "chips", "aria-label": label }, values.map((v) => h("li", {}, badge(v, kind))));
}

function contentCard(entry, link) {
  const own = Object.entries(entry).filter(([k, v]) => !BASE_FIELDS.has(k) && !isEmpty(v));
  return h("section", { class: "card", "aria-label": "Content" },
    h("h2", {}, "Content"),
    entry.short_description ? h("p", { class: "lead", dataset: { testid: "entry-short" } }, entry.short_description) : null,
    entry.description ? h("p", { class: "prose", dataset: { testid: "entry-description" } }, entry.description) : null,
    entry.content ? h("pre", { class: "content", dataset: { testid: "entry-content" } }, entry.content) : null,
    facts([
      ["Synonyms", chips(entry.synonyms, "", "Synonyms")],
      ["Tags", chips(entry.tags, "tag", "Tags")],
      ["Priority", String(entry.priority)],
      entry.notes ? ["Notes", entry.notes] : null,
      ...own.map(([k, v]) => [k.replaceAll("_", " "), typeof v === "object" ? jsonBlock(v) : text(v)]),
      isEmpty(entry.content_resources) ? null : ["Resources", jsonBlock(entry.content_resources)],
      isEmpty(entry.triggers) ? null : ["Triggers", jsonBlock(entry.triggers)],
    ]),
    entry.related.length ? [h("h3", {}, "Related"), h("ul", { class: "related" }, entry.related.map((r) =>
      h("li", {}, r.subject === entry.id ? "this" : link(r.subject), ` ${r.relation} `,
        r.object === entry.id ? "this" : link(r.object))))] : null);
}

function provenanceCard(entry, link) {
  const mining = entry.metadata?.mining;
  return h("section", { class: "card", "aria-label": "Provenance" },
    h("h2", {}, "Provenance"),
    facts([
      ["Source", entry.source],
      ["Creator", text(entry.creator)],
      ["Owner", entry.owner || "everyone (global)"],
      ["Workspace", entry.workspace || "global"],
      ["Collection", entry.collection],
      ["Version", `${entry.version} · ${entry.variant}`],
      ["Written", when(entry.timestamp)],
      ["Last verified", when(entry.last_verified)],
      entry.expiration ? ["Expires", when(entry.expiration)] : null,
      ["Derived from", entry.parents.length ? h("ul", { class: "plain" }, entry.parents.map((p) => h("li", {}, link(p)))) : "–"],
      mining ? ["Mined", `${text(mining.miner)} · job ${text(mining.job_id)} · status ${text(mining.status)}`] : null,
      entry.auths.length ? ["Access", jsonBlock(entry.auths)] : null,
      ["Id", h("code", {}, entry.id)],
      ["Content hash", h("code", {}, entry.content_hash)],
    ]));
}

function feedbackCard(entry) {
  const fb = entry.metadata?.feedback;
  const review = entry.metadata?.review;
  if (!fb && !review) return null;
  return h("section", { class: "card", "aria-label": "Credit and blame", dataset: { testid: "entry-feedback" } },
    h("h2", {}, "Credit and blame"),
    h("p", { class: "hint small" }, "Feedback on the answers that used this entry: right counts as credit, wrong as blame."),
    facts([
      fb ? ["Credit", h("span", { class: "good" }, String(fb.credit ?? 0))] : null,
      fb ? ["Blame", h("span", { class: fb.blame ? "error" : "" }, String(fb.blame ?? 0))] : null,
      fb?.last_at ? ["Last feedback", when(fb.last_at)] : null,
      review ? ["Review", `${text(review.reason)} · ${text(review.status)}${review.at ? ` · ${when(review.at)}` : ""}`] : null,
    ]));
}

/** The entry's writes from the audit log (audit:read): who changed it, when, how. */
function historyCard(ctx, id) {
  if (!ctx.can("audit:read")) return null;
  const list = h("div", { dataset: { testid: "entry-history" } }, h("p", { class: "loading" }, "Loading…"));
  ctx.api.get("v1/audit", { ukf_id: id, limit: 50 }).then((found) => {
    list.replaceChildren(found.items.length ? h("ol", { class: "history-list" }, found.items.map((r) =>
      h("li", {}, h("strong", {}, r.action), ` by ${r.user}`, r.job_id ? ` (job ${r.job_id})` : "",
        h("span", { class: "hint small" }, ` · ${when(r.at)}`),
        r.detail?.fields ? h("span", { class: "hint small" }, ` · ${r.detail.fields.join(", ")}`) : null)))
      : h("p", { class: "hint" }, "No recorded write."));
  }, (error) => { list.replaceChildren(h("p", { class: "error" }, error.detail || error.message)); });
  return h("section", { class: "card", "aria-label": "History" }, h("h2", {}, "History"), list);
}

export function mountEntry(root, ctx, id) {
  let alive = true;
  const errors = errorLine("entry-error");
  root.append(h("p", {}, h("a", { href: "#/knowledge" }, "← All knowledge")), errors);
  const body = h("div", { dataset: { testid: "entry" } }, h("p", { class: "loading" }, "Loading…"));
  root.append(body);

  async function load() {
    let entry;
    try {
      entry = await ctx.api.get(`v1/knowledge/${encodeURIComponent(id)}`);
    } catch (error) {
      if (!alive) return;
      body.replaceChildren();
      errors.set(error, error.status === 404 ? "No entry you may see has this id. " : "The entry could not be loaded: ");
      return;
    }
    if (!alive) return;
    const rendered = h("pre", { class: "content", dataset: { testid: "entry-text" } }, "Rendering…");
    ctx.api.get(`v1/knowledge/${encodeURIComponent(id)}/text`).then(
      (r) => { rendered.textContent = r.text || "(empty)"; },
      (error) => { rendered.textContent = ""; rendered.append(h("span", { class: "error" }, error.detail || error.message)); });
    const actions = h("div", { class: "row actions" });
    const link = linker(ctx);
    body.replaceChildren(
      h("div", { class: "row entry-head" }, h("h1", { class: "grow", dataset: { testid: "entry-name" } }, entry.name),
        badge(entry.type), entry.inactive_mark ? badge("inactive", "warn") : badge("active", "good")),
      actions,
      h("div", { class: "split admin-split" },
        h("div", {}, contentCard(entry, link),
          h("section", { class: "card", "aria-label": "As prompts see it" }, h("h2", {}, "As prompts see it"),
            h("p", { class: "hint small" }, "The entry rendered by its composer, as the question prompts' evidence shows it."), rendered)),
        h("div", {}, provenanceCard(entry, link), feedbackCard(entry), historyCard(ctx, id))));
    if (ctx.can("knowledge:write")) writeActions(actions, entry);
  }

  function writeActions(actions, entry) {
    const editArea = h("div", {});
    const editButton = h("button", { type: "button", class: "secondary", "aria-expanded": "false", dataset: { testid: "edit" },
      onclick: () => {
        if (editArea.firstChild) { editArea.replaceChildren(); editButton.setAttribute("aria-expanded", "false"); return; }
        editButton.setAttribute("aria-expanded", "true");
        mountEdit(editArea, ctx, entry, {
          onSaved: () => { ctx.toast("Saved.", "good"); load(); },
          onCancel: () => { editArea.replaceChildren(); editButton.setAttribute("aria-expanded", "false"); editButton.focus(); },
        });
      } }, "Edit");
    const toggle = entry.inactive_mark
      ? h("button", { type: "button", class: "secondary", dataset: { testid: "reactivate" },
        onclick: () => busy(toggle, errors, async () => {
          await ctx.api.patch(`v1/knowledge/${encodeURIComponent(id)}`, { inactive_mark: false });
          ctx.toast("Reactivated.", "good");
          load();
        }) }, "Reactivate")
      : h("button", { type: "button", class: "danger", dataset: { testid: "deactivate" },
        onclick: () => {
          if (!window.confirm(`Deactivate "${entry.name}"? Questions stop using it; it can be reactivated.`)) return;
          busy(toggle, errors, async () => {
            await ctx.api.delete(`v1/knowledge/${encodeURIComponent(id)}`);
            ctx.toast("Deactivated.", "good");
            load();
          });
        } }, "Deactivate");
    actions.append(editButton, toggle);
    actions.after(editArea);
  }

  load();
  return () => { alive = false; };
}
