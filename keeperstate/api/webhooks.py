"""The webhook: ``POST /hooks/<workflow id>/`` runs an active workflow with the JSON body as input.

An adapter like the API's views: the hardened JSON parser reads the body, the execution service
queues the run (or, with ``?wait``, runs it in this process while the request waits), and the
API's serializer and exception handler shape every answer. A wrong or missing secret and an
unknown, inactive or deleted workflow all get the same 404, so a caller learns nothing about
which workflows exist.
"""

from __future__ import annotations

import hmac
import time
from typing import Any

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, status
from rest_framework.permissions import AllowAny
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from keeperstate.accounts.access import hooked_workflow
from keeperstate.api import serializers as s
from keeperstate.api.parsers import JSONParser
from keeperstate.api.schema import IDEMPOTENCY_KEY_HEADER, errors
from keeperstate.api.throttles import WebhookThrottle
from keeperstate.core.numbers import whole_number
from keeperstate.engine.runner import RunInputInvalid
from keeperstate.executions.models import WorkflowExecution
from keeperstate.executions.service import check_idempotency_key, queue_run, run_waited
from keeperstate.executions.shapes import execution_json
from keeperstate.workflows.models import Workflow

SECRET_HEADER = "X-KeeperState-Secret"
NOT_FOUND = "No active workflow answers at this address with that secret."
POLL_SECONDS = 0.1


class WebhookJSONParser(JSONParser):
    max_bytes = settings.KEEPERSTATE_WEBHOOK_MAX_BYTES


class WebhookView(APIView):
    authentication_classes: list[Any] = []  # the secret is the credential; no session, so no CSRF
    permission_classes = [AllowAny]
    throttle_classes = [WebhookThrottle]  # not the anonymous API rate: senders call often
    parser_classes = [WebhookJSONParser]
    renderer_classes = [JSONRenderer]

    @extend_schema(
        tags=["webhooks"],
        summary="Run an active workflow with the JSON body as its input",
        description="Send the workflow's secret in X-KeeperState-Secret. Answers 202 with the execution id; "
        "with ?wait=N (at most 30 s) the finished execution (200), or 202 if it did not finish in time. "
        "A wrong secret, an unknown, inactive or deleted workflow: 404. Bodies over 256 KB: 413.",
        parameters=[
            s.WebhookQuery,
            OpenApiParameter(SECRET_HEADER, OpenApiTypes.STR, OpenApiParameter.HEADER, required=True),
            IDEMPOTENCY_KEY_HEADER,
        ],
        request=OpenApiTypes.OBJECT,
        responses={
            202: s.ExecutionQueuedOutput,
            200: OpenApiResponse(s.ExecutionOutput, description="The finished execution (with ?wait)."),
            **errors(400, 404, with_body=True),
        },
    )
    def post(self, request: Request, workflow_id: str) -> Response:
        workflow = _hooked_workflow(workflow_id, request.headers.get(SECRET_HEADER))
        query = s.WebhookQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        # A length that is no whole number ("²") counts as none, as Django reads it for the body.
        if not request.content_type and (whole_number(request.META.get("CONTENT_LENGTH")) or 0) > 0:
            # DRF would read a body without a content type as empty; say it is not JSON instead.
            raise exceptions.UnsupportedMediaType("", detail="Send the body as JSON (Content-Type: application/json).")
        body = request.data  # an empty body is an empty object
        if not isinstance(body, dict):
            raise RunInputInvalid('The webhook body must be a JSON object, for example {"block": 100}.')
        wait = query.validated_data.get("wait")
        began = time.monotonic()
        # Waited: run here, in this process's pool of waited runs, as fast as the API's execute
        # (docs/adr/0058-waited-webhooks-run-in-the-web-process.md); else queued for a worker.
        trigger, key = WorkflowExecution.Trigger.WEBHOOK, check_idempotency_key(request.headers.get("Idempotency-Key"))
        if wait:
            started = run_waited(workflow, body, trigger=trigger, idempotency_key=key, wait=wait)
        else:
            started = queue_run(workflow, body, trigger=trigger, idempotency_key=key)
        execution = started.execution
        if wait and execution.status == WorkflowExecution.Status.QUEUED:
            # A worker has it (this process's pool was busy, or a repeated key found it queued).
            execution = _wait_for(execution, wait - (time.monotonic() - began))
        if wait and execution.finished:
            return Response(execution_json(execution), status=status.HTTP_200_OK)
        return Response({"executionId": str(execution.id), "status": execution.status}, status=202)


def _hooked_workflow(workflow_id: str, secret: str | None) -> Workflow:
    workflow = hooked_workflow(workflow_id)  # None for a malformed id too: the same answer as any unknown
    expected = workflow.webhook_secret if workflow is not None else "-" * 43
    # Compared in constant time, and compared even for an unknown workflow.
    matches = hmac.compare_digest(expected.encode(), (secret or "").encode())
    if workflow is None or not matches:
        raise exceptions.NotFound(NOT_FOUND)
    return workflow


def _wait_for(execution: WorkflowExecution, seconds: float) -> WorkflowExecution:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        current = (WorkflowExecution.objects.filter(organization_id=execution.organization_id, pk=execution.pk)
                   .values_list("status", flat=True).first())
        if current is None or current in WorkflowExecution.FINISHED:
            break
        time.sleep(POLL_SECONDS)
    execution.refresh_from_db()
    return execution
