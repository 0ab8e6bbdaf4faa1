// Questions asked of the store's state, as pure functions: which node, which action, which
// findings. Components import these and read the store they are given; none holds the editor.

import { isTrigger, nodeConfig } from "./graph.js";
import { findTokens } from "./tokens.js";

export const PINNED_KEY = "pinnedData";

export function nodeById(doc, id) {
  return doc.nodes.find((n) => n.id === id) || null;
}

export function nodesById(doc) {
  return new Map(doc.nodes.map((n) => [n.id, n]));
}

export function selectedNodeId(ui) {
  return ui.selected?.kind === "node" ? ui.selected.id : null;
}

export function selectedNode(store) {
  const id = selectedNodeId(store.ui);
  return id ? nodeById(store.doc, id) : null;
}

// The catalogue entry of a node's action or trigger kind; null for a note or an unknown action.
export function definitionOf(catalogue, node) {
  if (!node || isNote(node)) return null;
  const config = node.data?.config || {};
  if (isTrigger(node)) return catalogue.triggers[config.triggerType || "Manual"] || null;
  return catalogue.actions[config.actionType] || null;
}

export function isNote(node) {
  return node?.type === "note";
}

export function pinnedData(node) {
  const pinned = node?.data?.[PINNED_KEY];
  return pinned && typeof pinned === "object" && !Array.isArray(pinned) ? pinned : null;
}

export function findingsOf(report, nodeId) {
  if (!report) return [];
  return [
    ...report.errors.filter((f) => f.nodeId === nodeId).map((f) => ({ ...f, level: "error" })),
    ...report.warnings.filter((f) => f.nodeId === nodeId).map((f) => ({ ...f, level: "warning" })),
  ];
}

export function problemsOf(report, nodeId) {
  const findings = findingsOf(report, nodeId);
  return { errors: findings.filter((f) => f.level === "error").length, warnings: findings.filter((f) => f.level === "warning").length };
}

// The nodes whose config holds a reference to `nodeId`.
export function referrersOf(doc, nodeId) {
  return doc.nodes.filter((n) => n.id !== nodeId && !isNote(n) && Object.values(nodeConfig(n)).some(
    (value) => findTokens(typeof value === "string" ? value : JSON.stringify(value ?? "")).some((t) => t.nodeId === nodeId),
  ));
}

// What a node received in `execution`: the trigger the run input; any other node the outputs of
// the nodes it is connected from (by label), which its references read.
export function inputOf(doc, node, execution) {
  if (isTrigger(node)) return execution.input;
  const input = {};
  for (const edge of doc.edges.filter((e) => e.target === node.id)) {
    const source = nodeById(doc, edge.source);
    const result = (execution.nodeResults || {})[edge.source];
    if (source && result?.success) input[source.data?.label || source.id] = result.data;
  }
  return input;
}

// How many items passed an edge in `execution`: one for a node that ran once on this branch,
// the loop's count on a For Each's each branch, a body node's iterations; 0 when none passed.
export function itemsOver(edge, execution, catalogue, doc) {
  const result = execution?.nodeResults?.[edge.source];
  if (!result || result.skipped || !result.success) return 0;
  const def = definitionOf(catalogue, nodeById(doc, edge.source));
  if (def?.loop) return edge.sourceHandle === "each" ? result.data?.count ?? 0 : 1;
  const taken = takenHandle(def, result);
  if (taken && (edge.sourceHandle || def.defaultHandle) !== taken) return 0;
  return result.iterationCount ?? 1;
}

// The branch a result followed, where its data says it (a Condition's result, a State Set's conflict).
function takenHandle(def, result) {
  const handles = def?.sourceHandles || [];
  if (handles.includes("true")) return result.data?.result ? "true" : "false";
  if (handles.includes("conflict")) return result.data?.conflict ? "conflict" : "success";
  return null;
}
