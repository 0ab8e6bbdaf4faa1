// The workflow editor: one store (store.js) holds the document and the view state; every action
// below changes it through the store, and the store's one listener, render(), redraws the canvas,
// the inspector, the toolbar and the run marks. Undo and redo are the store's.

import { ReferenceAutocomplete } from "./autocomplete.js";
import { copyFragment, pasteFragment, readFragment } from "./clipboard.js";
import { Canvas } from "./canvas.js";
import { RunCharts, StateCharts } from "./charts.js";
import { isTrigger, nextEdgeId, nextLabel, nextNodeId, nodeConfig, nodeLabel, reaches } from "./graph.js";
import { getJSON, postJSON, problem, sendJSON } from "./http.js";
import { Inspector } from "./inspector.js";
import { anyOverlap, autoLayout, freeSpot } from "./layout.js";
import { RunPanel } from "./runpanel.js";
import { RunsList } from "./runs.js";
import { WorkflowSettings } from "./settings.js";
import { StatePanel } from "./state-panel.js";
import { Store } from "./store.js";
import { findTokens } from "./tokens.js";

const BELOW_GAP = 60;

class Editor {
  constructor(root) {
    const graph = JSON.parse(document.getElementById("workflow-graph").textContent);
    this.catalogue = JSON.parse(document.getElementById("builder-catalogue").textContent);
    this.workflowId = graph.id;
    this.root = root;
    // Every JSON the editor reads or writes is the API's: saves, runs, the @ offers, the State panel.
    this.urls = {
      workflow: root.dataset.workflowApiUrl,
      validate: root.dataset.validateUrl,
      execute: root.dataset.executeUrl,
      state: root.dataset.stateUrl,
      stateHistory: root.dataset.stateHistoryUrl,
      references: root.dataset.referencesUrl,
      executions: root.dataset.executionsUrl,
      testStep: root.dataset.testStepUrl,
      retry: root.dataset.retryUrl, // with EXECUTION_ID for the execution's id
      login: root.dataset.loginUrl,
      export: root.dataset.exportUrl,
      import: root.dataset.importUrl,
      editor: root.dataset.editorUrl, // with the nil UUID for a workflow's id
    };
    this.store = new Store({
      name: graph.name,
      nodes: Array.isArray(graph.nodes) ? graph.nodes : [],
      edges: Array.isArray(graph.edges) ? graph.edges : [],
    });
    this.statusEl = document.getElementById("status");
    this.dirtyEl = document.getElementById("dirty-indicator");
    this.nameEl = document.getElementById("workflow-name");
    this.bannerEl = document.getElementById("connect-banner");
    this.undoButton = document.getElementById("btn-undo");
    this.redoButton = document.getElementById("btn-redo");
    this.autocomplete = new ReferenceAutocomplete(this);
    this.canvas = new Canvas(this);
    this.inspector = new Inspector(this);
    this.runPanel = new RunPanel(this);
    this.runs = new RunsList(this);
    this.statePanel = new StatePanel(this);
    this.runCharts = new RunCharts(this); // draws when the runs list renders; filters it by bucket
    this.stateCharts = new StateCharts(this); // gauges and a key's chart in the State panel
    this.settings = new WorkflowSettings(this, root);
    this.store.subscribe((change) => this.render(change));
    this.bind();
    this.render({ doc: true, selection: true });
    this.untangle();
    this.canvas.fit();
    this.suggestRunInput();
    this.statePanel.refresh();
    this.runs.refresh({ showLatest: true }).then(() => { document.body.dataset.editorReady = "true"; });
  }

  get state() {
    return this.store.doc;
  }

