// The workflow's switches beside the graph: Active (through PATCH /api/workflows/<id>/), the
// schedule's next run, and the webhook's URL and secret shown with a Webhook trigger.

import { problem, sendJSON as send } from "./http.js";
import { isTrigger, nodeConfig } from "./graph.js";
import { relativeTime, tickRelativeTimes } from "./when.js";
import { el } from "./dom.js";

export class WorkflowSettings {
  constructor(editor, root) {
    this.editor = editor;
    this.values = JSON.parse(document.getElementById("workflow-settings").textContent);
    this.apiUrl = root.dataset.workflowApiUrl;
    this.secretUrl = root.dataset.webhookSecretUrl;
    this.switchEl = document.getElementById("active-switch");
    this.nextEl = document.getElementById("next-run");
    this.switchEl.addEventListener("change", () => this.setActive(this.switchEl.checked));
    this.renderNextRun();
    setInterval(() => tickRelativeTimes(this.nextEl), 1000); // "Next run in 8 s" counts down
  }

  // Whether the shown next run is over a second in the past: the schedule has moved on since.
  nextRunPassed() {
    const { active, nextRunAt } = this.values;
    return Boolean(active && nextRunAt && new Date(nextRunAt) < Date.now() - 1000);
  }

  triggerType() {
    const trigger = this.editor.state.nodes.find(isTrigger);
    return trigger ? nodeConfig(trigger).triggerType || "Manual" : "Manual";
  }

  renderNextRun() {
    const { active, nextRunAt } = this.values;
    const type = this.triggerType();
    let text = "";
    if (!active) text = type === "Manual" ? "" : `Off: the ${type.toLowerCase()} trigger does not fire.`;
    else if (nextRunAt) {
      const time = el("time", "next-run-when", relativeTime(nextRunAt));
      time.dateTime = nextRunAt;
      time.dataset.relative = nextRunAt;
      this.nextEl.replaceChildren("Next run ", time);
      this.nextEl.title = new Date(nextRunAt).toLocaleString();
      return;
    } else if (type === "Webhook") text = "On: the webhook runs it.";
    else if (type === "Schedule") text = "On: save to schedule it.";
    this.nextEl.textContent = text;
    this.nextEl.title = "";
  }

  async setActive(active) {
    const { ok, data } = await send("PATCH", this.apiUrl, { active });
    if (!ok) {
      this.switchEl.checked = !active;
      this.editor.setStatus(`Not switched ${active ? "on" : "off"}: ${problem(data, "try again.")}`, "error");
      return;
    }
    this.values.active = data.active;
    this.values.nextRunAt = data.nextRunAt;
    this.renderNextRun();
    this.editor.setStatus(active ? "Active: its schedule and webhook run it." : "Inactive: only Run and the API start it.", "ok");
  }

  // After a save the schedule may have moved: read the workflow again.
  async refresh() {
    const { ok, data } = await send("GET", this.apiUrl);
    if (!ok) return;
    this.values.active = data.active;
    this.values.nextRunAt = data.nextRunAt;
    this.switchEl.checked = data.active;
    this.renderNextRun();
  }

  // A ready-to-paste curl command for the webhook, with the current secret.
  curlLine() {
    return `curl -X POST '${this.values.webhookUrl}?wait=10' \\\n  -H 'X-KeeperState-Secret: ${this.values.webhookSecret}' \\\n`
      + `  -H 'Content-Type: application/json' -d '{}'`;
  }

  // The webhook's address and secret, for the inspector of a Webhook trigger.
  webhookBox() {
    const box = el("section", "webhook-info");
    box.setAttribute("aria-label", "Webhook");
    box.append(el("h3", null, "Calling this webhook"));
    const url = el("code", "webhook-url", this.values.webhookUrl);
    const secret = el("code", "webhook-secret", this.values.webhookSecret);
    const rotate = el("button", "small-button", "New secret");
    rotate.type = "button";
    rotate.addEventListener("click", async () => {
      // eslint-disable-next-line no-alert -- the browser's own dialog is keyboard-operable and modal
      if (!window.confirm("Make a new secret? Callers using the old one get 404 from now on.")) return;
      const { ok, data } = await send("POST", this.secretUrl, {});
      if (!ok) return this.editor.setStatus(`No new secret: ${problem(data, "try again.")}`, "error");
      this.values.webhookSecret = data.webhookSecret;
      secret.textContent = data.webhookSecret;
      curl.textContent = this.curlLine();
      this.editor.setStatus("New webhook secret made; the old one no longer works.", "ok");
    });
    const list = el("dl");
    const address = el("dd");
    address.append(url);
    list.append(el("dt", null, "POST a JSON object to"), address);
    list.append(el("dt", null, "with the header"));
    const header = el("dd");
    header.append(el("code", null, "X-KeeperState-Secret: "), secret, " ", rotate);
    list.append(header);
    box.append(list);
    box.append(el("p", "help", "Try it from a terminal (waits up to 10 s for the run's result):"));
    const curl = el("code", "webhook-curl", this.curlLine());
    const pre = el("pre", "webhook-curl-box");
    pre.append(curl);
    box.append(pre);
    box.append(el("p", "help", this.values.active
      ? "The workflow is active: a call runs it with the body as input."
      : "Switch the workflow to Active (under the canvas) for calls to run it."));
    return box;
  }
}
