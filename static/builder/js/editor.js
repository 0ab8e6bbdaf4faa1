// The workflow editor, wired together: one store (store.js) holds the document and the view
// state; the actions (actions.js) change it, through the api module (api.js) for what the server
// answers; each component is given the store and the few actions it uses, and draws from the
// store in its render(). The store's one listener, render() below, calls them: it is the only
// path by which the page changes. Undo and redo are the store's.

import { createActions } from "./actions.js";
import { createApi } from "./api.js";
import { ReferenceAutocomplete } from "./autocomplete.js";
import { Canvas } from "./canvas.js";
import { RunCharts, StateCharts } from "./charts.js";
import { nodeLabel } from "./graph.js";
import { Inspector } from "./inspector.js";
import { nodeById } from "./model.js";
import { NextNodePicker } from "./picker.js";
import { ProblemsPanel } from "./problems.js";
import { RunPanel } from "./runpanel.js";
import { RunsList } from "./runs.js";
import { WorkflowSettings } from "./settings.js";
import { StatePanel } from "./state-panel.js";
import { Store } from "./store.js";

// What the canvas draws: a change of any of these (or of the document) redraws it.
const CANVAS_KEYS = ["selected", "also", "connectFrom", "report", "run", "runGraph"];

function readJSON(id) {
  return JSON.parse(document.getElementById(id).textContent);
}

function confirm(text) {
  // eslint-disable-next-line no-alert -- the browser's own dialog is keyboard-operable and modal
  return window.confirm(text);
}

function download(name, text) {
  const link = document.createElement("a");
  link.href = URL.createObjectURL(new Blob([text], { type: "application/json" }));
  link.download = name;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
}

