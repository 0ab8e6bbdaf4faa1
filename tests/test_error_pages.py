"""Error pages: plain and friendly with DEBUG unset, and a 503 while the database is down."""

from __future__ import annotations

import pytest
from django.conf import settings

INTERNALS = ("Traceback", "secret internals", "SELECT", "settings.py", "psycopg", "OperationalError", "socket")


@pytest.fixture
def anonymous(client):
    client.raise_request_exception = False
    return client


def assert_no_internals(body: str) -> None:
    for text in INTERNALS:
        assert text not in body


def test_debug_is_off_unless_asked_for():
    assert settings.DEBUG is False


@pytest.mark.urls("tests.error_urls")
def test_an_unhandled_error_renders_the_plain_500_page(anonymous):
    response = anonymous.get("/boom/")

    assert response.status_code == 500
    assert "Something went wrong" in response.content.decode()
    assert_no_internals(response.content.decode())


@pytest.mark.urls("tests.error_urls")
def test_an_unhandled_error_under_the_api_answers_coded_json(anonymous):
    response = anonymous.get("/api/boom/")

    assert response.status_code == 500
    assert response.json()["code"] == "INTERNAL_ERROR"
    assert_no_internals(response.content.decode())


@pytest.mark.django_db
def test_an_unknown_page_is_the_plain_404_page(anonymous):
    response = anonymous.get("/no-such-page/")

    assert response.status_code == 404
    assert "Page not found" in response.content.decode()
    assert anonymous.get("/api/no-such-path/").json()["code"] == "NOT_FOUND"


@pytest.mark.parametrize(
    ("method", "path"),
    [("get", "/admin/"), ("get", "/builder/"), ("post", "/accounts/login/"), ("get", "/admin/login/")],
)
def test_pages_answer_503_while_the_database_is_down(client, django_user_model, database_down, method, path):
    user = django_user_model.objects.create_superuser("root", password="pw-long-enough-1")
    client.force_login(user)
    client.raise_request_exception = False
    database_down()

    data = {"username": "root", "password": "pw-long-enough-1"} if method == "post" else None
    response = getattr(client, method)(path, data)

    body = response.content.decode()
    assert response.status_code == 503
    assert response["Retry-After"] == "2"  # a failover takes about ten seconds
    assert "Temporarily unavailable" in body
    assert_no_internals(body)


def test_the_api_answers_coded_503_json_while_the_database_is_down(client, django_user_model, database_down):
    client.force_login(django_user_model.objects.create_user("alice", password="pw-long-enough-1"))
    client.raise_request_exception = False
    database_down()

    response = client.get("/api/workflows/")

    assert response.status_code == 503
    assert response.json()["code"] == "DATABASE_UNAVAILABLE"
    assert response["Retry-After"] == "2"
    assert_no_internals(response.content.decode())


@pytest.mark.django_db
def test_a_form_without_its_csrf_token_gets_a_plain_page_that_says_to_reload():
    from django.test import Client

    response = Client(enforce_csrf_checks=True).post("/accounts/login/", {"username": "x", "password": "y"})

    assert response.status_code == 403
    assert "Reload the page" in response.content.decode()
    assert "CSRF" not in response.content.decode()


def test_an_outage_is_logged_in_one_line_and_its_end_in_another(client, django_user_model, database_down, caplog):
    import logging

    from keeperstate.ops import availability

    client.force_login(django_user_model.objects.create_superuser("root", password="pw-long-enough-1"))
    client.raise_request_exception = False
    request_log = logging.getLogger("django.request")  # it does not propagate to the root logger
    request_log.addHandler(caplog.handler)
    availability.OUTAGE.since = None
    database_down()
    try:
        with caplog.at_level(logging.WARNING):
            # when pages and the API meet the outage, over and over
            for path in ("/admin/", "/api/workflows/", "/admin/", "/healthz", "/api/workflows/"):
                assert client.get(path).status_code == 503
    finally:
        request_log.removeHandler(caplog.handler)

    # then the log holds one line, without a traceback, and no request's own line
    [record] = caplog.records
    assert record.name == "keeperstate.database"
    assert record.getMessage().startswith("database unavailable (")
    assert record.exc_info is None
    assert availability.OUTAGE.ongoing

    # and when a connection is made again, one line says so
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="keeperstate.database"):
        availability.connected()
    [back] = caplog.records
    assert back.getMessage().startswith("database writable again after ")
    assert "(5 request(s) or step(s) met the outage)" in back.getMessage()

