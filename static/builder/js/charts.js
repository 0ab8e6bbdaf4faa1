// Charts of runs and state (docs/editor.md#charts), drawn with Chart.js (static/vendor/chart.js,
// the global `Chart`; ADR 0055). Every chart is a <figure> with a one-line summary, the canvas
// (role="img", its label the summary), and its numbers as a table behind a "Show the numbers"
// toggle. Statuses differ by pattern as well as colour, and the values are written on the chart
// where they fit, so no chart is read by colour alone. Each figure carries what it drew in
// data-drawn (JSON), which the browser tests compare with the API's numbers.
//
// Renderers take the API's own shapes: GET /api/workflows/<id>/executions/stats/ (runs, durations)
// and GET /api/workflows/<id>/state-chart/ (a key over time). The editor hooks in through RunCharts and
// StateCharts, given the api module (api.js) and the panel they draw beside; other pages through
// mountCharts (server-rendered JSON).

import { el } from "./dom.js";

const STATUS = {
  success: { label: "Succeeded", color: "#1e7a46", pattern: "solid" },
  error: { label: "Failed", color: "#c2352b", pattern: "stripes" },
  interrupted: { label: "Interrupted", color: "#a15c00", pattern: "dots" },
  skipped: { label: "Skipped", color: "#667085", pattern: "cross" },
};
const RANGE_TEXT = { "1h": "last hour", "24h": "last 24 hours", "7d": "last 7 days" };
const NEAR = 0.8;
const FULL = 0.95;
const numbers = new Intl.NumberFormat("en-US");
let figureSeq = 0;

function chartLibrary() {
  if (!window.Chart) throw new Error("Chart.js is not loaded: run node frontend/vendor.mjs");
  return window.Chart;
}

// A fill that differs by more than hue: solid, stripes, dots or a cross-hatch on a light ground.
const patterns = new Map();
export function fill(kind, color) {
  const id = `${kind}:${color}`;
  if (kind === "solid") return color;
  if (patterns.has(id)) return patterns.get(id);
  const tile = document.createElement("canvas");
  tile.width = tile.height = 8;
  const ctx = tile.getContext("2d");
  ctx.fillStyle = "#ffffff";
  ctx.fillRect(0, 0, 8, 8);
  ctx.strokeStyle = ctx.fillStyle = color;
  ctx.lineWidth = 2;
  if (kind === "stripes") {
    ctx.beginPath();
    ctx.moveTo(-2, 10); ctx.lineTo(10, -2);
    ctx.moveTo(-2, 2); ctx.lineTo(2, -2);
    ctx.moveTo(6, 10); ctx.lineTo(10, 6);
    ctx.stroke();
  } else if (kind === "dots") {
    ctx.beginPath();
    ctx.arc(4, 4, 2.2, 0, 2 * Math.PI);
    ctx.fill();
  } else {
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    ctx.moveTo(0, 4); ctx.lineTo(8, 4); ctx.moveTo(4, 0); ctx.lineTo(4, 8);
    ctx.stroke();
  }
  const made = ctx.createPattern(tile, "repeat");
  patterns.set(id, made);
  return made;
}

export function formatMs(ms) {
  if (ms === null || ms === undefined) return "—";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  return ms < 60000 ? `${(ms / 1000).toFixed(1)} s` : `${(ms / 60000).toFixed(1)} min`;
}

function bucketLabel(iso, range) {
  const date = new Date(iso);
  const time = date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  return range === "7d" ? `${date.toLocaleDateString([], { weekday: "short" })} ${time}` : time;
}

function timeCell(iso, text) {
  const time = el("time", null, text);
  time.dateTime = iso;
  time.title = new Date(iso).toLocaleString();
  return time;
}

