"""The site as ``serve`` serves it (gunicorn with keeperstate.ops.gunicorn_conf, keeperstate.wsgi),
on the test database: what gunicorn refuses itself is answered in the API's JSON shape, not its
HTML page, and a state key's bytes reach the view as the client sent them (issue 39, item 5: a
10,000-character key got gunicorn's HTML 414; a%FFb was stored as the text "a%FFb")."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
from collections.abc import Iterator

import pytest
from django.conf import settings

from keeperstate.accounts.tokens import create_token
from keeperstate.state.models import WorkflowState
from tests.ops.serving import free_port
from tests.workers.processes import child_env, stop_process, wait_until

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]

GUNICORN_CONFIG = "python:keeperstate.ops.gunicorn_conf"


@pytest.fixture
def site(tmp_path) -> Iterator[int]:
    """gunicorn as serve starts it (its config, the project's WSGI application); its port."""
    port = free_port()
    log = tmp_path / "gunicorn.log"
    with open(log, "wb") as out:
        web = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "--config", GUNICORN_CONFIG, "keeperstate.wsgi:application",
             "--bind", f"127.0.0.1:{port}", "--workers", "1", "--threads", "2"],
            cwd=settings.BASE_DIR, stdout=out, stderr=subprocess.STDOUT, env=child_env(),
        )
    try:
        wait_until(lambda: web.poll() is None and _answers(port), 60, "gunicorn to listen")
        yield port
    finally:
        stop_process(web)
        if web.returncode not in (0, -15):
            print(log.read_text(errors="replace")[-3000:])


def _answers(port: int) -> bool:
    try:
        send(port, "GET", "/healthz")
    except OSError:
        return False
    return True


def send(port: int, method: str, path: str, body: bytes | None = None,
         headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    """One request with the path's bytes exactly as given."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.putrequest(method, path, skip_accept_encoding=True)
        for name, value in {**(headers or {}), "Content-Length": str(len(body or b""))}.items():
            connection.putheader(name, value)
        connection.endheaders(body)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


@pytest.fixture
def auth(user) -> dict[str, str]:
    return {"Authorization": f"Token {create_token(user, name='probe')[1]}", "Content-Type": "application/json"}


def state_url(workflow, key: str) -> str:
    return f"/api/workflows/{workflow.id}/state/{key}/"


def test_a_path_past_the_request_line_is_the_coded_json_414(site, workflow, auth):
    status, headers, body = send(site, "GET", state_url(workflow, "k" * 10_000), headers=auth)

    assert status == 414
    assert headers["content-type"] == "application/json"
    assert json.loads(body)["code"] == "URI_TOO_LONG"
    assert b"<html" not in body


def test_a_key_longer_than_a_key_but_within_the_line_reaches_django(site, workflow, auth):
    # 256 characters is the longest key; a 5,000-character one is answered by the store's rule
    status, _, body = send(site, "PUT", state_url(workflow, "k" * 5_000), b'{"value": 1}', auth)

    assert (status, json.loads(body)["code"]) == (400, "STATE_INVALID_KEY")


def test_too_many_headers_is_the_coded_json_431(site):
    status, headers, body = send(site, "GET", "/api/actions/", headers={f"X-H{i}": "1" for i in range(150)})

    assert status == 431
    assert (headers["content-type"], json.loads(body)["code"]) == ("application/json", "REQUEST_HEADERS_TOO_LARGE")


@pytest.mark.parametrize("key", ["a%FFb", "%C0%AF", "%ED%A0%80"])
def test_a_key_that_is_not_utf8_is_refused_under_gunicorn(site, workflow, auth, key):
    status, _, body = send(site, "PUT", state_url(workflow, key), b'{"value": 1}', auth)

    assert (status, json.loads(body)["code"]) == (400, "STATE_INVALID_KEY")
    assert not WorkflowState.objects.exists()


def test_the_percent_text_and_both_unicode_spellings_are_one_key_each_under_gunicorn(site, workflow, auth):
    as_text = send(site, "PUT", state_url(workflow, "a%25FFb"), b'{"value": 1}', auth)
    nfd = send(site, "PUT", state_url(workflow, "cafe%CC%81"), b'{"value": 1}', auth)
    nfc = send(site, "PUT", state_url(workflow, "caf%C3%A9"), b'{"value": 2}', auth)

    assert (as_text[0], nfd[0], nfc[0]) == (201, 201, 200)
    assert sorted(WorkflowState.objects.values_list("key", "version")) == [("a%FFb", 1), ("caf\u00e9", 2)]
