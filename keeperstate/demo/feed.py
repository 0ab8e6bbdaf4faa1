"""The demo's own outside world, served by the site itself so the demo needs no network:

* ``POST /demo/rpc/`` — a JSON-RPC 2.0 chain node (keeperstate.demo.chain): ``eth_blockNumber``
  and ``eth_getBlockByNumber``, one block every ``KEEPERSTATE_DEMO_BLOCK_SECONDS`` (3) seconds,
  the same in every process (the head follows the clock), reorganising every
  ``KEEPERSTATE_DEMO_REORG_EVERY`` (20) blocks, ``KEEPERSTATE_DEMO_REORG_DEPTH`` (4) deep;
* ``GET /demo/feed/`` — the same chain's head as plain JSON: ``{"block", "timestamp", "hash"}``;
* ``POST /demo/alerts/`` — records the JSON it receives, for the demo organization's
  ``ALERTS_TOKEN`` secret as ``Authorization: Bearer …`` only (so nobody else fills it); an alert
  whose ``dedupKey`` was received before is answered ``{"received": <first id>, "duplicate":
  true}`` and not kept again (PagerDuty's ``dedup_key``); the newest ``KEEP_ALERTS`` are kept;
* ``GET /demo/alerts/`` — the alerts kept, newest first, 50 a page (HTML refreshing itself, or JSON
  with ``?format=json``), for logged-in members of the demo organization (they are its alerts);
  anyone else is answered 404, as for another organization's workflow.
"""

from __future__ import annotations

import hmac
import json
import time
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db import IntegrityError, transaction
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from keeperstate.accounts.access import organizations_of
from keeperstate.core.errors import Code, error_body
from keeperstate.demo.chain import INVALID_REQUEST, DemoChain
from keeperstate.demo.graphs import ALERTS_SECRET
from keeperstate.demo.models import DEDUP_KEY_MAX, DemoAlert
from keeperstate.secrets.crypto import decrypt
from keeperstate.secrets.models import OrganizationSecret

DEMO_ORGANIZATION = "demo"
GENESIS = 1_767_225_600  # 2026-01-01T00:00:00Z: block 0 of the demo chain
MAX_ALERT_BYTES = 16 * 1024
MAX_RPC_BYTES = 64 * 1024
KEEP_ALERTS = 1000
ALERTS_PER_PAGE = 50


def now() -> float:
    """The chain's clock (tests move it)."""
    return time.time()


def current_block() -> int:
    return int((now() - GENESIS) // block_seconds())


def block_seconds() -> int:
    return max(1, int(settings.KEEPERSTATE_DEMO_BLOCK_SECONDS))


def demo_chain() -> DemoChain:
    """The chain as it stands now."""
    return DemoChain(head=current_block(), genesis=GENESIS, block_seconds=block_seconds(),
                     reorg_every=settings.KEEPERSTATE_DEMO_REORG_EVERY,
                     reorg_depth=settings.KEEPERSTATE_DEMO_REORG_DEPTH)


@csrf_exempt
@require_POST
def rpc(request: HttpRequest) -> HttpResponse:
    # JSON-RPC errors travel in a 200 answer, as Ethereum nodes send them.
    if len(request.body) > MAX_RPC_BYTES:
        too_large = {"jsonrpc": "2.0", "id": None,
                     "error": {"code": INVALID_REQUEST, "message": "Invalid request: at most 64 KB."}}
        return JsonResponse(too_large)
    answer = demo_chain().answer(request.body)
    if answer is None:  # notifications only: nothing to say
        return HttpResponse(status=204)
    return JsonResponse(answer, safe=False)


@require_GET
def feed(request: HttpRequest) -> JsonResponse:
    chain = demo_chain()
    mined = datetime.fromtimestamp(GENESIS + chain.head * chain.block_seconds, tz=UTC)
    return JsonResponse({
        "block": chain.head,
        "timestamp": mined.isoformat().replace("+00:00", "Z"),
        "hash": chain.hash_of(chain.head),
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
    raw_key = payload.get("dedupKey") if isinstance(payload, dict) else None
    dedup_key = dedup_key_of(raw_key)
    if raw_key is not None and dedup_key is None:
        detail = f"dedupKey is text of 1 to {DEDUP_KEY_MAX} characters or a whole number, e.g. the block number."
        return JsonResponse(error_body(Code.BAD_REQUEST, detail, field="dedupKey"), status=400)
    if dedup_key is not None and (first := _first_with(dedup_key)) is not None:
        return JsonResponse({"received": first, "duplicate": True})
    try:
        with transaction.atomic():
            alert = DemoAlert.objects.create(payload=payload, dedup_key=dedup_key)
    except IntegrityError:
        # Two senders of one dedupKey raced: the unique constraint let one in.
        if dedup_key is None or (first := _first_with(dedup_key)) is None:
            raise
        return JsonResponse({"received": first, "duplicate": True})
    stale = DemoAlert.objects.order_by("-received_at", "-id").values_list("id", flat=True)[KEEP_ALERTS:]
    DemoAlert.objects.filter(id__in=list(stale)).delete()
    return JsonResponse({"received": alert.pk, "duplicate": False}, status=201)


def dedup_key_of(value: Any) -> str | None:
    """An alert's dedupKey as stored: text as sent, a whole number as its decimal text; None when
    absent or not a key (empty text, a boolean, a fraction, an object)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        value = str(value)
    if not isinstance(value, str) or not value.strip() or len(value) > DEDUP_KEY_MAX:
        return None
    return value.replace("\x00", "\ufffd")


def _first_with(dedup_key: str) -> int | None:
    return DemoAlert.objects.filter(dedup_key=dedup_key).values_list("id", flat=True).first()


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
    if not organizations_of(request.user).filter(slug=DEMO_ORGANIZATION).exists():
        if request.GET.get("format") == "json":
            return JsonResponse(error_body(Code.NOT_FOUND, "The demo alerts are shown to members of the demo "
                                           "organization."), status=404)
        raise Http404("The demo alerts are shown to members of the demo organization.")
    page = Paginator(DemoAlert.objects.all(), ALERTS_PER_PAGE).get_page(request.GET.get("page"))
    if request.GET.get("format") == "json":
        return JsonResponse({
            "alerts": [{"id": a.pk, "receivedAt": a.received_at.isoformat(), "dedupKey": a.dedup_key,
                        "payload": a.payload} for a in page],
            "count": page.paginator.count,
            "page": page.number,
            "pages": page.paginator.num_pages,
        })
    shown = [{"alert": a, "json": json.dumps(a.payload, indent=2, ensure_ascii=False)} for a in page]
    # Not "block": Django's {% block %} puts its own node under that name while a block renders.
    return render(request, "demo/alerts.html", {
        "page": page, "shown": shown, "head_block": current_block(), "kept": KEEP_ALERTS,
    })
