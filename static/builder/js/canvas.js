// The graph drawing: node cards, sticky notes and SVG edges on a plane the author pans (drag the
// background, arrow keys) and zooms (wheel, buttons, + and -), with "fit" to bring every node into
// view. The canvas draws the store's document and reports gestures through `on`; it changes
// nothing itself. A handle is clicked (then a card) or dragged onto a card to connect; dragged to
// empty canvas, it asks for the next node there (on.dropConnect).

import { isTrigger, nodeConfig, nodeLabel } from "./graph.js";
import { boundsOf, CARD_WIDTH } from "./layout.js";
import { definitionOf, isNote, itemsOver, nodesById, pinnedData, problemsOf } from "./model.js";
import { routeEdge } from "./routing.js";
import { hasBrokenReference, richText } from "./tokens.js";
import { el } from "./dom.js";

const SVG_NS = "http://www.w3.org/2000/svg";
const DRAG_THRESHOLD = 4;
const MIN_ZOOM = 0.3;
const MAX_ZOOM = 1.6;
const ZOOM_STEP = 1.2;
const FIT_MARGIN = 32;
const FIT_BOTTOM = 64; // clear of the status line that floats at the canvas's foot
const PAN_STEP = 60;
const EDGE_PAD = 400; // room around the graph in the edge layer for curves that bulge out
const NOTE_LINES = 8;

function svg(tag, attrs) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  return node;
}

function asText(value) {
  if (value === undefined || value === null) return "";
  return typeof value === "string" ? value : JSON.stringify(value);
}

function clamp(value, low, high) {
  return Math.min(high, Math.max(low, value));
}

export class Canvas {
  // on: nodeClicked(id, {add}), edgeClicked(id), backgroundClicked(), startConnect(id, handle),
  // connectTo(sourceId, handle, targetId), dropConnect(sourceId, handle, {plane, client}), moveNode(id, position)
  constructor({ store, catalogue, on }) {
    this.store = store;
    this.catalogue = catalogue;
    this.on = on;
    this.root = document.getElementById("canvas");
    this.inner = document.getElementById("canvas-inner");
    this.svg = document.getElementById("edges");
    this.zoomLabel = document.getElementById("zoom-level");
    this.cards = new Map();
    this.drag = null;
    this.view = { x: 40, y: 40, zoom: 1 };
    this.root.addEventListener("pointerdown", (e) => this.onPointerDown(e));
    window.addEventListener("pointermove", (e) => this.onPointerMove(e));
    window.addEventListener("pointerup", (e) => this.onPointerUp(e));
    this.root.addEventListener("wheel", (e) => this.onWheel(e), { passive: false });
    this.root.addEventListener("click", (e) => this.onClick(e));
    this.root.addEventListener("keydown", (e) => this.onKeyDown(e));
  }

  // --- drawing -------------------------------------------------------------------------

  render() {
    // Cards are rebuilt: keep the keyboard focus on the same node or edge across the rebuild.
    const active = document.activeElement;
    const focusedNode = active?.closest?.(".node")?.dataset.nodeId;
    const focusedEdge = active?.closest?.(".edge")?.dataset.edgeId;
    for (const card of this.cards.values()) card.remove();
    this.cards.clear();
    const stale = this.store.runIsStale();
    this.root.classList.toggle("run-stale", stale);
    this.root.classList.toggle("connecting", Boolean(this.store.ui.connectFrom));
    const byId = nodesById(this.store.doc);
    for (const node of this.store.doc.nodes) {
      const card = isNote(node) ? this.noteCard(node) : this.card(node, stale, byId);
      this.cards.set(node.id, card);
      this.inner.append(card);
    }
    this.renderEdges();
    this.applyView();
    if (focusedNode && this.cards.has(focusedNode)) this.cards.get(focusedNode).focus({ preventScroll: true });
    if (focusedEdge) this.svg.querySelector(`.edge[data-edge-id="${CSS.escape(focusedEdge)}"]`)?.focus({ preventScroll: true });
  }

