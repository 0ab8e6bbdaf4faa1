// The Run panel: the run input JSON, and each node's result of the shown run; its output area
// has three tabs: the run results, the list of recent runs (runs.js) and the read-only State panel.

import { isTrigger, nodeLabel } from "./graph.js";
import { canRetry } from "./runs.js";
import { el } from "./dom.js";

function pretty(value) {
  return JSON.stringify(value, null, 1).replace(/\n\s*/g, " ");
}

export class RunPanel {
  constructor(editor) {
    this.editor = editor;
    this.input = document.getElementById("run-input");
    this.status = document.getElementById("run-status");
    this.staleNote = document.getElementById("run-stale-note");
    this.results = document.getElementById("run-results");
    this.retryButton = document.getElementById("btn-retry");
    document.getElementById("btn-run").addEventListener("click", () => this.run());
    this.retryButton.addEventListener("click", () => this.editor.retry(this.retryButton.dataset.executionId));
    this.results.addEventListener("click", (e) => {
      const row = e.target.closest("[data-node-id]");
      if (row && this.editor.node(row.dataset.nodeId)) this.editor.selectNode(row.dataset.nodeId);
    });
    this.results.addEventListener("keydown", (e) => {
      const row = e.target.closest("[data-node-id]");
      if (e.key === "Enter" && row && this.editor.node(row.dataset.nodeId)) this.editor.selectNode(row.dataset.nodeId);
    });
    this.tabs = [...document.querySelectorAll(".output-tab")];
    for (const tab of this.tabs) {
      tab.addEventListener("click", () => this.showTab(tab));
      tab.addEventListener("keydown", (e) => {
        if (e.key !== "ArrowLeft" && e.key !== "ArrowRight") return;
        const next = this.tabs[(this.tabs.indexOf(tab) + (e.key === "ArrowRight" ? 1 : this.tabs.length - 1)) % this.tabs.length];
        this.showTab(next);
        next.focus();
      });
    }
  }

  showTab(tab) {
    for (const t of this.tabs) {
      const on = t === tab;
      t.setAttribute("aria-selected", on ? "true" : "false");
      t.tabIndex = on ? 0 : -1;
      document.getElementById(t.getAttribute("aria-controls")).hidden = !on;
    }
    if (tab.id === "tab-state") this.editor.statePanel.refresh();
    if (tab.id === "tab-runs") this.editor.runs.refresh();
  }

  showTabById(id) {
    this.showTab(document.getElementById(id));
  }

  // Called on every store change: the results list names nodes by their current labels, and
  // says when the graph has changed since the shown run.
  render() {
    const run = this.editor.store.ui.run;
    if (!run) return;
    const stale = this.editor.store.runIsStale();
    this.results.classList.toggle("stale", stale);
    this.staleNote.hidden = !stale;
  }

  // Pre-fill the input with the trigger's sample input while the user has not typed one.
  suggestInput(sample) {
    if (this.input.dataset.edited) return;
    if (sample && typeof sample === "object" && !Array.isArray(sample)) this.input.value = JSON.stringify(sample);
  }

  async run() {
    this.input.dataset.edited = "true";
    let input;
    try {
      input = JSON.parse(this.input.value.trim() || "{}");
    } catch (error) {
      return this.showStatus(`The run input is not valid JSON: ${error.message}`, "error");
    }
    if (input === null || typeof input !== "object" || Array.isArray(input)) {
      return this.showStatus('The run input must be a JSON object, for example {"block": 100}.', "error");
    }
    this.showStatus("Running…", "busy");
    this.showTabById("tab-results"); // Run always shows its results, whichever tab was open
    await this.editor.run(input);
  }

  // A status names the execution it describes (showExecution sets it), so that two runs ending in
  // the same second with the same input still read as two outcomes; any other status names none.
  showStatus(text, kind) {
    this.status.className = `run-status ${kind || ""}`;
    this.status.textContent = text;
    delete this.status.dataset.executionId;
  }

  // Each node's result of `execution`; `lead` names where the run comes from ("Run", "Last run").
  showExecution(execution, { lead = "Run", switchTab = true } = {}) {
    if (switchTab) this.showTabById("tab-results");
    const when = execution.finishedAt || execution.startedAt || execution.queuedAt;
    const time = when ? new Date(when).toLocaleTimeString() : "?";
    const how = execution.trigger ? ` (${execution.trigger})` : "";
    if (execution.status === "success") this.showStatus(`${lead} succeeded at ${time}${how} with input ${JSON.stringify(execution.input)}.`, "ok");
    else if (execution.status === "error") this.showStatus(`${lead} failed at ${time}${how}: ${execution.error}`, "error");
    else this.showStatus(`${lead} is ${execution.status} (${time}${how}).`, "");
    this.status.dataset.executionId = execution.id;
    this.retryButton.hidden = !canRetry(execution);
    this.retryButton.dataset.executionId = execution.id;
    this.retryButton.setAttribute("aria-label", `Retry the run ${execution.id.slice(0, 8)} with the same input`);
    if (execution.retryOf) this.status.append(` Retry of ${execution.retryOf.slice(0, 8)}.`);
    const rows = [];
    for (const node of this.editor.state.nodes) {
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
        [mark, note] = ["✓", "succeeded"];
      } else {
        row.classList.add("result-fail");
        [mark, note] = ["✗", "failed"];
      }
      if (result?.iterationCount) note += ` · ran for ${result.iterationCount} item${result.iterationCount === 1 ? "" : "s"}, the last shown`;
      head.append(el("span", "result-mark", mark), el("strong", "result-label", nodeLabel(node)), el("code", "muted", node.id), el("span", "result-note", note));
      row.append(head);
      if (result && !result.skipped) row.append(this.io("Input", this.inputOf(node, execution), "result-input"));
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
    this.render();
  }

  // What a node received in `execution`: the trigger the run input; any other node the outputs
  // of the nodes it is connected from (by label), which its references read.
  inputOf(node, execution) {
    if (isTrigger(node)) return execution.input;
    const input = {};
    for (const edge of this.editor.state.edges.filter((e) => e.target === node.id)) {
      const source = this.editor.node(edge.source);
      const result = (execution.nodeResults || {})[edge.source];
      if (source && result?.success) input[nodeLabel(source)] = result.data;
    }
    return input;
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
