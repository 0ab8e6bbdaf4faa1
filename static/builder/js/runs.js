// The Runs tab: the workflow's executions from the API (GET /api/workflows/<id>/executions/, the
// API's own execution shape and filters), each openable onto the canvas. The list is live: while
// the editor is open it reads the newest page again every few seconds, puts new runs at the top,
// updates the rows of runs that moved on, and refreshes the shown run when it finishes. "Older
// runs" pages further back; the filters (status, trigger, time range) are the API's.
//
// Extension point: render() ends by calling each function in `this.hooks` with the list, so a
// panel that draws from the same runs (charts.js) adds itself with runs.hooks.push(fn).

import { getJSON } from "./http.js";
import { relativeTime, tickRelativeTimes } from "./when.js";
import { el } from "./dom.js";

const PAGE_SIZE = 20;
const POLL_MS = 2000;
const STATUS_TEXT = {
  success: "succeeded", error: "failed", running: "running", queued: "queued", interrupted: "interrupted", skipped: "skipped",
};
const RANGES = { hour: 3600, day: 86400, week: 7 * 86400 };
const RETRYABLE = new Set(["error", "interrupted"]);

export function duration(execution) {
  if (!execution.startedAt || !execution.finishedAt) return "—";
  const ms = new Date(execution.finishedAt) - new Date(execution.startedAt);
  if (ms < 1000) return `${ms} ms`;
  return ms < 60000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 60000)} min`;
}

// The API's order: newest queued first, then by id.
export function newestFirst(executions) {
  const at = (e) => (e.queuedAt ? Date.parse(e.queuedAt) : 0);
  return [...executions].sort((a, b) => at(b) - at(a) || a.id.localeCompare(b.id));
}

export function isFinished(execution) {
  return !["queued", "running"].includes(execution.status);
}

export function canRetry(execution) {
  return RETRYABLE.has(execution.status);
}

export class RunsList {
  constructor(editor) {
    this.editor = editor;
    this.list = document.getElementById("runs-list");
    this.statusEl = document.getElementById("runs-status");
    this.countEl = document.getElementById("runs-tab-count");
    this.moreButton = document.getElementById("btn-runs-more");
    this.filterEls = {
      status: document.getElementById("runs-filter-status"),
      trigger: document.getElementById("runs-filter-trigger"),
      range: document.getElementById("runs-filter-range"),
    };
    this.items = [];
    this.count = 0;
    this.nextUrl = null;
    this.seq = 0;
    this.hooks = [];
    this.window = null; // {since, until}: one bucket of the Runs chart (charts.js), else null
    this.followLatest = true; // the shown run follows the newest until the author opens one
    document.getElementById("btn-runs-refresh").addEventListener("click", () => this.refresh());
    this.moreButton.addEventListener("click", () => this.more());
    for (const select of Object.values(this.filterEls)) select.addEventListener("change", () => this.refresh());
    this.list.addEventListener("click", (e) => {
      const button = e.target.closest("[data-execution-id]");
      if (button) this.open(button.dataset.executionId);
    });
    const poll = Number(editor.root.dataset.pollMs) || POLL_MS;
    this.timer = setInterval(() => { if (!document.hidden) this.poll(); }, poll);
    this.clock = setInterval(() => tickRelativeTimes(this.list), 1000);
  }

  // The API's query for the chosen filters (time ranges end now, so each read recomputes them).
  query() {
    const params = new URLSearchParams({ pageSize: String(PAGE_SIZE) });
    const { status, trigger, range } = this.filterEls;
    if (status.value) params.set("status", status.value);
    if (trigger.value) params.set("trigger", trigger.value);
    if (RANGES[range.value]) params.set("since", new Date(Date.now() - RANGES[range.value] * 1000).toISOString());
    if (this.window) {
      // A chart bucket: its own window, inside the chosen range (the later start wins).
      if (!params.has("since") || new Date(this.window.since) > new Date(params.get("since"))) params.set("since", this.window.since);
      params.set("until", this.window.until);
    }
    return `${this.editor.urls.executions}?${params}`;
  }

  filtered() {
    return Boolean(this.window) || Object.values(this.filterEls).some((select) => select.value);
  }

  async refresh({ showLatest = false } = {}) {
    const seq = ++this.seq;
    this.list.setAttribute("aria-busy", "true");
    const { ok, data } = await getJSON(this.query());
    if (seq !== this.seq) return;
    this.list.setAttribute("aria-busy", "false");
    if (!ok) return this.failed(data);
    this.items = data.results || [];
    this.count = data.count ?? this.items.length;
    this.nextUrl = data.next || null;
    this.render();
    if (showLatest && this.items.length && !this.editor.store.ui.run) {
      this.editor.showRun(this.items[0], { lead: "Last run", switchTab: false });
    }
  }

  failed(data) {
    this.statusEl.hidden = false;
    this.statusEl.textContent = `The runs could not be read: ${data.detail || "try Refresh."}`;
  }

  // Older runs: the next page, appended (rows already listed, moved down by new runs, are skipped).
  async more() {
    if (!this.nextUrl) return;
    const { ok, data } = await getJSON(this.nextUrl);
    if (!ok) return this.failed(data);
    const known = new Set(this.items.map((e) => e.id));
    this.items.push(...(data.results || []).filter((e) => !known.has(e.id)));
    this.nextUrl = data.next || null;
    this.render();
  }

  // The live read: the newest page again. New runs go on top, listed runs take their new state,
  // and the shown run is redrawn when it moved on (it finished) or, while following, a newer run came.
  async poll() {
    const seq = this.seq;
    const { ok, data } = await getJSON(this.query());
    if (!ok || seq !== this.seq) return;
    const fresh = data.results || [];
    const byId = new Map(fresh.map((e) => [e.id, e]));
    const known = new Set(this.items.map((e) => e.id));
    const added = fresh.filter((e) => !known.has(e.id));
    // A read that left before a run finished here must not take it back to "running".
    const newer = (e) => byId.has(e.id) && !isFinished(e) && byId.get(e.id).status !== e.status;
    const changed = this.items.some(newer);
    // Reads can cross (a Refresh, a poll, a run started here): the list keeps the API's order.
    this.items = newestFirst([...added, ...this.items.map((e) => (newer(e) ? byId.get(e.id) : e))]);
    this.count = data.count ?? this.count;
    if (added.length || changed) this.render();
    const shown = this.editor.store.ui.run;
    const update = shown && byId.get(shown.id);
    if (update && !isFinished(shown) && update.status !== shown.status) {
      this.editor.showRun(update, { lead: "Run", switchTab: false, fromPoll: true });
    } else if (added.length && this.followLatest && !this.filtered() && !this.editor.store.dirty) {
      this.editor.showRun(this.items[0], { lead: "Last run", switchTab: false, fromPoll: true });
    }
    if (added.length) this.editor.statePanel.refresh(); // new runs may have written state
    if (added.length || this.editor.settings.nextRunPassed()) this.editor.settings.refresh(); // the schedule moved on
  }

  render() {
    const shownCount = this.items.length;
    this.countEl.textContent = this.count ? `(${this.count})` : "";
    this.statusEl.hidden = shownCount > 0;
    this.statusEl.textContent = this.filtered()
      ? "No runs match these filters."
      : "No runs yet. Run the workflow, call it through the API, or let its trigger fire.";
    const shown = this.editor.store.ui.run?.id;
    this.list.replaceChildren(...this.items.map((execution) => this.row(execution, execution.id === shown)));
    this.moreButton.hidden = !this.nextUrl;
    for (const hook of this.hooks) hook(this);
  }

  row(execution, current) {
    const item = el("li", "run-item");
    const button = el("button", `run-row status-${execution.status}`);
    button.type = "button";
    button.dataset.executionId = execution.id;
    if (current) button.setAttribute("aria-current", "true");
    const when = execution.startedAt || execution.queuedAt || execution.scheduledFor;
    const status = el("span", `run-pill status-${execution.status}`, STATUS_TEXT[execution.status] || execution.status);
    const time = el("time", "run-when", when ? relativeTime(when) : "—");
    if (when) {
      time.dateTime = when;
      time.dataset.relative = when;
      time.title = new Date(when).toLocaleString();
    }
    const trigger = execution.retryOf ? `retry` : execution.trigger || "—";
    button.append(
      status,
      el("span", "run-trigger", trigger),
      time,
      el("span", "run-duration", duration(execution)),
      el("code", "run-id", execution.id.slice(0, 8)),
    );
    button.setAttribute("aria-label", `Open the run ${execution.id.slice(0, 8)}: ${status.textContent}, ${execution.trigger}`);
    item.append(button);
    return item;
  }

  // A run that just started here (Run, Retry): on top, shown, whatever the next poll brings.
  prepend(execution) {
    this.items = newestFirst([execution, ...this.items.filter((e) => e.id !== execution.id)]);
    this.count += 1;
    this.render();
  }

  open(executionId) {
    const execution = this.items.find((e) => e.id === executionId);
    if (!execution) return;
    this.followLatest = execution.id === this.items[0]?.id;
    this.editor.showRun(execution, { switchTab: false }); // the list stays open; marks go on the canvas
    this.editor.setStatus(`Showing the run ${execution.id.slice(0, 8)} on the canvas.`);
    this.render();
  }
}