// The frame every chart shares: summary, canvas, toggle and table. `mini`: no toggle text, small.
// A redrawn chart keeps its table open if the reader had opened it.
function figure(host, { kind, title, mini = false }) {
  const id = `chart-${kind}-${++figureSeq}`;
  const wasOpen = host.querySelector(".chart-table-box")?.hidden === false;
  const root = el("figure", `chart chart-${kind}${mini ? " chart-mini" : ""}`);
  root.dataset.chart = kind;
  const caption = el("figcaption", "chart-caption");
  const heading = el("span", "chart-title", title);
  const summary = el("span", "chart-summary");
  summary.id = `${id}-summary`;
  caption.append(heading, summary);
  const box = el("div", "chart-canvas");
  const canvas = el("canvas");
  canvas.setAttribute("role", "img");
  canvas.setAttribute("aria-labelledby", summary.id);
  box.append(canvas);
  const toggle = el("button", "chart-toggle linklike", mini ? "Numbers" : "Show the numbers");
  toggle.type = "button";
  toggle.setAttribute("aria-expanded", "false");
  toggle.setAttribute("aria-controls", `${id}-table`);
  if (mini) toggle.setAttribute("aria-label", `Show the numbers of ${title}`);
  const tableBox = el("div", "chart-table-box");
  tableBox.id = `${id}-table`;
  tableBox.hidden = true;
  // It scrolls: a region a keyboard can focus and scroll (axe: scrollable-region-focusable).
  tableBox.tabIndex = 0;
  tableBox.setAttribute("role", "region");
  tableBox.setAttribute("aria-label", `The numbers of ${title}`);
  toggle.addEventListener("click", () => {
    tableBox.hidden = !tableBox.hidden;
    toggle.setAttribute("aria-expanded", String(!tableBox.hidden));
    if (!mini) toggle.textContent = tableBox.hidden ? "Show the numbers" : "Hide the numbers";
  });
  caption.append(toggle);
  if (wasOpen) {
    tableBox.hidden = false;
    toggle.setAttribute("aria-expanded", "true");
    if (!mini) toggle.textContent = "Hide the numbers";
  }
  root.append(caption, box, tableBox);
  host.replaceChildren(root);
  return { root, summary, canvas, tableBox };
}

function table(caption, head, rows) {
  const t = el("table", "chart-table");
  t.append(el("caption", null, caption));
  const thead = el("thead");
  const tr = el("tr");
  for (const name of head) {
    const th = el("th", null, name);
    th.scope = "col";
    tr.append(th);
  }
  thead.append(tr);
  const tbody = el("tbody");
  for (const cells of rows) {
    const row = el("tr");
    for (const cell of cells) {
      const td = el("td");
      td.append(cell instanceof Node ? cell : String(cell));
      row.append(td);
    }
    tbody.append(row);
  }
  t.append(thead, tbody);
  return t;
}

// Writes each bar's total (or each point's value) on the chart where it fits: direct values.
const directValues = {
  id: "ksDirectValues",
  afterDatasetsDraw(chart, _args, options) {
    if (!options.values) return;
    const { ctx } = chart;
    const meta = chart.getDatasetMeta(options.dataset ?? chart.data.datasets.length - 1);
    ctx.save();
    ctx.font = "11px system-ui, sans-serif";
    ctx.fillStyle = "#1d2330";
    ctx.textAlign = "center";
    const width = meta.data.length > 1 ? Math.abs(meta.data[1].x - meta.data[0].x) : 100;
    if (width >= (options.minWidth || 14)) {
      options.values.forEach((value, index) => {
        const point = options.stacked ? chart.getDatasetMeta(options.topOf(index)).data[index] : meta.data[index];
        if (value === null || value === undefined || value === 0 || !point) return;
        ctx.fillText(options.format ? options.format(value) : String(value), point.x, point.y - 4);
      });
    }
    ctx.restore();
  },
};

function draw(canvas, config) {
  const Chart = chartLibrary();
  Chart.getChart(canvas)?.destroy();
  config.options = {
    animation: false,
    responsive: true,
    maintainAspectRatio: false,
    layout: { padding: { top: 14 } }, // room for the values written above bars and points
    ...config.options,
  };
  config.plugins = [...(config.plugins || []), directValues];
  return new Chart(canvas, config);
}

function record(root, chart, extra = {}) {
  root.dataset.drawn = JSON.stringify({
    labels: chart.data.labels,
    datasets: chart.data.datasets.map((d) => ({ key: d.key, label: d.label, data: d.data })),
    ...extra,
  });
}

// --- runs ------------------------------------------------------------------------------------

