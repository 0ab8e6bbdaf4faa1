// The graph drawing: absolutely positioned node cards, SVG edges, drag to move, handles to
// connect. The canvas only draws and reports gestures; the editor owns the graph.

import { isTrigger, nodeConfig, nodeLabel } from "./graph.js";
import { richText } from "./tokens.js";

const PAD = 40;
const SVG_NS = "http://www.w3.org/2000/svg";
const DRAG_THRESHOLD = 4;

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function svg(tag, attrs) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  return node;
}

function asText(value) {
  if (value === undefined || value === null) return "";
  return typeof value === "string" ? value : JSON.stringify(value);
}

export class Canvas {
  constructor(editor) {
    this.editor = editor;
    this.root = document.getElementById("canvas");
    this.inner = document.getElementById("canvas-inner");
    this.svg = document.getElementById("edges");
    this.cards = new Map();
    this.drag = null;
    this.inner.addEventListener("pointerdown", (e) => this.onPointerDown(e));
    window.addEventListener("pointermove", (e) => this.onPointerMove(e));
    window.addEventListener("pointerup", (e) => this.onPointerUp(e));
    this.inner.addEventListener("click", (e) => this.onClick(e));
    this.inner.addEventListener("keydown", (e) => {
      // Enter or Space on a focused card selects it (or ends a connection there).
      if ((e.key === "Enter" || e.key === " ") && e.target.classList?.contains("node")) {
        e.preventDefault();
        this.editor.nodeClicked(e.target.dataset.nodeId);
      }
    });
  }

  render() {
    // Cards are rebuilt: keep the keyboard focus on the same node across the rebuild.
    const focused = document.activeElement?.closest?.(".node")?.dataset.nodeId;
    for (const card of this.cards.values()) card.remove();
    this.cards.clear();
    for (const node of this.editor.state.nodes) {
      const card = this.card(node);
      this.cards.set(node.id, card);
      this.inner.append(card);
    }
    this.resize();
    this.renderEdges();
    if (focused && this.cards.has(focused)) this.cards.get(focused).focus({ preventScroll: true });
  }

  card(node) {
    const state = this.editor.state;
    const def = this.editor.definitionOf(node);
    const trigger = isTrigger(node);
    const card = el("div", "node");
    card.dataset.nodeId = node.id;
    card.classList.toggle("trigger", trigger);
    card.classList.toggle("unknown", !def);
    card.classList.toggle("selected", state.selected?.kind === "node" && state.selected.id === node.id);
    card.classList.toggle("connect-source", state.connectFrom?.nodeId === node.id);
    const pos = node.position || { x: 0, y: 0 };
    card.style.left = `${pos.x + PAD}px`;
    card.style.top = `${pos.y + PAD}px`;
    card.setAttribute("role", "button");
    card.tabIndex = 0;
    card.setAttribute("aria-label", `${nodeLabel(node)} (${def ? def.label : "unknown action"})`);

    if (!trigger) card.append(el("div", "handle in"));
    const head = el("div", "node-head");
    const icon = el("span", `icon icon-${def ? def.icon : "missing"}`);
    icon.innerHTML = def ? def.iconSvg : "";
    head.append(icon, el("span", "node-label", nodeLabel(node)));
    card.append(head);
    const typeText = trigger ? `${def ? def.label : "?"} trigger` : def ? def.label : `Unknown: ${nodeConfig(node).actionType}`;
    card.append(el("div", "node-type", `${typeText} · ${node.id}`));
    card.append(this.summary(node, def));

    const problems = this.editor.problemsOf(node.id);
    if (problems.errors) {
      card.classList.add("has-error");
      card.append(el("div", "node-problems", `${problems.errors} problem${problems.errors > 1 ? "s" : ""}`));
    } else if (problems.warnings) {
      card.classList.add("has-warning");
      card.append(el("div", "node-problems warning", `${problems.warnings} warning${problems.warnings > 1 ? "s" : ""}`));
    }
    const result = state.run?.nodeResults?.[node.id];
    if (result) {
      const kind = result.skipped ? "skipped" : result.success ? "ok" : "fail";
      card.classList.add(`ran-${kind}`);
      const text = result.skipped ? "skipped" : result.success ? "✓ ran" : `✗ ${result.code || "failed"}`;
      card.append(el("div", `node-result ${kind}`, text));
    }

    const outs = el("div", "node-outs");
    const handles = def && def.sourceHandles && def.sourceHandles.length ? def.sourceHandles : [""];
    for (const handle of handles) {
      const button = el("button", "handle out" + (handle ? " labelled" : ""), handle);
      button.type = "button";
      button.dataset.handle = handle;
      button.title = handle ? `Connect the ${handle} branch to another node` : "Connect to another node";
      button.setAttribute("aria-label", `${button.title} (from ${nodeLabel(node)})`);
      outs.append(button);
    }
    card.append(outs);
    return card;
  }