function start(root) {
  const graph = readJSON("workflow-graph");
  const catalogue = readJSON("builder-catalogue");
  const store = new Store({
    name: graph.name,
    nodes: Array.isArray(graph.nodes) ? graph.nodes : [],
    edges: Array.isArray(graph.edges) ? graph.edges : [],
  }, { workflow: readJSON("workflow-settings") });
  const api = createApi(root.dataset);

  // Components first, each with what it uses; the actions' callbacks reach them through `on`.
  const on = {};
  const canvas = new Canvas({
    store,
    catalogue,
    on: {
      nodeClicked: (id, options) => on.nodeClicked(id, options),
      edgeClicked: (id) => on.selectEdge(id),
      backgroundClicked: () => on.backgroundClicked(),
      startConnect: (id, handle) => on.startConnect(id, handle),
      connectTo: (source, handle, target) => on.connectTo(source, handle, target),
      dropConnect: (source, handle, at) => on.openPicker(source, handle, at),
      moveNode: (id, position) => on.moveNode(id, position),
    },
  });
  const statePanel = new StatePanel({ api });
  const settings = new WorkflowSettings({ store, api, actions: { say: (...a) => on.say(...a), confirm } });
  const actions = createActions({
    store, api, catalogue, canvas, confirm,
    stateWritten: () => statePanel.refresh(),
    workflowSaved: (data) => settings.adopt(data),
  });
  Object.assign(on, actions);
  const autocomplete = new ReferenceAutocomplete({ store, api, workflowId: graph.id });
  const inspector = new Inspector({
    store, catalogue, api, autocomplete,
    actions: {
      renameNode: actions.renameNode, setConfig: actions.setConfig, changeTriggerType: actions.changeTriggerType,
      setNoteText: actions.setNoteText, deleteSelected: actions.deleteSelected, testStep: actions.testStep,
      checkQuietly: actions.checkQuietly, pin: actions.pin, unpin: actions.unpin, say: actions.say,
    },
    webhookBox: () => settings.webhookBox(),
  });
  const runs = new RunsList({
    store, api, pollMs: Number(root.dataset.pollMs),
    actions: {
      showRun: actions.showRun, say: actions.say,
      stateWritten: () => statePanel.refresh(), scheduleMoved: (ran) => settings.scheduleMoved(ran),
    },
  });
  const showTab = (tab) => {
    store.set({ tab });
    if (tab === "state") statePanel.refresh();
    if (tab === "runs") runs.refresh();
  };
  const runPanel = new RunPanel({ store, actions: { run: actions.run, retry: actions.retry, selectNode: actions.selectNode, showTab } });
  const problems = new ProblemsPanel({ store, selectNode: actions.selectNode });
  const picker = new NextNodePicker({ store, catalogue, pick: actions.pick, close: () => store.set({ picker: null }) });
  new RunCharts({ api, runs }); // draws when the runs list renders; filters it by bucket
  new StateCharts({ api, statePanel }); // gauges and a key's chart in the State panel

  // --- the one render path ------------------------------------------------------------

  const nameEl = document.getElementById("workflow-name");
  const dirtyEl = document.getElementById("dirty-indicator");
  const statusEl = document.getElementById("status");
  const bannerEl = document.getElementById("connect-banner");
  const undoButton = document.getElementById("btn-undo");
  const redoButton = document.getElementById("btn-redo");

  function render(change) {
    const { doc, ui } = store;
    const keys = new Set(change.keys || []);
    if (change.origin !== "name" && nameEl.value !== doc.name) nameEl.value = doc.name;
    dirtyEl.hidden = !store.dirty;
    undoButton.disabled = !store.canUndo;
    redoButton.disabled = !store.canRedo;
    undoButton.title = store.canUndo ? `Undo: ${store.undoStack.at(-1).label} (Ctrl+Z)` : "Nothing to undo";
    redoButton.title = store.canRedo ? `Redo: ${store.redoStack.at(-1).label} (Shift+Ctrl+Z)` : "Nothing to redo";
    if (keys.has("status") && ui.status) {
      statusEl.textContent = ui.status.text;
      statusEl.title = ui.status.text;
      statusEl.className = `status ${ui.status.kind}`;
    }
    bannerEl.hidden = !ui.connectFrom;
    if (ui.connectFrom) {
      const from = nodeById(doc, ui.connectFrom.nodeId);
      const handle = ui.connectFrom.handle;
      bannerEl.textContent = `Connecting from ${from ? nodeLabel(from) : "?"}${handle ? ` (${handle} branch)` : ""}: click the node to run next. Esc cancels.`;
    }
    if (change.doc || CANVAS_KEYS.some((k) => keys.has(k))) canvas.render();
    if (change.doc || keys.has("report")) problems.render();
    if (keys.has("picker")) picker.render();
    if (keys.has("paletteQuery")) filterPalette(ui.paletteQuery);
    inspector.render(change);
    runPanel.render(change);
    if (keys.has("runs") || keys.has("run")) runs.render();
    if (change.doc || keys.has("workflow")) settings.render();
  }

  // While a report is shown, what changes the graph (a connection, a deletion, a pin) is checked
  // again a moment later, so Problems and the red borders follow the graph; typing in a field is
  // checked when the field is left.
  let recheck = null;
  const recheckSoon = (change) => {
    if (!change.doc || !store.ui.report || ["inspector", "adopt", "history", "saved"].includes(change.origin)) return;
    clearTimeout(recheck);
    recheck = setTimeout(() => actions.checkQuietly(), 400);
  };

  store.subscribe((change) => {
    render(change);
    recheckSoon(change);
  });

  // --- the page's own controls and keys -------------------------------------------------

  document.querySelector(".palette").addEventListener("click", (e) => {
    const entry = e.target.closest(".palette-entry");
    if (!entry) return;
    if (entry.dataset.kind === "trigger") actions.useTrigger(entry.dataset.entryId);
    else actions.addAction(entry.dataset.entryId);
  });
  const click = (id, handler) => document.getElementById(id).addEventListener("click", handler);
  click("btn-save", () => actions.save());
  click("btn-validate", () => actions.validate());
  click("btn-undo", () => actions.undo());
  click("btn-redo", () => actions.redo());
  click("btn-zoom-in", () => canvas.zoomBy(1.2));
  click("btn-zoom-out", () => canvas.zoomBy(1 / 1.2));
  click("btn-fit", () => canvas.fit());
  click("btn-layout", () => actions.layOut());
  click("btn-note", () => actions.addNote());
  click("btn-export", () => actions.exportJSON(download));
  click("btn-import", () => document.getElementById("import-file").click());
  click("btn-shortcuts", () => showShortcuts());
  click("shortcuts-close", () => document.getElementById("shortcuts").close());
  document.getElementById("import-file").addEventListener("change", (e) => actions.importJSON(e.target.files[0], (url) => window.location.assign(url)));
  nameEl.addEventListener("input", () => actions.renameWorkflow(nameEl.value));
  bindPaletteSearch(store, actions.say);
  document.addEventListener("keydown", onKeyDown);
  document.addEventListener("pointerdown", (e) => {
    if (store.ui.picker && !e.target.closest("#node-picker")) store.set({ picker: null });
  }, true);
  window.addEventListener("beforeunload", (e) => {
    if (!store.dirty) return;
    e.preventDefault(); // the browser asks before unsaved changes are lost
    e.returnValue = "";
  });

  function showShortcuts() {
    const dialog = document.getElementById("shortcuts");
    if (!dialog.open) dialog.showModal();
  }

  function onKeyDown(event) {
    const typing = event.target.closest("input, textarea, select, [contenteditable]");
    const mod = event.ctrlKey || event.metaKey;
    const key = event.key.toLowerCase();
    if (mod && event.key === "Enter") {
      event.preventDefault(); // Ctrl+Enter runs, from anywhere (the run input included)
      runPanel.run();
    } else if (!typing && !mod && event.key === "?") {
      event.preventDefault();
      showShortcuts();
    } else if (!typing && !mod && event.key === "/") {
      event.preventDefault(); // "/" jumps to the palette's search
      document.getElementById("palette-search").focus();
    } else if (mod && key === "s") {
      event.preventDefault();
      actions.save();
    } else if (mod && !typing && key === "a") {
      event.preventDefault(); // every node, not the page's text
      actions.selectAll();
    } else if (mod && !typing && (key === "z" || key === "y")) {
      // In a text field the browser's own undo edits the text; elsewhere it undoes graph steps.
      event.preventDefault();
      if (key === "y" || event.shiftKey) actions.redo();
      else actions.undo();
    } else if (mod && !typing && key === "c") {
      actions.copySelection();
    } else if (mod && !typing && key === "v") {
      event.preventDefault();
      actions.paste();
    } else if (mod && !typing && key === "d") {
      event.preventDefault(); // not the browser's bookmark
      actions.duplicateSelection();
    } else if (event.key === "Escape" && store.ui.picker) {
      store.set({ picker: null });
    } else if (event.key === "Escape" && store.ui.connectFrom) {
      actions.cancelConnect("Connection cancelled.");
    } else if (!typing && (event.key === "Delete" || event.key === "Backspace") && store.ui.selected) {
      event.preventDefault();
      actions.deleteSelected();
    }
  }

  render({ doc: true, selection: true, keys: ["status", "runs", "workflow", "tab", "panelCollapsed"] });
  actions.untangle();
  canvas.fit();
  statePanel.refresh();
  runs.refresh({ showLatest: true }).then(() => { document.body.dataset.editorReady = "true"; });
}