export function renderRunsChart(host, stats, { onBucket = null, mini = false, title = "Runs by status" } = {}) {
  const { root, summary, canvas, tableBox } = figure(host, { kind: "runs", title, mini });
  const { totals, buckets, range } = stats;
  const failed = totals.error + totals.interrupted;
  summary.textContent = `${numbers.format(totals.total)} run${totals.total === 1 ? "" : "s"} in the ${RANGE_TEXT[range]}: ${
     stats.statuses.map((s) => `${numbers.format(totals[s])} ${STATUS[s].label.toLowerCase()}`).join(", ")
     }${failed ? "." : "; none failed."}`;
  const labels = buckets.map((b) => bucketLabel(b.start, range));
  const datasets = stats.statuses.map((status) => ({
    key: status,
    label: `${STATUS[status].label} (${numbers.format(totals[status])})`,
    data: buckets.map((b) => b[status]),
    backgroundColor: fill(STATUS[status].pattern, STATUS[status].color),
    borderColor: STATUS[status].color,
    borderWidth: 1,
    stack: "runs",
  }));
  const lastNonEmpty = (index) => {
    for (let i = stats.statuses.length - 1; i >= 0; i -= 1) if (buckets[index][stats.statuses[i]]) return i;
    return stats.statuses.length - 1;
  };
  const chart = draw(canvas, {
    type: "bar",
    data: { labels, datasets },
    options: {
      scales: {
        x: { stacked: true, display: !mini, ticks: { maxRotation: 0, autoSkipPadding: 24 } },
        y: { stacked: true, display: !mini, beginAtZero: true, ticks: { precision: 0 }, title: { display: !mini, text: "runs" } },
      },
      plugins: {
        legend: { display: !mini, position: "bottom", labels: { boxWidth: 14 } },
        tooltip: { enabled: !mini, mode: "index", intersect: false },
        ksDirectValues: mini ? {} : { values: buckets.map((b) => b.total), stacked: true, topOf: lastNonEmpty, minWidth: 16 },
      },
      onClick: onBucket ? (event, _elements, c) => {
        const [hit] = c.getElementsAtEventForMode(event, "index", { intersect: false }, true);
        if (hit) onBucket(buckets[hit.index]);
      } : undefined,
      onHover: onBucket ? (event, elements) => { event.native.target.style.cursor = elements.length ? "pointer" : "default"; } : undefined,
    },
  });
  record(root, chart, { buckets: buckets.map((b) => b.start) });
  const rows = buckets.map((b) => {
    const cells = [timeCell(b.start, bucketLabel(b.start, range)), ...stats.statuses.map((s) => b[s]), b.total];
    if (onBucket) {
      const show = el("button", "linklike", "Show runs");
      show.type = "button";
      show.disabled = b.total === 0;
      show.setAttribute("aria-label", `Show the runs from ${bucketLabel(b.start, range)}`);
      show.addEventListener("click", () => onBucket(b));
      cells.push(show);
    }
    return cells;
  });
  const head = ["From", ...stats.statuses.map((s) => STATUS[s].label), "Total"];
  if (onBucket) head.push("Runs");
  tableBox.append(table(`Runs per ${perBucket(stats.bucketSeconds)}, ${RANGE_TEXT[range]}`, head, rows));
  return { root, chart };
}

