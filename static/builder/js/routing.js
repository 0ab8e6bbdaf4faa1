// Edge routing: where a connection runs from a source handle to the top of its target card without
// crossing any other card.
//
// The approach, in two steps:
// 1. The plain case: when no card lies in the rectangle between the handle and the target's top,
//    the edge is the usual S-curve (a cubic Bézier with vertical tangents, which never leaves that
//    rectangle), so it cannot touch a card.
// 2. Otherwise (a card in between, a back edge, a long edge that skips a rank) the edge is routed
//    orthogonally on a sparse grid: the lines PAD away from every card's sides, the handle's and the
//    target's columns, and the middle of each channel between those lines. A shortest-path search
//    over that grid (Dijkstra, with a cost for each bend and a small one for hugging a card rather
//    than running down the middle of a channel) finds a path that leaves the handle downwards, goes
//    round every card in its way (its own source and target included) and drops onto the target
//    from above. The corners are rounded with a radius below PAD, so the curve stays clear of the
//    cards too.
// When no route exists (cards packed closer than PAD), the plain curve is drawn after all.

const PAD = 16; // the least distance a routed edge keeps from a card
const RADIUS = 12; // corner rounding, below PAD so a rounded corner never cuts into a card
const BEND = 40; // what a bend costs, in pixels of length: fewer bends read better
const HUG = 0.15; // extra cost per pixel run along a card's side instead of a channel's middle

const DOWN = 0;
const UP = 1;
const RIGHT = 2;
const LEFT = 3;

// A path for the edge from `from` (the handle's bottom) to `to` (the target's top), given the
// source and target boxes and all the cards' boxes ({x, y, width, height}, plane coordinates).
// Answers the SVG path data and a point beside the path for the branch label.
export function routeEdge(from, to, source, target, boxes) {
  const others = boxes.filter((b) => b !== source && b !== target);
  const clear = to.y >= from.y + 20 && !others.some((b) => intersects(b, spanOf(from, to), 2));
  const points = clear ? null : orthogonal(from, to, source, target, boxes);
  if (!points) return { d: curve(from, to), label: { x: (from.x + to.x) / 2 + 6, y: (from.y + to.y) / 2 } };
  return { d: rounded(points), label: labelPoint(points) };
}

// The plain S-curve: it leaves the handle downwards and drops onto the target's top.
function curve(from, to) {
  const dy = Math.max(40, Math.abs(to.y - from.y) / 2);
  return `M ${from.x} ${from.y} C ${from.x} ${from.y + dy}, ${to.x} ${to.y - dy}, ${to.x} ${to.y}`;
}

function spanOf(a, b) {
  return { x: Math.min(a.x, b.x), y: Math.min(a.y, b.y), width: Math.abs(a.x - b.x), height: Math.abs(a.y - b.y) };
}

function intersects(box, rect, margin) {
  return box.x - margin < rect.x + rect.width && rect.x < box.x + box.width + margin
    && box.y - margin < rect.y + rect.height && rect.y < box.y + box.height + margin;
}

function inflate(b) {
  return { left: b.x - PAD, right: b.x + b.width + PAD, top: b.y - PAD, bottom: b.y + b.height + PAD };
}

function sortedUnique(values) {
  return [...new Set(values.map((v) => Math.round(v * 2) / 2))].sort((a, b) => a - b);
}

// Grid lines: the given lines plus the middle of every gap between two neighbours.
function withMiddles(lines) {
  const out = [...lines];
  for (let i = 1; i < lines.length; i += 1) out.push((lines[i - 1] + lines[i]) / 2);
  return sortedUnique(out);
}