  summary(node, def) {
    const box = el("div", "node-summary");
    const config = nodeConfig(node);
    const fields = def ? def.configFields : [];
    for (const field of fields) {
      const text = asText(config[field.name]);
      if (!text.trim()) continue;
      const line = el("div", "summary-line");
      const value = el("span", "summary-value");
      richText(value, text, this.editor.nodesById());
      line.append(el("span", "summary-key", field.name), value);
      box.append(line);
    }
    return box;
  }

  resize() {
    let maxX = 0;
    let maxY = 0;
    for (const node of this.editor.state.nodes) {
      const pos = node.position || { x: 0, y: 0 };
      maxX = Math.max(maxX, pos.x);
      maxY = Math.max(maxY, pos.y);
    }
    this.inner.style.width = `${Math.max(this.root.clientWidth, maxX + 2 * PAD + 480)}px`;
    this.inner.style.height = `${Math.max(this.root.clientHeight, maxY + 2 * PAD + 320)}px`;
  }

  renderEdges() {
    const base = this.inner.getBoundingClientRect();
    const defs = svg("defs");
    const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: "9", refY: "5", markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse" });
    marker.append(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrow-head" }));
    defs.append(marker);
    const parts = [defs];
    const selected = this.editor.state.selected;
    for (const edge of this.editor.state.edges) {
      const source = this.cards.get(edge.source);
      const target = this.cards.get(edge.target);
      if (!source || !target) continue;
      const sourceDef = this.editor.definitionOf(this.editor.node(edge.source));
      const handleName = edge.sourceHandle || sourceDef?.defaultHandle || "";
      const handle = source.querySelector(`.handle.out[data-handle="${CSS.escape(handleName)}"]`) || source.querySelector(".handle.out");
      const h = handle.getBoundingClientRect();
      const t = target.getBoundingClientRect();
      const x1 = h.left + h.width / 2 - base.left;
      const y1 = h.bottom - base.top;
      const x2 = t.left + t.width / 2 - base.left;
      const y2 = t.top - base.top - 2;
      const dy = Math.max(40, Math.abs(y2 - y1) / 2);
      const d = `M ${x1} ${y1} C ${x1} ${y1 + dy}, ${x2} ${y2 - dy}, ${x2} ${y2}`;
      const group = svg("g", { class: "edge" + (selected?.kind === "edge" && selected.id === edge.id ? " selected" : ""), "data-edge-id": edge.id });
      group.append(svg("path", { d, class: "edge-hit" }), svg("path", { d, class: "edge-line", "marker-end": "url(#arrow)" }));
      if (edge.sourceHandle) {
        const label = svg("text", { x: x1 + 6, y: y1 + 16, class: `edge-label ${edge.sourceHandle}` });
        label.textContent = edge.sourceHandle;
        group.append(label);
      }
      parts.push(group);
    }
    this.svg.replaceChildren(...parts);
  }

  onClick(event) {
    const handle = event.target.closest(".handle.out");
    if (handle) {
      const card = handle.closest(".node");
      this.editor.startConnect(card.dataset.nodeId, handle.dataset.handle || null);
      return;
    }
    const edge = event.target.closest(".edge");
    if (edge) {
      this.editor.selectEdge(edge.dataset.edgeId);
      return;
    }
    if (!event.target.closest(".node")) this.editor.backgroundClicked();
  }

  onPointerDown(event) {
    if (event.button !== 0 || event.target.closest(".handle")) return;
    const card = event.target.closest(".node");
    if (!card) return;
    const node = this.editor.node(card.dataset.nodeId);
    const pos = node.position || { x: 0, y: 0 };
    this.drag = { nodeId: node.id, card, startX: event.clientX, startY: event.clientY, x: pos.x, y: pos.y, moved: false };
    event.preventDefault();
  }

  onPointerMove(event) {
    const drag = this.drag;
    if (!drag) return;
    const dx = event.clientX - drag.startX;
    const dy = event.clientY - drag.startY;
    if (!drag.moved && Math.hypot(dx, dy) < DRAG_THRESHOLD) return;
    drag.moved = true;
    drag.card.classList.add("dragging");
    const node = this.editor.node(drag.nodeId);
    node.position = { x: Math.max(-PAD + 4, Math.round(drag.x + dx)), y: Math.max(-PAD + 4, Math.round(drag.y + dy)) };
    drag.card.style.left = `${node.position.x + PAD}px`;
    drag.card.style.top = `${node.position.y + PAD}px`;
    this.renderEdges();
  }

  onPointerUp() {
    const drag = this.drag;
    if (!drag) return;
    this.drag = null;
    drag.card.classList.remove("dragging");
    if (drag.moved) {
      this.resize();
      this.editor.nodeMoved(drag.nodeId);
    } else {
      this.editor.nodeClicked(drag.nodeId);
    }
  }
}
