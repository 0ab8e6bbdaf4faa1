"""API views: thin adapters from HTTP to keeperstate.accounts.access, keeperstate.workflows.services and the engine.

Every workflow and execution is looked up through keeperstate.accounts.access, so another
organization's ids answer 404. No view here calls the state store: a run (execute, test step,
retry) reaches its state through its actions, and people and programs read and write state
through keeperstate.api.state (DESIGN.md §15) and keeperstate.api.state_summary.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest, JsonResponse
from django.urls import Resolver404, resolve
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.utils import extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import Serializer
from rest_framework.views import APIView

from keeperstate.accounts.access import get_execution_for, get_workflow_for, workflows_visible_to
from keeperstate.api import serializers as s
from keeperstate.api.authentication import api_authentication_classes
from keeperstate.api.metadata import ApiMetadata
from keeperstate.api.pagination import Pagination, VersionPagination
from keeperstate.api.parsers import JSONParser
from keeperstate.api.permissions import HardDeleteByOwnersAndAdmins
from keeperstate.api.schema import IDEMPOTENCY_KEY_HEADER, WorkflowBadRequest, errors, graph_example
from keeperstate.api.serializers import ExecuteQuery
from keeperstate.api.throttles import AuthenticatedOrCounted
from keeperstate.core.errors import Code, error_body
from keeperstate.core.inputs import check_no_body
from keeperstate.engine.preview import preview_field
from keeperstate.engine.registry import catalogue
from keeperstate.engine.validation import validate_graph
from keeperstate.executions.models import WorkflowExecution
from keeperstate.executions.selectors import executions_of, of_workflow
from keeperstate.executions.service import (
    Started,
    check_idempotency_key,
    queue_run,
    retry_run,
    run_alone,
    run_now,
    run_step,
)
from keeperstate.executions.shapes import execution_json, preview_json, step_json
from keeperstate.workflows.models import Workflow, WorkflowVersion
from keeperstate.workflows.services import (
    rotate_webhook_secret,
    workflow_create,
    workflow_duplicate,
    workflow_export,
    workflow_hard_delete,
    workflow_import,
    workflow_restore_version,
    workflow_soft_delete,
    workflow_update,
)
from keeperstate.workflows.shapes import workflow_json, workflow_summary_json
from keeperstate.workflows.versions import versions_of


class JSONOnly(APIView):
    # JSON in, JSON out (DESIGN.md §9); no docstring here: drf-spectacular would show it.

    authentication_classes = api_authentication_classes()
    parser_classes = [JSONParser]
    renderer_classes = [JSONRenderer]
    metadata_class = ApiMetadata  # type: ignore[assignment]  # the stubs type it as an instance


def validated(serializer_class: type[Serializer], request: Request, **kwargs: Any) -> dict[str, Any]:
    serializer = serializer_class(data=request.data, context={"request": request}, **kwargs)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


@extend_schema(tags=["workflows"])
class WorkflowViewSet(JSONOnly, viewsets.GenericViewSet):
    """Workflows of your organizations. Another organization's workflow answers 404.
    Create, update and import validate the graph and answer WORKFLOW_INVALID with the report."""

    permission_classes = [AuthenticatedOrCounted, HardDeleteByOwnersAndAdmins]
    pagination_class = Pagination
    queryset = Workflow.objects.none()  # tells the schema the model; get_queryset scopes to the user

    def get_queryset(self) -> QuerySet[Workflow]:
        return (
            workflows_visible_to(self.request.user)
            .select_related("organization", "created_by")
            .order_by("-updated_at", "id")
        )

    def get_object(self) -> Workflow:
        workflow = get_workflow_for(self.request.user, self.kwargs["pk"])
        self.check_object_permissions(self.request, workflow)
        return workflow

    def page_of(self, rows: QuerySet[Any], shape: Callable[[Any], dict[str, Any]]) -> Response:
        """One page of ``rows``, each in its domain's shape."""
        page = self.paginate_queryset(rows)
        assert page is not None  # pagination_class is set
        return self.get_paginated_response([shape(row) for row in page])

    def hard_delete_requested(self) -> bool:
        query = s.DeleteQuery(data=self.request.query_params)
        query.is_valid(raise_exception=True)
        return query.validated_data["hard"]

    @extend_schema(
        summary="List the workflows of your organizations (soft-deleted ones excluded)",
        parameters=[s.WorkflowListQuery],
        responses={200: s.WorkflowSummaryOutput(many=True), **errors(400, 401, 404)},
    )
    def list(self, request: Request) -> Response:
        query = s.WorkflowListQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        return self.page_of(self.get_queryset().filter(query.organization_filter()), workflow_summary_json)

    @extend_schema(
        summary="Create a workflow (validated like every save)",
        request=s.WorkflowCreateInput,
        examples=graph_example(name="Cursor reader"),
        responses={201: s.WorkflowOutput, **errors(400, 401, 403, bad_request=WorkflowBadRequest, with_body=True)},
    )
    def create(self, request: Request) -> Response:
        workflow = workflow_create(user=request.user, **validated(s.WorkflowCreateInput, request))
        return Response(workflow_json(workflow), status=status.HTTP_201_CREATED)

    @extend_schema(summary="Read a workflow", responses={200: s.WorkflowOutput, **errors(401, 404)})
    def retrieve(self, request: Request, pk: str) -> Response:
        return Response(workflow_json(self.get_object()))

    @extend_schema(
        summary="Replace a workflow's name, description and graph",
        request=s.WorkflowUpdateInput,
        examples=graph_example(name="Cursor reader", description=""),
        responses={200: s.WorkflowOutput, **errors(400, 401, 403, 404, bad_request=WorkflowBadRequest, with_body=True)},
    )
    def update(self, request: Request, pk: str) -> Response:
        workflow = workflow_update(self.get_object(), user=request.user, **validated(s.WorkflowUpdateInput, request))
        return Response(workflow_json(workflow))

    @extend_schema(
        summary="Change some of a workflow's name, description and graph",
        request=s.WorkflowUpdateInput(partial=True),
        examples=graph_example(),
        responses={200: s.WorkflowOutput, **errors(400, 401, 403, 404, bad_request=WorkflowBadRequest, with_body=True)},
    )
    def partial_update(self, request: Request, pk: str) -> Response:
        workflow = workflow_update(
            self.get_object(), user=request.user, **validated(s.WorkflowUpdateInput, request, partial=True)
        )
        return Response(workflow_json(workflow))

    @extend_schema(
        summary="Delete a workflow: soft (hidden, state kept) or ?hard=true (with its state)",
        parameters=[s.DeleteQuery],
        responses={204: None, **errors(400, 401, 403, 404)},
    )
    def destroy(self, request: Request, pk: str) -> Response:
        workflow = self.get_object()  # 404 first; then 403 for a member's hard delete
        if self.hard_delete_requested():
            workflow_hard_delete(workflow)
        else:
            workflow_soft_delete(workflow)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        summary="Copy a workflow under a new id; the copy starts with empty state",
        request=s.WorkflowDuplicateInput,
        responses={201: s.WorkflowOutput, **errors(400, 401, 403, 404, with_body=True)},
    )
    @action(detail=True, methods=["post"])
    def duplicate(self, request: Request, pk: str) -> Response:
        workflow = self.get_object()
        copy = workflow_duplicate(workflow, user=request.user, **validated(s.WorkflowDuplicateInput, request))
        return Response(workflow_json(copy), status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Export a workflow's graph (never its state)",
        responses={200: s.WorkflowDocument, **errors(401, 404)},
    )
    @action(detail=True, methods=["get"])
    def export(self, request: Request, pk: str) -> Response:
        return Response(s.WorkflowDocument(workflow_export(self.get_object())).data)

    @extend_schema(
        summary="Import an exported workflow as a new workflow (validated like every save)",
        request=s.WorkflowImportInput,
        examples=graph_example(name="Cursor reader", description=""),
        responses={201: s.WorkflowOutput, **errors(400, 401, 403, bad_request=WorkflowBadRequest, with_body=True)},
    )
    @action(detail=False, methods=["post"], url_path="import", url_name="import")
    def import_(self, request: Request) -> Response:
        data = validated(s.WorkflowImportInput, request)
        organization = data.pop("organization")
        workflow = workflow_import(organization=organization, user=request.user, document=data)
        return Response(workflow_json(workflow), status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Validate a graph without saving it",
        request=s.GraphInput,
        examples=graph_example(),
        responses={200: s.ValidationReportOutput, **errors(400, 401, 403, with_body=True)},
    )
    @action(detail=False, methods=["post"])
    def validate(self, request: Request) -> Response:
        graph = validated(s.GraphInput, request)
        return Response(s.ValidationReportOutput(validate_graph(graph["nodes"], graph["edges"]).as_dict()).data)

    @extend_schema(
        summary="Run a workflow now and return the finished execution, or queue it (?async=true)",
        description="A run that fails in a node is still a 201: the execution's status is 'error' and "
        "the node's result carries the code (e.g. STATE_VERSION_CONFLICT). With ?async=true the answer is "
        "202 with the queued execution; poll GET /api/executions/<id>/. An Idempotency-Key header (up to 200 "
        "characters, kept 24 h per workflow) makes a retry answer 200 with the first execution, marked "
        "Idempotent-Replayed: true, instead of running again.",
        parameters=[ExecuteQuery, IDEMPOTENCY_KEY_HEADER],
        request=s.ExecuteInput,
        responses={
            201: s.ExecutionOutput,
            202: s.ExecutionOutput,
            200: s.ExecutionOutput,
            **errors(400, 401, 403, 404, 409, with_body=True),
        },
    )
    @action(detail=True, methods=["post"])
    def execute(self, request: Request, pk: str) -> Response:
        workflow = self.get_object()
        query = ExecuteQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        run_input = validated(s.ExecuteInput, request)["input"]
        background = query.validated_data["async"]
        start = queue_run if background else run_now
        started = start(workflow, run_input, trigger=trigger_of(request), user=request.user,
                        idempotency_key=check_idempotency_key(request.headers.get("Idempotency-Key")))
        return execution_response(started, status.HTTP_202_ACCEPTED if background else 201)

    @extend_schema(
        summary="Replace the workflow's webhook secret; the old one stops working at once",
        description="Takes no body, or an empty JSON object; anything else is refused and nothing changes.",
        request=None,
        responses={200: s.WebhookSecretOutput, **errors(400, 401, 404, with_body=True)},
    )
    @action(detail=True, methods=["post"], url_path="webhook-secret", url_name="webhook-secret")
    def webhook_secret(self, request: Request, pk: str) -> Response:
        workflow = self.get_object()
        takes_no_body(request)  # before anything changes: a refused body keeps the old secret working
        return Response({"webhookSecret": rotate_webhook_secret(workflow)})

    @extend_schema(
        summary="The workflow's executions, newest first; filter by status, trigger and time",
        parameters=[s.ExecutionListQuery],
        responses={200: s.ExecutionOutput(many=True), **errors(400, 401, 404)},
    )
    @action(detail=True, methods=["get"])
    def executions(self, request: Request, pk: str) -> Response:
        workflow = self.get_object()
        # A plain dict: from a QueryDict DRF reads an empty optional value as absent, and `?until=` must be refused.
        query = s.ExecutionListQuery(data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        return self.page_of(executions_of(workflow, **query.validated_data), execution_json)

    @extend_schema(
        summary="Run one node of the saved graph with the upstream outputs of an earlier run",
        description="The node runs through the runner's own node step, its references resolved against "
        "sourceExecution's results (its input plays the trigger's output). Nothing is recorded as an execution. "
        "A node that writes the workflow's state (State Set, State Delete) answers 409 STEP_WOULD_WRITE unless "
        "allowWrites is true; it then writes in the workflow's own state, as a run would. A node that fails "
        "is still a 200: the result carries the code.",
        request=s.TestStepInput,
        responses={200: s.TestStepOutput, **errors(400, 401, 403, 404, 409, with_body=True)},
    )
    @action(detail=True, methods=["post"], url_path="test-step", url_name="test-step")
    def test_step(self, request: Request, pk: str) -> Response:
        workflow = self.get_object()
        data = validated(s.TestStepInput, request)
        source = None
        if data["sourceExecution"] is not None:
            source = of_workflow(workflow).filter(pk=data["sourceExecution"]).first()
            if source is None:
                raise NotFound("No such execution of this workflow.")
        step = run_step(workflow, data["node"], source=source, allow_writes=data["allowWrites"])
        return Response(step_json(step))

    @extend_schema(
        summary="Preview a config field's value against the last run's data, running nothing",
        description="The value the runner would compute for the field now: its references resolved against "
        "sourceExecution's results (by default the newest finished run; the trigger's sample input when there is "
        "none), with the graph's pinned data over them, and an expression evaluated by the runner's evaluator. "
        "No action runs, nothing is written, no secret is read. A value that would fail answers 200 with the "
        "result's code, as a run would record it.",
        request=s.PreviewInput,
        responses={200: s.PreviewOutput, **errors(400, 401, 403, 404, with_body=True)},
    )
    @action(detail=True, methods=["post"])
    def preview(self, request: Request, pk: str) -> Response:
        workflow = self.get_object()
        data = validated(s.PreviewInput, request)
        source = preview_source(workflow, data["sourceExecution"])
        results = dict(source.node_results) if source else {}
        trigger = next((n for n in data["nodes"] if n.get("type") == "trigger"), None)
        if trigger is not None:
            sample = ((trigger.get("data") or {}).get("config") or {}).get("sampleInput")
            results[trigger.get("id")] = {"success": True, "data": source.input if source else sample or {}}
        result = preview_field(nodes=data["nodes"], edges=data["edges"], node_id=data["node"],
                               field_name=data["field"], value=data["value"], results=results)
        return Response(preview_json(result, source))

    @extend_schema(
        summary="The workflow's versions, newest first: each save of a new name or graph keeps one",
        responses={200: s.VersionOutput(many=True), **errors(400, 401, 404)},
    )
    @action(detail=True, methods=["get"], pagination_class=VersionPagination)
    def versions(self, request: Request, pk: str) -> Response:
        page = self.paginate_queryset(versions_of(self.get_object()))
        return self.get_paginated_response(s.VersionOutput(page, many=True).data)

    @extend_schema(
        summary="Restore a version: its name and graph are saved again, as a new version",
        description="Takes no body, or an empty JSON object; anything else is refused and nothing changes.",
        request=None,
        responses={200: s.WorkflowOutput, **errors(400, 401, 403, 404, bad_request=WorkflowBadRequest,
                                                    with_body=True)},
    )
    @action(detail=True, methods=["post"], url_path=r"versions/(?P<number>[0-9]+)/restore", url_name="version-restore")
    def restore_version(self, request: Request, pk: str, number: str) -> Response:
        workflow = self.get_object()
        takes_no_body(request)
        try:
            restored = workflow_restore_version(workflow, int(number), user=request.user)
        except WorkflowVersion.DoesNotExist as exc:
            raise NotFound(f"This workflow has no version {number}.") from exc
        return Response(workflow_json(restored))


def preview_source(workflow: Workflow, execution_id: Any) -> WorkflowExecution | None:
    """The run a preview reads: the one named (404 when it is not this workflow's), else the newest
    finished one, else none."""
    runs = of_workflow(workflow).filter(finished_at__isnull=False)
    if execution_id is None:
        return runs.order_by("-finished_at").first()
    source = runs.filter(pk=execution_id).first()
    if source is None:
        raise NotFound("No such finished execution of this workflow.")
    return source


def takes_no_body(request: Request) -> None:
    """A POST that takes no body: the body read through the one input reader (the API's parser:
    400/413/415 for what it cannot read), then refused unless it is absent or {} (check_no_body)."""
    check_no_body(request.data)


def trigger_of(request: Request) -> str:
    """``api`` for a client with a token; ``manual`` for a person in the browser (a session): the
    editor's Run calls this endpoint too."""
    return WorkflowExecution.Trigger.API if request.auth is not None else WorkflowExecution.Trigger.MANUAL


def execution_response(started: Started, created_status: int) -> Response:
    """A run's answer: the execution, or the first one again for a repeated Idempotency-Key."""
    body = execution_json(started.execution)
    if started.replayed:
        return Response(body, status=status.HTTP_200_OK, headers={"Idempotent-Replayed": "true"})
    return Response(body, status=created_status)


@extend_schema(tags=["executions"])
class ExecutionViewSet(JSONOnly, viewsets.GenericViewSet):
    """Finished runs of your organizations' workflows, with each node's result."""

    queryset = WorkflowExecution.objects.none()

    @extend_schema(summary="Read an execution", responses={200: s.ExecutionOutput, **errors(401, 404)})
    def retrieve(self, request: Request, pk: str) -> Response:
        return Response(execution_json(get_execution_for(request.user, pk)))

    @extend_schema(
        summary="Retry a failed or interrupted execution: its input again, as a new execution",
        description="The new execution's retryOf names this one; it runs the workflow's saved graph of now. "
        "Anything else than a failed or interrupted execution answers 409 RUN_NOT_RETRYABLE. With ?async=true "
        "the answer is 202 with the queued execution. Takes no body, or an empty JSON object; anything else is "
        "refused and nothing runs.",
        parameters=[ExecuteQuery],
        request=None,
        responses={201: s.ExecutionOutput, 202: s.ExecutionOutput, **errors(400, 401, 404, 409, with_body=True)},
    )
    @action(detail=True, methods=["post"])
    def retry(self, request: Request, pk: str) -> Response:
        execution = get_execution_for(request.user, pk)
        query = ExecuteQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        takes_no_body(request)
        background = query.validated_data["async"]
        started = retry_run(execution, trigger=trigger_of(request), user=request.user, background=background)
        return execution_response(started, status.HTTP_202_ACCEPTED if background else 201)


@extend_schema(tags=["actions"])
class NodeExecuteView(JSONOnly):
    """Direct node execution, with no workflow and so no state."""

    @extend_schema(
        summary="Run one action outside any workflow",
        description="Answers the node result with 200 whether the action succeeded or not, like a node "
        "of an execution: state actions fail with STATE_NO_WORKFLOW_CONTEXT, since state belongs to a "
        "workflow. The input plays the trigger's output (<<@trigger:Trigger.field>>). It counts as a run "
        "of the organization (default: your first), against its runs per minute (429 THROTTLED past them).",
        request=s.NodeExecuteInput,
        responses={200: s.NodeResultOutput, **errors(400, 401, 403, with_body=True)},
    )
    def post(self, request: Request) -> Response:
        data = validated(s.NodeExecuteInput, request)
        result = run_alone(data["organization"].pk, data["actionType"], data["config"], data["input"])
        return Response(result.to_json())


@extend_schema(tags=["actions"])
class ActionCatalogueView(JSONOnly):
    """What a node can do: every registered action and trigger kind."""

    @extend_schema(
        summary="The action catalogue and the trigger kinds, from the registry",
        responses={200: s.CatalogueOutput, **errors(401)},
    )
    def get(self, request: Request) -> Response:
        return Response(catalogue())


@csrf_exempt
def not_found(request: HttpRequest) -> JsonResponse:
    """Unknown paths under /api/ answer JSON like the rest of the API (and say when only the
    trailing slash is missing: every API path ends with one)."""
    detail = f"No API endpoint at {request.path}."
    if not request.path.endswith("/"):
        try:
            resolved = resolve(request.path + "/")
        except Resolver404:
            resolved = None
        if resolved is not None and resolved.url_name != "not-found":
            detail += f" Did you mean {request.path}/ ? API paths end with a slash."
    return JsonResponse(error_body(Code.NOT_FOUND, detail), status=404)