// The corner points of the cheapest orthogonal path from under the handle to above the target.
function orthogonal(from, to, source, target, boxes) {
  const walls = boxes.map(inflate);
  const start = { x: from.x, y: Math.max(from.y, inflate(source).bottom) };
  const end = { x: to.x, y: Math.min(to.y, inflate(target).top) };
  const xSides = sortedUnique(walls.flatMap((w) => [w.left, w.right]));
  const ySides = sortedUnique(walls.flatMap((w) => [w.top, w.bottom]));
  const xs = withMiddles(sortedUnique([start.x, end.x, ...xSides]));
  const ys = withMiddles(sortedUnique([start.y, end.y, ...ySides]));
  const [alongX, alongY] = [new Set(xSides), new Set(ySides)];
  const nx = xs.length;
  const ny = ys.length;
  const sx = xs.indexOf(Math.round(start.x * 2) / 2);
  const sy = ys.indexOf(Math.round(start.y * 2) / 2);
  const ex = xs.indexOf(Math.round(end.x * 2) / 2);
  const ey = ys.indexOf(Math.round(end.y * 2) / 2);

  // A straight piece of the path between two neighbouring grid points is open when it does not
  // run through the inside of any card's padded box (running along its edge is fine).
  const open = (x1, y1, x2, y2) => !walls.some((w) => (
    Math.max(x1, x2) > w.left && Math.min(x1, x2) < w.right && Math.max(y1, y2) > w.top && Math.min(y1, y2) < w.bottom
    && (x1 === x2 ? x1 > w.left && x1 < w.right : y1 > w.top && y1 < w.bottom)
  ));
  const moves = [];
  moves[DOWN] = [0, 1];
  moves[UP] = [0, -1];
  moves[RIGHT] = [1, 0];
  moves[LEFT] = [-1, 0];

  const states = nx * ny * 4;
  const cost = new Float64Array(states).fill(Infinity);
  const back = new Int32Array(states).fill(-1);
  const heap = new Heap();
  const first = (sy * nx + sx) * 4 + DOWN; // the path leaves the handle downwards
  cost[first] = 0;
  heap.push(first, 0);
  // The last piece drops onto the target: arriving from the side costs that one more bend.
  let found = -1;
  let best = Infinity;
  while (heap.size) {
    const [state, c] = heap.pop();
    if (c >= best) break;
    if (c > cost[state]) continue;
    const dir = state & 3;
    const cell = state >> 2;
    const xi = cell % nx;
    const yi = (cell - xi) / nx;
    if (xi === ex && yi === ey) {
      const total = c + (dir === DOWN ? 0 : BEND);
      if (total < best) [best, found] = [total, state];
      continue;
    }
    for (let m = 0; m < 4; m += 1) {
      if ((m ^ 1) === dir) continue; // no turning back on itself (DOWN/UP and RIGHT/LEFT differ in the last bit)
      const nxi = xi + moves[m][0];
      const nyi = yi + moves[m][1];
      if (nxi < 0 || nyi < 0 || nxi >= nx || nyi >= ny) continue;
      const [x1, y1, x2, y2] = [xs[xi], ys[yi], xs[nxi], ys[nyi]];
      if (!open(x1, y1, x2, y2)) continue;
      const length = Math.abs(x2 - x1) + Math.abs(y2 - y1);
      const hugging = m < 2 ? alongX.has(x1) : alongY.has(y1);
      const next = (nyi * nx + nxi) * 4 + m;
      const nextCost = c + length * (hugging ? 1 + HUG : 1) + (m === dir ? 0 : BEND);
      if (nextCost < cost[next]) {
        cost[next] = nextCost;
        back[next] = state;
        heap.push(next, nextCost);
      }
    }
  }
  if (found < 0) return null;

  // Walk back, keeping only the corners.
  const cells = [];
  for (let s = found; s >= 0; s = back[s]) cells.push(s);
  cells.reverse();
  const points = [from];
  const at = (s) => { const cell = s >> 2; const xi = cell % nx; return { x: xs[xi], y: ys[(cell - xi) / nx] }; };
  for (let i = 0; i < cells.length; i += 1) {
    const heading = i + 1 < cells.length ? cells[i + 1] & 3 : DOWN; // after the last cell: down onto the target
    if (heading !== (cells[i] & 3)) points.push(at(cells[i]));
  }
  points.push(to);
  return points;
}

// The polyline with its corners rounded (a quadratic curve through each corner).
function rounded(points) {
  let d = `M ${points[0].x} ${points[0].y}`;
  for (let i = 1; i < points.length - 1; i += 1) {
    const [p, c, n] = [points[i - 1], points[i], points[i + 1]];
    // half of a piece between two corners; the whole of the first or last piece (the stubs)
    const r = Math.min(RADIUS, dist(p, c) / (i === 1 ? 1 : 2), dist(c, n) / (i === points.length - 2 ? 1 : 2));
    const a = toward(c, p, r);
    const b = toward(c, n, r);
    d += ` L ${a.x} ${a.y} Q ${c.x} ${c.y}, ${b.x} ${b.y}`;
  }
  const last = points.at(-1);
  return `${d} L ${last.x} ${last.y}`;
}

function dist(a, b) {
  return Math.abs(a.x - b.x) + Math.abs(a.y - b.y);
}

function toward(from, to, r) {
  const length = dist(from, to) || 1;
  return { x: from.x + ((to.x - from.x) / length) * r, y: from.y + ((to.y - from.y) / length) * r };
}

// Beside the middle of the path's longest straight piece: right of a vertical one, above a
// horizontal one.
function labelPoint(points) {
  let best = 0;
  for (let i = 1; i < points.length - 1; i += 1) if (dist(points[i], points[i + 1]) > dist(points[best], points[best + 1])) best = i;
  const [a, b] = [points[best], points[best + 1]];
  const mid = { x: (a.x + b.x) / 2, y: (a.y + b.y) / 2 };
  return a.x === b.x ? { x: mid.x + 6, y: mid.y } : { x: mid.x - 12, y: mid.y - 5 };
}

// A binary min-heap of (state, cost) pairs for the search.
class Heap {
  constructor() {
    this.items = [];
  }

  get size() {
    return this.items.length;
  }

  push(state, cost) {
    const items = this.items;
    items.push([state, cost]);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (items[parent][1] <= cost) break;
      [items[i], items[parent]] = [items[parent], items[i]];
      i = parent;
    }
  }

  pop() {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (items.length) {
      items[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < items.length && items[l][1] < items[m][1]) m = l;
        if (r < items.length && items[r][1] < items[m][1]) m = r;
        if (m === i) break;
        [items[i], items[m]] = [items[m], items[i]];
        i = m;
      }
    }
    return top;
  }
}
