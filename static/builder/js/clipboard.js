// Copy, paste and duplicate of a selection of nodes. What is copied is a fragment of the graph:
// the nodes (never the trigger: a workflow has one) and the edges between them. Pasting gives
// every node a new id and a free label, copies those edges, and re-points references between
// the copied nodes at the copies; references to nodes outside the fragment are kept as written.
// The clipboard lives in this browser's localStorage, so a fragment pastes into another
// workflow too; the system clipboard gets the same JSON where the browser allows it.

import { isTrigger, nextEdgeId, nextLabel, nextNodeId, nodeConfig } from "./graph.js";

const KEY = "keeperstate.editor.clipboard";
const OFFSET = 40;

export function copyFragment(doc, nodeIds) {
  const ids = new Set(nodeIds);
  const nodes = doc.nodes.filter((n) => ids.has(n.id) && !isTrigger(n));
  const kept = new Set(nodes.map((n) => n.id));
  const edges = doc.edges.filter((e) => kept.has(e.source) && kept.has(e.target));
  const fragment = JSON.parse(JSON.stringify({ kind: "keeperstate-fragment", nodes, edges }));
  localStorage.setItem(KEY, JSON.stringify(fragment));
  navigator.clipboard?.writeText(JSON.stringify(fragment, null, 1)).catch(() => {}); // best effort
  return fragment;
}

export function readFragment() {
  try {
    const fragment = JSON.parse(localStorage.getItem(KEY) || "null");
    return fragment?.kind === "keeperstate-fragment" && Array.isArray(fragment.nodes) ? fragment : null;
  } catch {
    return null;
  }
}

function escapeRe(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

// The fragment's nodes and edges with new ids and labels for `doc`, placed `OFFSET` lower right.
export function pasteFragment(doc, fragment) {
  const taken = [...doc.nodes];
  const renamed = new Map();
  const nodes = [];
  for (const original of fragment.nodes) {
    const node = JSON.parse(JSON.stringify(original));
    const type = nodeConfig(node).actionType || "node";
    node.id = nextNodeId(taken, type);
    node.data.label = nextLabel(taken, node.data.label || type);
    node.position = { x: (original.position?.x ?? 0) + OFFSET, y: (original.position?.y ?? 0) + OFFSET };
    renamed.set(original.id, { id: node.id, label: node.data.label, oldLabel: original.data?.label || original.id });
    taken.push(node);
    nodes.push(node);
  }
  // <<@old-id:Old label.path>> → <<@new-id:New label.path>>, for the copied nodes only.
  for (const node of nodes) {
    let text = JSON.stringify(node.data.config || {});
    for (const [oldId, to] of renamed) {
      const re = new RegExp(`<<@${escapeRe(oldId)}:${escapeRe(to.oldLabel)}(?=[.>])`, "g");
      text = text.replace(re, `<<@${to.id}:${to.label}`);
      text = text.replace(new RegExp(`<<@${escapeRe(oldId)}:`, "g"), `<<@${to.id}:`);
    }
    node.data.config = JSON.parse(text);
  }
  const edges = [];
  const allEdges = [...doc.edges];
  for (const original of fragment.edges || []) {
    if (!renamed.has(original.source) || !renamed.has(original.target)) continue;
    const edge = { ...original, id: nextEdgeId(allEdges), source: renamed.get(original.source).id, target: renamed.get(original.target).id };
    allEdges.push(edge);
    edges.push(edge);
  }
  return { nodes, edges };
}
