// Lays out the same graphs with the editor's own Auto-layout and edge routing
// (static/builder/js/layout.js + routing.js) and with elkjs (layered, orthogonal edge routing,
// ports for the handles), and prints what each drawing looks like: edge crossings, bends, edges
// through a card, overlapping cards, total edge length, drawing area, and the median layout time
// of 20 runs. docs/adr/0054-layout-library.md records the figures and the decision they led to.
//
// Run from the repository root, after `npm ci --prefix frontend`:
//   node frontend/measure-layout.mjs            (a Markdown table; --json for the raw figures,
//                                               --svg DIR to also draw each layout as an SVG file)
// The demo graphs are read from the Python modules that define them (keeperstate/demo/graphs.py,
// keeperstate/workflows/examples.py) with $PYTHON, else .venv/bin/python, else python3.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";

import { autoLayout, CARD_WIDTH } from "../static/builder/js/layout.js";
import { routeEdge } from "../static/builder/js/routing.js";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..");
const ELK = createRequire(import.meta.url)("elkjs/lib/elk.bundled.js");
const RUNS = 20;

// --- the graphs ----------------------------------------------------------------------------

function demoGraphs() {
  const python = process.env.PYTHON || [join(root, ".venv/bin/python"), "/work/main/.venv/bin/python"].find(existsSync) || "python3";
  const code = [
    "import json",
    "from keeperstate.demo.graphs import heartbeat_graph, live_block_monitor_graph",
    "from keeperstate.workflows.examples import block_monitor_graph",
    "graphs = {'Block monitor (demo)': live_block_monitor_graph(), 'Heartbeat (demo)': heartbeat_graph(),",
    "          'Reference monitor (examples.py)': block_monitor_graph()}",
    "print(json.dumps({k: {'nodes': n, 'edges': e} for k, (n, e) in graphs.items()}))",
  ].join("\n");
  return JSON.parse(execFileSync(python, ["-c", code], { cwd: root, encoding: "utf8" }));
}

// A deterministic 50-node graph: a chain from a Schedule trigger through Conditions whose true
// branch (two nodes) and false branch (one node, or none: a skip edge over the branch) rejoin,
// and For Each loops (each: a three-node body; done: the chain goes on).
function generatedGraph(size = 50) {
  const nodes = [];
  const edges = [];
  const add = (actionType) => {
    const id = `n${nodes.length}`;
    nodes.push(actionType === "trigger"
      ? { id, type: "trigger", data: { type: "trigger", label: id, config: { triggerType: "Schedule" } } }
      : { id, type: "action", data: { type: "action", label: id, config: { actionType } } });
    return id;
  };
  const link = (source, target, sourceHandle) => {
    edges.push({ id: `e${edges.length}`, source, target, ...(sourceHandle ? { sourceHandle } : {}) });
  };
  let last = add("trigger");
  const step = (actionType, handle) => {
    const id = add(actionType);
    link(last, id, handle);
    last = id;
    return id;
  };
  const patterns = [
    () => step("State Get"),
    () => { // a diamond: true → two nodes, false → one node, both into a merge
      const cond = step("Condition");
      const t1 = step("HTTP Request", "true");
      const t2 = step("Set Fields");
      const f1 = add("State Set");
      link(cond, f1, "false");
      const merge = add("Set Fields");
      link(t2, merge);
      link(f1, merge);
      last = merge;
      return t1;
    },
    () => { // a loop: each → three nodes, done → the rest of the chain
      const loop = step("For Each");
      step("Set Fields", "each");
      step("HTTP Request");
      step("State Set");
      last = loop;
      step("Set Fields", "done");
    },
    () => { // a skip: true → two nodes into the merge, false → straight to the merge
      const cond = step("Condition");
      step("HTTP Request", "true");
      const t2 = step("State Set");
      const merge = add("Set Fields");
      link(t2, merge);
      link(cond, merge, "false");
      last = merge;
    },
  ];
  for (let i = 0; nodes.length + 5 <= size; i += 1) patterns[i % patterns.length]();
  while (nodes.length < size) step("State Get");
  return { nodes, edges };
}

// --- the cards ------------------------------------------------------------------------------

// Card heights as the editor renders them: measured from the demo graphs' saved positions (the
// rank-to-rank step minus Auto-layout's 70 px gap), per action type (State Set's is an estimate:
// no demo card follows one); width is CARD_WIDTH.
const HEIGHTS = {
  trigger: 104, "State Get": 89, "State Set": 106, "State Increment": 89, Condition: 125,
  "For Each": 124, "Set Fields": 105, "HTTP Request": 161,
};
const HANDLES = { Condition: ["true", "false"], "For Each": ["each", "done"], "State Set": ["success", "conflict"] };
const DEFAULT_HANDLE = { "State Set": "success" };
const HANDLE_DROP = 9; // the out-handles hang 9 px below the card (builder.css .node-outs)
const TARGET_GAP = 2; // an edge ends 2 px above its target card (canvas.js renderEdges)