  bind() {
    document.querySelector(".palette").addEventListener("click", (e) => {
      const entry = e.target.closest(".palette-entry");
      if (!entry) return;
      if (entry.dataset.kind === "trigger") this.useTrigger(entry.dataset.entryId);
      else this.addAction(entry.dataset.entryId);
    });
    const on = (id, handler) => document.getElementById(id).addEventListener("click", handler);
    on("btn-save", () => this.save());
    on("btn-validate", () => this.validate());
    on("btn-undo", () => this.undo());
    on("btn-redo", () => this.redo());
    on("btn-zoom-in", () => this.canvas.zoomBy(1.2));
    on("btn-zoom-out", () => this.canvas.zoomBy(1 / 1.2));
    on("btn-fit", () => this.canvas.fit());
    on("btn-layout", () => this.autoLayout());
    on("btn-panel", () => this.togglePanel());
    on("problems-close", () => { document.getElementById("problems").hidden = true; });
    on("btn-export", () => this.exportJSON());
    on("btn-import", () => document.getElementById("import-file").click());
    on("btn-shortcuts", () => this.showShortcuts());
    on("shortcuts-close", () => document.getElementById("shortcuts").close());
    document.getElementById("import-file").addEventListener("change", (e) => this.importJSON(e.target.files[0]));
    this.bindPaletteSearch();
    document.getElementById("problems-list").addEventListener("click", (e) => {
      const item = e.target.closest("[data-node-id]");
      if (item && this.node(item.dataset.nodeId)) this.selectNode(item.dataset.nodeId);
    });
    this.nameEl.addEventListener("input", () => {
      this.store.change("rename the workflow", (doc) => { doc.name = this.nameEl.value; }, { coalesce: "workflow-name", origin: "name" });
    });
    document.addEventListener("keydown", (e) => this.onKeyDown(e));
    window.addEventListener("beforeunload", (e) => {
      if (!this.store.dirty) return;
      e.preventDefault(); // the browser asks before unsaved changes are lost
      e.returnValue = "";
    });
  }

  onKeyDown(event) {
    const typing = event.target.closest("input, textarea, select, [contenteditable]");
    const mod = event.ctrlKey || event.metaKey;
    const key = event.key.toLowerCase();
    if (!typing && !mod && event.key === "?") {
      event.preventDefault();
      this.showShortcuts();
    } else if (!typing && !mod && event.key === "/") {
      event.preventDefault(); // "/" jumps to the palette's search
      document.getElementById("palette-search").focus();
    } else if (mod && key === "s") {
      event.preventDefault();
      this.save();
    } else if (mod && !typing && (key === "z" || key === "y")) {
      // In a text field the browser's own undo edits the text; elsewhere it undoes graph steps.
      event.preventDefault();
      if (key === "y" || event.shiftKey) this.redo();
      else this.undo();
    } else if (mod && !typing && key === "c") {
      this.copySelection();
    } else if (mod && !typing && key === "v") {
      event.preventDefault();
      this.paste();
    } else if (mod && !typing && key === "d") {
      event.preventDefault(); // not the browser's bookmark
      this.duplicateSelection();
    } else if (event.key === "Escape" && this.store.ui.connectFrom) {
      this.cancelConnect("Connection cancelled.");
    } else if (!typing && (event.key === "Delete" || event.key === "Backspace") && this.store.ui.selected) {
      event.preventDefault();
      this.deleteSelected();
    }
  }

  // --- the one render path -------------------------------------------------------------

  render(change) {
    const { doc, ui } = this.store;
    if (change.origin !== "name" && this.nameEl.value !== doc.name) this.nameEl.value = doc.name;
    this.dirtyEl.hidden = !this.store.dirty;
    this.undoButton.disabled = !this.store.canUndo;
    this.redoButton.disabled = !this.store.canRedo;
    this.undoButton.title = this.store.canUndo ? `Undo: ${this.store.undoStack.at(-1).label} (Ctrl+Z)` : "Nothing to undo";
    this.redoButton.title = this.store.canRedo ? `Redo: ${this.store.redoStack.at(-1).label} (Shift+Ctrl+Z)` : "Nothing to redo";
    this.bannerEl.hidden = !ui.connectFrom;
    if (ui.connectFrom) {
      const from = this.node(ui.connectFrom.nodeId);
      const handle = ui.connectFrom.handle;
      this.bannerEl.textContent = `Connecting from ${from ? nodeLabel(from) : "?"}${handle ? ` (${handle} branch)` : ""}: click the node to run next. Esc cancels.`;
    }
    this.canvas.render();
    this.inspector.render(change);
    this.runPanel.render();
    if (change.doc) this.settings.renderNextRun();
    if (change.doc && change.origin !== "inspector") this.suggestRunInput();
  }

  // --- lookups -------------------------------------------------------------------------

  node(id) {
    return this.store.doc.nodes.find((n) => n.id === id) || null;
  }

  nodesById() {
    return new Map(this.store.doc.nodes.map((n) => [n.id, n]));
  }

  selectedNodeId() {
    const selected = this.store.ui.selected;
    return selected?.kind === "node" ? selected.id : null;
  }

