// Pure helpers over the React Flow shaped graph: ids, labels, reachability.

export function nodeLabel(node) {
  return (node.data && node.data.label) || node.id;
}

// A node's config, to read (an empty object when it has none: nothing is written).
export function nodeConfig(node) {
  const config = node.data?.config;
  return config && typeof config === "object" ? config : {};
}

// A node's config, to change inside a store.change() (made when the node has none).
export function editableConfig(node) {
  node.data = node.data || {};
  if (!node.data.config || typeof node.data.config !== "object") node.data.config = {};
  return node.data.config;
}

export function isTrigger(node) {
  return node.type === "trigger";
}

function slug(text) {
  return text.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "") || "node";
}

// "State Get" → "state-get-1", then "state-get-2", ...
export function nextNodeId(nodes, actionType) {
  const base = slug(actionType);
  const taken = new Set(nodes.map((n) => n.id));
  let n = 1;
  while (taken.has(`${base}-${n}`)) n += 1;
  return `${base}-${n}`;
}

export function nextLabel(nodes, base) {
  const taken = new Set(nodes.map(nodeLabel));
  if (!taken.has(base)) return base;
  let n = 2;
  while (taken.has(`${base} ${n}`)) n += 1;
  return `${base} ${n}`;
}

export function nextEdgeId(edges) {
  const taken = new Set(edges.map((e) => e.id));
  let n = edges.length + 1;
  while (taken.has(`e${n}`)) n += 1;
  return `e${n}`;
}

// Whether `to` can be reached from `from` following edges forward.
export function reaches(edges, from, to) {
  const seen = new Set([from]);
  const queue = [from];
  while (queue.length) {
    const current = queue.shift();
    if (current === to) return true;
    for (const e of edges) {
      if (e.source === current && !seen.has(e.target)) {
        seen.add(e.target);
        queue.push(e.target);
      }
    }
  }
  return false;
}
