// The right-hand panel: the selected node's label and its server-rendered config form (GET
// /builder/forms/<action>/), live field checks (POST to the same URL, which answers the form
// judged), reference badges, a live
// preview of each field's value, the problems Validate found, Test step, the node's pinned data
// and its data in the shown run (a tree, a table or a schema); a note's text; a connection.
//
// It draws from the store it is given and acts through `actions`, the few editor actions it uses.

import { isTrigger, nodeConfig, nodeLabel } from "./graph.js";
import { definitionOf, findingsOf, inputOf, isNote, nodeById, nodesById, pinnedData, selectedNodeId } from "./model.js";
import { isFinished } from "./runs.js";
import { renderData, viewSwitch } from "./dataviewer.js";
import { enhancePairs } from "./pairs.js";
import { renderBadges } from "./tokens.js";
import { relativeTime } from "./when.js";
import { el } from "./dom.js";

const GUIDE_KEY = "keeperstate.editor.guide";
const PREVIEW_DELAY_MS = 250;
const PREVIEW_CHARS = 300;

function asText(value) {
  if (value === undefined || value === null) return "";
  return typeof value === "string" ? value : JSON.stringify(value);
}

function shown(value) {
  const text = JSON.stringify(value);
  return text === undefined ? "nothing" : text.length > PREVIEW_CHARS ? `${text.slice(0, PREVIEW_CHARS - 1)}…` : text;
}

export class Inspector {
  // actions: renameNode, setConfig, changeTriggerType, setNoteText, deleteSelected, testStep,
  // checkQuietly, pin, unpin, say; webhookBox() draws the webhook's address for a Webhook trigger.
  constructor({ store, catalogue, api, autocomplete, actions, webhookBox }) {
    this.store = store;
    this.catalogue = catalogue;
    this.api = api;
    this.autocomplete = autocomplete;
    this.actions = actions;
    this.webhookBox = webhookBox;
    this.root = document.getElementById("inspector");
    this.seq = 0;
    this.touched = new Set();
    this.form = null;
    this.data = { side: "output", view: "tree", folded: new Set() }; // how the run data is shown
    this.previewSeq = 0;
    this.previewTimer = null;
  }

  node() {
    const id = selectedNodeId(this.store.ui);
    return id ? nodeById(this.store.doc, id) : null;
  }

  snapshot(selected) {
    if (selected?.kind === "node") return JSON.stringify(nodeById(this.store.doc, selected.id)?.data ?? null);
    if (selected?.kind === "edge") return JSON.stringify(this.store.doc.edges.find((e) => e.id === selected.id) ?? null);
    return "";
  }

  // Called by the editor's render on every store change. The panel is rebuilt when the selection
  // changes or when what it shows was changed elsewhere (undo, redo, the canvas, a pin); the
  // inspector's own edits only refresh the badges and previews, so typing keeps its focus and caret.
  render(change) {
    const selected = this.store.ui.selected;
    const key = selected ? `${selected.kind}:${selected.id}` : "";
    const data = this.snapshot(selected);
    const keys = new Set(change.keys || []);
    if (change.selection || key !== this.shownKey || (change.doc && change.origin !== "inspector" && data !== this.shownData)) {
      this.show();
      return;
    }
    if (change.doc) {
      this.shownData = data;
      this.refreshBadges();
      this.schedulePreviews();
    }
    const node = this.node();
    if (!node || isNote(node)) return;
    if (keys.has("report")) this.showReportErrors(node.id);
    if (keys.has("step")) this.renderStep();
    if (keys.has("run") || keys.has("runGraph")) {
      this.renderRunData(node);
      this.renderPin(node);
    }
    if (keys.has("preview")) this.renderPreviews();
  }

  show() {
    const selected = this.store.ui.selected;
    this.root.classList.remove("showing-guide", "guide-folded");
    this.seq += 1;
    this.form = null;
    this.touched = new Set();
    this.shownKey = selected ? `${selected.kind}:${selected.id}` : "";
    this.shownData = this.snapshot(selected);
    const node = selected?.kind === "node" ? nodeById(this.store.doc, selected.id) : null;
    if (node && isNote(node)) return this.showNote(node);
    if (node) return this.showNode(node);
    if (selected?.kind === "edge" && this.store.doc.edges.some((e) => e.id === selected.id)) return this.showEdge(selected.id);
    return this.showGuide();
  }

