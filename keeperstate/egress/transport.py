"""An httpx client whose every connection is judged on the address it actually connects to.

httpcore hands the network backend the URL's host name; ``GuardedBackend`` resolves it itself,
refuses the connection when any resolved address is forbidden (so a name cannot smuggle a
private address among public ones), and connects to the checked address, never resolving the
name again (DNS rebinding has no second lookup to win). TLS still verifies the certificate for
the URL's host name: httpcore passes that name as SNI. Every redirect hop opens its connection
through the same backend, and, for allow-list entries limited to a path prefix, is judged with
the path it requests: the request module opens one client per hop, so a connection opened for an
allowed path never carries a redirect's request for another (ADR 0040).
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
from collections.abc import Iterable
from functools import cache
from typing import Any

import httpcore
import httpx

from keeperstate.egress.policy import AllowEntry, IPAddress, check_address

USER_AGENT = "KeeperState-HTTP-Request/1.0"


class ResolveFailed(httpcore.ConnectError):
    """The host name does not resolve (httpx reports it as a ConnectError)."""


def resolve(host: str, port: int) -> list[IPAddress]:
    """Every address the host name resolves to (tests replace this to play a DNS server)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    seen: list[IPAddress] = []
    for info in infos:
        ip = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        if ip not in seen:
            seen.append(ip)
    return seen


class GuardedBackend(httpcore.NetworkBackend):
    def __init__(self, entries: list[AllowEntry], path: str | None = None):
        self.entries = entries
        self.path = path  # the path of the one request this backend's connections carry
        self.inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        try:
            addresses = [ipaddress.ip_address(host)]
        except ValueError:
            try:
                addresses = resolve(host, port)
            except (OSError, UnicodeError) as exc:
                raise ResolveFailed(f"{host} does not resolve") from exc
        if not addresses:
            raise ResolveFailed(f"{host} does not resolve")
        for ip in addresses:  # all of them first: one forbidden address refuses the name
            check_address(host, ip, port, self.entries, self.path)
        last: Exception | None = None
        for ip in addresses:
            try:
                return self.inner.connect_tcp(str(ip), port, timeout, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
        assert last is not None
        raise last

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)


@cache
def _ssl_context() -> ssl.SSLContext:
    # Loading the CA bundle takes a third of a second; one verifying context serves every request.
    return httpx.create_ssl_context()


class GuardedTransport(httpx.HTTPTransport):
    """httpx's own transport with its connection pool on the guarded backend."""

    def __init__(self, entries: list[AllowEntry], path: str | None = None):
        super().__init__(verify=_ssl_context())  # a ready context: no second CA bundle load
        # Proxies from the environment are never used (trust_env=False on the client): the
        # address judged must be the one the request goes to.
        self._pool = httpcore.ConnectionPool(
            ssl_context=_ssl_context(), network_backend=GuardedBackend(entries, path)
        )


def guarded_client(entries: list[AllowEntry], path: str | None = None) -> httpx.Client:
    """A client for one request to ``path`` (the URL's raw path and query); None: entries limited
    to a path prefix open nothing."""
    return httpx.Client(
        transport=GuardedTransport(entries, path),
        trust_env=False,
        follow_redirects=False,
        headers={"User-Agent": USER_AGENT},
    )
