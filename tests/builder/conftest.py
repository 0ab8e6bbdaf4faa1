"""Builder fixtures: logged-in clients and the reference block monitor."""

from __future__ import annotations

import pytest
from django.test import Client


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