  place(card, node) {
    const ui = this.store.ui;
    card.dataset.nodeId = node.id;
    card.classList.toggle("selected", ui.selected?.kind === "node" && ui.selected.id === node.id);
    card.classList.toggle("in-selection", ui.also.includes(node.id));
    const pos = node.position || { x: 0, y: 0 };
    card.style.left = `${pos.x}px`;
    card.style.top = `${pos.y}px`;
    card.style.width = `${CARD_WIDTH}px`;
    // A group, not a button: the card holds its own handle buttons, and controls must not nest.
    // Focusable all the same: Enter or Space selects it, Delete removes it.
    card.setAttribute("role", "group");
    card.tabIndex = 0;
  }

  // A sticky note: its text, on the plane with the cards; no handles, never run.
  noteCard(node) {
    const card = el("div", "node note");
    this.place(card, node);
    card.setAttribute("aria-roledescription", "note");
    const text = node.data?.text || "";
    const body = el("div", "note-text", text || "Empty note: write in it on the right.");
    body.classList.toggle("muted", !text);
    body.style.setProperty("--note-lines", String(NOTE_LINES));
    card.title = text;
    card.append(body);
    card.setAttribute("aria-label", `Note: ${text.slice(0, 120) || "empty"}`);
    return card;
  }

  card(node, stale, byId) {
    const ui = this.store.ui;
    const def = definitionOf(this.catalogue, node);
    const trigger = isTrigger(node);
    const card = el("div", "node");
    this.place(card, node);
    card.classList.toggle("trigger", trigger);
    card.classList.toggle("unknown", !def);
    card.classList.toggle("connect-source", ui.connectFrom?.nodeId === node.id);
    card.setAttribute("aria-roledescription", "node");

    if (!trigger) card.append(el("div", "handle in"));
    const head = el("div", "node-head");
    const icon = el("span", `icon icon-${def ? def.icon : "missing"}`);
    icon.innerHTML = def ? def.iconSvg : ""; // the registry's own SVG files, not user input
    icon.setAttribute("aria-hidden", "true");
    const label = el("span", "node-label", nodeLabel(node));
    label.title = nodeLabel(node);
    head.append(icon, label);
    card.append(head);
    const typeText = trigger ? `${def ? def.label : "?"} trigger` : def ? def.label : `Unknown: ${nodeConfig(node).actionType}`;
    card.append(el("div", "node-type", `${typeText} · ${node.id}`));
    const { box: summary, broken } = this.summary(node, def, byId);
    card.append(summary);

    const notes = [];
    if (pinnedData(node)) {
      card.classList.add("pinned");
      const mark = el("div", "node-pin", "pinned data");
      mark.title = "Runs from the editor and Test step use this node's pinned data instead of running it; scheduled, webhook and API runs run it.";
      card.append(mark);
      notes.push("pinned data");
    }
    const problems = problemsOf(ui.report, node.id);
    if (problems.errors) {
      card.classList.add("has-error");
      card.append(el("div", "node-problems", `${problems.errors} problem${problems.errors > 1 ? "s" : ""}`));
      notes.push(`${problems.errors} problems`);
    } else if (problems.warnings) {
      card.classList.add("has-warning");
      card.append(el("div", "node-problems warning", `${problems.warnings} warning${problems.warnings > 1 ? "s" : ""}`));
    }
    if (broken) {
      card.classList.add("has-broken-reference");
      notes.push("a reference to a deleted node");
    }
    const result = ui.run?.nodeResults?.[node.id];
    if (result) {
      const kind = result.skipped ? "skipped" : result.success ? "ok" : "fail";
      card.classList.add(`ran-${kind}`);
      let text = result.skipped ? "skipped" : result.success ? (result.pinned ? "✓ pinned data used" : "✓ ran") : `✗ ${result.code || "failed"}`;
      if (stale) text += " (before your edits)";
      const mark = el("div", `node-result ${kind}`, text);
      mark.title = stale ? "From the run shown in Runs, made before the graph changed." : "";
      card.append(mark);
      notes.push(`last run: ${text}`);
    }
    card.setAttribute("aria-label", [`${nodeLabel(node)} (${def ? def.label : "unknown action"})`, ...notes].join(", "));

    const outs = el("div", "node-outs");
    const handles = def && def.sourceHandles && def.sourceHandles.length ? def.sourceHandles : [""];
    for (const handle of handles) {
      const button = el("button", `handle out${  handle ? " labelled" : ""}`, handle);
      button.type = "button";
      button.dataset.handle = handle;
      button.title = handle ? `Connect the ${handle} branch to another node (click, or drag onto a card)` : "Connect to another node (click, or drag onto a card)";
      button.setAttribute("aria-label", `${handle ? `Connect the ${handle} branch to another node` : "Connect to another node"} (from ${nodeLabel(node)})`);
      outs.append(button);
    }
    card.append(outs);
    return card;
  }

