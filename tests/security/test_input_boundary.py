"""One input boundary: the shared corpus of bad bodies against every endpoint that reads one.

Each body-level case answers the same status and code everywhere (the one reader,
keeperstate.inputs); each bad text placed in every field an endpoint reads is a 4xx and stores
nothing. The lead's webhook joins ENDPOINTS when it lands.
"""

from __future__ import annotations

import json

import pytest
from django.test import Client

from keeperstate.executions.models import WorkflowExecution
from keeperstate.state.models import WorkflowState
from keeperstate.workflows.models import Workflow
from tests.api.conftest import token_client
from tests.security.corpus import BAD_BODIES, BAD_TEXTS, BadBody, assert_refused, kitchen_sink

pytestmark = pytest.mark.django_db

# (surface, method, path); {wf} is a workflow of the caller's organization.
ENDPOINTS = [
    ("api", "POST", "/api/workflows/"),
    ("api", "PUT", "/api/workflows/{wf}/"),
    ("api", "PATCH", "/api/workflows/{wf}/"),
    ("api", "POST", "/api/workflows/validate/"),
    ("api", "POST", "/api/workflows/import/"),
    ("api", "POST", "/api/workflows/{wf}/duplicate/"),
    ("api", "POST", "/api/workflows/{wf}/execute/"),
    ("api", "POST", "/api/execute/node/"),
    ("builder", "POST", "/api/workflows/references/"),
    # the editor's save, validate and run: the API with the browser's session
    ("builder", "PATCH", "/api/workflows/{wf}/"),
    ("builder", "POST", "/api/workflows/validate/"),
    ("builder", "POST", "/api/workflows/{wf}/execute/"),
    ("builder", "POST", "/builder/forms/State%20Set/"),
    ("builder", "POST", "/builder/forms/trigger/Manual/"),
    ("hook", "POST", "/hooks/{wf}/"),
]
RUNS = ("/api/workflows/{wf}/execute/", "/api/execute/node/", "/hooks/{wf}/")
FORMS = ("/builder/forms/State%20Set/", "/builder/forms/trigger/Manual/")  # they take form posts too
ENDPOINT_IDS = [f"{method} {path}" for _, method, path in ENDPOINTS]


@pytest.fixture
def callers(user, monitor):
    builder = Client()
    builder.force_login(user)
    monitor.active = True  # only an active workflow answers its webhook
    monitor.save(update_fields=["active"])
    hook = Client(HTTP_X_KEEPERSTATE_SECRET=monitor.webhook_secret)
    return {"api": token_client(user), "builder": builder, "hook": hook}


def send(callers, endpoint, workflow, raw: bytes, content_type: str = "application/json"):
    surface, method, path = endpoint
    return callers[surface].generic(method, path.format(wf=workflow.id), raw, content_type=content_type)


@pytest.mark.parametrize("case", BAD_BODIES, ids=str)
@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=ENDPOINT_IDS)
def test_a_bad_body_gets_the_readers_coded_answer_everywhere(callers, monitor, endpoint, case: BadBody):
    before = (monitor.nodes, monitor.name)

    response = send(callers, endpoint, monitor, case.raw, case.content_type)

    assert_refused(response, case)
    monitor.refresh_from_db()
    assert (monitor.nodes, monitor.name) == before
    assert not WorkflowExecution.objects.exists()


@pytest.mark.parametrize("endpoint", [e for e in ENDPOINTS if e[2] not in FORMS],
                         ids=[i for e, i in zip(ENDPOINTS, ENDPOINT_IDS, strict=True) if e[2] not in FORMS])
