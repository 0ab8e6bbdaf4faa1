"""The builder's side of HTTP Request and secrets: the form (rows, booleans), the @ list
(secret names, fields of the last answer) and the Secrets page."""

from __future__ import annotations

import json

import pytest

from keeperstate.engine.validation import validate_graph
from keeperstate.executions.service import run_workflow
from keeperstate.secrets.models import OrganizationSecret
from keeperstate.secrets.store import secret_put
from tests.builder.fragments import judged
from tests.engine.test_offers import chain, node, trigger
from tests.factories import make_workflow

pytestmark = pytest.mark.django_db

FORM = "/builder/forms/HTTP%20Request/"
VALUE = "sk-live-4f9a8b7c6d5e"


def test_form_shows_headers_and_query_as_rows_and_fail_on_error_as_a_choice(client_as_alice):
    html = client_as_alice.get(FORM).content.decode()

    assert 'data-pairs-for="headers"' in html
    assert 'data-pairs-for="query"' in html
    assert 'data-kind="pairs"' in html
    assert '<option value="true" selected>true</option>' in html
    assert 'style="' not in html  # strict CSP later: no inline styles


def test_form_normalises_rows_and_booleans(client_as_alice):
    response = client_as_alice.post(
        FORM,
        json.dumps({"method": "POST", "url": "https://api.example.com/x",
                    "headers": '{"Authorization": "Bearer <<@__secrets:Secrets.API_KEY>>"}',
                    "failOnError": "false", "timeout": "5"}),
        content_type="application/json",
    )

    assert response.status_code == 200, judged(response)
    config = judged(response)["config"]
    assert config["headers"] == {"Authorization": "Bearer <<@__secrets:Secrets.API_KEY>>"}
    assert config["failOnError"] is False
    assert config["timeout"] == 5


@pytest.mark.parametrize(
    ("field", "value"),
    [("headers", '{"Bad Name": "x"}'), ("headers", "[1]"), ("timeout", "31"), ("url", "ftp://x/"),
     ("query", '{"a": "x\\ny"}')],
)
def test_form_refuses_what_the_action_would_refuse(client_as_alice, field, value):
    payload = {"method": "GET", "url": "https://api.example.com/x", field: value}

    response = client_as_alice.post(FORM, json.dumps(payload), content_type="application/json")

    assert response.status_code == 400
    assert field in judged(response)["errors"]


def test_saved_graph_keeps_rows_as_an_object():
    nodes = [trigger(), node("http-1", "HTTP Request", method="GET", url="https://x.example/", headers='{"A": "1"}',
                             failOnError="true")]

    config = validate_graph(nodes, []).nodes[1]["data"]["config"]  # what a save stores

    assert config["headers"] == {"A": "1"}
    assert config["failOnError"] is True


def references(client, workflow, nodes, edges, node_id):
    body = {"nodes": nodes, "edges": edges, "nodeId": node_id, "workflowId": str(workflow.id)}
    response = client.post("/api/workflows/references/", json.dumps(body), content_type="application/json")
    assert response.status_code == 200, response.content
    return {s["nodeId"]: s for s in response.json()["sources"]}


def test_at_list_offers_the_organizations_secret_names_never_values(client_as_alice, org, other_org, workflow):
    secret_put(organization=org, name="API_KEY", value=VALUE)
    secret_put(organization=other_org, name="GLOBEX_KEY", value="globex-value")
    nodes = [trigger(), node("http-1", "HTTP Request", url="https://x.example/")]

    response_sources = references(client_as_alice, workflow, nodes, chain("trigger", "http-1"), "http-1")

    secrets = response_sources["__secrets"]
    assert [f["field"] for f in secrets["fields"]] == ["API_KEY"]
    assert secrets["fields"][0]["token"] == "<<@__secrets:Secrets.API_KEY>>"
    assert VALUE not in json.dumps(response_sources)


def test_at_list_offers_no_secret_to_a_node_where_none_may_stand(client_as_alice, org, workflow):
    secret_put(organization=org, name="API_KEY", value=VALUE)
    nodes = [trigger(), node("set-1", "State Set", key="k", value="1")]

    response_sources = references(client_as_alice, workflow, nodes, chain("trigger", "set-1"), "set-1")

    assert "__secrets" not in response_sources


def test_at_list_of_another_organizations_workflow_is_404(client_as_alice, foreign_workflow):
    body = {"nodes": [trigger()], "edges": [], "nodeId": "trigger", "workflowId": str(foreign_workflow.id)}

    response = client_as_alice.post("/api/workflows/references/", json.dumps(body), content_type="application/json")

    assert response.status_code == 404


def test_after_a_run_the_answer_body_fields_are_offered_with_their_types(client_as_alice, allow_server, org, user):
    nodes = [trigger(), node("http-1", "HTTP Request", "Fetch", url=f"{allow_server.url}/block"),
             node("set-1", "State Set", key="cursor", value="1")]
    edges = chain("trigger", "http-1", "set-1")
    workflow = make_workflow(org, user=user, nodes=nodes, edges=edges)
    before = references(client_as_alice, workflow, nodes, edges, "set-1")["http-1"]
    run_workflow(workflow, {})

    fields = {f["field"]: f for f in references(client_as_alice, workflow, nodes, edges, "set-1")["http-1"]["fields"]}

    assert "body.block" not in {f["field"] for f in before["fields"]}
    assert fields["body.block"]["type"] == "integer"
    assert fields["body.block"]["token"] == "<<@http-1:Fetch.body.block>>"
    assert fields["body.final"]["type"] == "boolean"
    assert fields["body.miner.name"]["type"] == "string"
    assert fields["status"]["type"] == "integer"


def test_secrets_page_lists_names_and_never_values(client_as_alice, org):
    secret_put(organization=org, name="API_KEY", value=VALUE)

    html = client_as_alice.get("/builder/secrets/").content.decode()

    assert "API_KEY" in html
    assert VALUE not in html


def test_secrets_page_creates_and_replaces(csrf_client, org):
    page = csrf_client.get("/builder/secrets/")
    token = page.cookies["csrftoken"].value if "csrftoken" in page.cookies else csrf_client.cookies["csrftoken"].value

    created = csrf_client.post("/builder/secrets/", {"name": "API_KEY", "value": VALUE, "organization": org.id,
                                                     "csrfmiddlewaretoken": token}, follow=True)
    csrf_client.post("/builder/secrets/", {"name": "API_KEY", "value": "second", "organization": org.id,
                                           "csrfmiddlewaretoken": token})

    assert "Secret API_KEY added." in created.content.decode()
    assert VALUE not in created.content.decode()
    assert OrganizationSecret.objects.filter(organization=org, name="API_KEY").count() == 1
    from keeperstate.secrets.vault import SecretVault

    assert SecretVault(org.id).value("API_KEY") == "second"


def test_secrets_page_refuses_a_bad_name(client_as_alice, org):
    response = client_as_alice.post("/builder/secrets/", {"name": "bad name", "value": "v", "organization": org.id})

    assert response.status_code == 400
    assert not OrganizationSecret.objects.exists()


def test_secrets_page_deletes_only_its_own_organizations(client_as_alice, org, other_org):
    secret_put(organization=org, name="API_KEY", value=VALUE)
    secret_put(organization=other_org, name="API_KEY", value="globex")

    client_as_alice.post(f"/builder/secrets/{other_org.id}/API_KEY/delete/")
    client_as_alice.post(f"/builder/secrets/{org.id}/API_KEY/delete/")

    assert list(OrganizationSecret.objects.values_list("organization__slug", flat=True)) == ["globex"]
