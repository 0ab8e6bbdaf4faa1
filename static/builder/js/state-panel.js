// The State panel: the workflow's live keys, each key's recent history and the organization's
// usage (api.state(), api.stateHistory(key): the API's state summary and history). Read-only:
// nothing here writes state. It keeps what it read and draws it in render().

import { el } from "./dom.js";

const VALUE_CHARS = 60;
const HISTORY_VALUE_CHARS = 40;
const SHORT_VALUE_CHARS = 12; // a value this short is whole in its row; longer ones are also shown expanded
const NEAR_LIMIT = 0.8;
const OPERATIONS = { insert: "created", update: "updated", delete: "deleted" };
const EMPTY = "This workflow has no stored state yet. State Set writes it when the workflow runs.";
const NONE_LIVE = "No live keys now: every key this workflow wrote was deleted or has expired (see Recent changes).";
const numbers = new Intl.NumberFormat("en-US");
const relative = new Intl.RelativeTimeFormat("en", { numeric: "auto" });

// Compact JSON, cut to `max` characters; the full text goes in the title (hover).
function valueCode(value, max, className = "") {
  const text = JSON.stringify(value);
  const code = el("code", className, text.length > max ? `${text.slice(0, max - 1)}…` : text);
  code.title = text;
  return code;
}

export function formatBytes(bytes) {
  if (bytes < 1024) return `${numbers.format(bytes)} byte${bytes === 1 ? "" : "s"}`;
  const units = ["KB", "MB", "GB"];
  let size = bytes / 1024;
  let unit = 0;
  while (size >= 1024 && unit < units.length - 1) {
    size /= 1024;
    unit += 1;
  }
  return `${Number(size.toFixed(1))} ${units[unit]}`;
}

function formatTime(iso) {
  const date = new Date(iso);
  const today = date.toDateString() === new Date().toDateString();
  const time = el("time", "history-when", today ? date.toLocaleTimeString() : date.toLocaleString());
  time.dateTime = iso;
  time.title = date.toString();
  return time;
}

function formatExpiry(iso) {
  if (!iso) return el("span", "state-expiry", "never");
  const seconds = Math.round((new Date(iso) - Date.now()) / 1000);
  let [amount, unit] = [seconds, "second"];
  for (const [size, name] of [[60, "minute"], [3600, "hour"], [86400, "day"]]) {
    if (Math.abs(amount) < 90) break;
    [amount, unit] = [Math.round(seconds / size), name];
  }
  const span = el("span", "state-expiry", seconds > 0 ? relative.format(amount, unit) : "expired");
  span.title = `Expires ${new Date(iso).toLocaleString()}`;
  return span;
}

// "run 3f2a9c1e" (the full id on hover), or who else made the change: admin:…, sweeper, database.
function writer(execution, actor, className = "state-writer") {
  const span = el("span", className, execution ? `run ${execution.slice(0, 8)}` : actor || "—");
  span.title = execution ? `Execution ${execution}` : actor ? `Changed by ${actor}, not by a run` : "";
  return span;
}

function historyItem(event, withKey) {
  const item = el("li", `history-item op-${event.operation}`);
  item.append(formatTime(event.at));
  if (withKey) item.append(el("code", "history-key", event.key));
  item.append(el("span", "history-op", OPERATIONS[event.operation] || event.operation));
  const change = el("span", "history-change");
  const versions = el("span", "history-version");
  if (event.operation === "update") {
    change.append(valueCode(event.oldValue, HISTORY_VALUE_CHARS, "old"), " → ", valueCode(event.newValue, HISTORY_VALUE_CHARS, "new"));
    versions.textContent = `v${event.oldVersion} → v${event.newVersion}`;
  } else if (event.operation === "insert") {
    change.append(valueCode(event.newValue, HISTORY_VALUE_CHARS, "new"));
    versions.textContent = `v${event.newVersion}`;
  } else {
    change.append(valueCode(event.oldValue, HISTORY_VALUE_CHARS, "old"));
    versions.textContent = `v${event.oldVersion}`;
  }
  const by = writer(event.execution, event.actor, "history-by");
  by.prepend("by ");
  item.append(change, versions, by);
  return item;
}

export class StatePanel {
  constructor({ api }) {
    this.api = api;
    this.root = document.getElementById("state-panel");
    this.statusEl = document.getElementById("state-status");
    this.usageEl = document.getElementById("state-usage");
    this.entriesEl = document.getElementById("state-entries");
    this.recentEl = document.getElementById("state-recent");
    this.recentList = document.getElementById("state-recent-list");
    this.countEl = document.getElementById("state-tab-count");
    this.expanded = new Set(); // keys whose history the user opened, kept open across refreshes
    this.seq = 0;
    this.historySeq = new Map();
    this.data = null;
    document.getElementById("btn-state-refresh").addEventListener("click", () => this.refresh());
  }