  definitionOf(node) {
    if (!node) return null;
    const config = node.data?.config || {};
    if (isTrigger(node)) return this.catalogue.triggers[config.triggerType || "Manual"] || null;
    return this.catalogue.actions[config.actionType] || null;
  }

  findingsOf(nodeId) {
    const report = this.store.ui.report;
    if (!report) return [];
    return [
      ...report.errors.filter((f) => f.nodeId === nodeId).map((f) => ({ ...f, level: "error" })),
      ...report.warnings.filter((f) => f.nodeId === nodeId).map((f) => ({ ...f, level: "warning" })),
    ];
  }

  problemsOf(nodeId) {
    const findings = this.findingsOf(nodeId);
    return { errors: findings.filter((f) => f.level === "error").length, warnings: findings.filter((f) => f.level === "warning").length };
  }

  // The nodes whose config holds a reference to `nodeId`.
  referrersOf(nodeId) {
    return this.store.doc.nodes.filter((n) => n.id !== nodeId && Object.values(n.data?.config || {}).some(
      (value) => findTokens(typeof value === "string" ? value : JSON.stringify(value ?? "")).some((t) => t.nodeId === nodeId),
    ));
  }

  // --- status --------------------------------------------------------------------------

  setStatus(text, kind = "") {
    this.statusEl.textContent = text;
    this.statusEl.title = text; // the bar truncates long messages; hover shows them whole
    this.statusEl.className = `status ${kind}`;
  }

  togglePanel() {
    const panel = document.getElementById("run-panel");
    const button = document.getElementById("btn-panel");
    const collapsed = panel.classList.toggle("collapsed");
    button.setAttribute("aria-expanded", collapsed ? "false" : "true");
    button.textContent = collapsed ? "Show runs panel" : "Hide runs panel";
  }

  // --- selection -----------------------------------------------------------------------

  selectNode(id) {
    this.store.set({ selected: { kind: "node", id }, also: [] });
  }

  selectEdge(id) {
    this.store.set({ selected: { kind: "edge", id }, connectFrom: null });
  }

  backgroundClicked() {
    if (this.store.ui.connectFrom) return this.cancelConnect("Connection cancelled.");
    if (this.store.ui.selected) this.store.set({ selected: null });
  }

  nodeClicked(id, { add = false } = {}) {
    if (this.store.ui.connectFrom) return this.finishConnect(id);
    const current = this.selectedNodeId();
    if (add && current && current !== id) {
      const also = this.store.ui.also.includes(id) ? this.store.ui.also.filter((n) => n !== id) : [...this.store.ui.also, id];
      this.store.set({ also });
      this.setStatus(`${also.length + 1} nodes selected: Ctrl+C copies them, Ctrl+D duplicates them.`);
      return;
    }
    if (current !== id || this.store.ui.also.length) this.store.set({ selected: { kind: "node", id }, also: [] });
  }

  // The selected node ids: the selected node and those added with Shift+click.
  selectionIds() {
    const id = this.selectedNodeId();
    return id ? [id, ...this.store.ui.also.filter((n) => n !== id && this.node(n))] : [];
  }

  copySelection() {
    const fragment = copyFragment(this.store.doc, this.selectionIds());
    if (!fragment.nodes.length) return this.setStatus("Select a node to copy (the trigger is never copied: a workflow has one).", "error");
    const n = fragment.nodes.length;
    this.setStatus(`Copied ${n} node${n === 1 ? "" : "s"}. Ctrl+V pastes them here or in another workflow.`);
    return fragment;
  }

  paste(fragment = readFragment()) {
    if (!fragment || !fragment.nodes.length) return this.setStatus("Nothing to paste: copy nodes with Ctrl+C first.", "error");
    const { nodes, edges } = pasteFragment(this.store.doc, fragment);
    // Pasted over other cards (another workflow, or a copy in place): the fragment moves, whole,
    // below the graph, so no card hides another.
    const existing = this.canvas.boxes();
    const size = { width: 230, height: 140 };
    if (nodes.some((n) => existing.some((b) => anyOverlap([{ ...n.position, ...size }, b])))) {
      const spot = this.placeFor(null);
      const minX = Math.min(...nodes.map((n) => n.position.x));
      const minY = Math.min(...nodes.map((n) => n.position.y));
      for (const n of nodes) n.position = { x: n.position.x - minX + spot.x, y: n.position.y - minY + spot.y };
    }
    this.store.change(`paste ${nodes.length} node${nodes.length === 1 ? "" : "s"}`, (d) => {
      d.nodes.push(...nodes);
      d.edges.push(...edges);
    });
    this.store.set({ selected: { kind: "node", id: nodes[0].id }, also: nodes.slice(1).map((n) => n.id) });
    this.canvas.reveal(nodes[0].id);
    this.setStatus(`Pasted ${nodes.map(nodeLabel).join(", ")}. Connect the first after a node to run it.`);
    return nodes;
  }

