// Where nodes go: Auto-layout (top-down by rank, branches side by side) and a free spot for a
// new node. Pure functions over the graph and the cards' measured sizes, so they are easy to test.

export const CARD_WIDTH = 230;
const GAP_X = 50;
const GAP_Y = 70;
const MARGIN = 24; // the least space left between two cards

// The rank of each node: the longest path to it from a node with no incoming edge.
function ranks(nodes, edges) {
  const ids = new Set(nodes.map((n) => n.id));
  const incoming = new Map(nodes.map((n) => [n.id, []]));
  for (const e of edges) if (ids.has(e.source) && ids.has(e.target)) incoming.get(e.target).push(e);
  const rank = new Map();
  const visiting = new Set();
  const visit = (id) => {
    if (rank.has(id)) return rank.get(id);
    if (visiting.has(id)) return 0; // a loop (the validator reports it): break it here
    visiting.add(id);
    let r = 0;
    for (const e of incoming.get(id)) r = Math.max(r, visit(e.source) + 1);
    visiting.delete(id);
    rank.set(id, r);
    return r;
  };
  for (const n of nodes) visit(n.id);
  return { rank, incoming };
}

// Positions for every node: one row per rank, each row ordered by where its parents stand (a
// branch's handle order breaks ties: true before false), centred under the trigger.
export function autoLayout(nodes, edges, sizeOf, handleOrder) {
  const { rank, incoming } = ranks(nodes, edges);
  const rows = [];
  for (const n of nodes) {
    const r = rank.get(n.id);
    (rows[r] ||= []).push(n);
  }
  const order = new Map(); // node id -> its index in its row, centred on 0
  const positions = {};
  let y = 0;
  rows.forEach((row, r) => {
    if (!row) return;
    const key = (n) => {
      const parents = incoming.get(n.id).filter((e) => order.has(e.source));
      if (!parents.length) return r === 0 && n.type === "trigger" ? -Infinity : Number.MAX_SAFE_INTEGER;
      return parents.reduce((sum, e) => sum + order.get(e.source) + 0.1 * handleOrder(e), 0) / parents.length;
    };
    const keyed = row.map((n, i) => ({ n, k: key(n), i }));
    keyed.sort((a, b) => a.k - b.k || a.i - b.i);
    const height = Math.max(...row.map((n) => sizeOf(n).height));
    keyed.forEach(({ n }, i) => {
      const offset = i - (keyed.length - 1) / 2;
      order.set(n.id, offset);
      positions[n.id] = { x: Math.round(offset * (CARD_WIDTH + GAP_X)), y };
    });
    y += height + GAP_Y;
  });
  return positions;
}

// Whether two cards are closer than `margin`: too close leaves no room for the edge between them.
function overlaps(a, b, margin = MARGIN) {
  return a.x < b.x + b.width + margin && b.x < a.x + a.width + margin
    && a.y < b.y + b.height + margin && b.y < a.y + a.height + margin;
}

// The first spot at or right of `wanted` where a card of `size` overlaps no other card.
export function freeSpot(wanted, size, boxes) {
  const spot = { x: Math.round(wanted.x), y: Math.round(wanted.y), ...size };
  for (let tries = 0; tries < 200 && boxes.some((b) => overlaps(spot, b)); tries += 1) {
    spot.x += CARD_WIDTH + GAP_X;
  }
  return { x: spot.x, y: spot.y };
}

export function anyOverlap(boxes) {
  return boxes.some((a, i) => boxes.slice(i + 1).some((b) => overlaps(a, b)));
}

export function boundsOf(boxes) {
  if (!boxes.length) return { x: 0, y: 0, width: 0, height: 0 };
  const minX = Math.min(...boxes.map((b) => b.x));
  const minY = Math.min(...boxes.map((b) => b.y));
  const maxX = Math.max(...boxes.map((b) => b.x + b.width));
  const maxY = Math.max(...boxes.map((b) => b.y + b.height));
  return { x: minX, y: minY, width: maxX - minX, height: maxY - minY };
}
