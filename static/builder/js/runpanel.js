// The Run panel: the run input JSON, and each node's result of the shown run; its output area
// has three tabs: the run results, the list of recent runs (runs.js) and the read-only State panel.
// It draws the store's run, run status and tab, and acts through `actions` (run, retry,
// selectNode, showTab).

import { isTrigger, nodeConfig, nodeLabel } from "./graph.js";
import { inputOf, nodeById } from "./model.js";
import { canRetry } from "./runs.js";
import { el } from "./dom.js";

function pretty(value) {
  return JSON.stringify(value, null, 1).replace(/\n\s*/g, " ");
}

export class RunPanel {
  constructor({ store, actions }) {
    this.store = store;
    this.actions = actions;
    this.input = document.getElementById("run-input");
    this.status = document.getElementById("run-status");
    this.staleNote = document.getElementById("run-stale-note");
    this.results = document.getElementById("run-results");
    this.retryButton = document.getElementById("btn-retry");
    this.panel = document.getElementById("run-panel");
    this.panelButton = document.getElementById("btn-panel");
    document.getElementById("btn-run").addEventListener("click", () => this.run());
    this.retryButton.addEventListener("click", () => this.actions.retry(this.store.ui.run?.id));
    this.panelButton.addEventListener("click", () => this.store.set({ panelCollapsed: !this.store.ui.panelCollapsed }));
    const select = (e) => {
      const row = e.target.closest("[data-node-id]");
      if (row && nodeById(this.store.doc, row.dataset.nodeId)) this.actions.selectNode(row.dataset.nodeId);
    };
    this.results.addEventListener("click", select);
    this.results.addEventListener("keydown", (e) => { if (e.key === "Enter") select(e); });
    this.input.addEventListener("input", () => { this.input.dataset.edited = "true"; });
    this.tabs = [...document.querySelectorAll(".output-tab")];
    for (const tab of this.tabs) {
      tab.addEventListener("click", () => this.actions.showTab(tab.dataset.tab));
      tab.addEventListener("keydown", (e) => {
        if (e.key !== "ArrowLeft" && e.key !== "ArrowRight") return;
        const next = this.tabs[(this.tabs.indexOf(tab) + (e.key === "ArrowRight" ? 1 : this.tabs.length - 1)) % this.tabs.length];
        this.actions.showTab(next.dataset.tab);
        next.focus();
      });
    }
    this.drawn = null; // the run whose results are drawn
  }

  // Called on every store change: the shown tab, the run status, the results of a newly shown run,
  // and whether the graph has changed since it ran; the run input follows the trigger's sample.
  render(change) {
    const ui = this.store.ui;
    const keys = new Set(change.keys || []);
    if (keys.has("tab") || !this.tabShown) this.renderTab();
    if (keys.has("panelCollapsed")) {
      this.panel.classList.toggle("collapsed", Boolean(ui.panelCollapsed));
      this.panelButton.setAttribute("aria-expanded", ui.panelCollapsed ? "false" : "true");
      this.panelButton.textContent = ui.panelCollapsed ? "Show runs panel" : "Hide runs panel";
    }
    if (change.doc && change.origin !== "inspector") this.suggestInput();
    if (ui.run && ui.run !== this.drawn) this.renderResults(ui.run);
    if (keys.has("runStatus") || keys.has("run")) this.renderStatus();
    if (ui.run) {
      const stale = this.store.runIsStale();
      this.results.classList.toggle("stale", stale);
      this.staleNote.hidden = !stale;
    }
  }

  renderTab() {
    const current = this.store.ui.tab || "results";
    this.tabShown = current;
    for (const t of this.tabs) {
      const on = t.dataset.tab === current;
      t.setAttribute("aria-selected", on ? "true" : "false");
      t.tabIndex = on ? 0 : -1;
      document.getElementById(t.getAttribute("aria-controls")).hidden = !on;
    }
  }

  // Pre-fill the input with the trigger's sample input while the user has not typed one.
  suggestInput() {
    if (this.input.dataset.edited) return;
    const trigger = this.store.doc.nodes.find(isTrigger);
    const sample = trigger ? nodeConfig(trigger).sampleInput : null;
    if (sample && typeof sample === "object" && !Array.isArray(sample)) this.input.value = JSON.stringify(sample);
  }

  run() {
    this.input.dataset.edited = "true";
    let input;
    try {
      input = JSON.parse(this.input.value.trim() || "{}");
    } catch (error) {
      return this.store.set({ runStatus: { text: `The run input is not valid JSON: ${error.message}`, kind: "error" }, tab: "results" });
    }
    if (input === null || typeof input !== "object" || Array.isArray(input)) {
      return this.store.set({ runStatus: { text: 'The run input must be a JSON object, for example {"block": 100}.', kind: "error" }, tab: "results" });
    }
    return this.actions.run(input);
  }