  duplicateSelection() {
    const fragment = this.copySelection();
    if (fragment?.nodes?.length) this.paste(fragment);
  }

  // --- graph changes (each one undoable step) ------------------------------------------

  moveNode(nodeId, position) {
    const node = this.node(nodeId);
    if (!node) return;
    this.store.change(`move ${nodeLabel(node)}`, (doc) => {
      doc.nodes.find((n) => n.id === nodeId).position = position;
    });
  }

  // A graph saved with cards on top of each other (by an API client, or cards grown taller than
  // their spacing) is laid out on load so that no node is hidden. It is not an undo step and does
  // not make the page dirty: the new positions are saved with the author's next Save.
  untangle() {
    if (!anyOverlap(this.canvas.boxes())) return;
    const doc = this.store.doc;
    const positions = autoLayout(doc.nodes, doc.edges, (n) => this.canvas.sizeOf(n), (e) => this.handleOrder(e));
    for (const n of doc.nodes) n.position = positions[n.id];
    this.canvas.render();
    this.setStatus("Some cards overlapped, so the graph was laid out again; Save keeps the new layout.");
  }

  // Where a branch goes in Auto-layout: its handle's place among the node's handles, -0.5 … 0.5.
  handleOrder(edge) {
    const handles = this.definitionOf(this.node(edge.source))?.sourceHandles || [];
    const index = handles.indexOf(edge.sourceHandle || "");
    return handles.length > 1 && index >= 0 ? index / (handles.length - 1) - 0.5 : 0;
  }

  autoLayout() {
    const doc = this.store.doc;
    const positions = autoLayout(doc.nodes, doc.edges, (n) => this.canvas.sizeOf(n), (e) => this.handleOrder(e));
    this.store.change("auto-layout", (d) => {
      for (const n of d.nodes) n.position = positions[n.id];
    });
    this.canvas.fit();
    this.setStatus("Laid out top-down by rank; branches side by side.");
  }

  // A spot for a new node: under `after` (or in view), moved right until it covers no card.
  placeFor(after) {
    const boxes = this.canvas.boxes();
    let wanted;
    if (after) wanted = { x: after.position?.x ?? 0, y: (after.position?.y ?? 0) + this.canvas.sizeOf(after).height + BELOW_GAP };
    else if (boxes.length) wanted = { x: Math.min(...boxes.map((b) => b.x)), y: Math.max(...boxes.map((b) => b.y + b.height)) + BELOW_GAP };
    else wanted = this.canvas.centre();
    return freeSpot(wanted, { width: 230, height: 120 }, boxes);
  }

  addAction(actionId) {
    const def = this.catalogue.actions[actionId];
    if (!def) return;
    const after = this.node(this.selectedNodeId());
    const doc = this.store.doc;
    const node = {
      id: nextNodeId(doc.nodes, def.id),
      type: "action",
      position: this.placeFor(after),
      data: { label: nextLabel(doc.nodes, def.label), type: "action", config: { actionType: def.id } },
    };
    let message = `Added ${node.data.label}.`;
    let edge = null;
    if (after) {
      const afterDef = this.definitionOf(after);
      const handles = afterDef?.sourceHandles || [];
      // A branching node (Condition) has no default: the new node goes on its first branch
      // (true), which the status names, and the author can reconnect it to another.
      edge = { id: nextEdgeId(doc.edges), source: after.id, target: node.id };
      if (handles.length) edge.sourceHandle = afterDef.defaultHandle || handles[0];
      message = `Added ${node.data.label} after ${nodeLabel(after)}${edge.sourceHandle ? ` (${edge.sourceHandle})` : ""}.`;
      if (handles.length && !afterDef.defaultHandle) {
        message += ` For the ${handles.slice(1).join(" or ")} branch, delete the connection and connect that handle instead.`;
      }
    }
    this.store.change(`add ${node.data.label}`, (d) => {
      d.nodes.push(node);
      if (edge) d.edges.push(edge);
    });
    this.selectNode(node.id);
    this.canvas.reveal(node.id);
    this.setStatus(message);
  }

