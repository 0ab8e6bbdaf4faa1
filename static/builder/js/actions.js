// What the author can do in the editor, as functions over the store: every change of the workflow
// is one `store.change()` (one undo step), every change of the view one `store.set()`; requests
// go through the api module. The editor hands each component the few of these it uses.

import { copyFragment, pasteFragment, readFragment } from "./clipboard.js";
import { editableConfig, isTrigger, nextEdgeId, nextLabel, nextNodeId, nodeConfig, nodeLabel, reaches } from "./graph.js";
import { problem } from "./http.js";
import { anyOverlap, autoLayout, freeSpot } from "./layout.js";
import { PINNED_KEY, definitionOf, isNote, nodeById, referrersOf, selectedNodeId } from "./model.js";

const BELOW_GAP = 60;
const NEW_CARD = { width: 230, height: 120 };

// `canvas` gives the geometry: the cards' boxes and sizes, the view's centre; `confirm` asks the
// author (the browser's own dialog: keyboard-operable and modal); `stateWritten` is called when
// the workflow's state may have changed (a run, a written test step); `workflowSaved` with the
// API's answer to a save.
export function createActions({ store, api, catalogue, canvas, confirm, stateWritten, workflowSaved }) {
  const node = (id) => nodeById(store.doc, id);
  const say = (text, kind = "") => store.set({ status: { text, kind, at: Date.now() } }, { origin: "status" });
  const graphPayload = () => ({ nodes: store.doc.nodes, edges: store.doc.edges });
  let quietSeq = 0;

  // --- selection ------------------------------------------------------------------------

  function selectNode(id) {
    store.set({ selected: { kind: "node", id }, also: [], picker: null });
  }

  function selectEdge(id) {
    store.set({ selected: { kind: "edge", id }, connectFrom: null, picker: null });
  }

  function backgroundClicked() {
    if (store.ui.picker) return store.set({ picker: null });
    if (store.ui.connectFrom) return cancelConnect("Connection cancelled.");
    if (store.ui.selected) store.set({ selected: null, also: [] });
    return null;
  }

  function nodeClicked(id, { add = false } = {}) {
    if (store.ui.connectFrom) return connectTo(store.ui.connectFrom.nodeId, store.ui.connectFrom.handle, id);
    const current = selectedNodeId(store.ui);
    if (add && current && current !== id) {
      const also = store.ui.also.includes(id) ? store.ui.also.filter((n) => n !== id) : [...store.ui.also, id];
      store.set({ also });
      return say(`${also.length + 1} nodes selected: Ctrl+C copies them, Ctrl+D duplicates them.`);
    }
    if (current !== id || store.ui.also.length) selectNode(id);
    return null;
  }

  // Ctrl+A: every node (the trigger and notes too; copy leaves the trigger out).
  function selectAll() {
    const ids = store.doc.nodes.map((n) => n.id);
    if (!ids.length) return;
    store.set({ selected: { kind: "node", id: ids[0] }, also: ids.slice(1), connectFrom: null });
    say(`${ids.length} nodes selected: Ctrl+C copies them, Delete removes the selected node.`);
  }

  function selectionIds() {
    const id = selectedNodeId(store.ui);
    return id ? [id, ...store.ui.also.filter((n) => n !== id && node(n))] : [];
  }

  // --- copy and paste -------------------------------------------------------------------

  function copySelection() {
    const fragment = copyFragment(store.doc, selectionIds());
    if (!fragment.nodes.length) return say("Select a node to copy (the trigger is never copied: a workflow has one).", "error");
    const n = fragment.nodes.length;
    say(`Copied ${n} node${n === 1 ? "" : "s"}. Ctrl+V pastes them here or in another workflow.`);
    return fragment;
  }

  function paste(fragment = readFragment()) {
    if (!fragment || !fragment.nodes.length) return say("Nothing to paste: copy nodes with Ctrl+C first.", "error");
    const { nodes, edges } = pasteFragment(store.doc, fragment);
    // Pasted over other cards (another workflow, or a copy in place): the fragment moves, whole,
    // below the graph, so no card hides another.
    const existing = canvas.boxes();
    if (nodes.some((n) => existing.some((b) => anyOverlap([{ ...n.position, width: 230, height: 140 }, b])))) {
      const spot = placeFor(null);
      const minX = Math.min(...nodes.map((n) => n.position.x));
      const minY = Math.min(...nodes.map((n) => n.position.y));
      for (const n of nodes) n.position = { x: n.position.x - minX + spot.x, y: n.position.y - minY + spot.y };
    }
    store.change(`paste ${nodes.length} node${nodes.length === 1 ? "" : "s"}`, (d) => {
      d.nodes.push(...nodes);
      d.edges.push(...edges);
    }, { view: { selected: { kind: "node", id: nodes[0].id }, also: nodes.slice(1).map((n) => n.id) } });
    canvas.reveal(nodes[0].id);
    say(`Pasted ${nodes.map(nodeLabel).join(", ")}. Connect the first after a node to run it.`);
    return nodes;
  }

  function duplicateSelection() {
    const fragment = copySelection();
    if (fragment?.nodes?.length) paste(fragment);
  }

  // --- graph changes (each one undoable step) -------------------------------------------

  function moveNode(nodeId, position) {
    const moved = node(nodeId);
    if (!moved) return;
    store.change(`move ${nodeLabel(moved)}`, (doc) => { nodeById(doc, nodeId).position = position; });
  }

  // Where a branch goes in Auto-layout: its handle's place among the node's handles, -0.5 … 0.5.
  function handleOrder(edge) {
    const handles = definitionOf(catalogue, node(edge.source))?.sourceHandles || [];
    const index = handles.indexOf(edge.sourceHandle || "");
    return handles.length > 1 && index >= 0 ? index / (handles.length - 1) - 0.5 : 0;
  }

  // Positions of the graph's nodes. Notes stay where their author put them, unless a card now
  // stands there: then the note moves right, to the first place it covers nothing.
  function layoutPositions() {
    const nodes = store.doc.nodes.filter((n) => !isNote(n));
    const positions = autoLayout(nodes, store.doc.edges, (n) => canvas.sizeOf(n), handleOrder);
    const placed = nodes.map((n) => ({ ...positions[n.id], ...canvas.sizeOf(n) }));
    for (const note of store.doc.nodes.filter(isNote)) {
      const spot = freeSpot(note.position || { x: 0, y: 0 }, canvas.sizeOf(note), placed);
      positions[note.id] = spot;
      placed.push({ ...spot, ...canvas.sizeOf(note) });
    }
    return positions;
  }

  // A graph saved with cards on top of each other (by an API client, or cards grown taller than
  // their spacing) is laid out on load so that no node is hidden: not an undo step and not an
  // unsaved change; the new positions are saved with the author's next Save.
  function untangle() {
    if (!anyOverlap(canvas.boxes().filter((b) => !isNote(node(b.id))))) return;
    const positions = layoutPositions();
    store.adopt((doc) => { for (const n of doc.nodes) if (positions[n.id]) n.position = positions[n.id]; });
    say("Some cards overlapped, so the graph was laid out again; Save keeps the new layout.");
  }

  function layOut() {
    const positions = layoutPositions();
    store.change("auto-layout", (d) => { for (const n of d.nodes) if (positions[n.id]) n.position = positions[n.id]; });
    canvas.fit();
    say("Laid out top-down by rank; branches side by side.");
  }

  // A spot for a new node: under `after` (or in view), moved right until it covers no card.
  function placeFor(after) {
    const boxes = canvas.boxes();
    let wanted;
    if (after) wanted = { x: after.position?.x ?? 0, y: (after.position?.y ?? 0) + canvas.sizeOf(after).height + BELOW_GAP };
    else if (boxes.length) wanted = { x: Math.min(...boxes.map((b) => b.x)), y: Math.max(...boxes.map((b) => b.y + b.height)) + BELOW_GAP };
    else wanted = canvas.centre();
    return freeSpot(wanted, NEW_CARD, boxes);
  }

  // An action after the selected node (or after `from`'s handle, dropped at `position`).
  function addAction(actionId, { from = null, handle = null, position = null } = {}) {
    const def = catalogue.actions[actionId];
    if (!def) return null;
    const selected = node(selectedNodeId(store.ui));
    const after = from ? node(from) : selected && !isNote(selected) ? selected : null;
    const doc = store.doc;
    const added = {
      id: nextNodeId(doc.nodes, def.id),
      type: "action",
      position: position ? freeSpot(position, NEW_CARD, canvas.boxes()) : placeFor(after),
      data: { label: nextLabel(doc.nodes, def.label), type: "action", config: { actionType: def.id } },
    };
    let message = `Added ${added.data.label}.`;
    let edge = null;
    if (after) {
      const afterDef = definitionOf(catalogue, after);
      const handles = afterDef?.sourceHandles || [];
      // A branching node (Condition) has no default: the new node goes on its first branch
      // (true), which the status names, and the author can reconnect it to another.
      edge = { id: nextEdgeId(doc.edges), source: after.id, target: added.id };
      if (handle) edge.sourceHandle = handle;
      else if (handles.length) edge.sourceHandle = afterDef.defaultHandle || handles[0];
      message = `Added ${added.data.label} after ${nodeLabel(after)}${edge.sourceHandle ? ` (${edge.sourceHandle})` : ""}.`;
      if (!handle && handles.length && !afterDef.defaultHandle) {
        message += ` For the ${handles.slice(1).join(" or ")} branch, delete the connection and connect that handle instead.`;
      }
    }
    store.change(`add ${added.data.label}`, (d) => {
      d.nodes.push(added);
      if (edge) d.edges.push(edge);
    }, { view: { selected: { kind: "node", id: added.id }, also: [], picker: null, connectFrom: null } });
    canvas.reveal(added.id);
    say(message);
    return added;
  }

  function addNote() {
    const doc = store.doc;
    const note = {
      id: nextNodeId(doc.nodes, "note"),
      type: "note",
      position: placeFor(null),
      data: { label: "Note", type: "note", text: "" },
    };
    store.change("add a note", (d) => { d.nodes.push(note); }, { view: { selected: { kind: "node", id: note.id }, also: [] } });
    canvas.reveal(note.id);
    say("Added a sticky note: write in it on the right. Notes are never run or validated.");
    return note;
  }

  function setNoteText(nodeId, text) {
    store.change("edit a note", (d) => {
      const note = nodeById(d, nodeId);
      if (!note) return false;
      note.data.text = text;
      return true;
    }, { coalesce: `note:${nodeId}`, origin: "inspector" });
  }

  // A trigger from the palette: the first one is added; another kind replaces the workflow's
  // trigger only once the author says so (a click must not silently change what starts the runs).
  function useTrigger(triggerId) {
    const trigger = store.doc.nodes.find(isTrigger);
    if (trigger) {
      const current = nodeConfig(trigger).triggerType || "Manual";
      if (current === triggerId) {
        selectNode(trigger.id);
        return say(`The trigger is already ${triggerId}.`);
      }
      if (!confirm(`This workflow starts with a ${current} trigger, and a workflow has one. Make it a ${triggerId} trigger instead?`)) {
        selectNode(trigger.id);
        return say(`Kept the ${current} trigger.`);
      }
      changeTriggerType(trigger.id, triggerId);
      return selectNode(trigger.id);
    }
    const added = {
      id: node("trigger") ? nextNodeId(store.doc.nodes, "trigger") : "trigger",
      type: "trigger",
      position: placeFor(null),
      data: { label: "Trigger", type: "trigger", config: { triggerType: triggerId, sampleInput: {} } },
    };
    store.change("add the trigger", (d) => { d.nodes.unshift(added); }, { view: { selected: { kind: "node", id: added.id }, also: [] } });
    return null;
  }

  function changeTriggerType(nodeId, triggerType) {
    const trigger = node(nodeId);
    if (!trigger || !catalogue.triggers[triggerType] || nodeConfig(trigger).triggerType === triggerType) return;
    store.change(`make the trigger ${triggerType}`, (d) => { editableConfig(nodeById(d, nodeId)).triggerType = triggerType; });
    say(`The trigger is now ${triggerType}.`);
  }

  function renameNode(nodeId, label) {
    store.change("rename a node", (d) => {
      const renamed = nodeById(d, nodeId);
      if (!renamed) return false;
      renamed.data.label = label;
      return true;
    }, { coalesce: `label:${nodeId}`, origin: "inspector" });
  }

  function renameWorkflow(name) {
    store.change("rename the workflow", (doc) => { doc.name = name; }, { coalesce: "workflow-name", origin: "name" });
  }

  // A config field typed in the inspector: `value` undefined removes the field.
  function setConfig(nodeId, name, value) {
    const edited = node(nodeId);
    if (!edited) return;
    store.change(`edit ${name} of ${nodeLabel(edited)}`, (d) => {
      const config = editableConfig(nodeById(d, nodeId));
      if (value === undefined) delete config[name];
      else config[name] = value;
    }, { coalesce: `config:${nodeId}:${name}`, origin: "inspector" });
  }

  // Pinned data: `data` stands in for the node's output in runs from the editor and Test step.
  function pin(nodeId, data, how) {
    const pinned = node(nodeId);
    if (!pinned) return;
    store.change(`pin the output of ${nodeLabel(pinned)}`, (d) => { nodeById(d, nodeId).data[PINNED_KEY] = data; });
    say(`Pinned ${how} as the output of ${nodeLabel(pinned)}: Run and Test step use it instead of running the node; `
      + "scheduled, webhook and API runs never do.", "ok");
  }

  function unpin(nodeId) {
    const pinned = node(nodeId);
    if (!pinned) return;
    store.change(`unpin ${nodeLabel(pinned)}`, (d) => { delete nodeById(d, nodeId).data[PINNED_KEY]; });
    say(`Unpinned ${nodeLabel(pinned)}: runs run it again.`);
  }

  function deleteSelected() {
    const selected = store.ui.selected;
    if (!selected) return;
    if (selected.kind === "edge") {
      store.change("delete a connection", (d) => { d.edges = d.edges.filter((e) => e.id !== selected.id); }, { view: { selected: null } });
      say("Connection deleted. Ctrl+Z brings it back.");
      return;
    }
    const removed = node(selected.id);
    if (!removed) return;
    if (isTrigger(removed)) return say("The trigger cannot be deleted: every workflow starts with one.", "error");
    const referrers = referrersOf(store.doc, removed.id);
    if (referrers.length) {
      const names = referrers.map(nodeLabel).join(", ");
      if (!confirm(`${nodeLabel(removed)} is referenced by ${names}. Delete it anyway? Those references will be marked as broken.`)) {
        say(`Kept ${nodeLabel(removed)}.`);
        return;
      }
    }
    const bridges = bridgesAround(removed);
    let reconnect = false;
    if (bridges.length) {
      const names = bridges.map((b) => `${nodeLabel(node(b.source))}${b.sourceHandle ? ` (${b.sourceHandle})` : ""} → ${nodeLabel(node(b.target))}`).join(", ");
      reconnect = confirm(`${nodeLabel(removed)} sits between other nodes. Reconnect them (${names}) so the chain stays whole? Cancel deletes it without reconnecting.`);
    }
    store.change(`delete ${nodeLabel(removed)}${reconnect ? " and reconnect" : ""}`, (d) => {
      d.nodes = d.nodes.filter((n) => n.id !== removed.id);
      d.edges = d.edges.filter((e) => e.source !== removed.id && e.target !== removed.id);
      if (reconnect) for (const bridge of bridges) d.edges.push({ ...bridge, id: nextEdgeId(d.edges) });
    }, { view: { selected: null, also: [] } });
    const joined = reconnect ? " Its neighbours were reconnected." : "";
    say(`Deleted ${nodeLabel(removed)}.${joined}${referrers.length ? " References to it are marked until you pick new values." : ""} Ctrl+Z brings it back.`);
  }

  // The edges that keep a chain whole when `removed` goes: each node before it to each node after
  // it (the incoming edge's branch kept), when one side is a single node and no such edge exists yet.
  function bridgesAround(removed) {
    const edges = store.doc.edges;
    const incoming = edges.filter((e) => e.target === removed.id);
    const outgoing = edges.filter((e) => e.source === removed.id);
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

  // Undo and redo; the Problems and the red borders follow at once (the report is checked again).
  function undo() {
    say(store.undo() || "Nothing to undo.");
    if (store.ui.report) checkQuietly();
  }

  function redo() {
    say(store.redo() || "Nothing to redo.");
    if (store.ui.report) checkQuietly();
  }

  // --- connecting -----------------------------------------------------------------------

  function startConnect(nodeId, handle) {
    if (!node(nodeId)) return;
    store.set({ connectFrom: { nodeId, handle }, picker: null });
  }

  function cancelConnect(message) {
    store.set({ connectFrom: null });
    if (message) say(message);
  }

  // A connection from `sourceId`'s `handle` to `targetId` (a click on a card after a handle, or a
  // handle dragged onto it).
  function connectTo(sourceId, handle, targetId) {
    const target = node(targetId);
    const edges = store.doc.edges;
    let refused = null;
    if (targetId === sourceId) refused = "A node cannot connect to itself. Click another node, or press Esc.";
    else if (isTrigger(target)) refused = "Nothing connects into the trigger: it starts the run. Click another node, or press Esc.";
    else if (isNote(target)) refused = "A note takes no connections: it is never run. Click a node, or press Esc.";
    else if (edges.some((e) => e.source === sourceId && e.target === targetId && (e.sourceHandle || null) === handle)) refused = "These nodes are already connected.";
    else if (reaches(edges, targetId, sourceId)) refused = "That connection would make a loop; a workflow runs from the trigger forward only.";
    if (refused) return say(refused, "error");
    const edge = { id: nextEdgeId(edges), source: sourceId, target: targetId };
    if (handle) edge.sourceHandle = handle;
    const source = node(sourceId);
    store.change(`connect ${nodeLabel(source)} to ${nodeLabel(target)}`, (d) => { d.edges.push(edge); }, { view: { connectFrom: null } });
    say(`Connected ${nodeLabel(source)}${handle ? ` (${handle})` : ""} → ${nodeLabel(target)}.`);
    return edge;
  }

  // A handle dropped on empty canvas: the list of actions opens there, to add the next node.
  function openPicker(sourceId, handle, at) {
    store.set({ picker: { sourceId, handle, at }, connectFrom: null });
  }

  function pick(actionId) {
    const picker = store.ui.picker;
    if (!picker) return null;
    return addAction(actionId, { from: picker.sourceId, handle: picker.handle, position: picker.at.plane });
  }

  // --- server round trips ---------------------------------------------------------------

  // The findings of a check; the same findings again change nothing (no card is redrawn for them).
  function applyReport(report) {
    if (JSON.stringify(report) === JSON.stringify(store.ui.report)) return;
    store.set({ report }, { origin: "report" });
  }

  async function validate() {
    say("Validating…", "busy");
    const { ok, data } = await api.validate(graphPayload());
    if (!ok) return say(problem(data, "Validation failed."), "error");
    applyReport(data);
    const e = data.errors.length;
    const w = data.warnings.length;
    if (!e && !w) say("No problems found.", "ok");
    else say(`${e} error${e === 1 ? "" : "s"}, ${w} warning${w === 1 ? "" : "s"}: see Problems and the marked nodes.`, e ? "error" : "");
    return data;
  }

  // Validate without a word in the status line (a field was left, an undo): the findings go to
  // the fields and the cards, like Validate's. A newer check overtakes an older one.
  async function checkQuietly() {
    const seq = ++quietSeq;
    const { ok, data } = await api.validate(graphPayload());
    if (ok && seq === quietSeq) applyReport(data);
  }

  async function save() {
    const revision = store.revision;
    say("Saving…", "busy");
    const { ok, data } = await api.saveWorkflow({ name: store.doc.name, ...graphPayload() });
    if (!ok) {
      if (data.code === "WORKFLOW_INVALID" && data.details) applyReport(data.details);
      say(`Not saved: ${problem(data, "the server refused the workflow.")}`, "error");
      return false;
    }
    store.markSaved(data, revision);
    // The saved graph's warnings (an unreachable node, an unknown field): saving refuses errors only.
    const checked = await api.validate({ nodes: data.nodes, edges: data.edges });
    if (checked.ok) applyReport(checked.data);
    document.title = `${data.name} · KeeperState`;
    say(`Saved at ${new Date().toLocaleTimeString()}.`, "ok");
    workflowSaved(data); // a schedule's next run follows the saved trigger
    return true;
  }

  // Show an execution on the canvas and in Run results. A run read from the server (the Runs
  // list, a poll) ran the saved graph: its marks are current exactly while the document is saved.
  function showRun(execution, { lead = "Run", switchTab = true, fromServer = false } = {}) {
    store.set({
      run: execution,
      runGraph: fromServer ? store.savedJSON : store.docJSON,
      runStatus: { lead, executionId: execution.id },
      ...(switchTab ? { tab: "results" } : {}),
    }, { origin: "run" });
  }

  function runStatus(text, kind) {
    store.set({ runStatus: { text, kind } });
  }

  // Run and Retry alike: save what is unsaved, start the run, show it and put it on top of the
  // Runs list; the state panel reads again (a run may have written state, even a failed one).
  async function started(request, { verb, lead, saveFirst }) {
    if (saveFirst && store.dirty && !(await save())) {
      runStatus(`Not ${verb}: the workflow could not be saved. Fix the problems first.`, "error");
      return null;
    }
    const { ok, data } = await request();
    if (!ok) {
      runStatus(`Not ${verb}: ${problem(data, `the server refused the ${lead.toLowerCase()}.`)}`, "error");
      return null;
    }
    showRun(data, { lead });
    const runs = store.ui.runs;
    store.set({ runs: { ...runs, followLatest: true, items: [data, ...runs.items.filter((e) => e.id !== data.id)], count: runs.count + 1 } });
    stateWritten();
    const succeeded = data.status === "success";
    say(succeeded ? `${lead} succeeded.` : `${lead} ${data.status === "error" ? "failed" : data.status}: see the results.`, succeeded ? "ok" : "error");
    return data;
  }

  function run(input) {
    runStatus("Running…", "busy");
    store.set({ tab: "results" }); // Run always shows its results, whichever tab was open
    return started(() => api.execute(input), { verb: "run", lead: "Run", saveFirst: true });
  }

  // Retry: the failed or interrupted run's input again, as a new run linked to it.
  function retry(executionId) {
    if (!executionId) return null;
    runStatus("Retrying…", "busy");
    return started(() => api.retry(executionId), { verb: "retried", lead: "Retry", saveFirst: false });
  }

  // Test step: one node of the saved graph with the upstream outputs of an earlier run (and the
  // other nodes' pinned data). A node that writes the workflow's state is confirmed first.
  async function testStep(nodeId, sourceExecution) {
    const tested = node(nodeId);
    const def = definitionOf(catalogue, tested);
    if (!tested || !def) return null;
    const note = (text) => store.set({ step: { nodeId, note: text } }, { origin: "step" });
    if (def.writesState && !confirm(`Test step runs ${nodeLabel(tested)} in this workflow's own state, the state its runs read: it may write it. Run it?`)) {
      note("Not run: nothing was written.");
      return null;
    }
    if (store.dirty && !(await save())) {
      note("Not run: the workflow could not be saved. Fix the problems first.");
      return null;
    }
    note("Running the step…");
    const { ok, data } = await api.testStep({ node: nodeId, sourceExecution: sourceExecution || null, allowWrites: Boolean(def.writesState) });
    if (!ok) {
      note(`Not run: ${problem(data, "the server refused the step.")}`);
      return null;
    }
    store.set({ step: { nodeId, ...data } }, { origin: "step" });
    if (data.wroteState) stateWritten();
    return data;
  }

  // --- import and export ----------------------------------------------------------------

  // The saved workflow as the API exports it (GET …/export/), downloaded as a .json file.
  async function exportJSON(download) {
    if (store.dirty) say("Exporting the saved workflow; your unsaved changes are not in it.");
    const { ok, data } = await api.exportWorkflow();
    if (!ok) return say(`Not exported: ${problem(data, "try again.")}`, "error");
    const name = `${(data.name || "workflow").replace(/[^\w.-]+/g, "-")}.json`;
    download(name, JSON.stringify(data, null, 2));
    if (!store.dirty) say(`Exported ${data.name} as ${name}.`, "ok");
    return data;
  }

  // A .json file exported from here or the API, imported as a new workflow (validated like every
  // save), which then opens.
  async function importJSON(file, open) {
    if (!file) return null;
    let parsed;
    try {
      parsed = JSON.parse(await file.text());
    } catch (error) {
      return say(`Not imported: ${file.name} is not JSON (${error.message}).`, "error");
    }
    const { ok, data } = await api.importWorkflow(parsed);
    if (!ok) {
      if (data.code === "WORKFLOW_INVALID" && data.details) applyReport(data.details);
      return say(`Not imported: ${problem(data, "the server refused the workflow.")}`, "error");
    }
    say(`Imported as ${data.name}; opening it…`, "ok");
    open(api.editorUrl(data.id));
    return data;
  }

  return {
    say, selectNode, selectEdge, backgroundClicked, nodeClicked, selectAll, copySelection, paste, duplicateSelection,
    moveNode, untangle, layOut, addAction, addNote, setNoteText, useTrigger, changeTriggerType, renameNode,
    renameWorkflow, setConfig, pin, unpin, deleteSelected, undo, redo, startConnect, cancelConnect, connectTo,
    openPicker, pick, applyReport, validate, checkQuietly, save, showRun, run, retry, testStep, exportJSON, importJSON,
  };
}
