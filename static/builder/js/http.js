// Fetch helpers: same-origin, CSRF header from the csrftoken cookie, JSON in and out.

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
  try {
    return await response.json();
  } catch {
    return failure(response);
  }
}

// POST a JSON body; resolves to {ok, status, data} and never throws on an HTTP error.
export async function postJSON(url, body) {
  let response;
  try {
    response = await fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrfToken() },
      body: JSON.stringify(body),
    });
  } catch {
    return { ok: false, status: 0, data: { code: "NETWORK", detail: "The server cannot be reached. Check your connection." } };
  }
  return { ok: response.ok, status: response.status, data: await readJSON(response) };
}

// GET JSON; resolves to {ok, status, data} and never throws on an HTTP error.
export async function getJSON(url) {
  let response;
  try {
    response = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
  } catch {
    return { ok: false, status: 0, data: { code: "NETWORK", detail: "The server cannot be reached. Check your connection." } };
  }
  return { ok: response.ok, status: response.status, data: await readJSON(response) };
}

// POST a form (urlencoded) asking for JSON back.
export async function postForm(url, form) {
  let response;
  try {
    response = await fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { Accept: "application/json", "X-CSRFToken": csrfToken() },
      body: new URLSearchParams(new FormData(form)),
    });
  } catch {
    return { ok: false, status: 0, data: { code: "NETWORK", detail: "The server cannot be reached." } };
  }
  return { ok: response.ok, status: response.status, data: await readJSON(response) };
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
