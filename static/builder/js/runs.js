// The Runs tab: the workflow's recent executions from the API (GET /api/workflows/<id>/executions/,
// the API's own execution shape), each openable onto the canvas. After a reload the newest run
// is shown, so the page never says "No run yet." while runs exist.

import { getJSON } from "./http.js";

const PAGE_SIZE = 20;
const relative = new Intl.RelativeTimeFormat("en", { numeric: "auto" });
const STATUS_TEXT = {
  success: "succeeded", error: "failed", running: "running", queued: "queued", interrupted: "interrupted", skipped: "skipped",
};

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

export function ago(iso, now = Date.now()) {
  const seconds = Math.round((new Date(iso) - now) / 1000);
  for (const [size, unit] of [[86400, "day"], [3600, "hour"], [60, "minute"]]) {
    if (Math.abs(seconds) >= size) return relative.format(Math.round(seconds / size), unit);
  }
  return relative.format(seconds, "second");
}

export function duration(execution) {
  if (!execution.startedAt || !execution.finishedAt) return "—";
  const ms = new Date(execution.finishedAt) - new Date(execution.startedAt);
  if (ms < 1000) return `${ms} ms`;
  return ms < 60000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 60000)} min`;
}

export class RunsList {
  constructor(editor) {
    this.editor = editor;
    this.url = `${editor.urls.executions}?pageSize=${PAGE_SIZE}`;
    this.list = document.getElementById("runs-list");
    this.statusEl = document.getElementById("runs-status");
    this.countEl = document.getElementById("runs-tab-count");
    this.items = [];
    this.seq = 0;
    document.getElementById("btn-runs-refresh").addEventListener("click", () => this.refresh());
    this.list.addEventListener("click", (e) => {
      const button = e.target.closest("[data-execution-id]");
      if (button) this.open(button.dataset.executionId);
    });
  }

  async refresh({ showLatest = false } = {}) {
    const seq = ++this.seq;
    this.list.setAttribute("aria-busy", "true");
    const { ok, data } = await getJSON(this.url);
    if (seq !== this.seq) return;
    this.list.setAttribute("aria-busy", "false");
    if (!ok) {
      this.statusEl.hidden = false;
      this.statusEl.textContent = `The runs could not be read: ${data.detail || "try Refresh."}`;
      return;
    }
    this.items = data.results || [];
    this.render();
    if (showLatest && this.items.length && !this.editor.store.ui.run) {
      this.editor.store.set({ run: this.items[0], runRevision: this.editor.store.revision }, { origin: "run" });
      this.editor.runPanel.showExecution(this.items[0], { lead: "Last run", switchTab: false });
    }
  }

  render() {
    const count = this.items.length;
    this.countEl.textContent = count ? `(${count}${count === PAGE_SIZE ? "+" : ""})` : "";
    this.statusEl.hidden = count > 0;
    this.statusEl.textContent = "No runs yet. Run the workflow, call it through the API, or let its trigger fire.";
    const shown = this.editor.store.ui.run?.id;
    this.list.replaceChildren(...this.items.map((execution) => this.row(execution, execution.id === shown)));
  }

  row(execution, current) {
    const item = el("li", "run-item");
    const button = el("button", `run-row status-${execution.status}`);
    button.type = "button";
    button.dataset.executionId = execution.id;
    if (current) button.setAttribute("aria-current", "true");
    const when = execution.startedAt || execution.queuedAt || execution.scheduledFor;
    const status = el("span", `run-pill status-${execution.status}`, STATUS_TEXT[execution.status] || execution.status);
    const time = el("time", "run-when", when ? ago(when) : "—");
    if (when) {
      time.dateTime = when;
      time.title = new Date(when).toLocaleString();
    }
    button.append(
      status,
      el("span", "run-trigger", execution.trigger || "—"),
      time,
      el("span", "run-duration", duration(execution)),
      el("code", "run-id", execution.id.slice(0, 8)),
    );
    button.setAttribute("aria-label", `Open the run ${execution.id.slice(0, 8)}: ${status.textContent}, ${time.textContent}`);
    item.append(button);
    return item;
  }

  open(executionId) {
    const execution = this.items.find((e) => e.id === executionId);
    if (!execution) return;
    this.editor.showRun(execution, { switchTab: false }); // the list stays open; marks go on the canvas
    this.editor.setStatus(`Showing the run ${execution.id.slice(0, 8)} on the canvas.`);
    this.render();
  }
}
