"""API fixtures: clients authenticated by token or session, and another organization's data."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from keeperstate.accounts.tokens import create_token
from keeperstate.executions.service import run_workflow
from tests.factories import make_user


def json_client(**kwargs) -> APIClient:
    client = APIClient(**kwargs)
    client.default_format = "json"
    return client


def token_client(user) -> APIClient:
    client = json_client()
    _, token = create_token(user, name="tests")
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
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
def foreign_user(foreign_workflow):
    """bob of globex, who created the foreign workflow."""
    return foreign_workflow.created_by


@pytest.fixture
def foreign_run(foreign_workflow):
    """The foreign workflow after one run: it has an execution and a cursor in state."""
    return run_workflow(foreign_workflow, {"block": 7})

