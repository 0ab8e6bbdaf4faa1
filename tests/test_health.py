"""`GET /healthz`: what a load balancer or a supervisor asks each web process."""

from __future__ import annotations

import pytest


@pytest.mark.django_db
def test_the_health_check_answers_ok_while_the_database_answers(client):
    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert "no-cache" in response["Cache-Control"]


def test_the_health_check_answers_503_while_the_database_is_down(client, database_down):
    database_down()

    response = client.get("/healthz")

    assert response.status_code == 503
    assert response.json()["code"] == "DATABASE_UNAVAILABLE"
    assert response["Retry-After"] == "2"
    assert "socket" not in response.content.decode()