export function renderDurationChart(host, stats) {
  const { root, summary, canvas, tableBox } = figure(host, { kind: "durations", title: "Run duration" });
  const { buckets, range } = stats;
  const timed = buckets.filter((b) => b.p50Ms !== null);
  const p95s = timed.map((b) => b.p95Ms);
  summary.textContent = timed.length
    ? `Median ${formatMs(Math.min(...timed.map((b) => b.p50Ms)))} to ${formatMs(Math.max(...timed.map((b) => b.p50Ms)))}, `
      + `95th percentile up to ${formatMs(Math.max(...p95s))}, per bucket in the ${RANGE_TEXT[range]}.`
    : `No timed runs in the ${RANGE_TEXT[range]}.`;
  const chart = draw(canvas, {
    type: "line",
    data: {
      labels: buckets.map((b) => bucketLabel(b.start, range)),
      datasets: [
        { key: "p50Ms", label: "p50 (median), solid", data: buckets.map((b) => b.p50Ms), borderColor: "#2f5bd3", backgroundColor: "#2f5bd3", pointStyle: "circle", spanGaps: false },
        { key: "p95Ms", label: "p95, dashed", data: buckets.map((b) => b.p95Ms), borderColor: "#6a3fc1", backgroundColor: "#6a3fc1", borderDash: [6, 4], pointStyle: "triangle", pointRadius: 4, spanGaps: false },
      ],
    },
    options: {
      scales: {
        x: { ticks: { maxRotation: 0, autoSkipPadding: 24 } },
        y: { beginAtZero: true, title: { display: true, text: "ms" }, ticks: { callback: (v) => formatMs(v) } },
      },
      plugins: {
        legend: { position: "bottom", labels: { usePointStyle: true } },
        tooltip: { mode: "index", intersect: false, callbacks: { label: (item) => `${item.dataset.label}: ${formatMs(item.raw)}` } },
      },
    },
  });
  record(root, chart);
  tableBox.append(table(`Duration per bucket, ${RANGE_TEXT[range]}`, ["From", "Timed runs", "p50", "p95"],
    buckets.map((b) => [timeCell(b.start, bucketLabel(b.start, range)), b.success + b.error + b.interrupted,
      formatMs(b.p50Ms), formatMs(b.p95Ms)])));
  return { root, chart };
}

// --- a key over time ---------------------------------------------------------------------------

function shortTime(iso) {
  const date = new Date(iso);
  return date.toDateString() === new Date().toDateString() ? date.toLocaleTimeString() : date.toLocaleString();
}

