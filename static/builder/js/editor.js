// The workflow editor: owns the graph being edited and wires the palette, the canvas, the
// inspector, the @ autocomplete and the Save / Validate / Run endpoints together.

import { ReferenceAutocomplete } from "./autocomplete.js";
import { Canvas } from "./canvas.js";
import { isTrigger, nextEdgeId, nextLabel, nextNodeId, nodeConfig, nodeLabel, reaches } from "./graph.js";
import { postJSON } from "./http.js";
import { Inspector } from "./inspector.js";
import { RunPanel } from "./runpanel.js";
import { StatePanel } from "./state-panel.js";

const NODE_GAP_Y = 150;
const NODE_GAP_X = 260;

class Editor {
  constructor(root) {
    const graph = JSON.parse(document.getElementById("workflow-graph").textContent);
    this.catalogue = JSON.parse(document.getElementById("builder-catalogue").textContent);
    this.urls = {
      save: root.dataset.saveUrl,
      validate: root.dataset.validateUrl,
      run: root.dataset.runUrl,
      state: root.dataset.stateUrl,
      references: root.dataset.referencesUrl,
      login: root.dataset.loginUrl,
    };
    this.state = {
      id: graph.id,
      name: graph.name,
      nodes: Array.isArray(graph.nodes) ? graph.nodes : [],
      edges: Array.isArray(graph.edges) ? graph.edges : [],
      selected: null,
      connectFrom: null,
      dirty: false,
      revision: 0,
      report: null,
      run: null,
    };
    this.statusEl = document.getElementById("status");
    this.dirtyEl = document.getElementById("dirty-indicator");
    this.nameEl = document.getElementById("workflow-name");
    this.bannerEl = document.getElementById("connect-banner");
    this.autocomplete = new ReferenceAutocomplete(this);
    this.canvas = new Canvas(this);
    this.inspector = new Inspector(this);
    this.runPanel = new RunPanel(this);
    this.statePanel = new StatePanel(this);
    this.bind();
    this.canvas.render();
    this.inspector.show();
    this.suggestRunInput();
    this.statePanel.refresh();
    document.body.dataset.editorReady = "true";
  }

  bind() {
    document.querySelector(".palette").addEventListener("click", (e) => {
      const entry = e.target.closest(".palette-entry");
      if (!entry) return;
      if (entry.dataset.kind === "trigger") this.useTrigger(entry.dataset.entryId);
      else this.addAction(entry.dataset.entryId);
    });
    document.getElementById("btn-save").addEventListener("click", () => this.save());
    document.getElementById("btn-validate").addEventListener("click", () => this.validate());
    document.getElementById("problems-close").addEventListener("click", () => { document.getElementById("problems").hidden = true; });
    document.getElementById("problems-list").addEventListener("click", (e) => {
      const item = e.target.closest("[data-node-id]");
      if (item && this.node(item.dataset.nodeId)) this.selectNode(item.dataset.nodeId);
    });
    this.nameEl.addEventListener("input", () => { this.state.name = this.nameEl.value; this.markDirty(); });
    document.addEventListener("keydown", (e) => this.onKeyDown(e));
    window.addEventListener("resize", () => { this.canvas.resize(); this.canvas.renderEdges(); });
    window.addEventListener("beforeunload", (e) => {
      if (!this.state.dirty) return;
      e.preventDefault(); // the browser asks before unsaved changes are lost
      e.returnValue = "";
    });
  }

