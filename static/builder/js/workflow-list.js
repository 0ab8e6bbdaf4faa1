// The workflow list: rename, duplicate, delete and the active switch, each through the API
// (PATCH /api/workflows/<id>/, POST …/duplicate/, DELETE …/), which calls the workflow services.

import { problem, sendJSON as api } from "./http.js";
import { tickRelativeTimes } from "./when.js";

// "in 8 s" counts down while the list is open.
setInterval(() => tickRelativeTimes(document), 1000);

const table = document.getElementById("workflow-table");
const statusEl = document.getElementById("list-status");

function say(text, kind = "") {
  statusEl.textContent = text;
  statusEl.className = `list-status ${kind}`;
}

function rowOf(element) {
  const row = element.closest("tr[data-workflow-id]");
  return { row, id: row.dataset.workflowId, name: row.dataset.workflowName, url: `${table.dataset.apiUrl}${row.dataset.workflowId}/` };
}

function startRename(row) {
  const form = row.querySelector(".rename-form");
  row.querySelector(".wf-link").hidden = true;
  form.hidden = false;
  const input = form.querySelector("input");
  input.value = row.dataset.workflowName;
  input.focus();
  input.select();
}

function endRename(row) {
  row.querySelector(".rename-form").hidden = true;
  row.querySelector(".rename-error").textContent = "";
  const link = row.querySelector(".wf-link");
  link.hidden = false;
  link.focus();
}

async function rename(form) {
  const { row, url, name } = rowOf(form);
  const newName = form.querySelector("input").value.trim();
  if (newName === name) return endRename(row);
  const { ok, data } = await api("PATCH", url, { name: newName });
  if (!ok) {
    row.querySelector(".rename-error").textContent = problem(data);
    return;
  }
  row.dataset.workflowName = data.name;
  row.querySelector(".wf-link").textContent = data.name;
  for (const button of row.querySelectorAll(".row-actions button")) {
    button.setAttribute("aria-label", `${button.textContent} ${data.name}`);
  }
  endRename(row);
  say(`Renamed “${name}” to “${data.name}”.`, "ok");
}

async function duplicate(button) {
  const { url, name } = rowOf(button);
  button.disabled = true;
  const { ok, data } = await api("POST", `${url}duplicate/`, {});
  button.disabled = false;
  if (!ok) return say(`“${name}” was not duplicated: ${problem(data)}`, "error");
  // The list is the server's: reload it with the copy marked.
  window.location.assign(`${table.dataset.listUrl}?highlight=${encodeURIComponent(data.id)}`);
}

async function remove(button) {
  const { row, url, name } = rowOf(button);
  // eslint-disable-next-line no-alert -- the browser's own dialog is keyboard-operable and modal
  if (!window.confirm(`Delete “${name}”? It disappears from this list and no longer runs. Its state is kept; an administrator can restore it.`)) return;
  const { ok, data } = await api("DELETE", url);
  if (!ok) return say(`“${name}” was not deleted: ${problem(data)}`, "error");
  const next = row.nextElementSibling || row.previousElementSibling;
  row.remove();
  say(`Deleted “${name}”.`, "ok");
  (next?.querySelector(".wf-link") || document.getElementById("id_name"))?.focus();
}

async function toggleActive(input) {
  const { row, url, name } = rowOf(input);
  const active = input.checked;
  const { ok, data } = await api("PATCH", url, { active });
  if (!ok) {
    input.checked = !active;
    return say(`“${name}” was not switched ${active ? "on" : "off"}: ${problem(data)}`, "error");
  }
  row.querySelector(".switch-text").textContent = active ? "On" : "Off";
  const next = row.querySelector(".next-run");
  if (next) next.textContent = data.nextRunAt ? new Date(data.nextRunAt).toLocaleString() : "—";
  say(`“${name}” is ${active ? "active: its schedule and webhook run it" : "inactive: only manual runs"}.`, "ok");
}

if (table) {
  table.addEventListener("click", (event) => {
    const button = event.target.closest("button");
    if (!button) return;
    if (button.classList.contains("action-rename")) startRename(rowOf(button).row);
    else if (button.classList.contains("action-duplicate")) duplicate(button);
    else if (button.classList.contains("action-delete")) remove(button);
    else if (button.classList.contains("rename-cancel")) endRename(rowOf(button).row);
  });
  table.addEventListener("submit", (event) => {
    event.preventDefault();
    rename(event.target);
  });
  table.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && event.target.closest(".rename-form")) endRename(rowOf(event.target).row);
  });
  table.addEventListener("change", (event) => {
    if (event.target.classList.contains("active-switch")) toggleActive(event.target);
  });
}
