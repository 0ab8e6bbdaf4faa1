// Fetch helpers, the editor's one way to talk to the server: same-origin, the CSRF header from
// the csrftoken cookie, JSON in and out. Every JSON read and write goes to the API (/api/…).

export function csrfToken() {
  const match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
  return match ? decodeURIComponent(match[1]) : "";
}

function failure(response) {
  if (response.status === 403) {
    return { code: "FORBIDDEN", detail: "The server refused the request (403). Reload the page and try again." };
  }
  return { code: `HTTP_${response.status}`, detail: `The server answered ${response.status}. Try again.` };
}

async function readJSON(response) {
  if (response.status === 204) return {};
  try {
    return await response.json();
  } catch {
    return failure(response);
  }
}

// A JSON request (body optional); resolves to {ok, status, data} and never throws on an HTTP error.
export async function sendJSON(method, url, body) {
  const headers = { Accept: "application/json" };
  if (method !== "GET") headers["X-CSRFToken"] = csrfToken();
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(url, {
      method,
      credentials: "same-origin",
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    return { ok: false, status: 0, data: { code: "NETWORK", detail: "The server cannot be reached. Check your connection." } };
  }
  return { ok: response.ok, status: response.status, data: await readJSON(response) };
}

export const postJSON = (url, body) => sendJSON("POST", url, body);
export const getJSON = (url) => sendJSON("GET", url);

// The first thing an error answer says: its detail ({"code", "detail"}), else the first field
// error ({"name": ["…"]}, or nested {"nodes": {"0": ["…"]}}).
export function problem(data, fallback = "The server refused the change.") {
  if (data && data.detail) return data.detail;
  const first = (value) => {
    if (typeof value === "string") return value;
    if (Array.isArray(value)) return value.map(first).find(Boolean);
    if (value && typeof value === "object") return Object.values(value).map(first).find(Boolean);
    return undefined;
  };
  return first(data) || fallback;
}

// POST a form (urlencoded) and read the fragment it answers (the form judged: its field errors).
export async function postForm(url, form) {
  let response;
  try {
    response = await fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { Accept: "text/html", "X-CSRFToken": csrfToken() },
      body: new URLSearchParams(new FormData(form)),
    });
  } catch {
    return { ok: false, status: 0, html: "" };
  }
  return { ok: response.ok, status: response.status, html: await response.text() };
}

// GET an HTML fragment; throws an Error whose message a user can act on.
export async function getHTML(url, loginUrl) {
  const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "text/html" } });
  if (response.redirected && loginUrl && new URL(response.url).pathname === loginUrl) {
    throw new Error("Your session has ended. Reload the page and log in again.");
  }
  if (!response.ok) throw new Error(`Could not load the form (the server answered ${response.status}).`);
  return response.text();
}