  // A status names the execution it describes, so that two runs ending in the same second with the
  // same input still read as two outcomes; any other status (Running…, a refusal) names none.
  renderStatus() {
    const { run, runStatus } = this.store.ui;
    const describes = run && runStatus?.executionId === run.id;
    if (!describes) {
      if (!runStatus) return;
      this.status.className = `run-status ${runStatus.kind || ""}`;
      this.status.textContent = runStatus.text;
      delete this.status.dataset.executionId;
      return;
    }
    const lead = runStatus.lead || "Run";
    const when = run.finishedAt || run.startedAt || run.queuedAt;
    const time = when ? new Date(when).toLocaleTimeString() : "?";
    const how = run.trigger ? ` (${run.trigger})` : "";
    let text;
    let kind = "";
    if (run.status === "success") [text, kind] = [`${lead} succeeded at ${time}${how} with input ${JSON.stringify(run.input)}.`, "ok"];
    else if (run.status === "error") [text, kind] = [`${lead} failed at ${time}${how}: ${run.error}`, "error"];
    else text = `${lead} is ${run.status} (${time}${how}).`;
    if (run.retryOf) text += ` Retry of ${run.retryOf.slice(0, 8)}.`;
    this.status.className = `run-status ${kind}`;
    this.status.textContent = text;
    this.status.dataset.executionId = run.id;
    this.retryButton.hidden = !canRetry(run);
    this.retryButton.setAttribute("aria-label", `Retry the run ${run.id.slice(0, 8)} with the same input`);
  }

  // Each node's result of the shown run.
  renderResults(execution) {
    this.drawn = execution;
    const rows = [];
    for (const node of this.store.doc.nodes) {
      if (node.type === "note") continue;
      const result = (execution.nodeResults || {})[node.id];
      const row = el("li", "result");
      row.dataset.nodeId = node.id;
      row.tabIndex = 0; // Enter selects the node, like a click
      const head = el("div", "result-head");
      let mark;
      let note;
      if (!result) {
        row.classList.add("result-none");
        [mark, note] = ["·", "did not run"];
      } else if (result.skipped) {
        row.classList.add("result-skipped");
        [mark, note] = ["–", "skipped (its branch was not taken)"];
      } else if (result.success) {
        row.classList.add("result-ok");
        [mark, note] = ["✓", result.pinned ? "pinned data used" : "succeeded"];
      } else {
        row.classList.add("result-fail");
        [mark, note] = ["✗", "failed"];
      }
      if (result?.iterationCount) note += ` · ran for ${result.iterationCount} item${result.iterationCount === 1 ? "" : "s"}, the last shown`;
      head.append(el("span", "result-mark", mark), el("strong", "result-label", nodeLabel(node)), el("code", "muted", node.id), el("span", "result-note", note));
      row.append(head);
      if (result && !result.skipped) row.append(this.io("Input", inputOf(this.store.doc, node, execution), "result-input"));
      if (result?.success) row.append(this.io("Output", result.data, "result-data"));
      if (result && !result.success && !result.skipped) {
        const error = el("div", "result-error");
        error.append(el("span", "error-code", result.code || "ERROR"), el("span", "error-message", result.error || ""));
        row.append(error);
        if (result.details) row.append(el("pre", "result-details", pretty(result.details)));
      }
      if (result?.iterations?.length) row.append(this.iterations(result));
      rows.push(row);
    }
    this.results.replaceChildren(...rows);
  }

  io(title, value, className) {
    const box = el("div", `result-io ${className}`);
    box.append(el("span", "result-io-title", title), el("pre", null, pretty(value)));
    return box;
  }

  // A For Each body node's result per item (the first 100 are recorded), folded away.
  iterations(result) {
    const box = el("details", "result-iterations");
    const kept = result.iterations.length;
    const more = result.iterationCount > kept ? ` (the first ${kept} recorded)` : "";
    box.append(el("summary", null, `Each item: ${result.iterationCount}${more}`));
    const list = el("ol", "iteration-list");
    list.start = 0;
    result.iterations.forEach((item, index) => {
      const entry = el("li", item.success ? "result-ok" : item.skipped ? "result-skipped" : "result-fail");
      entry.dataset.index = String(index);
      const text = item.success ? pretty(item.data) : item.skipped ? "skipped" : `${item.code}: ${item.error}`;
      entry.append(el("code", "iteration-index", `#${index}`), el("span", "iteration-text", ` ${text}`));
      list.append(entry);
    });
    box.append(list);
    return box;
  }
}