  // Each filled field with its references as badges; long text is cut with an ellipsis and shown
  // whole on hover. A Set Fields' fields read "name = expression", one a line. Returns whether a
  // reference names a node that is gone.
  summary(node, def, byId) {
    const box = el("div", "node-summary");
    const config = nodeConfig(node);
    let broken = false;
    const line = (key, label, text, long) => {
      const row = el("div", long ? "summary-line summary-long" : "summary-line");
      row.title = `${label}: ${text}`;
      const value = el("span", "summary-value");
      richText(value, text, byId);
      if (hasBrokenReference(text, byId)) broken = true;
      row.append(el("span", "summary-key", key), value);
      box.append(row);
    };
    for (const field of def ? def.configFields : []) {
      const value = config[field.name];
      if (field.kind === "assignments" && Array.isArray(value)) {
        for (const a of value) line(a?.name ?? "?", a?.name ?? "?", `= ${asText(a?.expression)}`, false);
        continue;
      }
      const text = asText(value);
      if (text.trim()) line(field.name, field.label, text, field.kind === "expression");
    }
    return { box, broken };
  }

  // Where each node is on the plane, with its card's size.
  boxes() {
    return this.store.doc.nodes.map((node) => this.boxOf(node));
  }

  boxOf(node) {
    const card = this.cards.get(node.id);
    const pos = node.position || { x: 0, y: 0 };
    return { id: node.id, x: pos.x, y: pos.y, width: card?.offsetWidth || CARD_WIDTH, height: card?.offsetHeight || 90 };
  }

  sizeOf(node) {
    const { width, height } = this.boxOf(node);
    return { width, height };
  }

  // The point of a handle on the plane (unscaled layout offsets, so the zoom does not matter).
  handlePoint(card, position, handle) {
    const outs = handle.offsetParent;
    return {
      x: position.x + card.clientLeft + outs.offsetLeft + handle.offsetLeft + handle.offsetWidth / 2,
      y: position.y + card.clientTop + outs.offsetTop + handle.offsetTop + handle.offsetHeight,
    };
  }

