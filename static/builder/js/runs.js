// The Runs tab: the workflow's executions from the API (the API's own execution shape and
// filters), each openable onto the canvas. The list is live: while the editor is open it reads the
// newest page again every few seconds, puts new runs at the top, updates the rows of runs that
// moved on, and refreshes the shown run when it finishes. "Older runs" pages further back; the
// filters (status, trigger, time range) are the API's. The list lives in the store (`ui.runs`);
// render() draws it.
//
// Extension point: render() ends by calling each function in `this.hooks` with the list, so a
// panel that draws from the same runs adds itself with runs.hooks.push(fn).

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
  // actions: showRun(execution, options), say(text), stateWritten(), scheduleMoved(ran)
  constructor({ store, api, actions, pollMs }) {
    this.store = store;
    this.api = api;
    this.actions = actions;
    this.list = document.getElementById("runs-list");
    this.statusEl = document.getElementById("runs-status");
    this.countEl = document.getElementById("runs-tab-count");
    this.moreButton = document.getElementById("btn-runs-more");
    this.filterEls = {
      status: document.getElementById("runs-filter-status"),
      trigger: document.getElementById("runs-filter-trigger"),
      range: document.getElementById("runs-filter-range"),
    };
    this.seq = 0;
    this.hooks = [];
    document.getElementById("btn-runs-refresh").addEventListener("click", () => this.refresh());
    this.moreButton.addEventListener("click", () => this.more());
    for (const select of Object.values(this.filterEls)) select.addEventListener("change", () => this.refresh());
    this.list.addEventListener("click", (e) => {
      const button = e.target.closest("[data-execution-id]");
      if (button) this.open(button.dataset.executionId);
    });
    this.timer = setInterval(() => { if (!document.hidden) this.poll(); }, pollMs || POLL_MS);
    this.clock = setInterval(() => tickRelativeTimes(this.list), 1000);
  }

  get state() {
    return this.store.ui.runs;
  }

  update(changes) {
    this.store.set({ runs: { ...this.state, ...changes } });
  }

  // The API's query for the chosen filters (time ranges end now, so each read recomputes them).
  query() {
    const params = new URLSearchParams({ pageSize: String(PAGE_SIZE) });
    const { status, trigger, range } = this.filterEls;
    const window = this.state.window; // one bucket of the Runs chart (charts.js), else null
    if (status.value) params.set("status", status.value);
    if (trigger.value) params.set("trigger", trigger.value);
    if (RANGES[range.value]) params.set("since", new Date(Date.now() - RANGES[range.value] * 1000).toISOString());
    if (window) {
      // A chart bucket: its own window, inside the chosen range (the later start wins).
      if (!params.has("since") || new Date(window.since) > new Date(params.get("since"))) params.set("since", window.since);
      params.set("until", window.until);
    }
    return params;
  }

  filtered() {
    return Boolean(this.state.window) || Object.values(this.filterEls).some((select) => select.value);
  }

  // Only the runs of one chart bucket ({since, until}), or all again (null).
  showWindow(window) {
    this.update({ window });
    return this.refresh();
  }

  async refresh({ showLatest = false } = {}) {
    const seq = ++this.seq;
    this.list.setAttribute("aria-busy", "true");
    const { ok, data } = await this.api.executions(this.query());
    if (seq !== this.seq) return;
    this.list.setAttribute("aria-busy", "false");
    if (!ok) return this.failed(data);
    const items = data.results || [];
    this.update({ items, count: data.count ?? items.length, next: data.next || null, error: null });
    if (showLatest && items.length && !this.store.ui.run) {
      this.actions.showRun(items[0], { lead: "Last run", switchTab: false, fromServer: true });
    }
  }

  failed(data) {
    this.update({ error: `The runs could not be read: ${data.detail || "try Refresh."}` });
  }

  // Older runs: the next page, appended (rows already listed, moved down by new runs, are skipped).
  async more() {
    if (!this.state.next) return;
    const { ok, data } = await this.api.nextPage(this.state.next);
    if (!ok) return this.failed(data);
    const known = new Set(this.state.items.map((e) => e.id));
    this.update({ items: [...this.state.items, ...(data.results || []).filter((e) => !known.has(e.id))], next: data.next || null });
  }

  // The live read: the newest page again. New runs go on top, listed runs take their new state,
  // and the shown run is redrawn when it moved on (it finished) or, while following, a newer run came.
  async poll() {
    const seq = this.seq;
    const { ok, data } = await this.api.executions(this.query());
    if (!ok || seq !== this.seq) return;
    const fresh = data.results || [];
    const byId = new Map(fresh.map((e) => [e.id, e]));
    const { items } = this.state;
    const known = new Set(items.map((e) => e.id));
    const added = fresh.filter((e) => !known.has(e.id));
    // A read that left before a run finished here must not take it back to "running".
    const newer = (e) => byId.has(e.id) && !isFinished(e) && byId.get(e.id).status !== e.status;
    const changed = items.some(newer);
    if (added.length || changed || (data.count ?? this.state.count) !== this.state.count) {
      // Reads can cross (a Refresh, a poll, a run started here): the list keeps the API's order.
      this.update({ items: newestFirst([...added, ...items.map((e) => (newer(e) ? byId.get(e.id) : e))]), count: data.count ?? this.state.count });
    }
    const shown = this.store.ui.run;
    const update = shown && byId.get(shown.id);
    if (update && !isFinished(shown) && update.status !== shown.status) {
      this.actions.showRun(update, { lead: "Run", switchTab: false, fromServer: true });
    } else if (added.length && this.state.followLatest && !this.filtered() && !this.store.dirty) {
      this.actions.showRun(this.state.items[0], { lead: "Last run", switchTab: false, fromServer: true });
    }
    if (added.length) this.actions.stateWritten(); // new runs may have written state
    this.actions.scheduleMoved(added.length > 0); // a new run, or a due tick: the next run moved on
  }

  render() {
    const { items, count, next, error } = this.state;
    this.countEl.textContent = count ? `(${count})` : "";
    this.statusEl.hidden = items.length > 0 && !error;
    this.statusEl.textContent = error || (this.filtered()
      ? "No runs match these filters."
      : "No runs yet. Run the workflow, call it through the API, or let its trigger fire.");
    const shown = this.store.ui.run?.id;
    this.list.replaceChildren(...items.map((execution) => this.row(execution, execution.id === shown)));
    this.moreButton.hidden = !next;
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
    const trigger = execution.retryOf ? "retry" : execution.trigger || "—";
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

  open(executionId) {
    const execution = this.state.items.find((e) => e.id === executionId);
    if (!execution) return;
    this.update({ followLatest: execution.id === this.state.items[0]?.id });
    this.actions.showRun(execution, { switchTab: false, fromServer: true }); // the list stays open; marks go on the canvas
    this.actions.say(`Showing the run ${execution.id.slice(0, 8)} on the canvas.`);
  }
}
