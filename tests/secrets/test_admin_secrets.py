"""Secrets in Django admin: created through the form, never shown again, replaced only when a new
value is typed."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from keeperstate.secrets.models import OrganizationSecret
from keeperstate.secrets.store import secret_put
from keeperstate.secrets.vault import SecretVault

pytestmark = pytest.mark.django_db

VALUE = "sk-live-4f9a8b7c6d5e"


@pytest.fixture
def admin_client():
    user = get_user_model().objects.create_superuser("root", password="pw-root-long-enough")
    client = Client()
    client.force_login(user)
    return client


def test_admin_adds_a_secret_encrypted(admin_client, org):
    response = admin_client.post(
        "/admin/keeperstate/organizationsecret/add/", {"organization": org.id, "name": "API_KEY", "value": VALUE}
    )

    assert response.status_code == 302, response.content.decode()[:2000]
    secret = OrganizationSecret.objects.get(organization=org, name="API_KEY")
    assert VALUE not in secret.ciphertext
    assert SecretVault(org.id).value("API_KEY") == VALUE


def test_admin_never_shows_a_value(admin_client, org):
    secret, _ = secret_put(organization=org, name="API_KEY", value=VALUE)

    pages = [admin_client.get("/admin/keeperstate/organizationsecret/"),
             admin_client.get(f"/admin/keeperstate/organizationsecret/{secret.pk}/change/")]

    for page in pages:
        assert page.status_code == 200
        assert VALUE not in page.content.decode()
        assert secret.ciphertext not in page.content.decode()


def test_admin_change_without_a_value_keeps_it_and_with_one_replaces_it(admin_client, org):
    secret, _ = secret_put(organization=org, name="API_KEY", value=VALUE)
    url = f"/admin/keeperstate/organizationsecret/{secret.pk}/change/"

    admin_client.post(url, {"value": ""})
    assert SecretVault(org.id).value("API_KEY") == VALUE

    admin_client.post(url, {"value": "replaced"})
    assert SecretVault(org.id).value("API_KEY") == "replaced"