  // The edges; `moved` draws one card somewhere else (while it is dragged), `wire` the connection
  // being dragged from a handle.
  renderEdges({ moved = null, wire = null } = {}) {
    const { doc, ui } = this.store;
    const positionOf = (node) => (moved && moved.id === node.id ? moved.position : node.position || { x: 0, y: 0 });
    const boxes = this.boxes().map((b) => (moved && moved.id === b.id ? { ...b, ...moved.position } : b));
    const boxById = new Map(boxes.map((b) => [b.id, b]));
    const bounds = boundsOf(boxes);
    const left = bounds.x - EDGE_PAD;
    const top = bounds.y - EDGE_PAD;
    Object.assign(this.svg.style, {
      left: `${left}px`, top: `${top}px`,
      width: `${bounds.width + 2 * EDGE_PAD}px`, height: `${bounds.height + 2 * EDGE_PAD}px`,
    });
    const defs = svg("defs");
    const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: "9", refY: "5", markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse" });
    marker.append(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrow-head" }));
    defs.append(marker);
    const layer = svg("g", { transform: `translate(${-left} ${-top})` });
    const byId = nodesById(doc);
    const run = ui.run;
    for (const edge of doc.edges) {
      const sourceCard = this.cards.get(edge.source);
      const targetCard = this.cards.get(edge.target);
      if (!sourceCard || !targetCard) continue;
      const source = byId.get(edge.source);
      const target = byId.get(edge.target);
      const sourceDef = definitionOf(this.catalogue, source);
      const handleName = edge.sourceHandle || sourceDef?.defaultHandle || "";
      const handle = sourceCard.querySelector(`.handle.out[data-handle="${CSS.escape(handleName)}"]`) || sourceCard.querySelector(".handle.out");
      if (!handle) continue;
      const from = this.handlePoint(sourceCard, positionOf(source), handle);
      const tpos = positionOf(target);
      const to = { x: tpos.x + targetCard.offsetWidth / 2, y: tpos.y - 2 };
      // Around every card in the way (static/builder/js/routing.js).
      const { d, label: at } = routeEdge(from, to, boxById.get(source.id), boxById.get(target.id), boxes);
      const selected = ui.selected?.kind === "edge" && ui.selected.id === edge.id;
      const items = run ? itemsOver(edge, run, this.catalogue, doc) : null;
      const counted = items !== null && run.nodeResults?.[edge.source] ? ` (${items} item${items === 1 ? "" : "s"} in the shown run)` : "";
      const name = `Connection from ${nodeLabel(source)}${edge.sourceHandle ? ` (${edge.sourceHandle})` : ""} to ${nodeLabel(target)}`;
      const group = svg("g", {
        class: `edge${  selected ? " selected" : ""}`, "data-edge-id": edge.id, "data-source": edge.source, "data-target": edge.target, "data-handle": edge.sourceHandle || "",
        tabindex: "0", role: "button", "aria-label": name + counted,
      });
      const title = svg("title");
      title.textContent = name + counted;
      group.append(title, svg("path", { d, class: "edge-hit" }), svg("path", { d, class: "edge-line", "marker-end": "url(#arrow)" }));
      if (edge.sourceHandle) {
        // beside the path, clear of the handle that already names the branch
        const label = svg("text", { x: at.x, y: at.y, class: `edge-label ${edge.sourceHandle}` });
        label.textContent = edge.sourceHandle;
        group.append(label);
      }
      if (counted) {
        // how many items passed it in the shown run, just above the target's input
        const count = svg("text", { x: to.x + 10, y: to.y - 8, class: `edge-count${items ? "" : " none"}`, "data-items": String(items) });
        count.textContent = `${items} item${items === 1 ? "" : "s"}`;
        group.append(count);
      }
      layer.append(group);
    }
    if (wire) layer.append(svg("path", { d: `M ${wire.from.x} ${wire.from.y} C ${wire.from.x} ${wire.from.y + 60}, ${wire.to.x} ${wire.to.y - 60}, ${wire.to.x} ${wire.to.y}`, class: "edge-wire" }));
    this.svg.replaceChildren(defs, layer);
  }

  // --- the view: pan and zoom ----------------------------------------------------------

  applyView() {
    const { x, y, zoom } = this.view;
    this.inner.style.transform = `translate(${x}px, ${y}px) scale(${zoom})`;
    this.root.style.backgroundPosition = `${x}px ${y}px`;
    this.root.style.backgroundSize = `${20 * zoom}px ${20 * zoom}px`;
    if (this.zoomLabel) this.zoomLabel.textContent = `${Math.round(zoom * 100)}%`;
  }

  panBy(dx, dy) {
    this.view.x += dx;
    this.view.y += dy;
    this.applyView();
  }

  // Zoom by `factor` keeping the plane point under (cx, cy) of the viewport where it is.
  zoomBy(factor, cx = this.root.clientWidth / 2, cy = this.root.clientHeight / 2) {
    const { x, y, zoom } = this.view;
    const next = clamp(zoom * factor, MIN_ZOOM, MAX_ZOOM);
    this.view = { x: cx - ((cx - x) / zoom) * next, y: cy - ((cy - y) / zoom) * next, zoom: next };
    this.applyView();
  }

  // Show the whole graph: as large as fits, at most 100 %, centred (above the status line).
  fit() {
    const b = boundsOf(this.boxes());
    const width = this.root.clientWidth;
    const height = this.root.clientHeight - (FIT_BOTTOM - FIT_MARGIN);
    const zoom = clamp(Math.min((width - 2 * FIT_MARGIN) / Math.max(b.width, 1), (height - 2 * FIT_MARGIN) / Math.max(b.height, 1)), MIN_ZOOM, 1);
    this.view = { zoom, x: (width - b.width * zoom) / 2 - b.x * zoom, y: (height - b.height * zoom) / 2 - b.y * zoom };
    this.applyView();
  }

  // Pan just enough to bring a node's card fully into view.
  reveal(nodeId) {
    const node = this.store.doc.nodes.find((n) => n.id === nodeId);
    if (!node) return;
    const b = this.boxOf(node);
    const { x, y, zoom } = this.view;
    const width = this.root.clientWidth;
    const height = this.root.clientHeight;
    const left = b.x * zoom + x;
    const top = b.y * zoom + y;
    let dx = 0;
    let dy = 0;
    if (left < FIT_MARGIN) dx = FIT_MARGIN - left;
    else if (left + b.width * zoom > width - FIT_MARGIN) dx = width - FIT_MARGIN - (left + b.width * zoom);
    if (top < FIT_MARGIN) dy = FIT_MARGIN - top;
    else if (top + b.height * zoom > height - FIT_BOTTOM) dy = height - FIT_BOTTOM - (top + b.height * zoom);
    if (dx || dy) this.panBy(dx, dy);
  }

  // The plane point at the centre of the viewport (where a node with nothing to follow goes).
  centre() {
    const { x, y, zoom } = this.view;
    return { x: (this.root.clientWidth / 2 - x) / zoom - CARD_WIDTH / 2, y: (this.root.clientHeight / 3 - y) / zoom };
  }

  // The plane point under a point of the window.
  planePoint(clientX, clientY) {
    const rect = this.root.getBoundingClientRect();
    const { x, y, zoom } = this.view;
    return { x: Math.round((clientX - rect.left - x) / zoom), y: Math.round((clientY - rect.top - y) / zoom) };
  }

  // --- gestures ------------------------------------------------------------------------

  onWheel(event) {
    event.preventDefault();
    const rect = this.root.getBoundingClientRect();
    this.zoomBy(Math.exp(-event.deltaY * 0.0015), event.clientX - rect.left, event.clientY - rect.top);
  }

  onKeyDown(event) {
    const onCard = event.target.classList?.contains("node");
    const edge = event.target.closest?.(".edge");
    if ((event.key === "Enter" || event.key === " ") && (onCard || edge)) {
      event.preventDefault();
      if (onCard) this.on.nodeClicked(event.target.dataset.nodeId);
      else this.on.edgeClicked(edge.dataset.edgeId);
      return;
    }
    if (event.target !== this.root) return; // arrows and +/- act on the canvas itself, not inside a card
    const pans = { ArrowLeft: [PAN_STEP, 0], ArrowRight: [-PAN_STEP, 0], ArrowUp: [0, PAN_STEP], ArrowDown: [0, -PAN_STEP] };
    if (pans[event.key]) {
      event.preventDefault();
      this.panBy(...pans[event.key]);
    } else if (event.key === "+" || event.key === "=") {
      this.zoomBy(ZOOM_STEP);
    } else if (event.key === "-") {
      this.zoomBy(1 / ZOOM_STEP);
    }
  }

  // A handle's click (the mouse, or Enter on the focused handle) starts a connection to click a
  // card for; a drag from it has already been handled on release.
  onClick(event) {
    const handle = event.target.closest(".handle.out");
    if (handle) {
      if (this.wired) return;
      const card = handle.closest(".node");
      this.on.startConnect(card.dataset.nodeId, handle.dataset.handle || null);
      return;
    }
    const edge = event.target.closest(".edge");
    if (edge) this.on.edgeClicked(edge.dataset.edgeId);
  }

  onPointerDown(event) {
    this.addToSelection = event.shiftKey; // Shift+click adds a card to the selection
    if (event.button !== 0 || event.target.closest(".edge")) return;
    const handle = event.target.closest(".handle.out");
    if (handle) {
      const card = handle.closest(".node");
      this.wired = false;
      this.drag = { kind: "wire", nodeId: card.dataset.nodeId, handle: handle.dataset.handle || null, element: handle, card, startX: event.clientX, startY: event.clientY, moved: false };
      return;
    }
    if (event.target.closest(".handle")) return;
    const card = event.target.closest(".node");
    if (card) {
      const node = this.store.doc.nodes.find((n) => n.id === card.dataset.nodeId);
      const pos = node.position || { x: 0, y: 0 };
      this.drag = { kind: "node", nodeId: node.id, card, startX: event.clientX, startY: event.clientY, x: pos.x, y: pos.y, moved: false };
    } else {
      this.drag = { kind: "pan", startX: event.clientX, startY: event.clientY, x: this.view.x, y: this.view.y, moved: false };
    }
    event.preventDefault();
    if (!card) this.root.focus({ preventScroll: true });
  }

  onPointerMove(event) {
    const drag = this.drag;
    if (!drag) return;
    const dx = event.clientX - drag.startX;
    const dy = event.clientY - drag.startY;
    if (!drag.moved && Math.hypot(dx, dy) < DRAG_THRESHOLD) return;
    drag.moved = true;
    if (drag.kind === "pan") {
      this.root.classList.add("panning");
      this.view.x = drag.x + dx;
      this.view.y = drag.y + dy;
      this.applyView();
      return;
    }
    if (drag.kind === "wire") {
      // The connection follows the pointer; the cards it may land on light up (.connecting).
      this.root.classList.add("connecting", "wiring");
      const node = this.store.doc.nodes.find((n) => n.id === drag.nodeId);
      const from = this.handlePoint(drag.card, node.position || { x: 0, y: 0 }, drag.element);
      this.renderEdges({ wire: { from, to: this.planePoint(event.clientX, event.clientY) } });
      return;
    }
    // A card follows the pointer directly; the store hears of the move once, on release.
    drag.card.classList.add("dragging");
    drag.to = { x: Math.round(drag.x + dx / this.view.zoom), y: Math.round(drag.y + dy / this.view.zoom) };
    drag.card.style.left = `${drag.to.x}px`;
    drag.card.style.top = `${drag.to.y}px`;
    this.renderEdges({ moved: { id: drag.nodeId, position: drag.to } });
  }

  onPointerUp(event) {
    const drag = this.drag;
    if (!drag) return;
    this.drag = null;
    this.root.classList.remove("panning", "wiring");
    if (drag.kind === "pan") {
      if (!drag.moved) this.on.backgroundClicked();
      return;
    }
    if (drag.kind === "wire") {
      if (!drag.moved) return; // a click: onClick starts the connection
      this.wired = true; // the click that follows this release is not a new connection
      setTimeout(() => { this.wired = false; }, 0);
      this.root.classList.toggle("connecting", Boolean(this.store.ui.connectFrom));
      const target = document.elementFromPoint(event.clientX, event.clientY)?.closest?.(".node");
      if (target && this.inner.contains(target)) this.on.connectTo(drag.nodeId, drag.handle, target.dataset.nodeId);
      else if (this.root.contains(document.elementFromPoint(event.clientX, event.clientY))) {
        this.renderEdges();
        this.on.dropConnect(drag.nodeId, drag.handle, { plane: this.planePoint(event.clientX, event.clientY), client: { x: event.clientX, y: event.clientY } });
      } else this.renderEdges();
      return;
    }
    drag.card.classList.remove("dragging");
    if (drag.moved && drag.to) this.on.moveNode(drag.nodeId, drag.to);
    else {
      // A click on a card takes the keyboard focus from any field (of this node or another), so
      // what is typed next goes to the canvas's shortcuts, never into a form behind it.
      drag.card.focus({ preventScroll: true });
      this.on.nodeClicked(drag.nodeId, { add: this.addToSelection });
    }
  }
}