  // The help shown while nothing is selected, folded once the workflow has grown (or as the author
  // last left it: remembered in this browser), so the run results below get the side column.
  showGuide() {
    const box = el("details", "guide");
    box.id = "guide";
    const remembered = localStorage.getItem(GUIDE_KEY);
    box.open = remembered ? remembered === "open" : this.store.doc.nodes.length <= 2;
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
      "Drag from a node's handle onto another node to connect them, or onto empty canvas to pick the next node.",
      "Save, then Run (Ctrl+Enter) with an input JSON. Click a node to see its data of the shown run; pin it to build on it.",
    ]) steps.append(el("li", null, text));
    box.append(steps);
    box.append(el("p", "muted", "Drag a node to move it, drag the background to pan, use the wheel or + and − to zoom. "
      + "Select a node or an edge and press Delete to remove it; Ctrl+Z undoes any change."));
    this.root.replaceChildren(box);
  }

  showEdge(edgeId) {
    const edge = this.store.doc.edges.find((e) => e.id === edgeId);
    const source = nodeById(this.store.doc, edge.source);
    const target = nodeById(this.store.doc, edge.target);
    const box = el("div", "edge-panel");
    box.append(el("h2", null, "Connection"));
    const text = `${source ? nodeLabel(source) : edge.source}${edge.sourceHandle ? ` (${edge.sourceHandle} branch)` : ""} → ${target ? nodeLabel(target) : edge.target}`;
    box.append(el("p", null, text));
    box.append(this.deleteButton("Delete connection", "btn-delete-edge"));
    this.root.replaceChildren(box);
  }

  deleteButton(text, id) {
    const remove = el("button", "danger", text);
    remove.type = "button";
    remove.id = id;
    remove.addEventListener("click", () => this.actions.deleteSelected());
    return remove;
  }

  // A sticky note: its text, kept with the workflow and never run.
  showNote(node) {
    const box = el("div", "node-panel note-panel");
    box.dataset.nodeId = node.id;
    const head = el("div", "panel-head");
    head.append(el("h2", null, "Sticky note"), el("code", "muted", node.id));
    const field = el("div", "field");
    const label = el("label", null, "Text");
    label.htmlFor = "note-text";
    const text = el("textarea");
    text.id = "note-text";
    text.rows = 8;
    text.value = node.data?.text || "";
    text.addEventListener("input", () => this.actions.setNoteText(node.id, text.value));
    text.addEventListener("change", () => this.store.breakCoalescing());
    field.append(label, text, el("p", "help", "Notes are for the people who read the workflow: runs and validation ignore them."));
    box.append(head, field, this.deleteButton("Delete note", "btn-delete-node"));
    this.root.replaceChildren(box);
  }

  showNode(node) {
    const def = definitionOf(this.catalogue, node);
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
    labelInput.addEventListener("input", () => this.actions.renameNode(node.id, labelInput.value));
    labelInput.addEventListener("change", () => this.store.breakCoalescing());
    labelField.append(labelLabel, labelInput, el("p", "help", "Shown on the canvas and in @ lists; references keep working when you rename."));
    box.append(labelField);

    const problems = el("ul", "node-level-problems");
    problems.setAttribute("role", "alert");
    box.append(problems);

    const formBox = el("div", "form-box");
    formBox.append(el("p", "muted", "Loading the form…"));
    box.append(formBox);

    if (isTrigger(node)) {
      if (nodeConfig(node).triggerType === "Webhook") box.append(this.webhookBox());
      box.append(el("p", "muted small", "Every workflow has exactly one trigger; it cannot be deleted."));
    } else if (def && !def.loop) {
      box.append(this.testStepBox(node, def), this.pinBox());
    }
    box.append(this.runDataBox());
    if (!isTrigger(node)) box.append(this.deleteButton("Delete node", "btn-delete-node"));
    this.root.replaceChildren(box);
    this.renderNodeProblems(node.id);
    this.renderRunData(node);
    if (def && !def.loop && !isTrigger(node)) this.renderPin(node);
    if (def) this.loadForm(node, def, formBox);
    else formBox.replaceChildren(el("p", "field-errors", `This node's action '${nodeConfig(node).actionType}' is not registered. Delete it and pick an action from the palette.`));
  }

  // --- Test step ------------------------------------------------------------------------

  // Test step: run this node alone with the outputs of an earlier run (its upstream nodes' and its
  // input's, the other nodes' pinned data over them); the answer is the store's `step`.
  testStepBox(node, def) {
    const box = el("section", "test-step");
    box.setAttribute("aria-labelledby", "test-step-title");
    const title = el("h3", null, "Test step");
    title.id = "test-step-title";
    const label = el("label", null, "Upstream outputs from");
    label.htmlFor = "test-step-source";
    const select = el("select");
    select.id = "test-step-source";
    const current = this.store.ui.run;
    const runs = this.store.ui.runs.items.filter(isFinished);
    if (current && !runs.some((r) => r.id === current.id)) runs.unshift(current);
    for (const run of runs) {
      const option = el("option", null, `run ${run.id.slice(0, 8)} · ${run.status} · ${relativeTime(run.finishedAt || run.queuedAt)}`);
      option.value = run.id;
      option.selected = run.id === current?.id;
      select.append(option);
    }
    select.append(Object.assign(el("option", null, "no run (the trigger gives {})"), { value: "" }));
    const button = el("button", "small-button", "Test step");
    button.type = "button";
    button.id = "btn-test-step";
    button.addEventListener("click", () => this.actions.testStep(node.id, select.value));
    box.append(title, label, select, button);
    let help = "Runs only this node, as the chosen run would have; nothing is recorded as a run.";
    if (def.writesState) help = "This node writes to the workflow's own state (the state its runs read); you are asked before it runs.";
    else if (def.egress === "user") help = "Runs only this node, as the chosen run would have: its request is really sent (a POST reaches its receiver). It writes no state of this workflow; nothing is recorded as a run.";
    box.append(el("p", "help", help));
    const out = el("div", "test-step-result");
    out.id = "test-step-result";
    out.setAttribute("role", "status");
    box.append(out);
    return box;
  }

  renderStep() {
    const out = this.root.querySelector("#test-step-result");
    const step = this.store.ui.step;
    if (!out) return;
    if (!step || step.nodeId !== selectedNodeId(this.store.ui)) return out.replaceChildren();
    if (step.note) return out.replaceChildren(el("p", "muted", step.note));
    const { result } = step;
    const ok = result.success;
    const head = el("p", ok ? "step-ok" : "step-fail",
      ok ? `✓ Succeeded${step.handle ? ` (${step.handle} branch)` : ""}${step.wroteState ? " · wrote the workflow's state" : ""}` : `✗ ${result.code || "failed"}: ${result.error || ""}`);
    const parts = [head];
    if (ok) parts.push(el("pre", "step-data", JSON.stringify(result.data, null, 1)));
    out.replaceChildren(...parts);
  }

  // --- pinned data ----------------------------------------------------------------------

  pinBox() {
    const box = el("section", "pin-box");
    box.setAttribute("aria-labelledby", "pin-title");
    const title = el("h3", null, "Pinned data");
    title.id = "pin-title";
    box.append(title, el("div", "pin-body"));
    return box;
  }

  // Pinned: what stands in for the output, with Edit and Unpin. Not pinned: pin the shown run's
  // output, or typed JSON.
  renderPin(node) {
    const body = this.root.querySelector(".pin-body");
    if (!body) return;
    const pinned = pinnedData(node);
    const parts = [];
    const editor = (initial) => {
      const form = el("div", "pin-editor");
      const label = el("label", null, "Output to pin (a JSON object)");
      label.htmlFor = "pin-text";
      const text = el("textarea");
      text.id = "pin-text";
      text.rows = 6;
      text.spellcheck = false;
      text.value = initial;
      const error = el("p", "field-errors");
      error.setAttribute("role", "alert");
      const save = el("button", "small-button", "Pin this data");
      save.type = "button";
      save.id = "btn-pin-typed";
      save.addEventListener("click", () => {
        let value;
        try {
          value = JSON.parse(text.value);
        } catch (exc) {
          error.textContent = `Not JSON: ${exc.message}`;
          return;
        }
        if (!value || typeof value !== "object" || Array.isArray(value)) {
          error.textContent = 'Pin a JSON object, like the node\'s output: {"status": 200, "body": {…}}.';
          return;
        }
        this.actions.pin(node.id, value, "typed data");
      });
      form.append(label, text, error, save);
      return form;
    };
    if (pinned) {
      parts.push(el("p", "help", "Run and Test step in this editor use this data as the node's output instead of running it. "
        + "Scheduled, webhook and API runs always run the node."));
      parts.push(renderData(pinned, "tree", { base: [], refOf: (path) => this.refOf(node, path), onCopy: (token) => this.copy(token) }));
      const unpin = el("button", "small-button", "Unpin");
      unpin.type = "button";
      unpin.id = "btn-unpin";
      unpin.addEventListener("click", () => this.actions.unpin(node.id));
      const edit = el("details", "pin-edit");
      edit.append(el("summary", null, "Edit the pinned data"), editor(JSON.stringify(pinned, null, 2)));
      parts.push(unpin, edit);
    } else {
      parts.push(el("p", "help", "Pin an output while building: Run and Test step here use it instead of running the node "
        + "(scheduled, webhook and API runs never do)."));
      const result = this.store.ui.run?.nodeResults?.[node.id];
      const fromRun = el("button", "small-button", "Pin the output of the shown run");
      fromRun.type = "button";
      fromRun.id = "btn-pin-run";
      fromRun.disabled = !result?.success;
      fromRun.title = result?.success ? "" : "The shown run has no output of this node to pin.";
      fromRun.addEventListener("click", () => this.actions.pin(node.id, result.data, `the output of run ${this.store.ui.run.id.slice(0, 8)}`));
      const typed = el("details", "pin-edit");
      typed.append(el("summary", null, "Pin typed data"), editor("{}"));
      parts.push(fromRun, typed);
    }
    body.replaceChildren(...parts);
  }

  // --- the node's data in the shown run ---------------------------------------------------

  runDataBox() {
    const box = el("section", "run-data");
    box.setAttribute("aria-labelledby", "run-data-title");
    const title = el("h3", null, "Data of the shown run");
    title.id = "run-data-title";
    box.append(title, el("div", "run-data-body"));
    return box;
  }

  // The reference a path of this node's output is read by: <<@id:Label.path>>.
  refOf(node, path) {
    const text = path.reduce((t, step) => (typeof step === "number" ? `${t}[${step}]` : t ? `${t}.${step}` : step), "");
    return text ? `<<@${node.id}:${nodeLabel(node)}.${text}>>` : null;
  }

  async copy(token) {
    try {
      await navigator.clipboard.writeText(token);
      this.actions.say(`Copied ${token}: paste it into a field of a later node.`, "ok");
    } catch {
      this.actions.say(`Copy this reference: ${token} (the browser did not allow copying).`);
    }
  }

  renderRunData(node) {
    const body = this.root.querySelector(".run-data-body");
    if (!body) return;
    const run = this.store.ui.run;
    const result = run?.nodeResults?.[node.id];
    if (!run || !result) {
      body.replaceChildren(el("p", "muted small", run ? "This node did not run in the shown run." : "No run shown yet: Run the workflow, or open a run in Runs."));
      return;
    }
    const { side, view } = this.data;
    const sides = el("div", "view-switch");
    sides.setAttribute("role", "group");
    sides.setAttribute("aria-label", "Input or output");
    for (const [value, text] of [["input", "Input"], ["output", "Output"]]) {
      const button = el("button", "small-button", text);
      button.type = "button";
      button.dataset.side = value;
      button.setAttribute("aria-pressed", String(side === value));
      button.addEventListener("click", () => {
        this.data.side = value;
        this.renderRunData(node);
      });
      sides.append(button);
    }
    const views = viewSwitch(view, (next) => {
      this.data.view = next;
      this.renderRunData(node);
    }, "Show the data as");
    const bar = el("div", "run-data-bar");
    bar.append(sides, views);
    const parts = [bar];
    if (this.store.runIsStale()) parts.push(el("p", "run-stale-note", "From a run of the graph before your edits."));
    const ctx = {
      folded: this.data.folded,
      onFold: (path, folded) => (folded ? this.data.folded.add(path) : this.data.folded.delete(path)),
      onCopy: (token) => this.copy(token),
    };
    if (side === "input") {
      // the outputs of the nodes connected into this one, by label: each path reads that node
      const labels = new Map(this.store.doc.nodes.map((n) => [nodeLabel(n), n]));
      const value = inputOf(this.store.doc, node, run);
      parts.push(renderData(value, view, { ...ctx, refOf: (path) => {
        if (isTrigger(node)) return this.refOf(node, path);
        const source = labels.get(path[0]);
        return source ? this.refOf(source, path.slice(1)) : null;
      } }));
    } else if (result.success) {
      if (result.pinned) parts.push(el("p", "muted small", "The node's pinned data stood in for its output in this run."));
      parts.push(renderData(result.data, view, { ...ctx, refOf: (path) => this.refOf(node, path) }));
    } else {
      parts.push(el("p", "step-fail", result.skipped ? "Skipped: its branch was not taken." : `✗ ${result.code || "failed"}: ${result.error || ""}`));
    }
    body.replaceChildren(...parts);
  }

  // --- the config form ------------------------------------------------------------------

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
      html = await this.api.form(`${def.formUrl}?${params}`);
    } catch (error) {
      if (seq === this.seq) formBox.replaceChildren(el("p", "field-errors", error.message));
      return;
    }
    if (seq !== this.seq) return; // another node was selected meanwhile
    formBox.innerHTML = html; // the server's own template, escaped there
    const form = formBox.querySelector("form");
    this.form = form;
    form.addEventListener("submit", (e) => e.preventDefault());
    for (const input of form.querySelectorAll("input[name], textarea[name], select[name]")) {
      if (input.type === "hidden") continue;
      input.addEventListener("input", () => this.fieldInput(node.id, input));
      input.addEventListener("change", () => {
        this.store.breakCoalescing(); // the next edit of this field is a new undo step
        this.fieldChanged(node.id, input);
      });
      // Leaving a field shows its errors, the form's and the validator's (a TTL of -5), at once.
      input.addEventListener("blur", () => this.fieldLeft(input));
      if (input.dataset.references) this.autocomplete.attach(input);
    }
    enhancePairs(form, this.autocomplete);
    this.refreshBadges();
    this.showReportErrors(node.id);
    if (!isTrigger(node)) this.schedulePreviews(0);
  }

  fieldInput(nodeId, input) {
    if (!nodeById(this.store.doc, nodeId) || input.name === "triggerType") return;
    // The text as typed: the server's parser of the field types it when the workflow is saved.
    const text = input.value;
    this.actions.setConfig(nodeId, input.name, text.trim() ? text : undefined);
  }

  fieldChanged(nodeId, input) {
    if (input.name === "triggerType") {
      this.actions.changeTriggerType(nodeId, input.value);
      return;
    }
    this.touched.add(input.name);
    this.check();
  }

  fieldLeft(input) {
    if (input.name === "triggerType" || !input.value.trim()) return;
    this.touched.add(input.name);
    this.check();
    this.actions.checkQuietly();
  }

  // Ask the server to judge the form; show the errors of the fields the user has touched.
  async check() {
    const form = this.form;
    const seq = this.seq;
    if (!form) return;
    const { html } = await this.api.checkForm(form);
    if (seq !== this.seq || form !== this.form) return;
    const judged = new DOMParser().parseFromString(html, "text/html");
    const errors = {};
    for (const box of judged.querySelectorAll(".field[data-field]")) {
      errors[box.dataset.field] = [...box.querySelectorAll(".field-errors li")].map((li) => li.textContent);
    }
    // The form's own errors, and the validator's findings at the field (which a later check must
    // not wipe: the form judges one node alone, the validator the graph).
    const findings = findingsOf(this.store.ui.report, selectedNodeId(this.store.ui));
    for (const box of form.querySelectorAll(".field[data-field]")) {
      const name = box.dataset.field;
      if (!this.touched.has(name)) continue;
      const reported = findings.filter((f) => f.field === name).map((f) => f.message);
      this.setFieldErrors(name, [...new Set([...(errors[name] || []), ...reported])]);
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

  // Errors Validate or Save reported for this node: at their field, or above the form; a field
  // no longer reported is cleared (an undo took the mistake back).
  showReportErrors(nodeId) {
    const findings = findingsOf(this.store.ui.report, nodeId);
    for (const box of this.form?.querySelectorAll(".field[data-field]") || []) {
      const name = box.dataset.field;
      const messages = findings.filter((f) => f.field === name).map((f) => f.message);
      if (messages.length) {
        this.setFieldErrors(name, messages);
        this.touched.add(name);
      } else if (box.classList.contains("has-error") && this.reported?.has(name)) {
        this.setFieldErrors(name, []);
      }
    }
    this.reported = new Set(findings.map((f) => f.field).filter(Boolean));
    this.renderNodeProblems(nodeId);
  }

  renderNodeProblems(nodeId) {
    const list = this.root.querySelector(".node-level-problems");
    if (!list) return;
    const fieldNames = new Set([...(this.form?.querySelectorAll(".field[data-field]") || [])].map((b) => b.dataset.field));
    const items = findingsOf(this.store.ui.report, nodeId)
      .filter((f) => !f.field || !fieldNames.has(f.field))
      .map((f) => el("li", f.level === "warning" ? "warning" : "", f.message));
    list.replaceChildren(...items);
  }

  refreshBadges() {
    if (!this.form) return;
    const nodes = nodesById(this.store.doc);
    for (const box of this.form.querySelectorAll(".ref-badges[data-badges-for]")) {
      const input = this.form.querySelector(`[name="${CSS.escape(box.dataset.badgesFor)}"]`);
      if (input) renderBadges(box, input.value, nodes);
    }
  }

  // --- the live preview -----------------------------------------------------------------

  // Each field that computes something (an expression, or text with a reference) shows what it
  // would be now, against the last run's data with the pinned data over it (POST …/preview/, the
  // runner's own evaluator; nothing runs). Asked a moment after typing stops.
  schedulePreviews(delay = PREVIEW_DELAY_MS) {
    clearTimeout(this.previewTimer);
    if (!this.form) return;
    this.previewTimer = setTimeout(() => this.askPreviews(), delay);
  }

  async askPreviews() {
    const node = this.node();
    const form = this.form;
    if (!node || !form || isTrigger(node)) return;
    const seq = ++this.previewSeq;
    const config = nodeConfig(node);
    const outputs = [...form.querySelectorAll("output.field-preview[data-preview-for]")];
    const wanted = outputs.filter((o) => o.dataset.previewKind === "expression" || o.dataset.previewKind === "assignments"
      || asText(config[o.dataset.previewFor]).includes("<<@"));
    const answers = {};
    await Promise.all(wanted.map(async (output) => {
      const field = output.dataset.previewFor;
      if (config[field] === undefined) return;
      const { ok, data } = await this.api.preview({ nodes: this.store.doc.nodes, edges: this.store.doc.edges, node: node.id, field, value: config[field] });
      answers[field] = ok ? data.result : { success: false, error: data.detail || "The preview could not be computed." };
    }));
    if (seq !== this.previewSeq || form !== this.form) return;
    this.store.set({ preview: { nodeId: node.id, fields: answers } });
  }

  renderPreviews() {
    const preview = this.store.ui.preview;
    if (!this.form || !preview || preview.nodeId !== selectedNodeId(this.store.ui)) return;
    for (const output of this.form.querySelectorAll("output.field-preview[data-preview-for]")) {
      const result = preview.fields[output.dataset.previewFor];
      output.hidden = !result;
      if (!result) continue;
      output.classList.toggle("preview-error", !result.success);
      output.textContent = result.success ? `= ${shown(result.data)}` : `✗ ${result.code ? `${result.code}: ` : ""}${result.error}`;
      output.title = result.success ? "The value with the last run's data (and pinned data); nothing was run." : "";
    }
  }
}