// The palette filtered by the search's words (label and description).
function filterPalette(query) {
  const terms = (query || "").toLowerCase().split(/\s+/).filter(Boolean);
  const entries = [...document.querySelectorAll(".palette-entry")];
  for (const entry of entries) {
    const hay = entry.textContent.toLowerCase();
    entry.closest("li").hidden = !terms.every((t) => hay.includes(t));
  }
  for (const group of document.querySelectorAll(".palette-group")) {
    group.hidden = ![...group.querySelectorAll("li")].some((li) => !li.hidden);
  }
  const shown = entries.filter((e) => !e.closest("li").hidden).length;
  document.getElementById("palette-search-count").textContent = terms.length ? `${shown} match${shown === 1 ? "" : "es"}` : "";
}

// Typing filters the palette; Enter adds the first entry shown; Esc clears.
function bindPaletteSearch(store, say) {
  const input = document.getElementById("palette-search");
  const clear = () => {
    input.value = "";
    store.set({ paletteQuery: "" });
  };
  input.addEventListener("input", () => store.set({ paletteQuery: input.value }));
  input.addEventListener("keydown", (e) => {
    if (e.key === "Escape") {
      clear();
    } else if (e.key === "Enter") {
      e.preventDefault();
      const first = [...document.querySelectorAll(".palette-entry")].find((entry) => !entry.closest("li").hidden);
      if (!first) return say(`No action matches “${input.value}”.`, "error");
      first.click();
      clear();
    }
    return null;
  });
}

start(document.getElementById("editor-root"));
