// "What comes next?": the list of actions that opens where a connection was dropped on empty
// canvas (the store's `picker`). Typing filters it; Enter or a click adds the action there,
// connected from that handle; Esc or a click elsewhere closes it.

import { el } from "./dom.js";

export class NextNodePicker {
  constructor({ store, catalogue, pick, close }) {
    this.store = store;
    this.actions = Object.values(catalogue.actions);
    this.pick = pick;
    this.close = close;
    this.root = document.getElementById("node-picker");
    this.shown = null;
  }

  render() {
    const picker = this.store.ui.picker;
    if (picker === this.shown) return;
    this.shown = picker;
    if (!picker) {
      this.root.hidden = true;
      this.root.replaceChildren();
      return;
    }
    const column = this.root.offsetParent?.getBoundingClientRect() || { left: 0, top: 0 };
    this.root.style.left = `${picker.at.client.x - column.left}px`;
    this.root.style.top = `${picker.at.client.y - column.top}px`;
    const title = el("p", "picker-title", "Add the next node here");
    title.id = "node-picker-title";
    const search = el("input", "picker-search");
    search.type = "search";
    search.placeholder = "Type to filter, Enter adds";
    search.setAttribute("aria-label", "Filter the actions");
    const list = el("ul", "picker-list");
    list.setAttribute("aria-labelledby", "node-picker-title");
    const entries = this.actions.map((action) => {
      const item = el("li");
      const button = el("button", "picker-entry", action.label);
      button.type = "button";
      button.dataset.actionId = action.id;
      button.title = action.description;
      button.addEventListener("click", () => this.pick(action.id));
      item.append(button);
      list.append(item);
      return { item, text: `${action.label} ${action.description} ${action.group}`.toLowerCase(), id: action.id };
    });
    search.addEventListener("input", () => {
      const terms = search.value.toLowerCase().split(/\s+/).filter(Boolean);
      for (const entry of entries) entry.item.hidden = !terms.every((t) => entry.text.includes(t));
    });
    search.addEventListener("keydown", (event) => {
      if (event.key === "Enter") {
        event.preventDefault();
        const first = entries.find((entry) => !entry.item.hidden);
        if (first) this.pick(first.id);
      } else if (event.key === "Escape") {
        event.preventDefault();
        this.close();
      }
    });
    this.root.replaceChildren(title, search, list);
    this.root.hidden = false;
    search.focus();
  }
}
