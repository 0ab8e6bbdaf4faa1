// A run's data as an n8n user reads it: a collapsible JSON tree (every object, list and long text
// folds), a table, or a schema (each path with its type). Any path can be copied as a reference
// (`refOf(path)` gives the <<@…>> token for a path of segments, or null where none applies).
// Pure rendering: the caller owns the state (which view, what is folded) and redraws.

import { el } from "./dom.js";

const LONG_TEXT = 60; // a text longer than this folds, shown whole while open
const TABLE_ROWS = 200;

export const VIEWS = ["tree", "table", "schema"];

function typeOf(value) {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value; // string, boolean, object
}

function scalarText(value) {
  return typeof value === "string" ? JSON.stringify(value) : String(value);
}

function pathText(path) {
  return path.reduce((text, step) => (typeof step === "number" ? `${text}[${step}]` : text ? `${text}.${step}` : step), "");
}

function copyButton(path, refOf, onCopy) {
  const token = path.length ? refOf(path) : null;
  if (!token) return null;
  const button = el("button", "copy-ref", "@"); // "@": the reference, as the @ list inserts it
  button.type = "button";
  button.dataset.token = token;
  button.title = `Copy ${token}`;
  button.setAttribute("aria-label", `Copy the reference to ${pathText(path)}`);
  button.addEventListener("click", (event) => {
    event.stopPropagation();
    event.preventDefault();
    onCopy(token);
  });
  return button;
}

// One tree row: a key and a value; objects, lists and long texts fold (a <details>), the rest is
// one line. `folded` is the set of path texts the author closed, kept across redraws.
function treeNode(key, value, path, ctx) {
  const type = typeOf(value);
  const name = el("span", "tree-key", key === null ? "" : typeof key === "number" ? `[${key}]` : key);
  const copy = copyButton(path, ctx.refOf, ctx.onCopy);
  const foldable = type === "object" || type === "array" || (type === "string" && value.length > LONG_TEXT);
  if (!foldable) {
    const row = el("div", "tree-row");
    row.dataset.path = pathText(path);
    row.append(name, el("span", `tree-value tree-${type}`, scalarText(value)));
    if (copy) row.append(copy);
    return row;
  }
  const box = el("details", `tree-node tree-${type}`);
  box.dataset.path = pathText(path);
  box.open = !ctx.folded.has(box.dataset.path);
  box.addEventListener("toggle", () => ctx.onFold(box.dataset.path, !box.open));
  const summary = el("summary", "tree-row");
  summary.dataset.path = box.dataset.path;
  let hint;
  if (type === "object") hint = `{${Object.keys(value).length}}`;
  else if (type === "array") hint = `[${value.length}]`;
  else hint = `${JSON.stringify(value.slice(0, 24)).slice(0, -1)}…" (${value.length} characters)`;
  summary.append(name, el("span", "tree-hint", hint));
  if (copy) summary.append(copy);
  box.append(summary);
  if (type === "string") {
    box.append(el("div", "tree-long", value));
    return box;
  }
  const children = el("div", "tree-children");
  const entries = type === "array" ? value.map((v, i) => [i, v]) : Object.entries(value);
  for (const [childKey, child] of entries) children.append(treeNode(childKey, child, [...path, childKey], ctx));
  box.append(children);
  return box;
}

function tree(value, ctx) {
  const root = el("div", "data-tree");
  root.setAttribute("role", "group");
  if (value !== null && typeof value === "object") {
    const entries = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
    if (!entries.length) root.append(el("p", "muted small", Array.isArray(value) ? "An empty list." : "An empty object."));
    for (const [key, child] of entries) root.append(treeNode(key, child, [...ctx.base, key], ctx));
  } else {
    root.append(treeNode(null, value, ctx.base, ctx));
  }
  return root;
}

function cellText(value) {
  if (value === undefined) return "";
  const text = value !== null && typeof value === "object" ? JSON.stringify(value) : scalarText(value);
  return text.length > 120 ? `${text.slice(0, 119)}…` : text;
}

// A list of objects: a row each, a column per key; an object: a row per key.
function table(value) {
  const box = el("div", "data-table-box");
  const grid = el("table", "data-table");
  const head = el("tr");
  const body = el("tbody");
  if (Array.isArray(value) && value.every((v) => v !== null && typeof v === "object" && !Array.isArray(v))) {
    const columns = [...new Set(value.flatMap((v) => Object.keys(v)))];
    head.append(el("th", null, "#"), ...columns.map((c) => el("th", null, c)));
    value.slice(0, TABLE_ROWS).forEach((item, i) => {
      const row = el("tr");
      row.append(el("td", null, String(i)), ...columns.map((c) => el("td", null, cellText(item[c]))));
      body.append(row);
    });
  } else if (value !== null && typeof value === "object") {
    head.append(el("th", null, Array.isArray(value) ? "#" : "field"), el("th", null, "value"), el("th", null, "type"));
    const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
    for (const [key, item] of entries.slice(0, TABLE_ROWS)) {
      const row = el("tr");
      row.append(el("th", null, key), el("td", null, cellText(item)), el("td", "muted", typeOf(item)));
      body.append(row);
    }
  } else {
    head.append(el("th", null, "value"), el("th", null, "type"));
    const row = el("tr");
    row.append(el("td", null, cellText(value)), el("td", "muted", typeOf(value)));
    body.append(row);
  }
  const thead = el("thead");
  thead.append(head);
  grid.append(thead, body);
  box.append(grid);
  return box;
}

// Every path with its type (a list's items read as its first item's), copyable.
function schema(value, ctx) {
  const list = el("ul", "data-schema");
  const walk = (item, path, depth) => {
    const type = typeOf(item);
    if (path.length) {
      const row = el("li", "schema-row");
      row.style.setProperty("--depth", String(depth));
      row.dataset.path = pathText(path);
      row.append(el("code", "schema-path", pathText(path.slice(ctx.base.length)) || "(value)"), el("span", `schema-type tree-${type}`, type));
      const copy = copyButton(path, ctx.refOf, ctx.onCopy);
      if (copy) row.append(copy);
      list.append(row);
    }
    if (type === "object") for (const [k, v] of Object.entries(item)) walk(v, [...path, k], depth + 1);
    else if (type === "array" && item.length) walk(item[0], [...path, 0], depth + 1);
  };
  walk(value, ctx.base, -1);
  if (!list.children.length) list.append(el("li", "muted small", `A ${typeOf(value)}.`));
  return list;
}

// The value in one of the three views. ctx: {base: path of `value` itself, refOf(path), onCopy(token),
// folded: Set of folded path texts, onFold(pathText, folded)}.
export function renderData(value, view, ctx) {
  const full = { base: [], folded: new Set(), onFold: () => {}, refOf: () => null, onCopy: () => {}, ...ctx };
  if (view === "table") return table(value);
  if (view === "schema") return schema(value, full);
  return tree(value, full);
}

// The view switch: three buttons, the shown one pressed.
export function viewSwitch(current, onView, label) {
  const group = el("div", "view-switch");
  group.setAttribute("role", "group");
  group.setAttribute("aria-label", label);
  for (const view of VIEWS) {
    const button = el("button", "small-button", view[0].toUpperCase() + view.slice(1));
    button.type = "button";
    button.dataset.view = view;
    button.setAttribute("aria-pressed", String(view === current));
    button.addEventListener("click", () => onView(view));
    group.append(button);
  }
  return group;
}
