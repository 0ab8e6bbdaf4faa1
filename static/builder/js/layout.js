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

// Positions for every node: one row per rank. Each node wants to sit under its parents (a branch
// shifted to its handle's side: true left, false right); a row keeps that order, pushes cards
// apart where they would touch, and then moves as a whole as little as it can from what its
// nodes want. `branchOffset(edge)` is the handle's signed position (-0.5 true, +0.5 false, 0).
export function autoLayout(nodes, edges, sizeOf, branchOffset) {
  const { rank, incoming } = ranks(nodes, edges);
  const rows = [];
  for (const n of nodes) {
    const r = rank.get(n.id);
    (rows[r] ||= []).push(n);
  }
  const step = CARD_WIDTH + GAP_X;
  const positions = {};
  let y = 0;
  for (const row of rows) {
    if (!row) continue;
    const wanted = row.map((n, i) => {
      const parents = incoming.get(n.id).filter((e) => positions[e.source]);
      const x = parents.length
        ? parents.reduce((sum, e) => sum + positions[e.source].x + branchOffset(e) * step, 0) / parents.length
        : (n.type === "trigger" ? -1e9 : 1e9); // roots: the trigger first, other loose nodes last
      return { n, x, i };
    });
    wanted.sort((a, b) => a.x - b.x || a.i - b.i);
    // Roots have no parent to sit under: lay them out from 0 in their order.
    let placed = wanted.map((w, i) => (Math.abs(w.x) === 1e9 ? { ...w, x: i * step } : w));
    placed = placed.map((w) => ({ ...w, want: w.x }));
    for (let i = 1; i < placed.length; i += 1) placed[i].x = Math.max(placed[i].x, placed[i - 1].x + step);
    const shift = placed.reduce((sum, w) => sum + (w.want - w.x), 0) / placed.length;
    for (const w of placed) positions[w.n.id] = { x: Math.round(w.x + shift), y };
    y += Math.max(...row.map((n) => sizeOf(n).height)) + GAP_Y;
  }
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