def test_a_multipart_body_is_415_on_every_json_endpoint(callers, monitor, endpoint):
    # given: what a browser form with a file sends (the CSRF check parses it before the view)
    raw = (b'--XYZ\r\nContent-Disposition: form-data; name="name"\r\n\r\nx\r\n'
           b'--XYZ\r\nContent-Disposition: form-data; name="nodes"\r\n\r\n[]\r\n--XYZ--\r\n')

    response = send(callers, endpoint, monitor, raw, "multipart/form-data; boundary=XYZ")

    assert_refused(response, BadBody("multipart", raw, 415, "UNSUPPORTED_MEDIA_TYPE"))
    monitor.refresh_from_db()
    assert monitor.name == "Block monitor"
    assert not WorkflowExecution.objects.exists()


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=ENDPOINT_IDS)
def test_a_body_over_the_limit_is_413_everywhere(callers, monitor, endpoint, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000  # the webhook has its own 256 KB limit
    pad = 300 * 1024 if endpoint[0] == "hook" else 2000
    raw = json.dumps({"name": "x", "description": "d" * 2000, "input": {"pad": "p" * pad}}).encode()

    response = send(callers, endpoint, monitor, raw)

    assert_refused(response, BadBody("too-large", raw, 413, "REQUEST_TOO_LARGE"))


@pytest.mark.parametrize("text", BAD_TEXTS.values(), ids=BAD_TEXTS.keys())
@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=ENDPOINT_IDS)
def test_bad_text_in_any_field_is_a_4xx_and_stores_nothing(callers, monitor, endpoint, text):
    before = (monitor.nodes, monitor.name)
    workflows = set(Workflow.objects.values_list("pk", flat=True))

    response = send(callers, endpoint, monitor, json.dumps(kitchen_sink(text)).encode())

    if endpoint[2].endswith("/validate/"):  # a refusal, or a report that finds the graph invalid
        assert response.status_code in (200, 400), response.content[:300]
        assert response.status_code == 400 or response.json()["valid"] is False
    elif endpoint[2] == "/api/workflows/references/":  # reads only: lists no option for a bad node id
        assert response.status_code in (200, 400), response.content[:300]
    elif endpoint[2] in RUNS and "\x00" not in text:
        # A run input is data, not a name: any text but U+0000 runs (the saved monitor's key is
        # "cursor"); a direct node execution has no state scope and writes nothing.
        assert response.status_code < 500, response.content[:300]
        return
    else:
        assert 400 <= response.status_code < 500, (response.status_code, response.content[:300])
    monitor.refresh_from_db()
    assert (monitor.nodes, monitor.name) == before
    assert set(Workflow.objects.values_list("pk", flat=True)) == workflows
    assert not WorkflowState.objects.exists()
    assert not WorkflowExecution.objects.exists()


@pytest.mark.parametrize("field", ["name", "label", "sampleInput", "key"])
@pytest.mark.parametrize("text", ["a\u200bb", "a\u202eb", "a\u2028b", "a\nb"], ids=["zwsp", "rlo", "ls", "newline"])
def test_each_name_field_alone_is_refused_by_the_same_rule_in_api_and_builder(callers, monitor, field, text):
    nodes = json.loads(json.dumps(monitor.nodes))
    body: dict = {"nodes": nodes, "edges": monitor.edges}
    if field == "name":
        body["name"] = text
    elif field == "label":
        nodes[1]["data"]["label"] = text
    elif field == "sampleInput":
        nodes[0]["data"]["config"]["sampleInput"] = {text: 1}
    else:
        nodes[1]["data"]["config"]["key"] = text

    api = callers["api"].put(f"/api/workflows/{monitor.id}/", {"name": "Monitor", **body})
    builder = callers["builder"].patch(  # the editor's save: the API with its session
        f"/api/workflows/{monitor.id}/", json.dumps(body), content_type="application/json"
    )

    assert api.status_code == 400, api.content
    assert builder.status_code == 400, builder.content
    monitor.refresh_from_db()
    assert monitor.name == "Block monitor"


def test_the_workflow_list_form_refuses_an_invisible_name(client_as_alice_html, org):
    response = client_as_alice_html.post("/builder/", {"name": "Block\u202emonitor", "organization": org.pk})

    assert response.status_code == 400
    assert "invisible or direction-changing" in response.content.decode()
    assert not Workflow.objects.filter(organization=org).exists()


def test_a_smaller_limit_for_one_endpoint_is_413(rf):
    from keeperstate.core.inputs import BodyTooLarge, read_json_request

    request = rf.post("/hooks/x/", json.dumps({"pad": "p" * 300}), content_type="application/json")

    with pytest.raises(BodyTooLarge):
        read_json_request(request, limit=256)


@pytest.fixture
def client_as_alice_html(user):
    client = Client()
    client.force_login(user)
    return client
