"""API fixtures: clients authenticated by token or session, and another organization's data."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from keeperstate.demo import block_monitor_graph
from keeperstate.engine.runner import run_workflow
from tests.factories import make_user, make_workflow


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """Users here log in with passwords only to test sessions; Django's default hasher takes a
    noticeable fraction of a second per user, and most tests create several."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def json_client(**kwargs) -> APIClient:
    client = APIClient(**kwargs)
    client.default_format = "json"
    return client


def token_client(user) -> APIClient:
    client = json_client()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def api(user) -> APIClient:
    """A token client of alice, a member of acme."""
    return token_client(user)


@pytest.fixture
def anonymous() -> APIClient:
    return json_client()


@pytest.fixture
def admin_user(org):
    return make_user("ada", org, role="admin")


@pytest.fixture
def owner_user(org):
    return make_user("olga", org, role="owner")


@pytest.fixture
def monitor(org, user):
    nodes, edges = block_monitor_graph()
    return make_workflow(org, name="Block monitor", user=user, nodes=nodes, edges=edges)


@pytest.fixture
def foreign_user(other_org):
    return make_user("bob", other_org)


@pytest.fixture
def foreign_workflow(other_org, foreign_user):
    """A monitor of globex that has run once, so it has an execution and a cursor in state."""
    nodes, edges = block_monitor_graph()
    workflow = make_workflow(other_org, name="Globex monitor", user=foreign_user, nodes=nodes, edges=edges)
    run_workflow(workflow, {"block": 7})
    return workflow
