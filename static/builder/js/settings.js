// The workflow's switches and settings beside the graph: Active (PATCH /api/workflows/<id>/), the
// schedule's next run, the webhook's URL and secret shown with a Webhook trigger, and the
// Settings dialog (the error workflow). What the API last said of the workflow is the store's
// `workflow`; render() draws it.

import { problem } from "./http.js";
import { isTrigger, nodeConfig } from "./graph.js";
import { relativeTime } from "./when.js";
import { el } from "./dom.js";

// "in 8 s", and "due now" once the time has come but the run has not shown up yet (never "1 s ago").
function nextRunText(iso, now = Date.now()) {
  return new Date(iso) <= now ? "due now" : relativeTime(iso, now);
}

export class WorkflowSettings {
  // actions: say(text, kind), confirm(text)
  constructor({ store, api, actions }) {
    this.store = store;
    this.api = api;
    this.actions = actions;
    this.switchEl = document.getElementById("active-switch");
    this.nextEl = document.getElementById("next-run");
    this.dialog = document.getElementById("settings-dialog");
    this.errorSelect = document.getElementById("settings-error-workflow");
    this.dialogStatus = document.getElementById("settings-status");
    this.switchEl.addEventListener("change", () => this.setActive(this.switchEl.checked));
    document.getElementById("btn-settings").addEventListener("click", () => this.openDialog());
    document.getElementById("settings-cancel").addEventListener("click", () => this.dialog.close());
    this.dialog.querySelector("form").addEventListener("submit", (e) => {
      e.preventDefault();
      this.saveSettings();
    });
    setInterval(() => this.tick(), 1000); // "Next run in 8 s" counts down
  }

  get values() {
    return this.store.ui.workflow;
  }

  tick() {
    const time = this.nextEl.querySelector("time");
    if (time) time.textContent = nextRunText(time.dateTime);
  }

  // What the API answers of the workflow that the page shows (its webhook URL stays the page's
  // absolute one).
  adopt(data) {
    const { active, nextRunAt, settings } = data;
    this.store.set({ workflow: { ...this.values, active, nextRunAt, settings } });
  }

  // Whether the shown next run is over a second in the past: the schedule has moved on since.
  nextRunPassed() {
    const { active, nextRunAt } = this.values;
    return Boolean(active && nextRunAt && new Date(nextRunAt) < Date.now() - 1000);
  }

  triggerType() {
    const trigger = this.store.doc.nodes.find(isTrigger);
    return trigger ? nodeConfig(trigger).triggerType || "Manual" : "Manual";
  }

  render() {
    const { active, nextRunAt } = this.values;
    this.switchEl.checked = Boolean(active);
    const type = this.triggerType();
    let text = "";
    if (!active) text = type === "Manual" ? "" : `Off: the ${type.toLowerCase()} trigger does not fire.`;
    else if (nextRunAt) {
      const time = el("time", "next-run-when", nextRunText(nextRunAt));
      time.dateTime = nextRunAt;
      this.nextEl.replaceChildren("Next run ", time);
      this.nextEl.title = new Date(nextRunAt).toLocaleString();
      return;
    } else if (type === "Webhook") text = "On: the webhook runs it.";
    else if (type === "Schedule") text = "On: save to schedule it.";
    this.nextEl.textContent = text;
    this.nextEl.title = "";
  }

  async setActive(active) {
    const { ok, data } = await this.api.saveWorkflow({ active });
    if (!ok) {
      this.switchEl.checked = !active;
      this.actions.say(`Not switched ${active ? "on" : "off"}: ${problem(data, "try again.")}`, "error");
      return;
    }
    this.adopt(data);
    this.actions.say(active ? "Active: its schedule and webhook run it." : "Inactive: only Run and the API start it.", "ok");
  }

  // After a save, a new run or a due tick the schedule may have moved: read the workflow again.
  async refresh() {
    const { ok, data } = await this.api.readWorkflow();
    if (ok) this.adopt(data);
  }

  scheduleMoved(ran) {
    if (ran || this.nextRunPassed()) this.refresh();
  }

  // --- the Settings dialog: the error workflow -------------------------------------------

  async openDialog() {
    this.dialogStatus.textContent = "Loading the organization's workflows…";
    this.errorSelect.disabled = true;
    if (!this.dialog.open) this.dialog.showModal();
    const { ok, data } = await this.api.workflowsOf(this.values.organization);
    if (!ok) {
      this.dialogStatus.textContent = `The workflows could not be read: ${problem(data, "try again.")}`;
      return;
    }
    const chosen = this.values.settings?.errorWorkflow || "";
    const options = [el("option", null, "None")];
    options[0].value = "";
    for (const workflow of data.results.filter((w) => w.id !== this.values.id)) {
      const option = el("option", null, workflow.name);
      option.value = workflow.id;
      option.selected = workflow.id === chosen;
      options.push(option);
    }
    this.errorSelect.replaceChildren(...options);
    this.errorSelect.disabled = false;
    this.dialogStatus.textContent = "";
  }

  async saveSettings() {
    const errorWorkflow = this.errorSelect.value || null;
    const { ok, data } = await this.api.saveWorkflow({ settings: { errorWorkflow } });
    if (!ok) {
      this.dialogStatus.textContent = `Not saved: ${problem(data, "try again.")}`;
      return;
    }
    this.adopt(data);
    this.dialog.close();
    const name = this.errorSelect.selectedOptions[0]?.textContent;
    this.actions.say(errorWorkflow ? `Settings saved: a failed run starts ${name}.` : "Settings saved: no error workflow.", "ok");
  }

  // --- the webhook ----------------------------------------------------------------------

  // A ready-to-paste curl command for the webhook, with the current secret.
  curlLine() {
    return `curl -X POST '${this.values.webhookUrl}?wait=10' \\\n  -H 'X-KeeperState-Secret: ${this.values.webhookSecret}' \\\n`
      + "  -H 'Content-Type: application/json' -d '{}'";
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
    const curl = el("code", "webhook-curl", this.curlLine());
    rotate.addEventListener("click", async () => {
      if (!this.actions.confirm("Make a new secret? Callers using the old one get 404 from now on.")) return;
      const { ok, data } = await this.api.rotateWebhookSecret();
      if (!ok) {
        this.actions.say(`No new secret: ${problem(data, "try again.")}`, "error");
        return;
      }
      this.store.set({ workflow: { ...this.values, webhookSecret: data.webhookSecret } });
      secret.textContent = data.webhookSecret;
      curl.textContent = this.curlLine();
      this.actions.say("New webhook secret made; the old one no longer works.", "ok");
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
    const pre = el("pre", "webhook-curl-box");
    pre.append(curl);
    box.append(pre);
    box.append(el("p", "help", this.values.active
      ? "The workflow is active: a call runs it with the body as input."
      : "Switch the workflow to Active (under the canvas) for calls to run it."));
    return box;
  }
}
