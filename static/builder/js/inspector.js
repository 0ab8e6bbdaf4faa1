// The right-hand panel: the selected node's label and its server-rendered config form
// (GET /builder/forms/<action>/), live field checks (POST to the same URL, which answers the form
// judged), reference badges, and the problems Validate found for this node.

import { getHTML, postForm } from "./http.js";
import { isTrigger, nodeConfig, nodeLabel } from "./graph.js";
import { enhancePairs } from "./pairs.js";
import { isFinished } from "./runs.js";
import { renderBadges } from "./tokens.js";
import { relativeTime } from "./when.js";
import { el } from "./dom.js";

const GUIDE_KEY = "keeperstate.editor.guide";

function asText(value) {
  if (value === undefined || value === null) return "";
  return typeof value === "string" ? value : JSON.stringify(value);
}

export class Inspector {
  constructor(editor) {
    this.editor = editor;
    this.root = document.getElementById("inspector");
    this.seq = 0;
    this.touched = new Set();
    this.form = null;
  }

  // Called by the editor's render on every store change. The panel is rebuilt when the selection
  // changes or when what it shows was changed elsewhere (undo, redo, the canvas); the inspector's
  // own edits only refresh the badges, so typing keeps its focus and caret.
  render(change) {
    const selected = this.editor.store.ui.selected;
    const key = selected ? `${selected.kind}:${selected.id}` : "";
    const shown = this.snapshot(selected);
    if (change.selection || key !== this.shownKey || (change.doc && change.origin !== "inspector" && shown !== this.shownData)) {
      this.show();
    } else if (change.doc) {
      this.shownData = shown;
      this.refreshBadges();
    } else if (change.origin === "report" && this.selectedNode()) {
      this.showReportErrors(this.selectedNode().id);
    } else if (change.origin === "step") {
      this.renderStep();
    }
  }

  selectedNode() {
    const id = this.editor.selectedNodeId();
    return id ? this.editor.node(id) : null;
  }

  snapshot(selected) {
    if (selected?.kind === "node") return JSON.stringify(this.editor.node(selected.id)?.data ?? null);
    if (selected?.kind === "edge") return JSON.stringify(this.editor.state.edges.find((e) => e.id === selected.id) ?? null);
    return "";
  }

  show() {
    const selected = this.editor.store.ui.selected;
    this.root.classList.remove("showing-guide", "guide-folded");
    this.seq += 1;
    this.form = null;
    this.touched = new Set();
    this.shownKey = selected ? `${selected.kind}:${selected.id}` : "";
    this.shownData = this.snapshot(selected);
    if (selected?.kind === "node" && this.editor.node(selected.id)) return this.showNode(this.editor.node(selected.id));
    if (selected?.kind === "edge" && this.editor.state.edges.some((e) => e.id === selected.id)) return this.showEdge(selected.id);
    return this.showGuide();
  }

  // The help shown while nothing is selected, folded once the workflow has grown (or as the author
  // last left it: remembered in this browser), so the run results below get the side column.
  showGuide() {
    const box = el("details", "guide");
    box.id = "guide";
    const remembered = localStorage.getItem(GUIDE_KEY);
    box.open = remembered ? remembered === "open" : this.editor.state.nodes.length <= 2;
    box.addEventListener("toggle", () => {
      localStorage.setItem(GUIDE_KEY, box.open ? "open" : "closed");
      this.root.classList.toggle("guide-folded", !box.open);
    });
    this.root.classList.toggle("guide-folded", !box.open);
    this.root.classList.add("showing-guide");
    const summary = el("summary");
    summary.append(el("h2", null, "Build a workflow"));
    box.append(summary);
    const steps = el("ol");
    for (const text of [
      "Select the Trigger and give it a sample input such as {\"block\": 100}: its fields become pickable.",
      "With a node selected, click an action in the palette: it is added after that node and connected.",
      "Fill the action's form. In fields marked “@ reference”, type @ to pick a value of an earlier node.",
      "Condition nodes have a true and a false handle: click one, then click the node to run on that branch.",
      "Save, then Run with an input JSON. Validate shows problems at the node and the field; Runs lists earlier runs.",
    ]) steps.append(el("li", null, text));
    box.append(steps);
    box.append(el("p", "muted", "Drag a node to move it, drag the background to pan, use the wheel or + and − to zoom. "
      + "Select a node or an edge and press Delete to remove it; Ctrl+Z undoes any change."));
    this.root.replaceChildren(box);
  }

  showEdge(edgeId) {
    const edge = this.editor.state.edges.find((e) => e.id === edgeId);
    if (!edge) return this.showGuide();
    const source = this.editor.node(edge.source);
    const target = this.editor.node(edge.target);
    const box = el("div", "edge-panel");
    box.append(el("h2", null, "Connection"));
    const text = `${source ? nodeLabel(source) : edge.source}${edge.sourceHandle ? ` (${edge.sourceHandle} branch)` : ""} → ${target ? nodeLabel(target) : edge.target}`;
    box.append(el("p", null, text));
    const remove = el("button", "danger", "Delete connection");
    remove.type = "button";
    remove.id = "btn-delete-edge";
    remove.addEventListener("click", () => this.editor.deleteSelected());
    box.append(remove);
    this.root.replaceChildren(box);
  }

