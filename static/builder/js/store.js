// The editor's one store. The workflow document (name, nodes, edges) changes only through
// `change()`, which records what it was before, so every graph and config change can be undone
// and redone; the view state (selection, connecting, the shown run, the Validate report, the
// status line) changes through `set()`. Either way the store tells its one listener, the editor's
// render(), what changed. Nothing else writes `doc` or `ui`.

const MAX_UNDO = 200;

function clone(value) {
  return JSON.parse(JSON.stringify(value));
}

export class Store {
  constructor(doc, view = {}) {
    this.doc = { name: doc.name, nodes: doc.nodes, edges: doc.edges };
    this.ui = {
      selected: null, // {kind: "node" | "edge", id}
      also: [], // more node ids selected with Shift+click or Ctrl+A, for copy and duplicate
      connectFrom: null, // {nodeId, handle}
      report: null, // the last Validate / Save report
      run: null, // the execution shown on the canvas
      runGraph: null, // the document (as JSON) the shown run ran; its marks dim once the graph differs
      runStatus: null, // {text, kind, executionId}: the line above the run results
      step: null, // the last Test step's answer: {nodeId, result, handle, wroteState, sourceExecution} or {nodeId, note}
      status: null, // {text, kind}: the status line
      runs: { items: [], count: 0, next: null, window: null, followLatest: true }, // the Runs tab
      workflow: null, // what the API last said of the workflow: active, nextRunAt, settings, its webhook
      ...view,
    };
    this.revision = 0; // grows with every document change (undo and redo included)
    this.savedJSON = JSON.stringify(this.doc);
    this.jsonCache = { revision: 0, json: this.savedJSON };
    this.undoStack = [];
    this.redoStack = [];
    this.listener = () => {};
  }

  subscribe(listener) {
    this.listener = listener;
  }

  // The document as JSON, computed once per revision: what "unsaved" and "stale" compare.
  get docJSON() {
    if (this.jsonCache.revision !== this.revision) this.jsonCache = { revision: this.revision, json: JSON.stringify(this.doc) };
    return this.jsonCache.json;
  }

  // Unsaved: the document differs from the saved one (undoing back to it is not an unsaved change).
  get dirty() {
    return this.docJSON !== this.savedJSON;
  }

  get canUndo() {
    return this.undoStack.length > 0;
  }

  get canRedo() {
    return this.redoStack.length > 0;
  }

  // Apply `mutate(doc)` as one undoable step named `label`. Steps with the same `coalesce` key in
  // a row (typing in one field, dragging one node) merge into one, so undo takes back the whole edit.
  change(label, mutate, { coalesce = null, origin = null, view = null } = {}) {
    const before = clone(this.doc);
    const result = mutate(this.doc);
    if (result === false) return false; // the action found nothing to do
    const last = this.undoStack[this.undoStack.length - 1];
    if (!(coalesce && last && last.coalesce === coalesce && this.redoStack.length === 0)) {
      this.undoStack.push({ label, doc: before, selected: this.ui.selected, coalesce });
      if (this.undoStack.length > MAX_UNDO) this.undoStack.shift();
    }
    this.redoStack = [];
    this.revision += 1;
    if (view) Object.assign(this.ui, view); // view state that goes with the change (a finished connection)
    this.listener({ doc: true, keys: view ? Object.keys(view) : [], selection: Boolean(view && "selected" in view), origin });
    return true;
  }

  // A change of the same intent as the document it changes, which is neither an undo step nor an
  // unsaved change when the document was saved: cards that overlapped, laid out on load.
  adopt(mutate) {
    const clean = !this.dirty;
    mutate(this.doc);
    this.revision += 1;
    if (clean) this.savedJSON = this.docJSON;
    this.listener({ doc: true, keys: [], origin: "adopt" });
  }

  // A step that must not merge with the one before (a new field, a new drag).
  breakCoalescing() {
    const last = this.undoStack[this.undoStack.length - 1];
    if (last) last.coalesce = null;
  }

  undo() {
    return this.travel(this.undoStack, this.redoStack, "Undid");
  }

  redo() {
    return this.travel(this.redoStack, this.undoStack, "Redid");
  }

  travel(from, to, verb) {
    const step = from.pop();
    if (!step) return null;
    to.push({ label: step.label, doc: clone(this.doc), selected: this.ui.selected, coalesce: null });
    this.doc = step.doc;
    const selected = step.selected;
    const exists = selected && (selected.kind === "node"
      ? this.doc.nodes.some((n) => n.id === selected.id)
      : this.doc.edges.some((e) => e.id === selected.id));
    this.ui.selected = exists ? selected : null;
    this.ui.connectFrom = null;
    this.revision += 1;
    this.listener({ doc: true, keys: ["selected", "connectFrom"], selection: true, origin: "history" });
    return `${verb}: ${step.label}.`;
  }

  // View state: selection, connecting, report, run, status. Not undoable.
  set(changes, { origin = null } = {}) {
    Object.assign(this.ui, changes);
    this.listener({ doc: false, keys: Object.keys(changes), selection: "selected" in changes, origin });
  }

  // The server saved `doc` from the document of `revision`: if nothing changed since, adopt its
  // normalised graph (integer literals as numbers) without an undo step: it is the same intent.
  markSaved(doc, revision) {
    const current = revision === this.revision;
    if (current) {
      this.doc.nodes = doc.nodes;
      this.doc.edges = doc.edges;
      this.revision += 1;
    }
    const runWasCurrent = this.ui.run && !this.runIsStale();
    this.savedJSON = JSON.stringify({ name: doc.name, nodes: doc.nodes, edges: doc.edges });
    if (current && runWasCurrent) this.ui.runGraph = this.savedJSON;
    this.listener({ doc: current, keys: ["runGraph"], saved: true, origin: "saved" });
  }

  // The shown run ran another graph than the one on the canvas.
  runIsStale() {
    return this.ui.run !== null && this.ui.runGraph !== this.docJSON;
  }
}
