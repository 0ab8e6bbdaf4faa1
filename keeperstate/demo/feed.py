"""The demo's own outside world, served by the site itself so the demo needs no network:

* ``GET /demo/feed/`` — a block feed: ``{"block", "timestamp", "hash"}``, where the block number
  grows by one every ``KEEPERSTATE_DEMO_BLOCK_SECONDS`` (5) seconds, the same in every process;
* ``POST /demo/alerts/`` — records the JSON it receives, for the demo organization's
  ``ALERTS_TOKEN`` secret as ``Authorization: Bearer …`` only (so nobody else fills it);
* ``GET /demo/alerts/`` — the alerts received, newest first (HTML refreshing itself, or JSON
  with ``?format=json``), for logged-in users.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods

from keeperstate.accounts.models import Organization
from keeperstate.core.errors import Code, error_body
from keeperstate.demo.graphs import ALERTS_SECRET
from keeperstate.demo.models import DemoAlert
from keeperstate.secrets.crypto import decrypt
from keeperstate.secrets.models import OrganizationSecret

DEMO_ORGANIZATION = "demo"
GENESIS = 1_767_225_600  # 2026-01-01T00:00:00Z: block 0 of the demo chain
MAX_ALERT_BYTES = 16 * 1024
KEEP_ALERTS = 200


def now() -> float:
    """The feed's clock (tests move it)."""
    return time.time()


def current_block() -> int:
    return int((now() - GENESIS) // block_seconds())


def block_seconds() -> int:
    return max(1, int(settings.KEEPERSTATE_DEMO_BLOCK_SECONDS))


@require_GET
def feed(request: HttpRequest) -> JsonResponse:
    block = current_block()
    mined = datetime.fromtimestamp(GENESIS + block * block_seconds(), tz=UTC)
    return JsonResponse({
        "block": block,
        "timestamp": mined.isoformat().replace("+00:00", "Z"),
        "hash": "0x" + hashlib.sha256(str(block).encode()).hexdigest()[:16],
    })


@csrf_exempt
@require_http_methods(["GET", "POST"])
def alerts(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        return _receive(request)
    return _list(request)


def _receive(request: HttpRequest) -> JsonResponse:
    if not _authorised(request.headers.get("Authorization", "")):
        detail = f"Send Authorization: Bearer <the demo organization's {ALERTS_SECRET} secret>."
        return JsonResponse(error_body(Code.NOT_AUTHENTICATED, detail), status=401)
    if len(request.body) > MAX_ALERT_BYTES:
        return JsonResponse(error_body(Code.REQUEST_TOO_LARGE, "An alert is at most 16 KB."), status=413)
    try:
        payload: Any = json.loads(request.body or b"null", parse_constant=_refuse)
    except (ValueError, RecursionError):
        payload = request.body.decode("utf-8", errors="replace")
    if isinstance(payload, str):
        payload = payload.replace("\x00", "\ufffd")
    alert = DemoAlert.objects.create(payload=payload)
    stale = DemoAlert.objects.order_by("-received_at", "-id").values_list("id", flat=True)[KEEP_ALERTS:]
    DemoAlert.objects.filter(id__in=list(stale)).delete()
    return JsonResponse({"received": alert.pk}, status=201)


def _refuse(name: str) -> Any:
    raise ValueError(name)


def _authorised(header: str) -> bool:
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token:
        return False
    secret = OrganizationSecret.objects.filter(organization__slug=DEMO_ORGANIZATION, name=ALERTS_SECRET).first()
    if secret is None:
        return False
    return hmac.compare_digest(token.strip().encode(), decrypt(secret.ciphertext, name=ALERTS_SECRET).encode())


@login_required
def _list(request: HttpRequest) -> HttpResponse:
    received = list(DemoAlert.objects.all()[:50])
    if request.GET.get("format") == "json":
        return JsonResponse({"alerts": [{"id": a.pk, "receivedAt": a.received_at.isoformat(), "payload": a.payload}
                                        for a in received]})
    demo = Organization.objects.filter(slug=DEMO_ORGANIZATION).first()
    return render(request, "demo/alerts.html", {"alerts": received, "demo": demo, "block": current_block()})