  showNode(node) {
    const def = this.editor.definitionOf(node);
    const box = el("div", "node-panel");
    box.dataset.nodeId = node.id;
    const head = el("div", "panel-head");
    head.append(el("h2", null, def ? (isTrigger(node) ? `Trigger: ${def.label}` : def.label) : "Unknown action"));
    head.append(el("code", "muted", node.id));
    box.append(head);

    const labelField = el("div", "field");
    const labelLabel = el("label", null, "Label");
    labelLabel.htmlFor = "node-label";
    const labelInput = el("input");
    labelInput.id = "node-label";
    labelInput.value = nodeLabel(node);
    labelInput.autocomplete = "off";
    labelInput.addEventListener("input", () => this.editor.renameNode(node.id, labelInput.value));
    labelInput.addEventListener("change", () => this.editor.store.breakCoalescing());
    labelField.append(labelLabel, labelInput, el("p", "help", "Shown on the canvas and in @ lists; references keep working when you rename."));
    box.append(labelField);

    const problems = el("ul", "node-level-problems");
    problems.setAttribute("role", "alert");
    box.append(problems);

    const formBox = el("div", "form-box");
    formBox.append(el("p", "muted", "Loading the form…"));
    box.append(formBox);

    if (isTrigger(node)) {
      if (nodeConfig(node).triggerType === "Webhook") box.append(this.editor.settings.webhookBox());
      box.append(el("p", "muted small", "Every workflow has exactly one trigger; it cannot be deleted."));
    } else {
      if (def && !def.loop) box.append(this.testStepBox(node, def));
      const remove = el("button", "danger", "Delete node");
      remove.type = "button";
      remove.id = "btn-delete-node";
      remove.addEventListener("click", () => this.editor.deleteSelected());
      box.append(remove);
    }
    this.root.replaceChildren(box);
    this.renderNodeProblems(node.id);
    if (def) this.loadForm(node, def, formBox);
    else formBox.replaceChildren(el("p", "field-errors", `This node's action '${nodeConfig(node).actionType}' is not registered. Delete it and pick an action from the palette.`));
  }

  // Test step: run this node alone with the outputs of an earlier run (its upstream nodes' and
  // its input's); the answer is the store's `step`, drawn by renderStep().
  testStepBox(node, def) {
    const box = el("section", "test-step");
    box.setAttribute("aria-labelledby", "test-step-title");
    const title = el("h3", null, "Test step");
    title.id = "test-step-title";
    const label = el("label", null, "Upstream outputs from");
    label.htmlFor = "test-step-source";
    const select = el("select");
    select.id = "test-step-source";
    const shown = this.editor.store.ui.run;
    const runs = this.editor.runs.items.filter(isFinished);
    if (shown && !runs.some((r) => r.id === shown.id)) runs.unshift(shown);
    for (const run of runs) {
      const option = el("option", null, `run ${run.id.slice(0, 8)} · ${run.status} · ${relativeTime(run.finishedAt || run.queuedAt)}`);
      option.value = run.id;
      option.selected = run.id === shown?.id;
      select.append(option);
    }
    select.append(Object.assign(el("option", null, "no run (the trigger gives {})"), { value: "" }));
    const button = el("button", "small-button", "Test step");
    button.type = "button";
    button.id = "btn-test-step";
    button.addEventListener("click", () => this.editor.testStep(node.id, select.value));
    box.append(title, label, select, button);
    box.append(el("p", "help", def.sideEffects
      ? "This node writes to the workflow's own state (the state its runs read); you are asked before it runs."
      : "Runs only this node, as the chosen run would have; nothing is recorded as a run."));
    const out = el("div", "test-step-result");
    out.id = "test-step-result";
    out.setAttribute("role", "status");
    box.append(out);
    return box;
  }

  renderStep() {
    const out = this.root.querySelector("#test-step-result");
    const step = this.editor.store.ui.step;
    if (!out) return;
    if (!step || step.nodeId !== this.editor.selectedNodeId()) return out.replaceChildren();
    if (step.note) return out.replaceChildren(el("p", "muted", step.note));
    const { result } = step;
    const ok = result.success;
    const head = el("p", ok ? "step-ok" : "step-fail",
      ok ? `✓ Succeeded${step.handle ? ` (${step.handle} branch)` : ""}${step.wroteState ? " · wrote the workflow's state" : ""}` : `✗ ${result.code || "failed"}: ${result.error || ""}`);
    const parts = [head];
    if (ok) parts.push(el("pre", "step-data", JSON.stringify(result.data, null, 1)));
    out.replaceChildren(...parts);
  }

