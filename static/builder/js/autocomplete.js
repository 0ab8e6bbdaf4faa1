// The @ menu of reference-capable fields: typing @ lists the output fields of every upstream
// node (api.references(), for the unsaved graph), filtered as you type; arrows, Enter/Tab and
// Escape drive it from the keyboard, a click chooses with the mouse. Choosing replaces "@query"
// (or a typed "<<@query") with the ready token. A path below an offered field ("@result.hash")
// is offered as typed, whether or not its node has run.

import { nodeById, selectedNodeId } from "./model.js";

const MAX_QUERY = 80;
// What may follow an offered field to name a path below it: .name and [n] steps.
const PATH_BELOW = /^(?:\.[A-Za-z_$][\w$-]*|\[\d+\])+$/;

export class ReferenceAutocomplete {
  constructor({ store, api, workflowId }) {
    this.store = store;
    this.api = api;
    this.workflowId = workflowId;
    this.menu = document.getElementById("ref-menu");
    this.input = null;
    this.context = null;
    this.query = null;
    this.items = [];
    this.active = -1;
    this.sources = null;
    this.error = null;
    this.loading = false;
    this.dismissed = null;
    this.seq = 0;
    this.menu.addEventListener("mousedown", (e) => {
      e.preventDefault(); // keep the focus (and the caret) in the field
      const option = e.target.closest(".ref-option");
      if (option) this.choose(Number(option.dataset.index));
    });
    window.addEventListener("resize", () => this.close());
  }

  attach(input) {
    // ARIA 1.2 combobox: a text field that controls a listbox (aria-expanded is only allowed there)
    input.setAttribute("role", "combobox");
    input.setAttribute("aria-autocomplete", "list");
    input.setAttribute("aria-controls", "ref-menu");
    input.setAttribute("aria-expanded", "false");
    input.addEventListener("input", () => this.update(input));
    input.addEventListener("click", () => this.update(input));
    input.addEventListener("keydown", (e) => this.onKeyDown(e, input));
    input.addEventListener("blur", () => { if (this.input === input) this.close(); });
  }

  // The "@query" being typed just before the caret, or null.
  contextOf(input) {
    const caret = input.selectionStart;
    if (caret === null || caret !== input.selectionEnd) return null;
    const before = input.value.slice(0, caret);
    const at = before.lastIndexOf("@");
    if (at < 0) return null;
    const query = before.slice(at + 1);
    if (/[\n>]/.test(query) || query.length > MAX_QUERY) return null;
    const start = before.slice(Math.max(0, at - 2), at) === "<<" ? at - 2 : at;
    return { start, end: caret, query };
  }

  update(input) {
    const context = this.contextOf(input);
    if (!context) {
      if (this.dismissed?.input === input) this.dismissed = null; // that @ is gone
      return this.close();
    }
    const d = this.dismissed;
    if (d && d.input === input && d.start === context.start) return;
    this.dismissed = null;
    const reopening = this.input !== input || !this.context || this.context.start !== context.start;
    this.input = input;
    this.context = context;
    if (reopening) {
      this.query = null;
      this.load();
    }
    this.render();
  }

  async load() {
    const seq = ++this.seq;
    this.sources = null;
    this.error = null;
    this.loading = true;
    const { doc, ui } = this.store;
    const nodeId = selectedNodeId(ui);
    // workflowId: the server adds the organization's secret names and the fields of the last run's answers.
    const { ok, data } = await this.api.references({ nodes: doc.nodes, edges: doc.edges, nodeId, workflowId: this.workflowId });
    if (seq !== this.seq) return;
    this.loading = false;
    if (ok) this.sources = data.sources;
    else this.error = data.detail || "The list of fields could not be loaded.";
    if (this.context) this.render();
  }

