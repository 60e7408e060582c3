// The page's shell: log in with an API key, show the views the key's role may use, route by
// the URL's hash (#/ask, #/knowledge/<id>, #/ops/jobs, …) and mount one view at a time.
//
// A view is a module exporting mount(root, ctx) (optionally returning a cleanup function);
// ctx = {api, me, can(permission), navigate(hash), toast(text, kind), params}.

import { api, ApiError, keyStore } from "./api.js";
import { clear, h } from "./dom.js";
import { mountLogin } from "./views/login.js";

const VIEWS = [
  { name: "ask", label: "Ask", permission: "ask", load: () => import("./views/ask.js") },
  { name: "knowledge", label: "Knowledge", permission: "knowledge:read", load: () => import("./views/knowledge.js") },
  { name: "ops", label: "Ops", permission: "jobs:read", load: () => import("./views/ops.js") },
];

const state = { me: null, cleanup: null, mounting: 0 };
const view = document.getElementById("view");
const nav = document.getElementById("nav");
const who = document.getElementById("who");
const logoutButton = document.getElementById("logout");
const toastBox = document.getElementById("toast");
let toastTimer = null;

function can(permission) {
  return Boolean(state.me && state.me.permissions.includes(permission));
}

export function toast(text, kind = "info") {
  toastBox.textContent = text;
  toastBox.className = `toast ${kind}`;
  toastBox.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { toastBox.hidden = true; }, kind === "error" ? 8000 : 4000);
}

function navigate(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

function unmount() {
  if (typeof state.cleanup === "function") {
    try { state.cleanup(); } catch (error) { console.error(error); }
  }
  state.cleanup = null;
  clear(view);
}

function logout(message) {
  keyStore.clear();
  state.me = null;
  renderChrome();
  unmount();
  mountLogin(view, { api, onLogin: start, message });
}

function renderChrome() {
  clear(nav);
  const allowed = state.me ? VIEWS.filter((v) => can(v.permission)) : [];
  const current = location.hash.split("/")[1] || "";
  for (const v of allowed) {
    nav.append(h("a", {
      href: `#/${v.name}`,
      class: v.name === current ? "active" : "",
      "aria-current": v.name === current ? "page" : null,
      dataset: { view: v.name },
    }, v.label));
  }
  who.textContent = state.me ? `${state.me.user} · ${state.me.role}` : "";
  logoutButton.hidden = !state.me;
}

async function route() {
  if (!state.me) return;
  const [, name = "", ...params] = location.hash.split("/");
  const allowed = VIEWS.filter((v) => can(v.permission));
  const target = allowed.find((v) => v.name === name);
  if (!target) {
    if (allowed.length === 0) {
      unmount();
      view.append(h("p", { class: "notice" }, `The role ${state.me.role} has no view on this page.`));
      return;
    }
    if (name && VIEWS.some((v) => v.name === name)) toast(`The role ${state.me.role} cannot open ${name}.`, "error");
    navigate(`#/${allowed[0].name}`);
    return;
  }
  renderChrome();
  const ticket = ++state.mounting;
  unmount();
  view.append(h("p", { class: "loading" }, "Loading…"));
  let module;
  try {
    module = await target.load();
  } catch (error) {
    unmount();
    view.append(h("p", { class: "error" }, `This view could not be loaded: ${error.message}`));
    return;
  }
  if (ticket !== state.mounting) return; // another route won meanwhile
  unmount();
  const ctx = { api, me: state.me, can, navigate, toast, params: params.map(decodeURIComponent) };
  state.cleanup = module.mount(view, ctx) || null;
  // the view may have focused its own first control (the question box): keep that
  if (!view.contains(document.activeElement)) view.focus({ preventScroll: true });
}

async function start() {
  if (!keyStore.get()) {
    logout();
    return;
  }
  try {
    state.me = await api.get("v1/me");
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return; // handled by the listener
    unmount();
    view.append(h("p", { class: "error", role: "alert" }, `Cannot reach Almanac: ${error.message}`),
      h("button", { type: "button", onclick: start }, "Try again"));
    return;
  }
  renderChrome();
  await route();
}

// any call refused with 401 (the login form's own check aside): the stored key went bad
window.addEventListener("almanac:unauthorized", () => {
  logout("Your key is no longer accepted (expired or revoked). Log in again.");
});
window.addEventListener("hashchange", () => { route(); });
logoutButton.addEventListener("click", () => logout("Logged out."));
start();