const actionOf = (n) => (n.type === "trigger" ? "trigger" : n.data?.config?.actionType);
const sizeOf = (n) => ({ width: CARD_WIDTH, height: HEIGHTS[actionOf(n)] ?? 105 });
const handlesOf = (n) => HANDLES[actionOf(n)] || [""];
const handleOf = (n, e) => e.sourceHandle || DEFAULT_HANDLE[actionOf(n)] || handlesOf(n)[0];
// The handle's centre across the card: .node-outs spreads the handles with space-around.
const handleX = (n, handle) => {
  const hs = handlesOf(n);
  const i = Math.max(0, hs.indexOf(handle));
  return (CARD_WIDTH * (2 * i + 1)) / (2 * hs.length);
};
// editor.js handleOrder: a branch's signed place among its node's handles.
const branchOffset = (byId) => (e) => {
  const hs = HANDLES[actionOf(byId.get(e.source))] || [];
  const i = hs.indexOf(e.sourceHandle || "");
  return hs.length > 1 && i >= 0 ? i / (hs.length - 1) - 0.5 : 0;
};

// --- the two engines: each answers the cards' boxes and every edge as a polyline -------------

function ours(graph) {
  const { nodes, edges } = graph;
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const positions = autoLayout(nodes, edges, sizeOf, branchOffset(byId));
  const boxes = nodes.map((n) => ({ id: n.id, ...positions[n.id], ...sizeOf(n) }));
  const boxById = new Map(boxes.map((b) => [b.id, b]));
  const routes = edges.map((e) => {
    const s = boxById.get(e.source);
    const t = boxById.get(e.target);
    const from = { x: s.x + handleX(byId.get(e.source), handleOf(byId.get(e.source), e)), y: s.y + s.height + HANDLE_DROP };
    const to = { x: t.x + t.width / 2, y: t.y - TARGET_GAP };
    return fromPathData(routeEdge(from, to, s, t, boxes).d);
  });
  return { boxes, routes };
}

const ELK_OPTIONS = {
  "elk.algorithm": "layered",
  "elk.direction": "DOWN",
  "elk.edgeRouting": "ORTHOGONAL",
  "elk.spacing.nodeNode": "50", // layout.js GAP_X
  // layout.js GAP_Y is 70 px from card to card; elkjs counts its layer spacing from the ports'
  // tips, which stand HANDLE_DROP below and TARGET_GAP above the cards: the same 70 px between cards.
  "elk.layered.spacing.nodeNodeBetweenLayers": "59",
  // more or other options to try: --elk key=value (e.g. --elk elk.layered.nodePlacement.strategy=NETWORK_SIMPLEX)
  ...Object.fromEntries(process.argv.flatMap((a, i) => (process.argv[i - 1] === "--elk" ? [a.split("=")] : []))),
};

function elkGraph(graph) {
  const byId = new Map(graph.nodes.map((n) => [n.id, n]));
  return {
    id: "root",
    layoutOptions: ELK_OPTIONS,
    children: graph.nodes.map((n) => ({
      id: n.id,
      ...sizeOf(n),
      layoutOptions: { "elk.portConstraints": "FIXED_POS" },
      ports: [
        { id: `${n.id}:in`, x: CARD_WIDTH / 2, y: 0, width: 0, height: 0,
          layoutOptions: { "elk.port.side": "NORTH", "elk.port.borderOffset": String(TARGET_GAP) } },
        ...handlesOf(n).map((h) => ({
          id: `${n.id}:out:${h}`, x: handleX(n, h), y: sizeOf(n).height, width: 0, height: 0,
          layoutOptions: { "elk.port.side": "SOUTH", "elk.port.borderOffset": String(HANDLE_DROP) },
        })),
      ],
    })),
    edges: graph.edges.map((e) => ({
      id: e.id,
      sources: [`${e.source}:out:${handleOf(byId.get(e.source), e)}`],
      targets: [`${e.target}:in`],
    })),
  };
}

async function elk(graph, engine) {
  const laid = await engine.layout(elkGraph(graph));
  const boxes = laid.children.map((c) => ({ id: c.id, x: c.x, y: c.y, width: c.width, height: c.height }));
  const routes = laid.edges.map((e) => e.sections.flatMap((s) => [s.startPoint, ...(s.bendPoints || []), s.endPoint]))
    .map((points) => ({ points, bends: points.length - 2 }));
  return { boxes, routes };
}

// --- SVG path data (M, L, Q, C) as a polyline -------------------------------------------------