  async loadForm(node, def, formBox) {
    const seq = this.seq;
    const config = nodeConfig(node);
    const params = new URLSearchParams();
    for (const field of def.configFields) {
      if (config[field.name] !== undefined && config[field.name] !== null) params.set(field.name, asText(config[field.name]));
    }
    if (isTrigger(node)) params.set("triggerType", def.id);
    let html;
    try {
      html = await getHTML(`${def.formUrl}?${params}`, this.editor.urls.login);
    } catch (error) {
      if (seq === this.seq) formBox.replaceChildren(el("p", "field-errors", error.message));
      return;
    }
    if (seq !== this.seq) return; // another node was selected meanwhile
    formBox.innerHTML = html;
    const form = formBox.querySelector("form");
    this.form = form;
    form.addEventListener("submit", (e) => e.preventDefault());
    for (const input of form.querySelectorAll("input[name], textarea[name], select[name]")) {
      if (input.type === "hidden") continue;
      input.addEventListener("input", () => this.fieldInput(node.id, input));
      input.addEventListener("change", () => {
        this.editor.store.breakCoalescing(); // the next edit of this field is a new undo step
        this.fieldChanged(node.id, input);
      });
      // Leaving a field shows its errors, the form's and the validator's (a TTL of -5), at once.
      input.addEventListener("blur", () => this.fieldLeft(node.id, input));
      if (input.dataset.references) this.editor.autocomplete.attach(input);
    }
    enhancePairs(form, this.editor.autocomplete);
    this.refreshBadges();
    this.showReportErrors(node.id);
  }

  fieldInput(nodeId, input) {
    const node = this.editor.node(nodeId);
    if (!node || input.name === "triggerType") return;
    // The text as typed: the server's parser of the field types it when the workflow is saved.
    const text = input.value;
    this.editor.setConfig(nodeId, input.name, text.trim() ? text : undefined);
  }

  fieldChanged(nodeId, input) {
    if (input.name === "triggerType") {
      this.editor.changeTriggerType(nodeId, input.value);
      return;
    }
    this.touched.add(input.name);
    this.check();
  }

  fieldLeft(nodeId, input) {
    if (input.name === "triggerType" || !input.value.trim()) return;
    this.touched.add(input.name);
    this.check();
    this.editor.checkQuietly();
  }

  // Ask the server to judge the form; show the errors of the fields the user has touched.
  async check() {
    const form = this.form;
    const seq = this.seq;
    if (!form) return;
    const { html } = await postForm(form.action, form);
    if (seq !== this.seq || form !== this.form) return;
    const judged = new DOMParser().parseFromString(html, "text/html");
    const errors = {};
    for (const box of judged.querySelectorAll(".field[data-field]")) {
      errors[box.dataset.field] = [...box.querySelectorAll(".field-errors li")].map((li) => li.textContent);
    }
    for (const box of form.querySelectorAll(".field[data-field]")) {
      const name = box.dataset.field;
      if (!this.touched.has(name)) continue;
      this.setFieldErrors(name, errors[name] || []);
    }
  }

  setFieldErrors(name, messages) {
    const box = this.form?.querySelector(`.field[data-field="${CSS.escape(name)}"]`);
    if (!box) return false;
    box.classList.toggle("has-error", messages.length > 0);
    const list = box.querySelector(".field-errors");
    list.replaceChildren(...messages.map((m) => el("li", null, m)));
    if (messages.length) box.closest("details")?.setAttribute("open", "");
    return true;
  }

  // Errors Validate or Save reported for this node: at their field, or above the form.
  showReportErrors(nodeId) {
    const findings = this.editor.findingsOf(nodeId);
    for (const finding of findings) {
      if (finding.field && this.setFieldErrors(finding.field, findings.filter((f) => f.field === finding.field).map((f) => f.message))) {
        this.touched.add(finding.field);
      }
    }
    this.renderNodeProblems(nodeId);
  }

  renderNodeProblems(nodeId) {
    const list = this.root.querySelector(".node-level-problems");
    if (!list) return;
    const fieldNames = new Set([...(this.form?.querySelectorAll(".field[data-field]") || [])].map((b) => b.dataset.field));
    const items = this.editor.findingsOf(nodeId)
      .filter((f) => !f.field || !fieldNames.has(f.field))
      .map((f) => el("li", f.level === "warning" ? "warning" : "", f.message));
    list.replaceChildren(...items);
  }

  refreshBadges() {
    if (!this.form) return;
    const nodes = this.editor.nodesById();
    for (const box of this.form.querySelectorAll(".ref-badges[data-badges-for]")) {
      const input = this.form.querySelector(`[name="${CSS.escape(box.dataset.badgesFor)}"]`);
      if (input) renderBadges(box, input.value, nodes);
    }
  }
}
