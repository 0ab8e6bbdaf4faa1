"""Builder fixtures: logged-in clients and the reference block monitor."""

from __future__ import annotations

import pytest
from django.test import Client

from keeperstate.demo import block_monitor_graph
from tests.factories import make_user, make_workflow


@pytest.fixture
def client_as_alice(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def csrf_client(user) -> Client:
    """A logged-in client that, like a browser, must send the CSRF token."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    return client


@pytest.fixture
def monitor(org, user):
    nodes, edges = block_monitor_graph()
    return make_workflow(org, name="Block monitor", user=user, nodes=nodes, edges=edges)


@pytest.fixture
def foreign_workflow(other_org):
    """A workflow of another organization (globex), which alice must not see."""
    nodes, edges = block_monitor_graph()
    owner = make_user("bob", other_org)
    return make_workflow(other_org, name="Globex monitor", user=owner, nodes=nodes, edges=edges)