// A rounded corner (Q) is one bend; an S-curve (C) that moves sideways reads as two bends (it is
// the smooth form of down-across-down), a straight one as none.
function fromPathData(d) {
  const tokens = d.match(/[MLQC]|-?\d*\.?\d+(?:e-?\d+)?/g);
  const points = [];
  let bends = 0;
  let i = 0;
  const num = () => Number(tokens[i++]);
  const pt = () => ({ x: num(), y: num() });
  const sample = (f) => { for (let k = 1; k <= 16; k += 1) points.push(f(k / 16)); };
  while (i < tokens.length) {
    const cmd = tokens[i++];
    const p0 = points.at(-1);
    if (cmd === "M" || cmd === "L") points.push(pt());
    else if (cmd === "Q") {
      const [c, p] = [pt(), pt()];
      bends += 1;
      sample((t) => ({ x: (1 - t) ** 2 * p0.x + 2 * (1 - t) * t * c.x + t * t * p.x, y: (1 - t) ** 2 * p0.y + 2 * (1 - t) * t * c.y + t * t * p.y }));
    } else if (cmd === "C") {
      const [c1, c2, p] = [pt(), pt(), pt()];
      if (Math.abs(p.x - p0.x) > 0.5) bends += 2;
      const b = (a, q, r, s, t) => (1 - t) ** 3 * a + 3 * (1 - t) ** 2 * t * q + 3 * (1 - t) * t * t * r + t ** 3 * s;
      sample((t) => ({ x: b(p0.x, c1.x, c2.x, p.x, t), y: b(p0.y, c1.y, c2.y, p.y, t) }));
    } else throw new Error(`unexpected path command ${cmd} in ${d}`);
  }
  return { points, bends };
}

// --- the measures ---------------------------------------------------------------------------

const segments = (points) => points.slice(1).map((p, i) => [points[i], p]);
const length = (points) => segments(points).reduce((sum, [a, b]) => sum + Math.hypot(b.x - a.x, b.y - a.y), 0);

// Whether two segments cross properly (not at an end, not along each other).
function cross([a, b], [c, d]) {
  const den = (b.x - a.x) * (d.y - c.y) - (b.y - a.y) * (d.x - c.x);
  if (Math.abs(den) < 1e-9) return false;
  const t = ((c.x - a.x) * (d.y - c.y) - (c.y - a.y) * (d.x - c.x)) / den;
  const u = ((c.x - a.x) * (b.y - a.y) - (c.y - a.y) * (b.x - a.x)) / den;
  const eps = 1e-6;
  return t > eps && t < 1 - eps && u > eps && u < 1 - eps;
}

// Whether a segment runs through the inside of a box (Liang–Barsky clipping; touching is fine).
function throughBox([a, b], box, inset = 1) {
  const [x0, x1, y0, y1] = [box.x + inset, box.x + box.width - inset, box.y + inset, box.y + box.height - inset];
  let [lo, hi] = [0, 1];
  const dx = b.x - a.x;
  const dy = b.y - a.y;
  for (const [p, q] of [[-dx, a.x - x0], [dx, x1 - a.x], [-dy, a.y - y0], [dy, y1 - a.y]]) {
    if (p === 0) { if (q < 0) return false; continue; }
    const r = q / p;
    if (p < 0) lo = Math.max(lo, r); else hi = Math.min(hi, r);
    if (lo > hi) return false;
  }
  return hi - lo > 1e-9;
}

function measure({ boxes, routes }) {
  let crossings = 0;
  for (let i = 0; i < routes.length; i += 1) {
    for (let j = i + 1; j < routes.length; j += 1) {
      for (const s of segments(routes[i].points)) for (const t of segments(routes[j].points)) if (cross(s, t)) crossings += 1;
    }
  }
  const throughCards = routes.reduce((sum, r) => sum + boxes.filter((b) => segments(r.points).some((s) => throughBox(s, b))).length, 0);
  let overlaps = 0;
  for (let i = 0; i < boxes.length; i += 1) {
    for (let j = i + 1; j < boxes.length; j += 1) {
      const [a, b] = [boxes[i], boxes[j]];
      if (a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height) overlaps += 1;
    }
  }
  const xs = [...boxes.flatMap((b) => [b.x, b.x + b.width]), ...routes.flatMap((r) => r.points.map((p) => p.x))];
  const ys = [...boxes.flatMap((b) => [b.y, b.y + b.height]), ...routes.flatMap((r) => r.points.map((p) => p.y))];
  const [width, height] = [Math.max(...xs) - Math.min(...xs), Math.max(...ys) - Math.min(...ys)];
  return {
    crossings,
    bends: routes.reduce((sum, r) => sum + r.bends, 0),
    throughCards,
    overlaps,
    edgeLength: Math.round(routes.reduce((sum, r) => sum + length(r.points), 0)),
    // not a quality measure: the length with every piece counted as across + down, which is what
    // an S-curve would be as right angles (elkjs draws right angles only, so its two are equal)
    rightAngleLength: Math.round(routes.reduce((sum, r) => sum + segments(r.points).reduce((s, [a, b]) => s + Math.abs(b.x - a.x) + Math.abs(b.y - a.y), 0), 0)),
    width: Math.round(width),
    height: Math.round(height),
    area: Math.round(width * height),
  };
}