  onKeyDown(event) {
    const typing = event.target.closest("input, textarea, select, [contenteditable]");
    if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === "s") {
      event.preventDefault();
      this.save();
    } else if (event.key === "Escape" && this.state.connectFrom) {
      this.cancelConnect("Connection cancelled.");
    } else if (!typing && (event.key === "Delete" || event.key === "Backspace") && this.state.selected) {
      event.preventDefault();
      this.deleteSelected();
    }
  }

  // --- lookups -------------------------------------------------------------------------

  node(id) {
    return this.state.nodes.find((n) => n.id === id) || null;
  }

  nodesById() {
    return new Map(this.state.nodes.map((n) => [n.id, n]));
  }

  selectedNodeId() {
    return this.state.selected?.kind === "node" ? this.state.selected.id : null;
  }

  definitionOf(node) {
    const config = nodeConfig(node);
    if (isTrigger(node)) return this.catalogue.triggers[config.triggerType || "Manual"] || null;
    return this.catalogue.actions[config.actionType] || null;
  }

  findingsOf(nodeId) {
    const report = this.state.report;
    if (!report) return [];
    return [
      ...report.errors.filter((f) => f.nodeId === nodeId).map((f) => ({ ...f, level: "error" })),
      ...report.warnings.filter((f) => f.nodeId === nodeId).map((f) => ({ ...f, level: "warning" })),
    ];
  }

  problemsOf(nodeId) {
    const report = this.state.report;
    if (!report) return { errors: 0, warnings: 0 };
    return {
      errors: report.errors.filter((f) => f.nodeId === nodeId).length,
      warnings: report.warnings.filter((f) => f.nodeId === nodeId).length,
    };
  }

  // --- status --------------------------------------------------------------------------

  setStatus(text, kind = "") {
    this.statusEl.textContent = text;
    this.statusEl.className = `status ${kind}`;
  }

  markDirty() {
    this.state.dirty = true;
    this.state.revision += 1;
    this.dirtyEl.hidden = false;
  }

  // --- selection -----------------------------------------------------------------------

  selectNode(id) {
    this.state.selected = { kind: "node", id };
    this.canvas.render();
    this.inspector.show();
  }

  selectEdge(id) {
    if (this.state.connectFrom) this.cancelConnect();
    this.state.selected = { kind: "edge", id };
    this.canvas.render();
    this.inspector.show();
  }

  backgroundClicked() {
    if (this.state.connectFrom) return this.cancelConnect("Connection cancelled.");
    if (!this.state.selected) return;
    this.state.selected = null;
    this.canvas.render();
    this.inspector.show();
  }

  nodeClicked(id) {
    if (this.state.connectFrom) return this.finishConnect(id);
    if (this.selectedNodeId() !== id) this.selectNode(id);
  }

  nodeMoved() {
    this.markDirty();
  }

  // --- graph changes -------------------------------------------------------------------

  freePosition(position) {
    const pos = { ...position };
    const clash = () => this.state.nodes.some((n) => Math.abs((n.position?.x ?? 0) - pos.x) < 200 && Math.abs((n.position?.y ?? 0) - pos.y) < 110);
    while (clash()) pos.x += NODE_GAP_X;
    return pos;
  }

  // Where a node placed under this one goes: a card with a long summary is taller than the gap.
  belowOf(node) {
    const height = this.canvas.cards.get(node.id)?.offsetHeight || 0;
    return (node.position?.y ?? 0) + Math.max(NODE_GAP_Y, height + 40);
  }

  addAction(actionId) {
    const def = this.catalogue.actions[actionId];
    if (!def) return;
    const nodes = this.state.nodes;
    const after = this.node(this.selectedNodeId());
    const lowest = nodes.reduce((y, n) => Math.max(y, this.belowOf(n)), 0);
    const base = after ? { x: after.position?.x ?? 0, y: this.belowOf(after) } : { x: 0, y: lowest };
    const node = {
      id: nextNodeId(nodes, def.id),
      type: "action",
      position: this.freePosition(base),
      data: { label: nextLabel(nodes, def.label), type: "action", config: { actionType: def.id } },
    };
    nodes.push(node);
    let message = `Added ${node.data.label}.`;
    if (after) {
      const afterDef = this.definitionOf(after);
      const handles = afterDef?.sourceHandles || [];
      if (handles.length && !afterDef.defaultHandle) {
        // a branching node (Condition): the author chooses the branch
        message += ` Connect it: click the ${handles.join(" or ")} handle of ${nodeLabel(after)}, then click ${node.data.label}.`;
      } else {
        const edge = { id: nextEdgeId(this.state.edges), source: after.id, target: node.id };
        if (handles.length) edge.sourceHandle = afterDef.defaultHandle;
        this.state.edges.push(edge);
        message = `Added ${node.data.label} after ${nodeLabel(after)}${edge.sourceHandle ? ` (${edge.sourceHandle})` : ""}.`;
      }
    }
    this.markDirty();
    this.selectNode(node.id);
    this.setStatus(message);
  }

  useTrigger(triggerId) {
    const trigger = this.state.nodes.find(isTrigger);
    if (trigger) {
      this.changeTriggerType(trigger.id, triggerId);
      this.selectNode(trigger.id);
      return;
    }
    const node = {
      id: this.node("trigger") ? nextNodeId(this.state.nodes, "trigger") : "trigger",
      type: "trigger",
      position: this.freePosition({ x: 0, y: 0 }),
      data: { label: "Trigger", type: "trigger", config: { triggerType: triggerId, sampleInput: {} } },
    };
    this.state.nodes.unshift(node);
    this.markDirty();
    this.selectNode(node.id);
  }

  changeTriggerType(nodeId, triggerType) {
    const node = this.node(nodeId);
    if (!node || !this.catalogue.triggers[triggerType]) return;
    const config = nodeConfig(node);
    if (config.triggerType !== triggerType) {
      config.triggerType = triggerType;
      this.markDirty();
      this.setStatus(`The trigger is now ${triggerType}.`);
    }
    this.canvas.render();
    this.inspector.show();
  }

  renameNode(nodeId, label) {
    const node = this.node(nodeId);
    if (!node) return;
    node.data.label = label;
    this.markDirty();
    this.canvas.render();
    this.inspector.refreshBadges();
  }

  configChanged(nodeId) {
    this.markDirty();
    this.canvas.render();
    const node = this.node(nodeId);
    if (node && isTrigger(node)) this.suggestRunInput();
  }

  suggestRunInput() {
    const trigger = this.state.nodes.find(isTrigger);
    if (trigger) this.runPanel.suggestInput(nodeConfig(trigger).sampleInput);
  }

  deleteSelected() {
    const selected = this.state.selected;
    if (!selected) return;
    if (selected.kind === "edge") {
      this.state.edges = this.state.edges.filter((e) => e.id !== selected.id);
      this.setStatus("Connection deleted.");
    } else {
      const node = this.node(selected.id);
      if (!node) return;
      if (isTrigger(node)) return this.setStatus("The trigger cannot be deleted: every workflow starts with one.", "error");
      this.state.nodes = this.state.nodes.filter((n) => n.id !== node.id);
      this.state.edges = this.state.edges.filter((e) => e.source !== node.id && e.target !== node.id);
      this.setStatus(`Deleted ${nodeLabel(node)}. References to it are marked until you pick new values.`);
    }
    this.state.selected = null;
    this.markDirty();
    this.canvas.render();
    this.inspector.show();
  }

  // --- connecting ----------------------------------------------------------------------

  startConnect(nodeId, handle) {
    const node = this.node(nodeId);
    if (!node) return;
    this.state.connectFrom = { nodeId, handle };
    document.getElementById("canvas").classList.add("connecting");
    this.bannerEl.hidden = false;
    this.bannerEl.textContent = `Connecting from ${nodeLabel(node)}${handle ? ` (${handle} branch)` : ""}: click the node to run next. Esc cancels.`;
    this.canvas.render();
  }

  cancelConnect(message) {
    this.state.connectFrom = null;
    document.getElementById("canvas").classList.remove("connecting");
    this.bannerEl.hidden = true;
    this.canvas.render();
    if (message) this.setStatus(message);
  }

  finishConnect(targetId) {
    const { nodeId: sourceId, handle } = this.state.connectFrom;
    const target = this.node(targetId);
    let problem = null;
    if (targetId === sourceId) problem = "A node cannot connect to itself. Click another node, or press Esc.";
    else if (isTrigger(target)) problem = "Nothing connects into the trigger: it starts the run. Click another node, or press Esc.";
    else if (this.state.edges.some((e) => e.source === sourceId && e.target === targetId && (e.sourceHandle || null) === handle)) problem = "These nodes are already connected.";
    else if (reaches(this.state.edges, targetId, sourceId)) problem = "That connection would make a loop; a workflow runs from the trigger forward only.";
    if (problem) {
      this.setStatus(problem, "error");
      return;
    }
    const edge = { id: nextEdgeId(this.state.edges), source: sourceId, target: targetId };
    if (handle) edge.sourceHandle = handle;
    this.state.edges.push(edge);
    this.markDirty();
    const source = this.node(sourceId);
    this.cancelConnect();
    this.setStatus(`Connected ${nodeLabel(source)}${handle ? ` (${handle})` : ""} → ${nodeLabel(target)}.`);
  }

  // --- server round trips --------------------------------------------------------------

  graphPayload() {
    return { nodes: this.state.nodes, edges: this.state.edges };
  }

  applyReport(report) {
    this.state.report = report;
    const box = document.getElementById("problems");
    const list = document.getElementById("problems-list");
    const items = [];
    for (const [level, findings] of [["error", report.errors], ["warning", report.warnings]]) {
      for (const f of findings) {
        const li = document.createElement("li");
        li.className = level;
        const node = f.nodeId ? this.node(f.nodeId) : null;
        if (node) li.dataset.nodeId = f.nodeId;
        const where = node ? `${nodeLabel(node)}${f.field ? ` · ${f.field}` : ""}` : "Workflow";
        const strong = document.createElement("strong");
        strong.textContent = `${level === "error" ? "✗" : "!"} ${where}: `;
        li.append(strong, document.createTextNode(f.message), Object.assign(document.createElement("code"), { className: "muted", textContent: ` ${f.code}` }));
        items.push(li);
      }
    }
    list.replaceChildren(...items);
    box.hidden = items.length === 0;
    this.canvas.render();
    const selected = this.selectedNodeId();
    if (selected) this.inspector.showReportErrors(selected);
  }

  async validate() {
    this.setStatus("Validating…", "busy");
    const { ok, data } = await postJSON(this.urls.validate, this.graphPayload());
    if (!ok) return this.setStatus(data.detail || "Validation failed.", "error");
    this.applyReport(data);
    const e = data.errors.length;
    const w = data.warnings.length;
    if (!e && !w) this.setStatus("No problems found.", "ok");
    else this.setStatus(`${e} error${e === 1 ? "" : "s"}, ${w} warning${w === 1 ? "" : "s"}: see Problems and the marked nodes.`, e ? "error" : "");
    return data;
  }

  async save() {
    const revision = this.state.revision;
    this.setStatus("Saving…", "busy");
    const { ok, data } = await postJSON(this.urls.save, { name: this.state.name, ...this.graphPayload() });
    if (!ok) {
      if (data.report) this.applyReport(data.report);
      this.setStatus(`Not saved: ${data.detail || "the server refused the workflow."}`, "error");
      return false;
    }
    if (this.state.revision === revision) {
      // Adopt the normalised graph (integer literals as numbers, sample input as an object).
      this.state.nodes = data.workflow.nodes;
      this.state.edges = data.workflow.edges;
      this.state.dirty = false;
      this.dirtyEl.hidden = true;
    }
    this.applyReport(data.report);
    document.title = `${data.workflow.name} · KeeperState`;
    this.setStatus(`Saved at ${new Date().toLocaleTimeString()}.`, "ok");
    return true;
  }

  async run(input) {
    if (this.state.dirty && !(await this.save())) {
      this.runPanel.showStatus("Not run: the workflow could not be saved. Fix the problems first.", "error");
      return null;
    }
    const { ok, data } = await postJSON(this.urls.run, { input });
    if (!ok) {
      this.runPanel.showStatus(`Not run: ${data.detail || "the server refused the run."}`, "error");
      return null;
    }
    this.state.run = data.execution;
    this.canvas.render();
    this.statePanel.refresh(); // a run may have written state, even a failed one
    this.setStatus(data.execution.status === "success" ? "Run succeeded." : "Run failed: see the results.", data.execution.status === "success" ? "ok" : "error");
    return data.execution;
  }
}

new Editor(document.getElementById("editor-root"));
