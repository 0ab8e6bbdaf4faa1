"""The client's address, decided once for lockout, throttles and the audit log.

Behind a proxy every request comes from the proxy's address; KEEPERSTATE_PROXY_COUNT says how
many proxies of ours append to X-Forwarded-For, so the address they saw is taken from the right
end of the header (entries further left are whatever the client claimed, and are ignored).
"""

from __future__ import annotations

import ipaddress

from django.conf import settings
from django.http import HttpRequest


def client_address(request: HttpRequest | None) -> str | None:
    if request is None:
        return None
    address = request.META.get("REMOTE_ADDR") or None
    hops = settings.KEEPERSTATE_PROXY_COUNT
    if hops > 0:
        forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
        if len(forwarded) >= hops:
            address = forwarded[-hops]
    return address if address and _is_ip(address) else None


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def axes_client_ip(request: HttpRequest) -> str | None:
    """AXES_CLIENT_IP_CALLABLE: axes counts failures per the same address as everything else."""
    return client_address(request)
