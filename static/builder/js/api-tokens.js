// Your API tokens, through the API: GET /api/tokens/ lists them (never the token), POST makes
// one (its value shown here once), DELETE /api/tokens/<prefix>/ revokes one.

import { getJSON, postJSON, problem, sendJSON } from "./http.js";
import { relativeTime } from "./when.js";
import { el } from "./dom.js";

const root = document.getElementById("tokens-root");
const url = root.dataset.apiUrl;
const statusEl = document.getElementById("tokens-status");
const table = document.getElementById("token-list");
const form = document.getElementById("token-form");

function say(text, kind = "") {
  statusEl.textContent = text;
  statusEl.className = `list-status ${kind}`;
}

function when(iso) {
  if (!iso) return el("span", "muted", "never");
  const time = el("time", null, `${new Date(iso).toLocaleDateString()} (${relativeTime(iso)})`);
  time.dateTime = iso;
  return time;
}

async function load(message) {
  const { ok, data } = await getJSON(url);
  if (!ok) return say(`Your tokens could not be read: ${problem(data, "reload the page.")}`, "error");
  const rows = data.map((token) => {
    const row = el("tr");
    row.dataset.prefix = token.prefix;
    const revoke = el("button", "linklike danger-link", "Revoke");
    revoke.type = "button";
    revoke.setAttribute("aria-label", `Revoke ${token.name || token.prefix}`);
    revoke.addEventListener("click", () => revokeToken(token));
    const cells = [el("td", null, token.name || "(no name)"), el("td"), el("td"), el("td"), el("td")];
    cells[1].append(el("code", null, `${token.prefix}…`));
    cells[2].append(when(token.createdAt));
    cells[3].append(token.expired ? el("span", "expired", "expired") : when(token.expiresAt));
    cells[4].append(revoke);
    row.append(...cells);
    return row;
  });
  table.tBodies[0].replaceChildren(...rows);
  table.hidden = rows.length === 0;
  say(message || (rows.length ? `${rows.length} token${rows.length === 1 ? "" : "s"}.` : "No tokens yet."), message ? "ok" : "");
}

async function revokeToken(token) {
  // eslint-disable-next-line no-alert -- the browser's own dialog is keyboard-operable and modal
  if (!window.confirm(`Revoke ${token.name || token.prefix}? Scripts using it get 401 from now on.`)) return;
  const { ok, data } = await sendJSON("DELETE", `${url}${encodeURIComponent(token.prefix)}/`);
  if (!ok) return say(`Not revoked: ${problem(data, "try again.")}`, "error");
  await load(`Revoked ${token.name || token.prefix}.`);
}

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  const body = { name: form.elements.name.value.trim() };
  const days = form.elements.expiresInDays.value.trim();
  if (days) body.expiresInDays = days;
  const { ok, data } = await postJSON(url, body);
  if (!ok) return say(`No token made: ${problem(data, "check the fields.")}`, "error");
  document.getElementById("token-value").textContent = data.token;
  document.getElementById("token-new").hidden = false;
  form.reset();
  await load(`Made ${data.name || data.prefix}: copy it now, it is not shown again.`);
});

load();
