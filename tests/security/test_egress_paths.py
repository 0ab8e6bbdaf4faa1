"""Allow-list entries limited to a path prefix (issue 20 item 6, ADR 0040): `serve` opens only its
own /demo/ to workflows, so no organization's workflow reaches the admin, the API or anything else
of the service's own address, directly or by a redirect."""

from __future__ import annotations

import pytest

from keeperstate.egress.policy import AllowEntry, parse_allow_entry, path_within
from tests.egress.test_egress import request

pytestmark = pytest.mark.django_db


def test_an_entry_parses_its_path_prefix_and_a_cidr_stays_a_cidr():
    entry = parse_allow_entry("127.0.0.1:8000/demo")

    assert entry.port == 8000
    assert entry.path == "/demo/"
    assert parse_allow_entry("10.0.0.0/8").network is not None
    assert parse_allow_entry("example.com/api/v1/").path == "/api/v1/"
    with pytest.raises(ValueError, match="path"):
        parse_allow_entry("127.0.0.1:8000/demo/../admin/")


@pytest.mark.parametrize(
    ("path", "inside"),
    [
        ("/demo/rpc/", True),
        ("/demo/alerts/?format=json", True),
        ("/demo", False),
        ("/admin/", False),
        ("/demo/../admin/", False),
        ("/demo/%2e%2e/admin/", False),
        ("/demo/%2E%2E/api/", False),
        ("//demo/", False),
        ("/demo\\..\\admin", False),
        (None, False),
    ],
)
def test_a_path_is_inside_the_prefix_only_as_the_server_reads_it(path, inside):
    assert path_within(path, "/demo/") is inside


def test_a_path_prefix_opens_only_urls_under_it(settings, server):
    settings.KEEPERSTATE_HTTP_ALLOW = [f"127.0.0.1:{server.port}/echo/"]

    assert request(f"{server.url}/echo/anything")["success"] is True
    refused = request(f"{server.url}/redirect-to?url=/echo/x")

    assert refused["code"] == "HTTP_EGRESS_BLOCKED"
    assert server.hits == ["GET /echo/anything"]


def test_a_redirect_out_of_the_prefix_on_the_same_address_is_refused(settings, server):
    # given: /redirect/2 → /redirect/1 → /echo, and only /redirect/ is open
    settings.KEEPERSTATE_HTTP_ALLOW = [f"127.0.0.1:{server.port}/redirect/"]

    result = request(f"{server.url}/redirect/2")

    # then: both hops under the prefix were made, the one outside it never
    assert result["code"] == "HTTP_EGRESS_BLOCKED"
    assert server.hits == ["GET /redirect/2", "GET /redirect/1"]


def test_serves_own_entry_leaves_its_admin_and_api_blocked(settings, server, monkeypatch):
    from keeperstate.management.commands.serve import allow_own_address

    monkeypatch.setenv("KEEPERSTATE_HTTP_ALLOW", "")
    settings.KEEPERSTATE_HTTP_ALLOW = []
    allow_own_address(server.url)

    assert settings.KEEPERSTATE_HTTP_ALLOW == [f"127.0.0.1:{server.port}/demo/"]
    for path in ("/admin/", "/api/workflows/", "/echo"):
        assert request(f"{server.url}{path}")["code"] == "HTTP_EGRESS_BLOCKED", path
    assert server.hits == []


def test_an_entry_without_a_path_still_opens_the_whole_address():
    entry = AllowEntry(host="example.com")

    assert entry.matches("example.com", __import__("ipaddress").ip_address("10.0.0.1"), 80, None)
