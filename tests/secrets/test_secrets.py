"""Secrets at rest and in runs: encrypted in the table, resolved only in the run's own
organization, redacted from results, errors and logs, refused as state values."""

from __future__ import annotations

import logging

import pytest
from django.conf import settings
from django.db import connection

from keeperstate.executions.service import run_workflow
from keeperstate.secrets.redaction import REDACTED, RedactSecrets, redacting
from keeperstate.secrets.store import secret_put
from keeperstate.secrets.vault import SecretVault
from keeperstate.state.models import WorkflowState
from tests.egress.test_http_request import chain
from tests.factories import make_workflow

pytestmark = pytest.mark.django_db

VALUE = "sk-live-4f9a8b7c6d5e"
TOKEN = "<<@__secrets:Secrets.API_KEY>>"


@pytest.fixture
def api_key(org):
    secret, _ = secret_put(organization=org, name="API_KEY", value=VALUE)
    return secret


def test_plaintext_is_not_in_the_row(api_key):
    with connection.cursor() as cursor:
        cursor.execute("SELECT organization_secret::text FROM organization_secret WHERE id = %s", [api_key.id])
        (row,) = cursor.fetchone()

    assert VALUE not in row
    assert api_key.ciphertext.startswith("gAAAA")  # a Fernet token


def test_vault_decrypts_for_its_organization_only(api_key, org, other_org):
    assert SecretVault(org.id).value("API_KEY") == VALUE
    with pytest.raises(Exception, match="no secret 'API_KEY'"):
        SecretVault(other_org.id).value("API_KEY")


def test_a_rotated_key_still_decrypts(api_key, org, settings):
    from cryptography.fernet import Fernet

    settings.KEEPERSTATE_SECRETS_KEYS = [Fernet.generate_key().decode(), *settings.KEEPERSTATE_SECRETS_KEYS]

    assert SecretVault(org.id).value("API_KEY") == VALUE


def test_secret_resolves_in_a_run_and_is_redacted_from_the_result(allow_server, api_key, org, user):
    # given: the echo server sends back the headers it received
    nodes, edges = chain(("call", "Call", {"actionType": "HTTP Request", "url": f"{allow_server.url}/echo",
                                           "headers": {"Authorization": f"Bearer {TOKEN}"}}))
    workflow = make_workflow(org, user=user, nodes=nodes, edges=edges)

    # when
    execution = run_workflow(workflow, {})

    # then: the server got the value; the stored result shows it redacted
    assert execution.status == "success"
    echoed = execution.node_results["call"]["data"]["body"]["headers"]["authorization"]
    assert echoed == f"Bearer {REDACTED}"
    execution.refresh_from_db()
    assert VALUE not in str(execution.node_results)


def test_secret_is_redacted_from_errors(allow_server, api_key, org, user):
    # given: a server that answers 400 with the path it was asked for, secret included
    nodes, edges = chain(("call", "Call", {"actionType": "HTTP Request", "url": f"{allow_server.url}/text-of/{TOKEN}"}))
    workflow = make_workflow(org, user=user, nodes=nodes, edges=edges)

    # when
    execution = run_workflow(workflow, {})

    # then: the error quotes the answer, with the secret hidden
    execution.refresh_from_db()
    result = execution.node_results["call"]
    assert result["code"] == "HTTP_STATUS"
    assert REDACTED in result["error"]
    assert VALUE not in str(result)
    assert VALUE not in (execution.error or "")


def test_log_records_written_during_a_node_lose_the_secret():
    record = logging.LogRecord("keeperstate", logging.INFO, __file__, 1, "calling %s", (f"/v3/{VALUE}",), None)

    with redacting({VALUE}):
        RedactSecrets().filter(record)

    assert record.getMessage() == f"calling /v3/{REDACTED}"


def test_the_console_handler_redacts():
    assert "redact_secrets" in settings.LOGGING["handlers"]["console"]["filters"]


def test_secret_as_state_value_is_refused(api_key, org, user):
    # given a graph stored without validation (as before the rule): a secret is not read outside
    # an egress field, so the run refuses it where it stands
    nodes, edges = chain(
        ("save", "Save", {"actionType": "State Set", "key": "k", "value": TOKEN}),
    )
    workflow = make_workflow(org, user=user, nodes=nodes, edges=edges)

    execution = run_workflow(workflow, {})

    assert execution.node_results["save"]["code"] == "SECRET_NOT_ALLOWED_HERE"
    assert not WorkflowState.objects.exists()


def test_secret_inside_a_state_value_is_refused(api_key, org, user):
    nodes, edges = chain(
        ("save", "Save", {"actionType": "State Set", "key": "k", "value": f'{{"auth": "{TOKEN}"}}'}),
    )
    workflow = make_workflow(org, user=user, nodes=nodes, edges=edges)

    execution = run_workflow(workflow, {})

    assert execution.node_results["save"]["code"] == "SECRET_NOT_ALLOWED_HERE"
    assert VALUE not in str(execution.node_results)


def test_another_organizations_secret_does_not_resolve(other_org, org, user):
    secret_put(organization=other_org, name="API_KEY", value=VALUE)
    nodes, edges = chain(("save", "Call", {"actionType": "HTTP Request", "url": f"http://example.com/{TOKEN}"}))
    workflow = make_workflow(org, user=user, nodes=nodes, edges=edges)

    execution = run_workflow(workflow, {})

    result = execution.node_results["save"]
    assert result["code"] == "TEMPLATE_UNRESOLVED"
    assert "no secret 'API_KEY'" in result["error"]
    assert not WorkflowState.objects.exists()


def test_direct_node_execution_has_no_secrets(api_key, org):
    from keeperstate.engine.context import RunContext
    from tests.actions import run_action

    result, _ = run_action("HTTP Request", {"url": f"http://example.com/{TOKEN}"}, RunContext())

    assert result["code"] == "TEMPLATE_UNRESOLVED"
    assert "outside a workflow" in result["error"]


def test_validator_accepts_a_secret_reference_and_refuses_a_bad_name():
    from keeperstate.engine.validation import validate_graph

    good, edges = chain(("call", "Call", {"actionType": "HTTP Request", "url": "https://x.example/",
                                          "headers": {"Authorization": f"Bearer {TOKEN}"}}))
    bad, _ = chain(("call", "Call", {"actionType": "HTTP Request", "url": "https://x.example/<<@__secrets:Secrets.a-b>>"}))

    assert validate_graph(good, edges).valid
    report = validate_graph(bad, edges)
    assert [(f.field, f.code) for f in report.errors] == [("url", "REFERENCE_INVALID")]
