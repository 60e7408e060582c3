// The knowledge view: #/knowledge (browse and search, import and export),
// #/knowledge/review (the review queue, knowledge:write), #/knowledge/<id> (one entry).

import { h } from "../dom.js";
import { mountEntry } from "./knowledge_entry.js";
import { mountList } from "./knowledge_list.js";
import { mountReview } from "./knowledge_review.js";

function subnav(ctx, current) {
  const links = [["", "Browse and search"]];
  if (ctx.can("knowledge:write")) links.push(["review", "Review queue"]);
  return h("nav", { class: "subnav", "aria-label": "Knowledge" }, links.map(([path, label]) =>
    h("a", { href: `#/knowledge${path ? `/${path}` : ""}`, class: current === path ? "active" : "",
      "aria-current": current === path ? "page" : null, dataset: { sub: path || "list" } }, label)));
}

export function mount(root, ctx) {
  const [first = ""] = ctx.params;
  const area = h("div", { class: "admin" });
  root.append(subnav(ctx, first === "review" ? "review" : first ? null : ""), area);
  if (!first) return mountList(area, ctx);
  if (first === "review") {
    if (!ctx.can("knowledge:write")) {
      area.append(h("p", { class: "notice" }, `The role ${ctx.me.role} cannot review learned knowledge.`));
      return null;
    }
    return mountReview(area, ctx);
  }
  return mountEntry(area, ctx, first);
}
