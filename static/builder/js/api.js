// Every request the editor makes, in one place: the addresses come from the page (data-*-url
// attributes that Django's {% url %} writes on #editor-root), so moving an endpoint changes the
// template and, where a request's shape changes, this module only. Each call resolves to
// {ok, status, data} (http.js) and never throws on an HTTP error.

import { getHTML, getJSON, postForm, postJSON, sendJSON } from "./http.js";

const NIL_UUID = "00000000-0000-0000-0000-000000000000";

export function createApi(dataset) {
  const url = {
    workflow: dataset.workflowApiUrl,
    workflows: dataset.workflowsApiUrl,
    validate: dataset.validateUrl,
    execute: dataset.executeUrl,
    state: dataset.stateUrl,
    stateHistory: dataset.stateHistoryUrl,
    stateChart: dataset.stateChartUrl,
    references: dataset.referencesUrl,
    executions: dataset.executionsUrl,
    stats: dataset.statsUrl,
    testStep: dataset.testStepUrl,
    preview: dataset.previewUrl,
    retry: dataset.retryUrl, // with EXECUTION_ID for the execution's id
    webhookSecret: dataset.webhookSecretUrl,
    login: dataset.loginUrl,
    export: dataset.exportUrl,
    import: dataset.importUrl,
    editor: dataset.editorUrl, // with the nil UUID for a workflow's id
  };
  return {
    // the workflow (PATCH: name, graph, active, settings) and the organization's other workflows
    readWorkflow: () => getJSON(url.workflow),
    saveWorkflow: (fields) => sendJSON("PATCH", url.workflow, fields),
    workflowsOf: (organization) => getJSON(`${url.workflows}?${new URLSearchParams({ organization, pageSize: "200" })}`),
    rotateWebhookSecret: () => postJSON(url.webhookSecret, {}),
    exportWorkflow: () => getJSON(url.export),
    importWorkflow: (document_) => postJSON(url.import, document_),
    editorUrl: (workflowId) => url.editor.replace(NIL_UUID, workflowId),
    // checking and running
    validate: (graph) => postJSON(url.validate, graph),
    execute: (input) => postJSON(url.execute, { input }),
    retry: (executionId) => postJSON(url.retry.replace("EXECUTION_ID", executionId), {}),
    testStep: (body) => postJSON(url.testStep, body),
    preview: (body) => postJSON(url.preview, body),
    references: (body) => postJSON(url.references, body),
    // runs, state and their charts
    executions: (params) => getJSON(`${url.executions}?${params}`),
    nextPage: (next) => getJSON(next),
    executionStats: (range) => getJSON(`${url.stats}?${new URLSearchParams({ range })}`),
    state: () => getJSON(url.state),
    stateHistory: (key) => getJSON(`${url.stateHistory}?${new URLSearchParams({ key })}`),
    stateChart: (key) => getJSON(`${url.stateChart}?${new URLSearchParams({ key })}`),
    // config forms: server-rendered fragments, checked by posting them back (answered as the form judged)
    form: (formUrl) => getHTML(formUrl, url.login),
    checkForm: (form) => postForm(form.action, form),
  };
}
