// The keys tab (admins: the keys permission): list API keys with their expiry, create one
// (optionally expiring; its secret shown once, with a copy button), revoke one after a
// confirmation.

import { h, when } from "../dom.js";
import { badge, busy, errorLine, field, items, table, text } from "./knowledge_parts.js";

const ROLES = ["analyst", "ops", "ml", "admin"];

function secretCard(created, onDone) {
  const secret = h("input", { type: "text", value: created.key, class: "wide secret", "aria-label": "The new key",
    dataset: { testid: "new-secret" } });
  secret.readOnly = true;
  const status = h("span", { class: "hint small", role: "status" });
  const copy = h("button", { type: "button", dataset: { testid: "copy-secret" }, onclick: async () => {
    try {
      await navigator.clipboard.writeText(created.key);
      status.textContent = "Copied.";
    } catch {
      secret.select(); // no clipboard access (not a secure context): select it for Ctrl+C
      status.textContent = "Select and copy it (Ctrl+C).";
    }
  } }, "Copy");
  const card = h("section", { class: "card secret-card", role: "alert", "aria-label": "New key" },
    h("h3", {}, `Key for ${created.user} (${created.role})`),
    h("p", { class: "hint", dataset: { testid: "new-key-expiry" } },
      created.expires_at ? `It expires ${when(created.expires_at)}.` : "It does not expire."),
    h("p", { class: "notice" }, "This is the only time the key is shown. Copy it now and hand it over safely."),
    h("div", { class: "row" }, secret, copy, status),
    h("button", { type: "button", class: "secondary", onclick: onDone }, "Done, hide it"));
  return card;
}

function expiryCell(key) {
  if (!key.expires_at) return h("span", { class: "hint" }, "never");
  if (key.expired && !key.revoked_at) return badge(`expired ${when(key.expires_at)}`, "bad");
  return when(key.expires_at);
}

export function mountKeys(root, ctx) {
  if (!ctx.can("keys")) {
    root.append(h("p", { class: "notice" }, "Only administrators manage API keys."));
    return null;
  }
  let alive = true;
  const errors = errorLine("keys-error");
  const listBox = h("div", { dataset: { testid: "keys" } }, h("p", { class: "loading" }, "Loading…"));
  const newKey = h("div", {});
  const showRevoked = h("input", { type: "checkbox", id: "keys-revoked", onchange: () => load() });

  const user = h("input", { type: "text", required: true, autocomplete: "off" });
  const role = h("select", {}, ROLES.map((r) => h("option", { value: r }, r)));
  const workspace = h("input", { type: "text", placeholder: "none: every workspace" });
  const groups = h("input", { type: "text", placeholder: "comma separated" });
  const label = h("input", { type: "text", placeholder: "what it is for" });
  const expiresIn = h("input", { type: "number", min: "0.01", step: "any", placeholder: "never" });
  const createErrors = errorLine("create-key-error");
  const create = h("button", { type: "submit", dataset: { testid: "create-key" } }, "Create key");
  const form = h("form", { class: "card", "aria-label": "Create a key", onsubmit: (event) => {
    event.preventDefault();
    busy(create, createErrors, async () => {
      const days = expiresIn.value.trim();
      const created = await ctx.api.post("v1/keys", { user: user.value.trim(), role: role.value,
        workspace: workspace.value.trim() || null, groups: items(groups.value, ","), label: label.value.trim(),
        expires_in_days: days ? Number(days) : null });
      form.reset();
      newKey.replaceChildren(secretCard(created, () => newKey.replaceChildren()));
      newKey.querySelector("button").focus();
      load();
    });
  } }, h("h2", {}, "Create a key"),
  h("div", { class: "filter-grid" }, field("key-user", "User", user), field("key-role", "Role", role),
    field("key-workspace", "Workspace", workspace), field("key-groups", "Groups", groups), field("key-label", "Label", label),
    field("key-expires", "Expires in (days)", expiresIn, "Empty: the key does not expire.")),
  createErrors, h("div", { class: "row" }, create));

  const revokeButton = (key) => {
    const button = h("button", { type: "button", class: "danger small-button", dataset: { testid: "revoke" },
      onclick: () => {
        if (!window.confirm(`Revoke the key ${key.id} of ${key.user} (${key.role})? It stops working at once.`)) return;
        busy(button, errors, async () => {
          await ctx.api.delete(`v1/keys/${encodeURIComponent(key.id)}`);
          ctx.toast(`Revoked ${key.id}.`, "good");
          load();
        });
      } }, "Revoke");
    return button;
  };

  async function load() {
    let page;
    try {
      page = await ctx.api.get("v1/keys", { include_revoked: showRevoked.checked ? "true" : "" });
    } catch (error) {
      if (!alive) return;
      errors.set(error, "The keys could not be loaded: ");
      return;
    }
    if (!alive) return;
    errors.set(null);
    listBox.replaceChildren(table([
      { label: "Key", cell: (k) => h("code", {}, k.id) },
      { label: "User", cell: (k) => k.user },
      { label: "Role", cell: (k) => badge(k.role) },
      { label: "Workspace", cell: (k) => text(k.workspace ?? "–") },
      { label: "Label", class: "desc", cell: (k) => k.label || "" },
      { label: "Created", cell: (k) => when(k.created_at) },
      { label: "Last used", cell: (k) => when(k.last_used_at) },
      { label: "Expires", cell: expiryCell },
      { label: "", cell: (k) => (k.revoked_at ? badge(`revoked ${when(k.revoked_at)}`, "bad")
        : k.id === ctx.me.key_id ? badge("this key") : revokeButton(k)) },
    ], page.items, { empty: "No key.", testid: "keys-table" }));
  }

  root.append(newKey, form, h("section", { class: "card", "aria-label": "Keys" },
    h("div", { class: "row" }, h("h2", { class: "grow" }, "API keys"),
      h("label", { for: "keys-revoked", class: "inline" }, showRevoked, " show revoked")), errors, listBox));
  load();
  return () => { alive = false; };
}