  filtered() {
    const terms = this.context.query.toLowerCase().replace(/[.:]/g, " ").split(/\s+/).filter(Boolean);
    const items = [];
    const hints = [];
    for (const source of this.sources || []) {
      if (!source.fields.length && source.hint) hints.push(source);
      for (const field of source.fields) {
        const hay = `${source.label} ${source.nodeId} ${source.type || ""} ${field.field}`.toLowerCase();
        if (!terms.every((t) => hay.includes(t))) continue;
        // Rank: terms found in the field name beat terms found only in the node's label.
        const name = field.field.toLowerCase();
        const score = terms.reduce((sum, t) => sum + (name === t ? 3 : name.startsWith(t) ? 2 : name.includes(t) ? 1 : 0), 0);
        items.push({ source, field, score });
      }
    }
    const offered = new Set(items.map((item) => item.field.token));
    for (const item of this.typedPaths()) if (!offered.has(item.field.token)) items.push(item);
    const order = new Map((this.sources || []).map((source, i) => [source, i]));
    items.sort((a, b) => order.get(a.source) - order.get(b.source)); // a node's offers together
    return { items, hints };
  }

  // "@result.hash" where `result` is an offered field: the path below it, as typed. Offered whether
  // or not the node has run (its answer's fields are known only after a run); the run checks it.
  typedPaths() {
    const query = this.context.query;
    const found = [];
    for (const source of this.sources || []) {
      if (source.kind === "system" || source.kind === "secrets") continue;
      for (const field of source.fields) {
        for (const prefix of [`${field.field}`, `${source.label}.${field.field}`]) {
          if (!query.toLowerCase().startsWith(prefix.toLowerCase())) continue;
          const rest = query.slice(prefix.length);
          if (!PATH_BELOW.test(rest)) continue;
          const path = field.field + rest;
          found.push({
            source,
            score: 4,
            field: {
              field: path,
              type: "typed path",
              description: `A field below ${field.field} (${field.type}): the run reads it from ${source.label}'s output.`,
              token: `${field.token.slice(0, -2)}${rest}>>`,
            },
          });
        }
      }
    }
    return found;
  }

  bestIndex(items) {
    let best = items.length ? 0 : -1;
    items.forEach((item, i) => { if (item.score > items[best].score) best = i; });
    return best;
  }

  render() {
    if (!this.context) return;
    const menu = this.menu;
    menu.replaceChildren();
    this.items = [];
    if (this.loading) {
      menu.append(this.note("Loading the fields of earlier nodes…"));
    } else if (this.error) {
      menu.append(this.note(this.error, "ref-error"));
    } else {
      const { items, hints } = this.filtered();
      if (!items.length && /\s/.test(this.context.query)) return this.close(); // plain text with an @ in it
      if (this.query !== this.context.query || this.active >= items.length) this.active = this.bestIndex(items);
      this.query = this.context.query;
      this.items = items;
      let lastSource = null;
      items.forEach((item, index) => {
        if (item.source !== lastSource) {
          lastSource = item.source;
          const head = document.createElement("div");
          head.className = "ref-group";
          const title = document.createElement("span");
          title.textContent = item.source.label;
          const meta = document.createElement("span");
          meta.className = "ref-group-meta";
          meta.textContent = { system: "built-in", secrets: "organization, value hidden" }[item.source.kind] || item.source.nodeId;
          head.append(title, meta);
          menu.append(head);
        }
        menu.append(this.option(item, index));
      });
      const nodeSources = (this.sources || []).filter((source) => source.kind === "trigger" || source.kind === "action");
      if (!nodeSources.length && !this.context.query) {
        // The server offers only nodes that run before this one: say why there are none.
        const node = nodeById(this.store.doc, selectedNodeId(this.store.ui));
        const connected = this.store.doc.edges.some((e) => e.target === node?.id);
        menu.prepend(this.note(connected
          ? "No earlier node has fields to pick yet; only the built-ins below."
          : `No earlier node to pick from: ${node ? node.data?.label || node.id : "this node"} is not connected after another node yet. Connect it, then the fields of the nodes before it appear here.`, "ref-note ref-why-empty"));
      }
      if (!items.length) {
        menu.append(this.note(this.context.query ? `No field matches “${this.context.query}”. Esc closes this list.` : "No earlier node: connect this node after another one first."));
      }
      for (const source of hints) menu.append(this.note(`${source.label}: ${source.hint}`, "ref-hint"));
    }
    this.position();
    menu.hidden = false;
    this.input.setAttribute("aria-expanded", "true");
    this.highlight();
  }

