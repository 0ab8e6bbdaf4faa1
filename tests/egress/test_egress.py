"""Guarded egress: with the allow list empty, the service's own network is out of reach, judged on
the address actually connected to and on every redirect hop."""

from __future__ import annotations

import ipaddress

import pytest

from keeperstate.egress import transport
from keeperstate.egress.policy import allow_entries, parse_allow_entry, refusal_reason
from keeperstate.engine.context import RunContext
from tests.actions import run_action
from tests.egress.server import LocalServer


def request(url):
    result, _handle = run_action("HTTP Request", {"url": url}, RunContext())
    return result


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:{port}/echo",
        "http://[::1]:{port}/echo",
        "http://10.0.0.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::ffff:127.0.0.1]:{port}/echo",
        "http://localhost:{port}/echo",
        "http://0.0.0.0:{port}/echo",
        "http://192.168.1.1/",
        "http://[fe80::1]/",
        "http://[fd00:ec2::254]/",
        "http://224.0.0.1/",
        "http://100.100.100.200/",
        "http://[64:ff9b::7f00:1]/",
        "http://2130706433:{port}/echo",  # 127.0.0.1 as one number
    ],
)
def test_blocked_targets_with_an_empty_allow_list(allow_nothing, server, url):
    result = request(url.format(port=server.port))

    assert result["success"] is False
    assert result["code"] == "HTTP_EGRESS_BLOCKED"
    assert "KEEPERSTATE_HTTP_ALLOW" in result["error"]
    assert server.hits == []  # nothing reached the server


def test_a_name_resolving_to_loopback_is_blocked_at_connect_time(allow_nothing, server, monkeypatch):
    # a public-looking name whose DNS answer is loopback (rebinding): judged on the answer
    monkeypatch.setattr(transport, "resolve", lambda host, port: [ipaddress.ip_address("127.0.0.1")])

    result = request(f"http://monitor.example.com:{server.port}/echo")

    assert result["code"] == "HTTP_EGRESS_BLOCKED"
    assert result["details"]["address"] == "127.0.0.1"
    assert server.hits == []


def test_one_private_address_among_public_ones_blocks_the_name(allow_nothing, server, monkeypatch):
    answers = [ipaddress.ip_address("93.184.216.34"), ipaddress.ip_address("127.0.0.1")]
    monkeypatch.setattr(transport, "resolve", lambda host, port: answers)

    assert request(f"http://mixed.example.com:{server.port}/")["code"] == "HTTP_EGRESS_BLOCKED"


def test_name_is_resolved_once_and_the_checked_address_is_connected(settings, server, monkeypatch):
    # given: the name is allowed by address, and a second lookup would answer somewhere else
    settings.KEEPERSTATE_HTTP_ALLOW = [f"127.0.0.1:{server.port}"]
    answers = iter([[ipaddress.ip_address("127.0.0.1")], [ipaddress.ip_address("10.9.9.9")]])
    monkeypatch.setattr(transport, "resolve", lambda host, port: next(answers))

    # when
    result = request(f"http://feed.example.com:{server.port}/echo")

    # then: it reached the checked address, sending the name as Host
    assert result["success"] is True
    assert result["data"]["body"]["headers"]["host"] == f"feed.example.com:{server.port}"


def test_redirect_from_an_allowed_host_to_a_blocked_one_is_refused(settings, server):
    other = LocalServer().start()
    try:
        settings.KEEPERSTATE_HTTP_ALLOW = [f"127.0.0.1:{server.port}"]

        result = request(f"{server.url}/redirect-to?url=http://127.0.0.1:{other.port}/echo")

        assert result["code"] == "HTTP_EGRESS_BLOCKED"
        assert result["details"]["port"] == other.port
        assert len(server.hits) == 1
        assert other.hits == []
    finally:
        other.stop()


def test_redirect_to_metadata_is_refused(settings, server):
    settings.KEEPERSTATE_HTTP_ALLOW = [f"127.0.0.1:{server.port}"]

    result = request(f"{server.url}/redirect-to?url=http://169.254.169.254/latest/meta-data/")

    assert result["code"] == "HTTP_EGRESS_BLOCKED"
    assert "metadata" in result["error"]


def test_allow_by_cidr_and_by_host_name(settings, server, monkeypatch):
    settings.KEEPERSTATE_HTTP_ALLOW = ["127.0.0.0/8"]
    assert request(f"{server.url}/echo")["success"] is True

    settings.KEEPERSTATE_HTTP_ALLOW = ["localhost"]
    assert request(f"http://localhost:{server.port}/echo")["success"] is True
    assert request(f"{server.url}/echo")["code"] == "HTTP_EGRESS_BLOCKED"  # the name was allowed, not the IP


def test_allow_entry_with_a_port_allows_only_that_port(settings, server):
    settings.KEEPERSTATE_HTTP_ALLOW = [f"127.0.0.1:{server.port + 1}"]

    assert request(f"{server.url}/echo")["code"] == "HTTP_EGRESS_BLOCKED"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("8.8.8.8", None),
        ("2606:4700:4700::1111", None),
        ("127.0.0.2", "a loopback address"),
        ("::1", "a loopback address"),
        ("::ffff:10.1.2.3", "a private address"),
        ("2002:7f00:1::", "a loopback address"),  # 6to4 wrapping 127.0.0.1
        ("169.254.169.254", "a cloud metadata address"),
        ("172.16.0.1", "a private address"),
        ("100.64.0.1", "a reserved, non-public address"),
        ("ff02::1", "a multicast address"),
        ("::", "the unspecified address"),
    ],
)
def test_refusal_reason(text, reason):
    assert refusal_reason(ipaddress.ip_address(text)) == reason


def test_allow_list_parses_every_form():
    entries = allow_entries("example.com, api.example.com:8443,10.0.0.5,127.0.0.1:8000,[::1]:8000,10.0.0.0/8")

    assert [e.host for e in entries[:2]] == ["example.com", "api.example.com"]
    assert entries[1].port == 8443
    assert str(entries[2].address) == "10.0.0.5"
    assert (str(entries[3].address), entries[3].port) == ("127.0.0.1", 8000)
    assert (str(entries[4].address), entries[4].port) == ("::1", 8000)
    assert str(entries[5].network) == "10.0.0.0/8"
    with pytest.raises(ValueError, match="not a host"):
        parse_allow_entry("user@example.com")


def test_a_bad_allow_entry_is_skipped_not_fatal(caplog):
    entries = allow_entries(["user@example.com", "example.com"])

    assert [e.host for e in entries] == ["example.com"]
    assert "user@example.com" in caplog.text