async function medianMs(run) {
  for (let k = 0; k < 3; k += 1) await run(); // warm up the JIT
  const times = [];
  for (let k = 0; k < RUNS; k += 1) {
    const t0 = performance.now();
    await run();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return (times[RUNS / 2 - 1] + times[RUNS / 2]) / 2;
}

// A drawing of one layout: the cards as boxes, the edges as the polylines that were measured.
function drawing({ boxes, routes }) {
  const xs = [...boxes.flatMap((b) => [b.x, b.x + b.width]), ...routes.flatMap((r) => r.points.map((p) => p.x))];
  const ys = [...boxes.flatMap((b) => [b.y, b.y + b.height]), ...routes.flatMap((r) => r.points.map((p) => p.y))];
  const [x0, y0] = [Math.min(...xs) - 10, Math.min(...ys) - 10];
  const [w, h] = [Math.max(...xs) - x0 + 10, Math.max(...ys) - y0 + 10];
  const cards = boxes.map((b) => `<rect x="${b.x}" y="${b.y}" width="${b.width}" height="${b.height}" rx="10" fill="#fff" stroke="#98a2b3"/><text x="${b.x + 10}" y="${b.y + 20}" font-family="sans-serif" font-size="13">${b.id}</text>`);
  const lines = routes.map((r) => `<polyline points="${r.points.map((p) => `${p.x},${p.y}`).join(" ")}" fill="none" stroke="#2f5bd3" stroke-width="1.5"/>`);
  return `<svg xmlns="http://www.w3.org/2000/svg" viewBox="${x0} ${y0} ${w} ${h}" width="${w}" height="${h}"><rect x="${x0}" y="${y0}" width="${w}" height="${h}" fill="#f4f6fa"/>${cards.join("")}${lines.join("")}</svg>\n`;
}

const QUALITY = ["crossings", "bends", "throughCards", "overlaps", "edgeLength", "area"];

async function main() {
  const engine = new ELK();
  const graphs = { ...demoGraphs(), "Generated, 50 nodes": generatedGraph() };
  const results = [];
  const svgDir = process.argv[process.argv.indexOf("--svg") + 1];
  if (process.argv.includes("--svg")) mkdirSync(svgDir, { recursive: true });
  for (const [name, graph] of Object.entries(graphs)) {
    if (process.argv.includes("--svg")) {
      const file = name.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "");
      writeFileSync(join(svgDir, `${file}-ours.svg`), drawing(ours(graph)));
      writeFileSync(join(svgDir, `${file}-elkjs.svg`), drawing(await elk(graph, new ELK())));
    }
    const a = { engine: "ours", ...measure(ours(graph)), ms: await medianMs(() => ours(graph)) };
    const b = { engine: `elkjs ${ELK_VERSION}`, ...measure(await elk(graph, engine)), ms: await medianMs(() => elk(graph, engine)) };
    const elkAsGood = QUALITY.every((k) => b[k] <= a[k]);
    results.push({ graph: name, nodes: graph.nodes.length, edges: graph.edges.length, ours: a, elk: b, elkAsGood });
  }
  if (process.argv.includes("--json")) {
    console.log(JSON.stringify({ elkOptions: ELK_OPTIONS, results }, null, 2));
    return;
  }
  console.log("| Graph (nodes/edges) | Engine | Crossings | Bends | Edge through a card | Card overlaps | Edge length (px) | … as right angles | Area (px, W×H) | Time (ms, median of 20) |");
  console.log("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
  for (const r of results) {
    for (const m of [r.ours, r.elk]) {
      console.log(`| ${r.graph} (${r.nodes}/${r.edges}) | ${m.engine} | ${m.crossings} | ${m.bends} | ${m.throughCards} | ${m.overlaps} | ${m.edgeLength} | ${m.rightAngleLength} | ${m.area} (${m.width}×${m.height}) | ${m.ms.toFixed(2)} |`);
    }
  }
  const worse = results.filter((r) => !r.elkAsGood).map((r) => r.graph);
  console.log(worse.length
    ? `\nelkjs is worse than ours on at least one quality measure on: ${worse.join("; ")}.`
    : "\nelkjs is at least as good as ours on every quality measure on every graph.");
}

const ELK_VERSION = createRequire(import.meta.url)("elkjs/package.json").version;
await main();