  useTrigger(triggerId) {
    const trigger = this.store.doc.nodes.find(isTrigger);
    if (trigger) {
      this.changeTriggerType(trigger.id, triggerId);
      this.selectNode(trigger.id);
      return;
    }
    const node = {
      id: this.node("trigger") ? nextNodeId(this.store.doc.nodes, "trigger") : "trigger",
      type: "trigger",
      position: this.placeFor(null),
      data: { label: "Trigger", type: "trigger", config: { triggerType: triggerId, sampleInput: {} } },
    };
    this.store.change("add the trigger", (d) => { d.nodes.unshift(node); });
    this.selectNode(node.id);
  }

  changeTriggerType(nodeId, triggerType) {
    const node = this.node(nodeId);
    if (!node || !this.catalogue.triggers[triggerType] || nodeConfig(node).triggerType === triggerType) return;
    this.store.change(`make the trigger ${triggerType}`, (d) => {
      nodeConfig(d.nodes.find((n) => n.id === nodeId)).triggerType = triggerType;
    });
    this.setStatus(`The trigger is now ${triggerType}.`);
  }

  renameNode(nodeId, label) {
    this.store.change("rename a node", (d) => {
      const node = d.nodes.find((n) => n.id === nodeId);
      if (!node) return false;
      node.data.label = label;
    }, { coalesce: `label:${nodeId}`, origin: "inspector" });
  }

  // A config field typed in the inspector: `value` undefined removes the field.
  setConfig(nodeId, name, value) {
    const node = this.node(nodeId);
    if (!node) return;
    this.store.change(`edit ${name} of ${nodeLabel(node)}`, (d) => {
      const config = nodeConfig(d.nodes.find((n) => n.id === nodeId));
      if (value === undefined) delete config[name];
      else config[name] = value;
    }, { coalesce: `config:${nodeId}:${name}`, origin: "inspector" });
  }

  suggestRunInput() {
    const trigger = this.store.doc.nodes.find(isTrigger);
    if (trigger) this.runPanel.suggestInput(nodeConfig(trigger).sampleInput);
  }

  deleteSelected() {
    const selected = this.store.ui.selected;
    if (!selected) return;
    if (selected.kind === "edge") {
      this.store.change("delete a connection", (d) => { d.edges = d.edges.filter((e) => e.id !== selected.id); });
      this.store.set({ selected: null });
      this.setStatus("Connection deleted. Ctrl+Z brings it back.");
      return;
    }
    const node = this.node(selected.id);
    if (!node) return;
    if (isTrigger(node)) return this.setStatus("The trigger cannot be deleted: every workflow starts with one.", "error");
    const referrers = this.referrersOf(node.id);
    if (referrers.length) {
      const names = referrers.map(nodeLabel).join(", ");
      // eslint-disable-next-line no-alert -- the browser's own dialog is keyboard-operable and modal
      if (!window.confirm(`${nodeLabel(node)} is referenced by ${names}. Delete it anyway? Those references will be marked as broken.`)) {
        this.setStatus(`Kept ${nodeLabel(node)}.`);
        return;
      }
    }
    const bridges = this.bridgesAround(node);
    let reconnect = false;
    if (bridges.length) {
      const names = bridges.map((b) => `${nodeLabel(this.node(b.source))}${b.sourceHandle ? ` (${b.sourceHandle})` : ""} → ${nodeLabel(this.node(b.target))}`).join(", ");
      // eslint-disable-next-line no-alert -- the browser's own dialog is keyboard-operable and modal
      reconnect = window.confirm(`${nodeLabel(node)} sits between other nodes. Reconnect them (${names}) so the chain stays whole? Cancel deletes it without reconnecting.`);
    }
    this.store.change(`delete ${nodeLabel(node)}${reconnect ? " and reconnect" : ""}`, (d) => {
      d.nodes = d.nodes.filter((n) => n.id !== node.id);
      d.edges = d.edges.filter((e) => e.source !== node.id && e.target !== node.id);
      if (reconnect) for (const bridge of bridges) d.edges.push({ ...bridge, id: nextEdgeId(d.edges) });
    });
    this.store.set({ selected: null });
    const joined = reconnect ? " Its neighbours were reconnected." : "";
    this.setStatus(`Deleted ${nodeLabel(node)}.${joined}${referrers.length ? " References to it are marked until you pick new values." : ""} Ctrl+Z brings it back.`);
  }

