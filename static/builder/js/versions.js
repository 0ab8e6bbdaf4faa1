// A workflow's versions, through the API: GET /api/workflows/<id>/versions/ (newest first, each
// with who, when, a one-line summary and what changed since the one before) and Restore,
// POST …/versions/<n>/restore/, which saves that version again as a new one.

import { getJSON, postJSON, problem } from "./http.js";
import { relativeTime } from "./when.js";
import { el } from "./dom.js";

const root = document.getElementById("versions-root");
const list = document.getElementById("versions-list");
const statusEl = document.getElementById("versions-status");
const moreButton = document.getElementById("btn-versions-more");
let items = [];
let nextUrl = null;

function say(text, kind = "") {
  statusEl.textContent = text;
  statusEl.className = `list-status ${kind}`;
}

function edgeText(edge, labels) {
  const name = (id) => labels.get(id) || id;
  return `${name(edge.source)}${edge.sourceHandle ? ` (${edge.sourceHandle})` : ""} → ${name(edge.target)}`;
}

// A changed node's fields, old → new ("config.url: https://a → https://b").
function fieldList(fields) {
  const changes = el("ul", "diff-fields");
  for (const change of fields) {
    const item = el("li", "diff-field");
    item.dataset.field = change.field;
    item.append(el("strong", null, `${change.field}: `));
    if (change.from === null) item.append(el("code", "new", change.to), " (added)");
    else if (change.to === null) item.append(el("code", "old", change.from), " (removed)");
    else item.append(el("code", "old", change.from), " → ", el("code", "new", change.to));
    changes.append(item);
  }
  return changes;
}

// The node and edge diff against the version before, as lists under "What changed".
function diff(version, before) {
  const box = el("details", "version-diff");
  box.append(el("summary", null, "What changed"));
  const labels = new Map([...(before?.nodes || []), ...version.nodes].map((n) => [n.id, n.data?.label || n.id]));
  const changes = version.changes || {};
  const groups = [
    ["Nodes added", changes.nodes?.added, (n) => `${n.label} (${n.id})`, "added"],
    ["Nodes removed", changes.nodes?.removed, (n) => `${n.label} (${n.id})`, "removed"],
    ["Nodes changed", changes.nodes?.changed, (n) => `${n.label} (${n.id})`, "changed"],
    ["Nodes moved", changes.nodes?.moved, (n) => n.label, "moved"],
    ["Connections added", changes.edges?.added, (e) => edgeText(e, labels), "added"],
    ["Connections removed", changes.edges?.removed, (e) => edgeText(e, labels), "removed"],
  ];
  let any = false;
  if (changes.renamed) {
    box.append(el("p", "diff-renamed", `Renamed from “${changes.renamed.from}” to “${changes.renamed.to}”.`));
    any = true;
  }
  for (const [title, entries, text, kind] of groups) {
    if (!entries?.length) continue;
    any = true;
    box.append(el("h3", "diff-title", title));
    const ul = el("ul", `diff-list diff-${kind}`);
    for (const entry of entries) {
      const item = el("li", null, text(entry));
      if (entry.fields?.length) item.append(fieldList(entry.fields));
      ul.append(item);
    }
    box.append(ul);
  }
  if (!any) box.append(el("p", "muted", "The graph as it was kept first."));
  return box;
}

function row(version, index) {
  const item = el("li", "version");
  item.dataset.number = String(version.number);
  const head = el("div", "version-head");
  const time = el("time", "muted", relativeTime(version.createdAt));
  time.dateTime = version.createdAt;
  time.title = new Date(version.createdAt).toLocaleString();
  head.append(el("strong", null, `Version ${version.number}`), el("span", "version-who", version.createdBy || "someone"), time);
  if (index === 0) head.append(el("span", "current-pill", "current"));
  else {
    const restore = el("button", "small-button", "Restore");
    restore.type = "button";
    restore.setAttribute("aria-label", `Restore version ${version.number}`);
    restore.addEventListener("click", () => restoreVersion(version));
    head.append(restore);
  }
  item.append(head, el("p", "version-summary", version.summary), diff(version, items[index + 1]));
  return item;
}

function render() {
  list.replaceChildren(...items.map(row));
  moreButton.hidden = !nextUrl;
}

async function load(url = root.dataset.apiUrl, { append = false, message = "" } = {}) {
  const { ok, data } = await getJSON(url);
  if (!ok) return say(`The versions could not be read: ${problem(data, "reload the page.")}`, "error");
  items = append ? [...items, ...data.results] : data.results;
  nextUrl = data.next;
  render();
  say(message || `${data.count} version${data.count === 1 ? "" : "s"}.`, message ? "ok" : "");
}

async function restoreVersion(version) {
  // eslint-disable-next-line no-alert -- the browser's own dialog is keyboard-operable and modal
  if (!window.confirm(`Restore version ${version.number}? Its graph is saved again as a new version; the current one stays in the list.`)) return;
  const url = root.dataset.restoreUrl.replace(/\/0\/restore\/$/, `/${version.number}/restore/`);
  const { ok, data } = await postJSON(url, {});
  if (!ok) return say(`Not restored: ${problem(data, "the server refused it.")}`, "error");
  await load(undefined, { message: `Restored version ${version.number} as a new version. ` });
  const link = el("a", null, "Open the editor");
  link.href = root.dataset.editorUrl;
  statusEl.append(link);
}

moreButton.addEventListener("click", () => nextUrl && load(nextUrl, { append: true }));
load();
