"""Every POST that takes no body reads it through the one input reader before it acts, and refuses
anything but nothing or ``{}`` (DESIGN.md §13; issue 39, item 7: the webhook-secret rotation took a
JSON null, a version's restore took text/plain, junk, null, multipart and 5 MB)."""

from __future__ import annotations

import pytest
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart

from keeperstate.executions.models import WorkflowExecution
from keeperstate.executions.service import run_workflow
from keeperstate.workflows.models import Workflow, WorkflowVersion
from tests.egress.test_http_request import chain
from tests.factories import make_workflow

pytestmark = pytest.mark.django_db

REFUSED = [
    pytest.param(b"null", "application/json", 400, id="null"),
    pytest.param(b"[]", "application/json", 400, id="list"),
    pytest.param(b'{"number": 1}', "application/json", 400, id="fields"),
    pytest.param(b"restore it", "text/plain", 415, id="text"),
    pytest.param(b"{junk", "application/json", 400, id="junk"),
    pytest.param(encode_multipart(BOUNDARY, {"a": "1"}), MULTIPART_CONTENT, 415, id="multipart"),
    pytest.param(b'{"a": "' + b"x" * (5 * 1024 * 1024) + b'"}', "application/json", 413, id="5MB"),
]


@pytest.fixture
def failed(org, user):
    """A workflow whose run failed (a reference to no node), so it can be retried."""
    nodes, edges = chain(("get", "Get", {"actionType": "State Get", "key": "<<@nope:Nope.x>>"}))
    workflow = make_workflow(org, user=user, nodes=nodes, edges=edges)
    return run_workflow(workflow, {})


def what_changes(monitor: Workflow) -> tuple:
    monitor.refresh_from_db()
    return (monitor.webhook_secret, monitor.name, WorkflowVersion.objects.count(),
            WorkflowExecution.objects.count())


def no_body_posts(monitor, failed) -> dict[str, str]:
    return {
        "webhook-secret": f"/api/workflows/{monitor.id}/webhook-secret/",
        "restore": f"/api/workflows/{monitor.id}/versions/1/restore/",
        "retry": f"/api/executions/{failed.id}/retry/",
    }


@pytest.fixture
def versioned(api, monitor):
    """The monitor with two versions (renamed once), so version 1 restores to a change."""
    api.patch(f"/api/workflows/{monitor.id}/", {"name": "Renamed"}, format="json")
    return monitor


@pytest.mark.parametrize("post", ["webhook-secret", "restore", "retry"])
@pytest.mark.parametrize(("body", "content_type", "status"), REFUSED)
def test_a_body_is_refused_before_the_post_acts(api, versioned, failed, post, body, content_type, status):
    before = what_changes(versioned)

    response = api.generic("POST", no_body_posts(versioned, failed)[post], body, content_type=content_type)

    assert response.status_code == status, response.content[:200]
    assert response.json()["code"] in ("PARSE_ERROR", "UNSUPPORTED_MEDIA_TYPE", "REQUEST_TOO_LARGE")
    assert what_changes(versioned) == before


@pytest.mark.parametrize("post", ["webhook-secret", "restore", "retry"])
@pytest.mark.parametrize("body", [b"", b"{}", b" { } "])
def test_no_body_or_an_empty_object_acts(api, versioned, failed, post, body):
    before = what_changes(versioned)

    response = api.generic("POST", no_body_posts(versioned, failed)[post], body, content_type="application/json")

    assert response.status_code in (200, 201), response.content[:200]
    assert what_changes(versioned) != before