  async refresh() {
    const seq = ++this.seq;
    this.root.setAttribute("aria-busy", "true");
    const { ok, data } = await this.api.state();
    if (seq !== this.seq) return; // a newer refresh is on its way
    this.root.setAttribute("aria-busy", "false");
    if (!ok) return this.showStatus(`The state could not be read: ${data.detail || "try Refresh."}`, "error");
    this.data = data;
    this.render();
  }

  showStatus(text, kind = "") {
    this.statusEl.hidden = !text;
    this.statusEl.className = `state-status ${kind || "muted"}`;
    this.statusEl.textContent = text;
  }

  render() {
    const { entries, history, usage, limits } = this.data;
    this.renderUsage(entries.length, usage, limits);
    this.countEl.textContent = `(${entries.length})`;
    this.showStatus(entries.length ? "" : history.length ? NONE_LIVE : EMPTY);
    const rows = entries.map((entry) => this.entryRow(entry, history.filter((e) => e.key === entry.key)));
    if (rows.length) {
      const head = el("div", "state-row state-columns");
      head.setAttribute("aria-hidden", "true");
      for (const name of ["Key", "Value", "Version", "Expires", "Last written by"]) head.append(el("span", null, name));
      rows.unshift(head);
    }
    this.entriesEl.replaceChildren(...rows);
    const live = new Set(entries.map((e) => e.key));
    for (const key of [...this.expanded]) {
      if (!live.has(key)) this.expanded.delete(key);
      else this.entriesEl.querySelector(`[data-state-key="${CSS.escape(key)}"]`).open = true; // reloads its history
    }
    this.recentEl.hidden = history.length === 0;
    this.recentList.replaceChildren(...history.map((event) => historyItem(event, true)));
  }

  renderUsage(workflowKeys, usage, limits) {
    const org = el("span", "usage-org", `Organization: ${numbers.format(usage.liveKeys)} of ${numbers.format(usage.maxKeys)} keys · ${formatBytes(usage.storedBytes)} of ${formatBytes(usage.maxBytes)}`);
    org.title = "Live keys and stored bytes of all your organization's workflows, against its budget";
    org.classList.toggle("near-limit", usage.liveKeys >= NEAR_LIMIT * usage.maxKeys || usage.storedBytes >= NEAR_LIMIT * usage.maxBytes);
    const own = el("span", "usage-workflow", `This workflow: ${numbers.format(workflowKeys)} of ${numbers.format(limits.keysPerWorkflow)} keys`);
    own.classList.toggle("near-limit", workflowKeys >= NEAR_LIMIT * limits.keysPerWorkflow);
    this.usageEl.replaceChildren(own, org);
  }

  entryRow(entry, events) {
    const details = el("details", "state-entry");
    details.dataset.stateKey = entry.key;
    const summary = el("summary", "state-row");
    // An admin's repair keeps the last run's id on the row; the key's newest change says who wrote it.
    const last = events.find((e) => e.newVersion === entry.version);
    const by = last ? writer(last.execution, last.actor) : writer(entry.updatedByExecution, null);
    const version = el("span", "state-version", `v${entry.version}`);
    summary.append(el("code", "state-key", entry.key), valueCode(entry.value, VALUE_CHARS, "state-value"), version, formatExpiry(entry.expiresAt), by);
    details.append(summary);

    const body = el("div", "state-detail");
    body.append(el("div", "state-meta muted", `${formatBytes(entry.sizeBytes)} · last written ${new Date(entry.updatedAt).toLocaleString()}`));
    if (typeof entry.value === "object" || JSON.stringify(entry.value).length > SHORT_VALUE_CHARS) {
      body.append(el("pre", "state-full-value", JSON.stringify(entry.value, null, 2)));
    }
    const list = el("ol", "state-history");
    list.setAttribute("aria-label", `Recent history of ${entry.key}`);
    list.replaceChildren(...events.map((event) => historyItem(event, false)));
    body.append(list);
    details.append(body);
    details.addEventListener("toggle", () => {
      if (!details.open) return this.expanded.delete(entry.key);
      this.expanded.add(entry.key);
      this.loadHistory(entry.key, list);
    });
    return details;
  }

  // The key's own history (up to 50 changes), beyond what the workflow-wide list holds.
  async loadHistory(key, list) {
    const seq = (this.historySeq.get(key) || 0) + 1;
    this.historySeq.set(key, seq);
    const { ok, data } = await this.api.stateHistory(key);
    if (this.historySeq.get(key) !== seq || !list.isConnected) return;
    if (!ok) return list.replaceChildren(el("li", "field-errors", `The history could not be read: ${data.detail || "try Refresh."}`));
    list.replaceChildren(...data.results.map((event) => historyItem(event, false)));
    list.dataset.loaded = "true";
  }
}
