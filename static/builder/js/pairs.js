// Rows for "pairs" fields (HTTP Request headers and query): a name and a value per row, over the
// form's own JSON textarea, which stays the field the inspector, the form check and Save read.
// Value inputs take @ references like any reference-capable field.

import { el } from "./dom.js";

function parseObject(text) {
  if (!text.trim()) return {};
  try {
    const value = JSON.parse(text);
    return value && typeof value === "object" && !Array.isArray(value) ? value : null;
  } catch {
    return null;
  }
}

class PairsField {
  constructor(box, source, autocomplete) {
    this.box = box;
    this.source = source;
    this.autocomplete = autocomplete;
    this.name = box.dataset.pairsFor;
    const initial = parseObject(source.value);
    if (initial === null) return; // not an object: leave the JSON text visible to be fixed
    source.hidden = true;
    this.rows = el("div", "pair-rows");
    const add = el("button", "small-button pair-add", "+ Add row");
    add.type = "button";
    add.id = `pairs-${this.name}-add`;
    add.addEventListener("click", () => this.addRow("", "", true));
    box.append(this.rows, add);
    const entries = Object.entries(initial);
    if (!entries.length) this.addRow("", "", false);
    for (const [name, value] of entries) this.addRow(name, typeof value === "string" ? value : JSON.stringify(value), false);
  }

  addRow(name, value, focus) {
    const row = el("div", "pair-row");
    const nameInput = el("input", "pair-name");
    nameInput.value = name;
    nameInput.placeholder = this.name === "headers" ? "Header name" : "Name";
    nameInput.setAttribute("aria-label", `${this.name} name`);
    nameInput.autocomplete = "off";
    nameInput.spellcheck = false;
    const valueInput = el("input", "pair-value");
    valueInput.value = value;
    valueInput.placeholder = "Value (type @ for a reference or a secret)";
    valueInput.setAttribute("aria-label", `${this.name} value`);
    valueInput.autocomplete = "off";
    valueInput.spellcheck = false;
    valueInput.dataset.references = "true";
    const remove = el("button", "pair-remove", "×");
    remove.type = "button";
    remove.title = "Remove this row";
    remove.setAttribute("aria-label", "Remove this row");
    remove.addEventListener("click", () => {
      row.remove();
      this.sync(true);
    });
    for (const input of [nameInput, valueInput]) {
      input.addEventListener("input", () => this.sync(false));
      input.addEventListener("change", () => this.sync(true));
    }
    row.append(nameInput, valueInput, remove);
    this.rows.append(row);
    if (this.autocomplete) this.autocomplete.attach(valueInput);
    if (focus) nameInput.focus();
  }

  // Rows → the JSON object in the source textarea; rows without a name are left out.
  sync(changed) {
    const object = {};
    for (const row of this.rows.querySelectorAll(".pair-row")) {
      const name = row.querySelector(".pair-name").value.trim();
      if (name) object[name] = row.querySelector(".pair-value").value;
    }
    this.source.value = Object.keys(object).length ? JSON.stringify(object) : "";
    this.source.dispatchEvent(new Event("input", { bubbles: true }));
    if (changed) this.source.dispatchEvent(new Event("change", { bubbles: true }));
  }
}

export function enhancePairs(form, autocomplete) {
  for (const box of form.querySelectorAll(".pairs[data-pairs-for]")) {
    const source = form.querySelector(`[name="${CSS.escape(box.dataset.pairsFor)}"]`);
    if (source) new PairsField(box, source, autocomplete);
  }
}