  // The edges that keep a chain whole when `node` goes: each node before it to each node after it
  // (the incoming edge's branch kept), when one side is a single node and no such edge exists yet.
  bridgesAround(node) {
    const edges = this.store.doc.edges;
    const incoming = edges.filter((e) => e.target === node.id);
    const outgoing = edges.filter((e) => e.source === node.id);
    if (!incoming.length || !outgoing.length || (incoming.length > 1 && outgoing.length > 1)) return [];
    const bridges = [];
    for (const into of incoming) {
      for (const out of outgoing) {
        const bridge = { source: into.source, target: out.target };
        if (into.sourceHandle) bridge.sourceHandle = into.sourceHandle;
        const exists = edges.some((e) => e.source === bridge.source && e.target === bridge.target && (e.sourceHandle || null) === (bridge.sourceHandle || null));
        if (!exists && bridge.source !== bridge.target) bridges.push(bridge);
      }
    }
    return bridges;
  }

  undo() {
    const message = this.store.undo();
    this.setStatus(message || "Nothing to undo.");
  }

  redo() {
    const message = this.store.redo();
    this.setStatus(message || "Nothing to redo.");
  }

  // --- connecting ----------------------------------------------------------------------

  startConnect(nodeId, handle) {
    if (!this.node(nodeId)) return;
    this.store.set({ connectFrom: { nodeId, handle } });
  }

  cancelConnect(message) {
    this.store.set({ connectFrom: null });
    if (message) this.setStatus(message);
  }

  finishConnect(targetId) {
    const { nodeId: sourceId, handle } = this.store.ui.connectFrom;
    const target = this.node(targetId);
    const edges = this.store.doc.edges;
    let problem = null;
    if (targetId === sourceId) problem = "A node cannot connect to itself. Click another node, or press Esc.";
    else if (isTrigger(target)) problem = "Nothing connects into the trigger: it starts the run. Click another node, or press Esc.";
    else if (edges.some((e) => e.source === sourceId && e.target === targetId && (e.sourceHandle || null) === handle)) problem = "These nodes are already connected.";
    else if (reaches(edges, targetId, sourceId)) problem = "That connection would make a loop; a workflow runs from the trigger forward only.";
    if (problem) {
      this.setStatus(problem, "error");
      return;
    }
    const edge = { id: nextEdgeId(edges), source: sourceId, target: targetId };
    if (handle) edge.sourceHandle = handle;
    const source = this.node(sourceId);
    this.store.ui.connectFrom = null;
    this.store.change(`connect ${nodeLabel(source)} to ${nodeLabel(target)}`, (d) => { d.edges.push(edge); });
    this.setStatus(`Connected ${nodeLabel(source)}${handle ? ` (${handle})` : ""} → ${nodeLabel(target)}.`);
  }

  // --- palette search, shortcuts, import and export -------------------------------------

  // Typing filters the palette by label and description; Enter adds the first entry shown.
  bindPaletteSearch() {
    const input = document.getElementById("palette-search");
    const entries = [...document.querySelectorAll(".palette-entry")];
    const filter = () => {
      const terms = input.value.toLowerCase().split(/\s+/).filter(Boolean);
      for (const entry of entries) {
        const hay = entry.textContent.toLowerCase();
        entry.closest("li").hidden = !terms.every((t) => hay.includes(t));
      }
      for (const group of document.querySelectorAll(".palette-group")) {
        group.hidden = ![...group.querySelectorAll("li")].some((li) => !li.hidden);
      }
      const shown = entries.filter((e) => !e.closest("li").hidden).length;
      document.getElementById("palette-search-count").textContent = terms.length ? `${shown} match${shown === 1 ? "" : "es"}` : "";
    };
    input.addEventListener("input", filter);
    input.addEventListener("keydown", (e) => {
      if (e.key === "Escape") {
        input.value = "";
        filter();
      } else if (e.key === "Enter") {
        e.preventDefault();
        const first = entries.find((entry) => !entry.closest("li").hidden);
        if (!first) return this.setStatus(`No action matches “${input.value}”.`, "error");
        first.click();
        input.value = "";
        filter();
      }
    });
  }

  showShortcuts() {
    const dialog = document.getElementById("shortcuts");
    if (!dialog.open) dialog.showModal();
  }

