// The Problems panel above the canvas: the findings of the last Validate or Save (the store's
// `report`), each naming its node and field; a click or Enter selects the node.

import { nodeLabel } from "./graph.js";
import { nodeById } from "./model.js";
import { el } from "./dom.js";

export class ProblemsPanel {
  constructor({ store, selectNode }) {
    this.store = store;
    this.root = document.getElementById("problems");
    this.list = document.getElementById("problems-list");
    this.hiddenByAuthor = false;
    const open = (e) => {
      const item = e.target.closest("[data-node-id]");
      if (item && nodeById(this.store.doc, item.dataset.nodeId)) selectNode(item.dataset.nodeId);
    };
    this.list.addEventListener("click", open);
    this.list.addEventListener("keydown", (e) => { if (e.key === "Enter") open(e); });
    document.getElementById("problems-close").addEventListener("click", () => {
      this.hiddenByAuthor = true;
      this.root.hidden = true;
    });
  }

  render() {
    const report = this.store.ui.report;
    const items = [];
    for (const [level, findings] of [["error", report?.errors || []], ["warning", report?.warnings || []]]) {
      for (const f of findings) {
        const li = el("li", level);
        const node = f.nodeId ? nodeById(this.store.doc, f.nodeId) : null;
        if (node) {
          li.dataset.nodeId = f.nodeId;
          li.tabIndex = 0;
        }
        const where = node ? `${nodeLabel(node)}${f.field ? ` · ${f.field}` : ""}` : "Workflow";
        li.append(el("strong", null, `${level === "error" ? "✗" : "!"} ${where}: `), f.message, el("code", "muted", ` ${f.code}`));
        items.push(li);
      }
    }
    this.list.replaceChildren(...items);
    this.hiddenByAuthor = this.hiddenByAuthor && items.length > 0;
    this.root.hidden = items.length === 0 || this.hiddenByAuthor;
  }
}
