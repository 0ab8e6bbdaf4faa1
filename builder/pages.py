"""Two pages of the builder that only read and write through the API: a workflow's versions
(GET /api/workflows/<id>/versions/, restore) and your API tokens (GET/POST /api/tokens/, revoke).
The views render the frame; static/builder/js/versions.js and api-tokens.js fill it."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_GET

from keeperstate.accounts.access import get_workflow_for


@login_required
@ensure_csrf_cookie  # Restore posts to the API with the CSRF cookie
@require_GET
def versions_page(request: HttpRequest, workflow_id: Any) -> HttpResponse:
    workflow = get_workflow_for(request.user, workflow_id)  # another organization's: 404
    return render(request, "builder/versions.html", {"workflow": workflow})


@login_required
@ensure_csrf_cookie
@require_GET
def tokens_page(request: HttpRequest) -> HttpResponse:
    return render(request, "builder/tokens.html")