  option(item, index) {
    const option = document.createElement("div");
    option.className = "ref-option";
    option.id = `ref-option-${index}`;
    option.setAttribute("role", "option");
    option.dataset.index = String(index);
    option.dataset.token = item.field.token;
    const line = document.createElement("div");
    line.className = "ref-line";
    const name = document.createElement("span");
    name.className = "ref-field";
    name.textContent = item.field.field;
    const type = document.createElement("span");
    type.className = "ref-type";
    type.textContent = item.field.type;
    line.append(name, type);
    const desc = document.createElement("div");
    desc.className = "ref-desc";
    desc.textContent = item.field.description;
    option.append(line, desc);
    option.title = item.field.token;
    return option;
  }

  note(text, className = "ref-note") {
    const div = document.createElement("div");
    div.className = className;
    div.textContent = text;
    return div;
  }

  position() {
    const rect = this.input.getBoundingClientRect();
    const width = Math.max(rect.width, 320);
    const left = Math.min(rect.left, window.innerWidth - width - 8);
    this.menu.style.width = `${width}px`;
    this.menu.style.left = `${Math.max(8, left) + window.scrollX}px`;
    const below = window.innerHeight - rect.bottom;
    if (below < 220 && rect.top > below) {
      this.menu.style.top = "";
      this.menu.style.bottom = `${window.innerHeight - rect.top - window.scrollY + 2}px`;
    } else {
      this.menu.style.bottom = "";
      this.menu.style.top = `${rect.bottom + window.scrollY + 2}px`;
    }
  }

  highlight() {
    for (const option of this.menu.querySelectorAll(".ref-option")) {
      const on = Number(option.dataset.index) === this.active;
      option.classList.toggle("active", on);
      option.setAttribute("aria-selected", on ? "true" : "false");
      if (on) option.scrollIntoView({ block: "nearest" });
    }
    if (this.input) {
      if (this.active >= 0) this.input.setAttribute("aria-activedescendant", `ref-option-${this.active}`);
      else this.input.removeAttribute("aria-activedescendant");
    }
  }

  isOpen() {
    return !this.menu.hidden && this.context !== null;
  }

  onKeyDown(event, input) {
    if (!this.isOpen() || this.input !== input) return;
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      if (!this.items.length) return;
      const step = event.key === "ArrowDown" ? 1 : -1;
      this.active = (this.active + step + this.items.length) % this.items.length;
      this.highlight();
    } else if (event.key === "Enter" || event.key === "Tab") {
      if (this.active < 0) return;
      event.preventDefault();
      this.choose(this.active);
    } else if (event.key === "Escape") {
      event.preventDefault();
      event.stopPropagation();
      this.dismissed = { input, start: this.context.start };
      this.close();
    }
  }

  choose(index) {
    const item = this.items[index];
    const input = this.input;
    if (!item || !input || !this.context) return;
    const { start, end } = this.context;
    const token = item.field.token;
    input.value = input.value.slice(0, start) + token + input.value.slice(end);
    const caret = start + token.length;
    this.close();
    input.focus();
    input.setSelectionRange(caret, caret);
    input.dispatchEvent(new Event("input", { bubbles: true }));
    input.dispatchEvent(new Event("change", { bubbles: true }));
  }

  close() {
    this.seq += 1;
    this.loading = false;
    if (this.input) {
      this.input.setAttribute("aria-expanded", "false");
      this.input.removeAttribute("aria-activedescendant");
    }
    this.context = null;
    this.query = null;
    this.items = [];
    this.active = -1;
    this.menu.hidden = true;
    this.menu.replaceChildren();
  }
}
