// Log in with an API key: checked against GET /v1/me, then kept in sessionStorage.

import { ApiError, keyStore } from "../api.js";
import { clear, h } from "../dom.js";

export function mountLogin(root, { api, onLogin, message }) {
  clear(root);
  const input = h("input", {
    id: "api-key", name: "api-key", type: "password", autocomplete: "off", spellcheck: "false",
    required: true, placeholder: "alm_…",
  });
  const status = h("p", { class: message ? "notice" : "hint", role: "status", dataset: { testid: "login-status" } },
    message || "Paste the API key an administrator gave you. It stays in this tab only.");
  const button = h("button", { type: "submit" }, "Log in");
  const form = h("form", {
    class: "login card",
    onsubmit: async (event) => {
      event.preventDefault();
      const key = input.value.trim();
      if (!key) return;
      button.disabled = true;
      status.className = "hint";
      status.textContent = "Checking the key…";
      keyStore.set(key);
      try {
        await api.get("v1/me", undefined, { silent: true });
      } catch (error) {
        keyStore.clear();
        button.disabled = false;
        status.className = "error";
        const expired = /^API key expired/.test(error.detail || "");
        status.textContent = !(error instanceof ApiError && error.status === 401)
          ? `The key could not be checked: ${error.message}`
          : expired ? `${error.detail}: ask an administrator for a new key.`
            : "That key is not valid, or it was revoked.";
        input.focus();
        return;
      }
      input.value = "";
      onLogin();
    },
  }, h("h1", {}, "Log in to Almanac"), h("label", { for: "api-key" }, "API key"), input, button, status);
  root.append(form);
  input.focus();
}
