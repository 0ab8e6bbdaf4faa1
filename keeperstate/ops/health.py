"""`GET /healthz`: whether this web process can serve, for a load balancer or a supervisor.

200 ``{"status": "ok"}`` when the database answers, else 503 ``{"code": "DATABASE_UNAVAILABLE", ...}``.
No session, no user, no CSRF: a probe carries none, and answering must not depend on them.
"""

from __future__ import annotations

import logging

from django.db import DatabaseError, connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from keeperstate.core.errors import Code, error_body
from keeperstate.ops import availability

logger = logging.getLogger(__name__)


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as exc:
        availability.noticed(exc, "the health check")  # the outage's one line, not one per probe
        response = JsonResponse(
            {"status": "unavailable", **error_body(Code.DATABASE_UNAVAILABLE, "The database does not answer.")},
            status=503,
        )
        response["Retry-After"] = str(availability.RETRY_AFTER_SECONDS)
        response._has_been_logged = True  # type: ignore[attr-defined]  # Django's own marker
        return response
    return JsonResponse({"status": "ok"})