// Tick labels as fine as the history's span needs: dates over two days, tenths within a minute.
function timeTicks(points) {
  const span = new Date(points[points.length - 1].at) - new Date(points[0].at);
  const options = span > 2 * 86400000
    ? { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" }
    : { hour: "2-digit", minute: "2-digit", second: "2-digit", ...(span < 60000 ? { fractionalSecondDigits: 1 } : {}) };
  return (value) => new Date(value).toLocaleString([], options);
}

function perBucket(seconds) {
  if (seconds % 3600 === 0) return seconds === 3600 ? "hour" : `${seconds / 3600} hours`;
  return `${seconds / 60} minutes`;
}

// A numeric key: its kept changes (exact, each with its run) and, over the chart's whole range,
// what the runs read of it (the last value per bucket; GET …/state-chart/'s `runs`): the history
// keeps a key's newest changes only, which a cursor written every block fills in minutes.
export function renderKeyChart(host, series) {
  const read = (series.runs?.buckets || []).filter((b) => b.reads && b.last !== null);
  if (series.kind === "empty" && !read.length) {
    host.replaceChildren(el("p", "muted small chart-empty", `No history of ${series.key} to chart.`));
    return null;
  }
  if (series.kind === "writes") return renderWritesChart(host, series);
  const { root, summary, canvas, tableBox } = figure(host, { kind: "key", title: `${series.key} over time` });
  const points = series.points || [];
  const values = points.filter((p) => p.value !== null).map((p) => p.value);
  const last = points[points.length - 1];
  const parts = [];
  if (points.length) {
    parts.push(`${points.length} change${points.length === 1 ? "" : "s"} kept: from ${values[0]} to ${last.value ?? "deleted"}`
      + ` (lowest ${Math.min(...values)}, highest ${Math.max(...values)}), last ${shortTime(last.at)}.`);
  }
  if (read.length) {
    const reads = read.reduce((n, b) => n + b.reads, 0);
    parts.push(`Over the ${RANGE_TEXT[series.runs.range]}, ${reads} run${reads === 1 ? "" : "s"} read it: lowest `
      + `${Math.min(...read.map((b) => b.min))}, highest ${Math.max(...read.map((b) => b.max))}, last ${read[read.length - 1].last}.`);
  }
  summary.textContent = parts.join(" ");
  const first = read.length ? new Date(series.runs.buckets[0].start).getTime() : null;
  const end = read.length ? new Date(series.runs.buckets[series.runs.buckets.length - 1].end).getTime() : null;
  const datasets = [{
    key: "value",
    label: `${series.key}, each change kept`,
    data: points.map((p) => ({ x: new Date(p.at).getTime(), y: p.value })),
    borderColor: "#0f7c8c",
    backgroundColor: "#0f7c8c",
    stepped: true, // a value holds until the next write
    spanGaps: false, // a deletion breaks the line
    pointRadius: 3,
  }];
  if (read.length) {
    datasets.push({
      key: "runs",
      label: "what the runs read (last per bucket)",
      data: read.map((b) => ({ x: new Date(b.end).getTime(), y: b.last })),
      borderColor: "#6a3fc1",
      backgroundColor: "#6a3fc1",
      borderDash: [6, 4],
      pointStyle: "triangle",
      pointRadius: 3,
      stepped: true,
    });
  }
  const ticks = read.length ? [{ at: new Date(first).toISOString() }, { at: new Date(end).toISOString() }] : points;
  const chart = draw(canvas, {
    type: "line",
    data: { datasets },
    options: {
      parsing: false,
      scales: {
        x: { type: "linear", min: first ?? undefined, max: end ?? undefined,
          ticks: { maxRotation: 0, autoSkipPadding: 12, callback: timeTicks(ticks) } },
        y: { title: { display: true, text: "value" } },
      },
      plugins: {
        legend: { display: read.length > 0, position: "bottom", labels: { usePointStyle: true } },
        tooltip: { callbacks: {
          title: (items) => shortTime(new Date(items[0].raw.x).toISOString()),
          label: (item) => {
            if (item.dataset.key === "runs") {
              const bucket = read[item.dataIndex];
              return `${bucket.last} read by the last of ${bucket.reads} run${bucket.reads === 1 ? "" : "s"} (lowest ${bucket.min}, highest ${bucket.max})`;
            }
            const p = points[item.dataIndex];
            return `${p.value} (v${p.version}) by ${p.execution ? `run ${p.execution.slice(0, 8)}` : p.actor}`;
          },
        } },
        ksDirectValues: points.length <= 20 ? { values: points.map((p) => p.value), dataset: 0, minWidth: 0 } : {},
      },
    },
  });
  root.dataset.drawn = JSON.stringify({
    key: series.key, values: points.map((p) => p.value), at: points.map((p) => p.at), executions: points.map((p) => p.execution),
    runs: read.map((b) => ({ start: b.start, last: b.last, reads: b.reads })),
  });
  tableBox.append(table(`${series.key}: each change the history keeps, oldest first`, ["When", "Value", "Version", "Change", "Written by"],
    points.map((p) => [timeCell(p.at, shortTime(p.at)), p.value === null ? "deleted" : p.value, p.version ? `v${p.version}` : "—",
      p.operation, p.execution ? `run ${p.execution.slice(0, 8)}` : p.actor])));
  if (read.length) {
    const readings = table(`${series.key}: what the runs read, per bucket of the ${RANGE_TEXT[series.runs.range]}`, ["From", "Runs", "Last", "Lowest", "Highest"],
      read.map((b) => [timeCell(b.start, shortTime(b.start)), b.reads, b.last, b.min, b.max]));
    readings.className = "chart-table readings-table"; // beside the kept changes, told apart from them
    readings.classList.remove("chart-table");
    tableBox.append(readings);
  }
  return { root, chart };
}

function renderWritesChart(host, series) {
  const { root, summary, canvas, tableBox } = figure(host, { kind: "writes", title: `Writes of ${series.key}` });
  const { buckets, range } = series;
  const writes = buckets.reduce((n, b) => n + b.writes, 0);
  const deletes = buckets.reduce((n, b) => n + b.deletes, 0);
  summary.textContent = `${writes} write${writes === 1 ? "" : "s"} and ${deletes} deletion${deletes === 1 ? "" : "s"} of ${series.key} in the ${RANGE_TEXT[range]} (its values are not all numbers, so this counts changes).`;
  const chart = draw(canvas, {
    type: "bar",
    data: {
      labels: buckets.map((b) => bucketLabel(b.start, range)),
      datasets: [
        { key: "writes", label: `Writes (${writes})`, data: buckets.map((b) => b.writes), backgroundColor: "#6a3fc1", stack: "w" },
        { key: "deletes", label: `Deletions (${deletes})`, data: buckets.map((b) => b.deletes), backgroundColor: fill("stripes", "#c2352b"), borderColor: "#c2352b", borderWidth: 1, stack: "w" },
      ],
    },
    options: {
      scales: { x: { stacked: true, ticks: { maxRotation: 0, autoSkipPadding: 24 } }, y: { stacked: true, beginAtZero: true, ticks: { precision: 0 } } },
      plugins: { legend: { position: "bottom" }, ksDirectValues: { values: buckets.map((b) => b.writes + b.deletes), stacked: true, topOf: (i) => (buckets[i].deletes ? 1 : 0) } },
    },
  });
  record(root, chart);
  tableBox.append(table(`Changes of ${series.key} per bucket, ${RANGE_TEXT[range]}`, ["From", "Writes", "Deletions"],
    buckets.map((b) => [timeCell(b.start, bucketLabel(b.start, range)), b.writes, b.deletes])));
  return { root, chart };
}

// --- budget gauges -----------------------------------------------------------------------------

export function formatBytes(bytes) {
  if (bytes < 1024) return `${numbers.format(bytes)} byte${bytes === 1 ? "" : "s"}`;
  const units = ["KB", "MB", "GB"];
  let size = bytes / 1024;
  let unit = 0;
  while (size >= 1024 && unit < units.length - 1) { size /= 1024; unit += 1; }
  return `${Number(size.toFixed(1))} ${units[unit]}`;
}

// "0.01 %" for a small share, "< 0.01 %" for a tinier one (never "0.00 %" for a used budget).
export function percent(share) {
  if (share > 0 && share < 0.0001) return "< 0.01 %";
  return `${(100 * share).toFixed(share > 0 && share < 0.001 ? 2 : 1)} %`;
}

// Native <meter>s (their own accessible role and value), each with its numbers written beside
// it and a word for how full it is, so the level is read without the meter's colour.
export function renderGauges(host, gauges) {
  const list = el("div", "gauges");
  list.dataset.chart = "gauges";
  for (const g of gauges) {
    const id = `gauge-${++figureSeq}`;
    const item = el("div", "gauge");
    item.dataset.gauge = g.name;
    item.dataset.value = String(g.value);
    item.dataset.max = String(g.max);
    const label = el("span", "gauge-label", g.label);
    label.id = `${id}-label`;
    const meter = el("meter");
    Object.assign(meter, { min: 0, max: g.max, value: Math.min(g.value, g.max), low: NEAR * g.max, high: FULL * g.max, optimum: 0 });
    meter.setAttribute("aria-labelledby", `${id}-label ${id}-text`);
    const share = g.max ? g.value / g.max : 0;
    const level = share >= FULL ? "full" : share >= NEAR ? "near the limit" : "";
    const text = el("span", "gauge-text", `${g.format(g.value)} of ${g.format(g.max)} (${percent(share)})${level ? ` — ${level}` : ""}`);
    text.id = `${id}-text`;
    item.classList.toggle("near-limit", share >= NEAR);
    item.append(label, meter, text);
    list.append(item);
  }
  host.replaceChildren(list);
  return list;
}

export function budgetGauges(host, { usage, workflowKeys = null, keysPerWorkflow = null }) {
  const gauges = [];
  if (workflowKeys !== null) {
    gauges.push({ name: "workflow-keys", label: "This workflow's keys", value: workflowKeys, max: keysPerWorkflow, format: (n) => numbers.format(n) });
  }
  gauges.push(
    { name: "org-keys", label: "Organization's keys", value: usage.liveKeys, max: usage.maxKeys, format: (n) => numbers.format(n) },
    { name: "org-bytes", label: "Organization's bytes", value: usage.storedBytes, max: usage.maxBytes, format: formatBytes },
  );
  return renderGauges(host, gauges);
}

// --- the editor: the Runs tab and the State panel -------------------------------------------------

// The Runs tab's charts: drawn when the runs list renders (a MutationObserver, so runs.js needs no
// call into here); a click on a bucket lists that bucket's runs (the runs list's window: ?since=&until=).
export class RunCharts {
  constructor({ api, runs }, root = document.getElementById("runs-charts")) {
    this.api = api;
    this.runs = runs;
    this.root = root;
    if (!root) return;
    this.range = "24h";
    this.seq = 0;
    this.filterEl = document.getElementById("runs-filter");
    this.runsHost = root.querySelector("[data-chart-host=runs]");
    this.durationsHost = root.querySelector("[data-chart-host=durations]");
    for (const button of root.querySelectorAll("[data-range]")) {
      button.addEventListener("click", () => this.setRange(button.dataset.range));
    }
    this.filterEl?.querySelector("button")?.addEventListener("click", () => this.filter(null));
    let pending = null;
    new MutationObserver(() => {
      clearTimeout(pending);
      pending = setTimeout(() => this.refresh(), 50);
    }).observe(document.getElementById("runs-list"), { childList: true });
  }

  setRange(range) {
    this.range = range;
    for (const button of this.root.querySelectorAll("[data-range]")) button.setAttribute("aria-pressed", String(button.dataset.range === range));
    this.refresh();
  }

  async refresh() {
    const seq = ++this.seq;
    const { ok, data } = await this.api.executionStats(this.range);
    if (seq !== this.seq) return;
    if (!ok) {
      this.runsHost.replaceChildren(el("p", "field-errors", `The chart could not be read: ${data.detail || "try Refresh."}`));
      return;
    }
    this.stats = data;
    renderRunsChart(this.runsHost, data, { onBucket: (bucket) => this.filter(bucket) });
    renderDurationChart(this.durationsHost, data);
    this.root.dataset.ready = "true";
  }

  // Lists the runs of one bucket (null: all runs again).
  filter(bucket) {
    if (!bucket) {
      this.filterEl.hidden = true;
    } else {
      this.filterEl.hidden = false;
      this.filterEl.querySelector("span").textContent = `Showing the runs queued ${new Date(bucket.start).toLocaleString()} – ${new Date(bucket.end).toLocaleTimeString()}.`;
    }
    this.filterEl.dataset.bucket = bucket ? bucket.start : "";
    this.runs.showWindow(bucket ? { since: bucket.start, until: bucket.end } : null);
  }
}

// The State panel's gauges (after every render of its usage) and each key's chart (when its row
// opens), read from the panel's own data and from the state-chart endpoint.
export class StateCharts {
  constructor({ api, statePanel }, root = document.getElementById("state-panel")) {
    this.api = api;
    this.statePanel = statePanel;
    this.root = root;
    this.gaugesEl = document.getElementById("state-gauges");
    if (!root || !this.gaugesEl) return;
    new MutationObserver(() => this.renderGauges()).observe(document.getElementById("state-usage"), { childList: true });
    // toggle does not bubble: listen in the capture phase for every key's <details>.
    root.addEventListener("toggle", (event) => {
      const details = event.target;
      if (details.matches?.("details.state-entry") && details.open) this.keyChart(details);
    }, true);
  }

  renderGauges() {
    const data = this.statePanel.data;
    if (!data) return;
    budgetGauges(this.gaugesEl, { usage: data.usage, workflowKeys: data.entries.length, keysPerWorkflow: data.limits.keysPerWorkflow });
    document.getElementById("state-usage").style.display = "none"; // the gauges say the same, with meters
  }

  async keyChart(details) {
    const key = details.dataset.stateKey;
    let host = details.querySelector(".state-chart");
    if (!host) {
      host = el("div", "state-chart");
      details.querySelector(".state-detail").prepend(host);
    }
    const { ok, data } = await this.api.stateChart(key);
    if (!details.isConnected) return;
    if (!ok) return host.replaceChildren(el("p", "field-errors", `The chart could not be read: ${data.detail || "try Refresh."}`));
    renderKeyChart(host, data);
  }
}

// --- pages that render their data (the workflow list, admin) -------------------------------------

// Every [data-chart-source] element: its chart from the JSON script it names.
export function mountCharts(root = document) {
  for (const host of root.querySelectorAll("[data-chart-source]")) {
    const source = document.getElementById(host.dataset.chartSource);
    if (!source) continue;
    const data = JSON.parse(source.textContent);
    const kind = host.dataset.chartKind;
    if (kind === "key") renderKeyChart(host, data);
    else if (kind === "gauges") budgetGauges(host, data);
    else if (kind === "runs-mini") {
      const stats = data[host.dataset.workflowId];
      if (stats) renderRunsChart(host, stats, { mini: true, title: `Runs of ${host.dataset.workflowName}` });
    }
  }
}
