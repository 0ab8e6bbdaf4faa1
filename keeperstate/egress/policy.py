"""Which addresses a workflow may reach.

A run must not reach the service's own network: loopback, private, link-local (cloud
metadata), multicast, unspecified and other non-global addresses are refused, in IPv4, IPv6
and the IPv6 forms that carry an IPv4 address (mapped, 6to4, NAT64, Teredo).
``KEEPERSTATE_HTTP_ALLOW`` opens exceptions: a host name (matched against the URL's host), a
``host:port``, an IP or ``ip:port`` (matched against the address connected to) or a CIDR; any of
the first four may end in a path prefix (``127.0.0.1:8000/demo/``), which opens only the URLs
under that path (ADR 0040): ``serve`` opens its own ``/demo/`` that way, never its whole site.
"""

from __future__ import annotations

import ipaddress
import logging
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import unquote

from django.conf import settings

from keeperstate.core.errors import Code, CodedError
from keeperstate.core.numbers import whole_number

logger = logging.getLogger(__name__)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# Metadata services that are not link-local or private everywhere (named so the refusal says so).
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "169.254.170.2", "fd00:ec2::254", "100.100.100.200")
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class EgressBlocked(CodedError):
    error = Code.HTTP_EGRESS_BLOCKED


@dataclass(frozen=True)
class AllowEntry:
    host: str | None = None  # a host name, lower case
    address: IPAddress | None = None
    network: IPNetwork | None = None
    port: int | None = None
    path: str | None = None  # a path prefix ending in "/": only URLs under it

    def matches(self, host: str, ip: IPAddress, port: int, path: str | None = None) -> bool:
        if self.port is not None and self.port != port:
            return False
        if self.path is not None and not path_within(path, self.path):
            return False
        if self.network is not None:
            return ip in self.network
        if self.address is not None:
            return ip == self.address
        return self.host == host.lower().rstrip(".")


def path_within(path: str | None, prefix: str) -> bool:
    """Whether the URL path (as sent, percent-encoded) lies under ``prefix``. Dot segments and
    encoded slashes or dots are judged as the server would read them: ``/demo/../admin/`` and
    ``/demo/%2e%2e/admin/`` are not under ``/demo/``."""
    if path is None:
        return False
    decoded = unquote(path.split("?", 1)[0])
    if "\\" in decoded or "\x00" in decoded:
        return False
    normal = posixpath.normpath(decoded) + ("/" if decoded.endswith("/") else "")
    return normal.startswith(prefix) and ".." not in decoded.split("/")


def parse_allow_entry(text: str) -> AllowEntry:
    """``example.com``, ``example.com:8080``, ``10.0.0.5``, ``127.0.0.1:8000``, ``[::1]:8000``,
    ``10.0.0.0/8`` or ``fd00::/8``, the first four optionally followed by a path prefix
    (``127.0.0.1:8000/demo/``); raises ValueError for anything else."""
    text = text.strip()
    if not text:
        raise ValueError("empty entry")
    if "/" in text:
        address, _, rest = text.partition("/")
        length = whole_number(rest)
        if length is not None and length >= 0:  # a CIDR's prefix length
            return AllowEntry(network=ipaddress.ip_network(f"{address}/{length}", strict=False))
        entry = parse_allow_entry(address)
        if entry.network is not None:
            raise ValueError(f"a CIDR takes no path: {text!r}")
        prefix = "/" + rest.strip("/") + "/"
        if ".." in prefix.split("/") or any(c in prefix for c in "?#%\\"):
            raise ValueError(f"not a path prefix: {text!r}")
        return AllowEntry(host=entry.host, address=entry.address, port=entry.port, path=prefix)
    host, port = text, None
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = _port(rest[1:]) if rest.startswith(":") else None
    elif text.count(":") == 1:
        host, _, raw_port = text.partition(":")
        port = _port(raw_port)
    try:
        return AllowEntry(address=ipaddress.ip_address(host), port=port)
    except ValueError:
        pass
    if not host or any(c in host for c in " /@[]"):
        raise ValueError(f"not a host: {text!r}")
    return AllowEntry(host=host.lower().rstrip("."), port=port)


def _port(text: str) -> int:
    port = whole_number(text)
    if port is None or not 0 < port < 65536:
        raise ValueError(f"not a port: {text!r}")
    return port


def allow_entries(raw: Iterable[str] | str | None = None) -> list[AllowEntry]:
    """The allow list from settings (a list, or one comma-separated text)."""
    if raw is None:
        raw = getattr(settings, "KEEPERSTATE_HTTP_ALLOW", [])
    items = raw.split(",") if isinstance(raw, str) else list(raw)
    entries = []
    for item in items:
        if not item or not item.strip():
            continue
        try:
            entries.append(parse_allow_entry(item))
        except ValueError:
            # a typo must not stop every run; the refusal message names the setting to fix
            logger.warning("KEEPERSTATE_HTTP_ALLOW: ignoring %r (not a host, host:port, IP or CIDR, "
                           "with an optional /path/ prefix)", item)
    return entries


def embedded_ipv4(ip: IPAddress) -> list[IPAddress]:
    """The IPv4 addresses an IPv6 address carries and a network may route to."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return []
    found: list[IPAddress] = []
    if ip.ipv4_mapped is not None:
        found.append(ip.ipv4_mapped)
    if ip.sixtofour is not None:
        found.append(ip.sixtofour)
    if ip.teredo is not None:
        found.extend(ip.teredo)
    if ip in _NAT64:
        found.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    # IPv4-compatible (::a.b.c.d, deprecated but still parsed by some stacks)
    if int(ip) >> 32 == 0 and int(ip) > 1:
        found.append(ipaddress.IPv4Address(int(ip)))
    return found


def refusal_reason(ip: IPAddress) -> str | None:
    """Why a run may not connect to this address, or None when it is a public address."""
    for candidate in [*embedded_ipv4(ip), ip]:  # the IPv4 inside first: it names the real target
        if candidate in METADATA_ADDRESSES:
            return "a cloud metadata address"
        if candidate.is_loopback:
            return "a loopback address"
        if candidate.is_unspecified:
            return "the unspecified address"
        if candidate.is_link_local:
            return "a link-local address"
        if candidate.is_multicast:
            return "a multicast address"
        if candidate.is_private:
            return "a private address"
        if not candidate.is_global or candidate.is_reserved:
            return "a reserved, non-public address"
    return None


def check_address(host: str, ip: IPAddress, port: int, entries: list[AllowEntry], path: str | None = None) -> None:
    """Raise EgressBlocked unless a run may connect to ``ip:port`` for the URL host ``host`` to
    request ``path`` (None: unknown, so entries limited to a path do not open it)."""
    reason = refusal_reason(ip)
    if reason is None or any(entry.matches(host, ip, port, path) for entry in entries):
        return
    shown = host if host == str(ip) else f"{host} ({ip})"
    raise EgressBlocked(
        f"Requests to {shown} are blocked: it is {reason}, and workflows may reach only public "
        "addresses. Use the service's public address; an operator can allow this host in "
        "KEEPERSTATE_HTTP_ALLOW.",
        details={"host": host, "address": str(ip), "port": port},
    )
