"""The error shapes of DESIGN.md §7/§9: field errors, coded errors, and never driver text or a 500
for what a client sends."""

from __future__ import annotations

import logging

import pytest
from django.db import DataError
from rest_framework import exceptions

from keeperstate.api.exceptions import exception_handler
from keeperstate.core.errors import Code, CodedError
from keeperstate.state.errors import StateVersionConflict
from keeperstate.workflows.models import Workflow

pytestmark = pytest.mark.django_db


def handle(exc: Exception):
    return exception_handler(exc, {"view": None})


# the handler


def test_version_conflict_is_409_with_expected_and_current():
    response = handle(StateVersionConflict(key="cursor", expected=3, current=4))

    assert response.status_code == 409
    assert response.data["code"] == "STATE_VERSION_CONFLICT"
    assert response.data["details"] == {"expected": 3, "current": 4}
    assert response.data["field"] == "expectedVersion"
    assert "expected version 3" in response.data["detail"]


def test_a_coded_error_keeps_its_code_message_and_status():
    class Gone(CodedError):  # any catalogue entry; codes exist only there (keeperstate.core.errors)
        error = Code.WORKFLOW_DELETED

    response = handle(Gone("It left. Look elsewhere."))

    assert (response.status_code, response.data) == (409, {"code": "WORKFLOW_DELETED",
                                                           "detail": "It left. Look elsewhere."})


def test_a_database_error_is_503_without_driver_text(caplog):
    with caplog.at_level(logging.ERROR, logger="keeperstate.failures"):
        response = handle(DataError('unsupported Unicode escape sequence DETAIL: \\u0000 in "workflow"'))

    assert response.status_code == 503
    assert response.data["code"] == "DATABASE_ERROR"
    assert "Unicode" not in str(response.data)
    assert "workflow" not in str(response.data)
    assert "unsupported Unicode escape sequence" in caplog.text  # the operators still get it


def test_an_unexpected_error_is_a_coded_500_without_its_text(caplog):
    with caplog.at_level(logging.ERROR, logger="keeperstate.failures"):
        response = handle(KeyError("secret internals"))

    assert response.status_code == 500
    assert response.data["code"] == "INTERNAL_ERROR"
    assert "secret" not in str(response.data)


def test_a_validation_error_without_fields_is_keyed_non_field_errors():
    response = handle(exceptions.ValidationError(["Both or neither."]))

    assert (response.status_code, response.data) == (400, {"non_field_errors": ["Both or neither."]})


# what clients send


def post_raw(api, body: bytes | str, content_type: str = "application/json"):
    return api.generic("POST", "/api/workflows/", body, content_type=content_type)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"{", "Expecting"),
        (b'{"name": NaN}', "NaN is not a JSON number"),
        (b'{"name": "x", "nodes": [{"id": "t", "position": {"x": 1e400}}]}', "out of range"),
        (b'{"name": "\\ud800"}', "unpaired UTF-16 surrogate"),
        (b'{"name": "x", "description": ' + b"[" * 70 + b"]" * 70 + b"}", "nested deeper"),
        (b'{"name": "x", "description": ' + b"[" * 5000 + b"]" * 5000 + b"}", "nested deeper"),
        (b"\xff\xfe", "JSON parse error"),
    ],
)
def test_json_that_postgres_or_a_reader_cannot_hold_is_a_parse_error(api, body, reason):
    response = post_raw(api, body)

    assert response.status_code == 400
    assert response.json()["code"] == "PARSE_ERROR"
    assert reason in response.json()["detail"]
    assert not Workflow.objects.exists()


def test_malformed_json_says_where_and_what_to_send(api):
    detail = post_raw(api, b'{"name": ').json()["detail"]

    assert "line 1 column 10" in detail
    assert detail.endswith("Send the body as one valid JSON document.")


def test_nul_in_a_name_is_a_field_error(api):
    response = api.post("/api/workflows/", {"name": "a\x00b"})

    assert response.status_code == 400
    assert response.json() == {"name": ["Null characters are not allowed."]}


def test_nul_inside_the_graph_is_a_field_error(api, monitor):
    nodes = [{**monitor.nodes[0], "data": {**monitor.nodes[0]["data"], "label": "Trig\x00ger"}}, *monitor.nodes[1:]]

    response = api.post("/api/workflows/", {"name": "x", "nodes": nodes, "edges": monitor.edges})

    assert response.status_code == 400
    assert response.json() == {"nodes": {"0": ["Text in this field contains the character U+0000; remove it."]}}


def test_a_body_over_the_upload_limit_is_413(api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000

    response = api.post("/api/workflows/", {"name": "x", "description": "d" * 2000})

    assert response.status_code == 413
    assert response.json()["code"] == "REQUEST_TOO_LARGE"


def test_a_body_that_is_not_json_is_415(api):
    response = post_raw(api, "name=x", content_type="application/x-www-form-urlencoded")

    assert response.status_code == 415
    assert response.json()["code"] == "UNSUPPORTED_MEDIA_TYPE"


def test_a_body_that_is_a_list_is_a_non_field_error(api):
    response = post_raw(api, b"[1]")

    assert response.status_code == 400
    assert response.json() == {"non_field_errors": ["Invalid data. Expected a dictionary, but got list."]}


def test_an_unsupported_method_is_405(api, workflow):
    response = api.post(f"/api/workflows/{workflow.id}/", {})

    assert response.status_code == 405
    assert response.json() == {"code": "METHOD_NOT_ALLOWED", "detail": 'Method "POST" not allowed.'}


def test_options_describes_the_endpoint(api, workflow):
    response = api.options(f"/api/workflows/{workflow.id}/")

    assert response.status_code == 200
    assert response.json()["parses"] == ["application/json"]


def test_unknown_api_path_is_a_json_404(api):
    response = api.get("/api/nothing-here/")

    assert response.status_code == 404
    assert response.json() == {"code": "NOT_FOUND", "detail": "No API endpoint at /api/nothing-here/."}


def test_a_missing_trailing_slash_is_named_in_the_404(api):
    response = api.post("/api/workflows", {"name": "x"})

    assert response.status_code == 404
    assert "Did you mean /api/workflows/ ?" in response.json()["detail"]