  // The saved workflow as the API exports it (GET …/export/), downloaded as a .json file.
  async exportJSON() {
    if (this.store.dirty) this.setStatus("Exporting the saved workflow; your unsaved changes are not in it.");
    const { ok, data } = await getJSON(this.urls.export);
    if (!ok) return this.setStatus(`Not exported: ${problem(data, "try again.")}`, "error");
    const blob = new Blob([JSON.stringify(data, null, 2)], { type: "application/json" });
    const link = document.createElement("a");
    link.href = URL.createObjectURL(blob);
    link.download = `${(data.name || "workflow").replace(/[^\w.-]+/g, "-")}.json`;
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
    if (!this.store.dirty) this.setStatus(`Exported ${data.name} as ${link.download}.`, "ok");
    return data;
  }

  // A .json file exported from here or the API, imported as a new workflow (POST …/import/, validated
  // like every save), which then opens.
  async importJSON(file) {
    if (!file) return null;
    let document_;
    try {
      document_ = JSON.parse(await file.text());
    } catch (error) {
      return this.setStatus(`Not imported: ${file.name} is not JSON (${error.message}).`, "error");
    }
    const { ok, data } = await postJSON(this.urls.import, document_);
    if (!ok) {
      if (data.code === "WORKFLOW_INVALID" && data.details) this.applyReport(data.details);
      return this.setStatus(`Not imported: ${problem(data, "the server refused the workflow.")}`, "error");
    }
    this.setStatus(`Imported as ${data.name}; opening it…`, "ok");
    window.location.assign(this.urls.editor.replace("00000000-0000-0000-0000-000000000000", data.id));
    return data;
  }

  // --- server round trips --------------------------------------------------------------

  graphPayload() {
    return { nodes: this.store.doc.nodes, edges: this.store.doc.edges };
  }

  applyReport(report) {
    const list = document.getElementById("problems-list");
    const items = [];
    for (const [level, findings] of [["error", report.errors], ["warning", report.warnings]]) {
      for (const f of findings) {
        const li = document.createElement("li");
        li.className = level;
        const node = f.nodeId ? this.node(f.nodeId) : null;
        if (node) {
          li.dataset.nodeId = f.nodeId;
          li.tabIndex = 0;
          li.addEventListener("keydown", (e) => { if (e.key === "Enter") this.selectNode(f.nodeId); });
        }
        const where = node ? `${nodeLabel(node)}${f.field ? ` · ${f.field}` : ""}` : "Workflow";
        const strong = document.createElement("strong");
        strong.textContent = `${level === "error" ? "✗" : "!"} ${where}: `;
        li.append(strong, document.createTextNode(f.message), Object.assign(document.createElement("code"), { className: "muted", textContent: ` ${f.code}` }));
        items.push(li);
      }
    }
    list.replaceChildren(...items);
    document.getElementById("problems").hidden = items.length === 0;
    this.store.set({ report }, { origin: "report" });
  }

  async validate() {
    this.setStatus("Validating…", "busy");
    const { ok, data } = await postJSON(this.urls.validate, this.graphPayload());
    if (!ok) return this.setStatus(problem(data, "Validation failed."), "error");
    this.applyReport(data);
    const e = data.errors.length;
    const w = data.warnings.length;
    if (!e && !w) this.setStatus("No problems found.", "ok");
    else this.setStatus(`${e} error${e === 1 ? "" : "s"}, ${w} warning${w === 1 ? "" : "s"}: see Problems and the marked nodes.`, e ? "error" : "");
    return data;
  }

  // Validate without a word in the status bar (a field was left): the findings go to the fields and
  // the cards, like Validate's. A newer check overtakes an older one.
  async checkQuietly() {
    const seq = (this.quietSeq = (this.quietSeq || 0) + 1);
    const { ok, data } = await postJSON(this.urls.validate, this.graphPayload());
    if (ok && seq === this.quietSeq) this.applyReport(data);
  }

