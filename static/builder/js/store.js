// The editor's one store. The workflow document (name, nodes, edges) changes only through
// `change()`, which records what it was before, so every graph and config change can be undone
// and redone; the view state (selection, connecting, the shown run, the Validate report) changes
// through `set()`. Either way the store notifies its one listener, the editor's render().

const MAX_UNDO = 200;

function clone(value) {
  return JSON.parse(JSON.stringify(value));
}

export class Store {
  constructor(doc) {
    this.doc = { name: doc.name, nodes: doc.nodes, edges: doc.edges };
    this.ui = {
      selected: null, // {kind: "node" | "edge", id}
      connectFrom: null, // {nodeId, handle}
      report: null, // the last Validate / Save report
      run: null, // the execution shown on the canvas
      runRevision: null, // the revision the shown run belongs to; marks dim once the graph moves on
      step: null, // the last Test step's answer: {nodeId, result, handle, wroteState, sourceExecution} or {nodeId, note}
    };
    this.revision = 0; // grows with every document change (undo and redo included)
    this.savedRevision = 0;
    this.undoStack = [];
    this.redoStack = [];
    this.listener = () => {};
  }

  subscribe(listener) {
    this.listener = listener;
  }

  get dirty() {
    return this.revision !== this.savedRevision;
  }

  get canUndo() {
    return this.undoStack.length > 0;
  }

  get canRedo() {
    return this.redoStack.length > 0;
  }

  // Apply `mutate(doc)` as one undoable step named `label`. Steps with the same `coalesce` key in
  // a row (typing in one field, dragging one node) merge into one, so undo takes back the whole edit.
  change(label, mutate, { coalesce = null, origin = null } = {}) {
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
    this.listener({ doc: true, origin });
    return true;
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
    this.listener({ doc: true, selection: true, origin: "history" });
    return `${verb}: ${step.label}.`;
  }

  // View state: selection, connecting, report, run. Not undoable.
  set(changes, { origin = null } = {}) {
    const selection = "selected" in changes;
    Object.assign(this.ui, changes);
    this.listener({ doc: false, selection, origin });
  }

  markSaved(doc, revision) {
    if (revision === this.revision) {
      // Adopt the normalised graph (integer literals as numbers) without an undo step: it is the same intent.
      this.doc.nodes = doc.nodes;
      this.doc.edges = doc.edges;
      this.savedRevision = this.revision;
    }
    this.listener({ doc: false, saved: true });
  }

  runIsStale() {
    return this.ui.run !== null && this.ui.runRevision !== this.revision;
  }
}
