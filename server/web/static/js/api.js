// The page's only way to the server: the JSON API, with the key the user typed.
// The key lives in sessionStorage (gone when the tab closes), is sent as a Bearer header,
// and never appears in a URL or a cookie.

const KEY_NAME = "almanac.apiKey";
// the server's root, whatever prefix the page is served under (…/ui/ → …/)
const ROOT = new URL("../", document.baseURI);

export class ApiError extends Error {
  constructor(status, detail, body = null) {
    super(detail);
    this.status = status;
    this.detail = detail;
    this.body = body;
  }
}

export const keyStore = {
  get: () => sessionStorage.getItem(KEY_NAME),
  set: (key) => sessionStorage.setItem(KEY_NAME, key),
  clear: () => sessionStorage.removeItem(KEY_NAME),
};

function url(path, query) {
  const target = new URL(path.replace(/^\//, ""), ROOT);
  for (const [name, value] of Object.entries(query || {})) {
    if (value !== undefined && value !== null && value !== "") target.searchParams.set(name, value);
  }
  return target;
}

function headers(extra = {}) {
  const key = keyStore.get();
  return { Accept: "application/json", ...(key ? { Authorization: `Bearer ${key}` } : {}), ...extra };
}

function detailOf(body, status) {
  if (body && typeof body === "object") {
    const detail = body.detail ?? body.error ?? body.message;
    if (typeof detail === "string") return detail;
    if (Array.isArray(detail)) return detail.map((d) => d.msg || JSON.stringify(d)).join("; ");
    if (detail) return JSON.stringify(detail);
  }
  return typeof body === "string" && body ? body.slice(0, 300) : `HTTP ${status}`;
}

async function fail(response, silent) {
  const text = await response.text();
  let body = text;
  try { body = JSON.parse(text); } catch { /* not JSON */ }
  const error = new ApiError(response.status, detailOf(body, response.status), body);
  if (response.status === 401 && !silent) window.dispatchEvent(new CustomEvent("almanac:unauthorized", { detail: error }));
  throw error;
}

// silent: a 401 is the caller's to handle (the login form), not the page's (back to login)
async function send(method, path, { body, query, signal, raw = false, contentType, silent = false } = {}) {
  let response;
  const init = { method, headers: headers(), signal };
  if (body !== undefined) {
    init.headers["Content-Type"] = contentType || "application/json";
    init.body = contentType ? body : JSON.stringify(body);
  }
  try {
    response = await fetch(url(path, query), init);
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new ApiError(0, "the server cannot be reached (is it running?)");
  }
  if (!response.ok) await fail(response, silent);
  if (raw) return response;
  if (response.status === 204) return null;
  const type = response.headers.get("content-type") || "";
  return type.includes("json") ? response.json() : response.text();
}

/** Server-sent events of a POST: yields {event, data} as they arrive. */
async function* stream(path, body, { signal } = {}) {
  const response = await send("POST", path, { body, signal, raw: true });
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    let chunk;
    try {
      chunk = await reader.read();
    } catch (error) {
      if (error.name === "AbortError") throw error;
      throw new ApiError(0, "the connection to the server was lost while streaming");
    }
    if (chunk.done) break;
    buffer += decoder.decode(chunk.value, { stream: true });
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const event = { event: "message", data: "" };
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) event.event = line.slice(6).trim();
        else if (line.startsWith("data:")) event.data += line.slice(5).trim();
      }
      try { event.data = JSON.parse(event.data); } catch { /* plain text */ }
      yield event;
    }
  }
}

export const api = {
  get: (path, query, options = {}) => send("GET", path, { query, ...options }),
  post: (path, body, options = {}) => send("POST", path, { body, ...options }),
  patch: (path, body, options = {}) => send("PATCH", path, { body, ...options }),
  delete: (path, options = {}) => send("DELETE", path, options),
  /** POST a raw body (e.g. JSON Lines) with its content type. */
  upload: (path, body, contentType, options = {}) => send("POST", path, { body, contentType, ...options }),
  /** GET as a Blob (exports). */
  blob: async (path, query) => (await send("GET", path, { query, raw: true })).blob(),
  stream,
};
