"""The secrets API: values go in, never come out; another organization's secrets stay invisible."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from keeperstate.secrets.models import OrganizationSecret
from keeperstate.secrets.store import secret_put
from tests.factories import make_user

pytestmark = pytest.mark.django_db

VALUE = "sk-live-4f9a8b7c6d5e"


@pytest.fixture
def client(user):
    client = APIClient()
    client.default_format = "json"
    client.force_authenticate(user)
    return client


def test_put_creates_then_replaces_and_never_answers_the_value(client, org):
    created = client.put("/api/secrets/API_KEY/", {"value": VALUE})
    replaced = client.put("/api/secrets/API_KEY/", {"value": VALUE + "-2"})

    assert created.status_code == 201
    assert replaced.status_code == 200
    assert created.json()["name"] == "API_KEY"
    assert created.json()["organization"] == "acme"
    assert created.json()["reference"] == "<<@__secrets:Secrets.API_KEY>>"
    for response in (created, replaced):
        assert VALUE not in response.content.decode()
        assert "value" not in response.json()
    assert OrganizationSecret.objects.filter(organization=org).count() == 1


def test_list_has_names_and_dates_only(client, org):
    secret_put(organization=org, name="RPC_URL", value="https://rpc.example/v3/" + VALUE)
    secret_put(organization=org, name="API_KEY", value=VALUE)

    response = client.get("/api/secrets/")

    assert response.status_code == 200
    assert [s["name"] for s in response.json()["results"]] == ["API_KEY", "RPC_URL"]
    assert set(response.json()["results"][0]) == {"name", "organization", "reference", "createdAt", "updatedAt"}
    assert VALUE not in response.content.decode()


def test_no_endpoint_returns_a_value(client, org, monitor):
    client.put("/api/secrets/API_KEY/", {"value": VALUE})
    for path in ["/api/secrets/", "/api/secrets/API_KEY/", "/api/actions/", f"/api/workflows/{monitor.id}/",
                 "/api/workflows/", "/api/schema/?format=json"]:
        response = client.get(path)
        assert VALUE not in response.content.decode(), path


def test_delete_removes_it_and_a_second_delete_is_404(client, org):
    secret_put(organization=org, name="API_KEY", value=VALUE)

    assert client.delete("/api/secrets/API_KEY/").status_code == 204
    second = client.delete("/api/secrets/API_KEY/")
    assert second.status_code == 404
    assert second.json()["code"] == "NOT_FOUND"


@pytest.mark.parametrize("name", ["api-key", "a" * 65, "with space", "ключ"])
def test_invalid_names_are_field_errors(client, name):
    response = client.put(f"/api/secrets/{name}/", {"value": VALUE})

    assert response.status_code == 400
    assert "name" in response.json()


@pytest.mark.parametrize("value", ["", "   ", "a\u0000b", "x" * 8193])
def test_invalid_values_are_field_errors(client, value):
    response = client.put("/api/secrets/API_KEY/", {"value": value})

    assert response.status_code == 400
    assert "value" in response.json()


def test_another_organizations_secrets_are_invisible(client, other_org):
    secret_put(organization=other_org, name="GLOBEX_KEY", value=VALUE)

    assert client.get("/api/secrets/").json()["results"] == []
    assert client.get("/api/secrets/?organization=globex").json()["results"] == []
    refused = client.put("/api/secrets/GLOBEX_KEY/", {"value": "x", "organization": "globex"})
    assert refused.status_code == 400
    assert "organization" in refused.json()
    assert client.delete("/api/secrets/GLOBEX_KEY/?organization=globex").status_code == 400
    assert client.delete("/api/secrets/GLOBEX_KEY/").status_code == 404
    assert OrganizationSecret.objects.filter(organization=other_org).count() == 1


def test_organization_chooses_among_several(client, user, other_org):
    from keeperstate.accounts.models import Membership

    Membership.objects.create(user=user, organization=other_org)

    assert client.put("/api/secrets/K/", {"value": "v", "organization": "globex"}).status_code == 201
    listed = client.get("/api/secrets/?organization=globex").json()["results"]
    assert [(s["name"], s["organization"]) for s in listed] == [("K", "globex")]


def test_anonymous_is_401():
    client = APIClient()

    assert client.get("/api/secrets/").status_code == 401
    assert client.put("/api/secrets/K/", json.dumps({"value": "v"}), content_type="application/json").status_code == 401


def test_a_member_may_manage_secrets(org):
    member = make_user("mo", org, role="member")
    client = APIClient()
    client.force_authenticate(member)

    assert client.put("/api/secrets/K/", {"value": "v"}, format="json").status_code == 201