  async save() {
    const revision = this.store.revision;
    this.setStatus("Saving…", "busy");
    const { ok, data } = await sendJSON("PATCH", this.urls.workflow, { name: this.store.doc.name, ...this.graphPayload() });
    if (!ok) {
      if (data.code === "WORKFLOW_INVALID" && data.details) this.applyReport(data.details);
      this.setStatus(`Not saved: ${problem(data, "the server refused the workflow.")}`, "error");
      return false;
    }
    const runWasCurrent = this.store.ui.run && !this.store.runIsStale();
    this.store.markSaved(data, revision);
    if (runWasCurrent) this.store.ui.runRevision = this.store.revision;
    // The saved graph's warnings (an unreachable node, an unknown field): saving refuses errors only.
    const checked = await postJSON(this.urls.validate, { nodes: data.nodes, edges: data.edges });
    if (checked.ok) this.applyReport(checked.data);
    document.title = `${data.name} · KeeperState`;
    this.setStatus(`Saved at ${new Date().toLocaleTimeString()}.`, "ok");
    this.settings.refresh(); // a schedule's next run follows the saved trigger
    return true;
  }

  // Show an execution's results on the canvas and in the Run results tab.
  // A run read from the server (the Runs list, a poll) ran the saved graph: its marks are
  // current exactly while the document is the saved one.
  showRun(execution, { switchTab = true, lead = "Run", fromPoll = false } = {}) {
    const runRevision = fromPoll || lead === "Last run" ? this.store.savedRevision : this.store.revision;
    this.store.set({ run: execution, runRevision }, { origin: "run" });
    this.runPanel.showExecution(execution, { switchTab, lead });
  }

  // Retry: the failed or interrupted run's input again, as a new run linked to it (the API's retry).
  async retry(executionId) {
    if (!executionId) return null;
    this.runPanel.showStatus("Retrying…", "busy");
    const { ok, data } = await postJSON(this.urls.retry.replace("EXECUTION_ID", executionId), {});
    if (!ok) {
      this.runPanel.showStatus(`Not retried: ${problem(data, "the server refused the retry.")}`, "error");
      return null;
    }
    this.showRun(data, { lead: "Retry" });
    this.statePanel.refresh();
    this.runs.followLatest = true;
    this.runs.prepend(data);
    this.setStatus(data.status === "success" ? "Retry succeeded." : `Retry ${data.status === "error" ? "failed" : data.status}: see the results.`, data.status === "success" ? "ok" : "error");
    return data;
  }

  // Test step: one node of the saved graph with the upstream outputs of an earlier run (the API's
  // test-step, the runner's own node step). A node that writes state is confirmed first.
  async testStep(nodeId, sourceExecution) {
    const node = this.node(nodeId);
    const def = this.definitionOf(node);
    if (!node || !def) return null;
    if (def.sideEffects) {
      // eslint-disable-next-line no-alert -- the browser's own dialog is keyboard-operable and modal
      if (!window.confirm(`Test step runs ${nodeLabel(node)} in this workflow's own state, the state its runs read: it may write it. Run it?`)) {
        this.store.set({ step: { nodeId, note: "Not run: nothing was written." } }, { origin: "step" });
        return null;
      }
    }
    if (this.store.dirty && !(await this.save())) {
      this.store.set({ step: { nodeId, note: "Not run: the workflow could not be saved. Fix the problems first." } }, { origin: "step" });
      return null;
    }
    this.store.set({ step: { nodeId, note: "Running the step…" } }, { origin: "step" });
    const { ok, data } = await postJSON(this.urls.testStep, { node: nodeId, sourceExecution: sourceExecution || null, allowWrites: Boolean(def.sideEffects) });
    if (!ok) {
      this.store.set({ step: { nodeId, note: `Not run: ${problem(data, "the server refused the step.")}` } }, { origin: "step" });
      return null;
    }
    this.store.set({ step: { nodeId, ...data } }, { origin: "step" });
    if (data.wroteState) this.statePanel.refresh();
    return data;
  }

  async run(input) {
    if (this.store.dirty && !(await this.save())) {
      this.runPanel.showStatus("Not run: the workflow could not be saved. Fix the problems first.", "error");
      return null;
    }
    const { ok, data } = await postJSON(this.urls.execute, { input });
    if (!ok) {
      this.runPanel.showStatus(`Not run: ${problem(data, "the server refused the run.")}`, "error");
      return null;
    }
    const execution = data;
    this.showRun(execution);
    this.statePanel.refresh(); // a run may have written state, even a failed one
    this.runs.followLatest = true;
    this.runs.prepend(execution);
    const succeeded = execution.status === "success";
    this.setStatus(succeeded ? "Run succeeded." : `Run ${execution.status === "error" ? "failed" : execution.status}: see the results.`, succeeded ? "ok" : "error");
    return execution;
  }
}

new Editor(document.getElementById("editor-root"));
