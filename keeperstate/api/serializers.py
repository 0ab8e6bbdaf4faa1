"""Input and output serializers of the API. Keys are camelCase, like the graph's own keys.

Input serializers check the request's shape and resolve references to the user's own rows;
the services in keeperstate.workflows and the engine judge the rest. Output serializers
describe what a response holds for the OpenAPI schema; a resource's JSON itself is its domain's
(keeperstate.workflows.shapes, keeperstate.executions.shapes, keeperstate.state.shapes), and
tests/api/test_shapes.py holds each serializer equal to its shape.
"""

from __future__ import annotations

from typing import Any, cast, get_args

from django.db.models import Q
from rest_framework import serializers

from keeperstate.accounts.access import organization_for, organization_id
from keeperstate.accounts.models import Organization
from keeperstate.api.exceptions import field_checked
from keeperstate.api.fields import (
    JSONObjectField,
    NameField,
    OrganizationRefField,
    StrictBooleanField,
    TextField,
    WholeNumberField,
    edges_field,
    nodes_field,
)
from keeperstate.core.errors import Code, CodedError
from keeperstate.engine.fields import FieldKind
from keeperstate.engine.registry import all_actions
from keeperstate.executions.models import WorkflowExecution
from keeperstate.workflows.models import Workflow

# SHADOWING: some output keys (data, errors, label, required) are also attribute names of
# Serializer or Field. DRF's metaclass takes declared fields off the class, so at run time they
# shadow nothing; only the type checker needs telling.


# Workflows ------------------------------------------------------------------------------------

SETTINGS_HELP = (
    'The workflow\'s settings: {"errorWorkflow": "<id>"} runs that workflow (of the same organization) with '
    'the failed execution\'s summary when a run ends in error; null clears it.'
)


class WorkflowSummaryOutput(serializers.ModelSerializer):
    """The schema of keeperstate.workflows.shapes.workflow_summary_json, which the views answer."""

    organization: serializers.SlugRelatedField[Organization] = serializers.SlugRelatedField(
        slug_field="slug", read_only=True, help_text="The slug of the workflow's organization."
    )
    createdBy = serializers.CharField(source="created_by.username", read_only=True, allow_null=True, default=None)
    createdAt = serializers.DateTimeField(source="created_at", read_only=True)
    updatedAt = serializers.DateTimeField(source="updated_at", read_only=True)
    active = serializers.BooleanField(
        read_only=True, help_text="Only active workflows run on their schedule or by webhook."
    )
    nextRunAt = serializers.DateTimeField(
        source="next_run_at", read_only=True, allow_null=True, help_text="The schedule's next due tick, or null."
    )

    class Meta:
        model = Workflow
        fields = ["id", "organization", "name", "description", "active", "nextRunAt", "createdBy", "createdAt",
                  "updatedAt"]
        read_only_fields = fields


class WorkflowOutput(WorkflowSummaryOutput):
    """The schema of keeperstate.workflows.shapes.workflow_json, which the views answer."""

    nodes = nodes_field(read_only=True)
    edges = edges_field(read_only=True)
    webhookUrl = serializers.CharField(
        source="webhook_path", read_only=True, help_text="POST a JSON object here to run the workflow (if active)."
    )
    webhookSecret = serializers.CharField(
        source="webhook_secret", read_only=True, help_text="Send it as the X-KeeperState-Secret header."
    )
    settings = JSONObjectField(read_only=True, help_text=SETTINGS_HELP)

    class Meta(WorkflowSummaryOutput.Meta):
        fields = ["id", "organization", "name", "description", "active", "nextRunAt", "webhookUrl", "webhookSecret",
                  "settings", "nodes", "edges", "createdBy", "createdAt", "updatedAt"]
        read_only_fields = fields


class WebhookSecretOutput(serializers.Serializer):
    webhookSecret = serializers.CharField()


class WorkflowDocument(serializers.Serializer):
    """The portable form of a workflow (export and import): its graph, never its state."""

    name = NameField()
    description = TextField(allow_blank=True, default="")
    nodes = nodes_field()
    edges = edges_field()


class _OrganizationInput(serializers.Serializer):
    organization = OrganizationRefField(required=False, max_length=100)

    def validate_organization(self, value: str) -> Organization:
        return field_checked(lambda reference: organization_for(self.context["request"].user, reference), value)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "organization" not in attrs:
            try:
                attrs["organization"] = organization_for(self.context["request"].user, None)
            except CodedError as exc:
                raise serializers.ValidationError({"organization": [exc.message]}) from exc
        return attrs


class WorkflowCreateInput(_OrganizationInput):
    name = NameField()
    description = TextField(allow_blank=True, default="")
    active = StrictBooleanField(default=False, help_text="Run on its schedule or by webhook.")
    settings = JSONObjectField(required=False, help_text=SETTINGS_HELP)
    nodes = nodes_field(default=list, help_text="Empty (with empty edges): the workflow starts with a trigger.")
    edges = edges_field(default=list)


class WorkflowImportInput(_OrganizationInput, WorkflowDocument):
    """An exported document, optionally with the organization to import it into."""

    name = NameField(default="Imported workflow")
    nodes = nodes_field(default=list)
    edges = edges_field(default=list)


class WorkflowUpdateInput(serializers.Serializer):
    """PUT replaces all four fields (description defaults to empty); PATCH changes those given."""

    name = NameField()
    description = TextField(allow_blank=True, default="")
    nodes = nodes_field()
    edges = edges_field()
    active = StrictBooleanField(required=False, help_text="Run on its schedule or by webhook. Left out: unchanged.")
    settings = JSONObjectField(required=False, help_text=SETTINGS_HELP + " Left out: unchanged.")


class WorkflowDuplicateInput(serializers.Serializer):
    name = NameField(required=False, help_text='Default: "<name> (copy)".')


class DeleteQuery(serializers.Serializer):
    hard = serializers.BooleanField(
        default=False,
        help_text="true: delete the workflow, its executions and its state (owners and admins only). "
        "Otherwise the workflow is hidden and its state kept.",
    )


class WorkflowListQuery(serializers.Serializer):
    organization = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=100,
        help_text="Only the workflows of this organization (slug or id).",
    )

    def organization_filter(self) -> Q:
        value = self.validated_data.get("organization")
        if not value:
            return Q()
        match = Q(organization__slug=value)
        if (pk := organization_id(value)) is not None:
            match |= Q(organization_id=pk)
        return match


# Validation -----------------------------------------------------------------------------------


class GraphInput(serializers.Serializer):
    nodes = nodes_field()
    edges = edges_field()


class FindingOutput(serializers.Serializer):
    nodeId = serializers.CharField(allow_null=True)
    field = serializers.CharField(allow_null=True)
    code = serializers.CharField()
    message = serializers.CharField()


class ValidationReportOutput(serializers.Serializer):
    valid = serializers.BooleanField()
    errors = FindingOutput(many=True)  # type: ignore[assignment]  # see SHADOWING
    warnings = FindingOutput(many=True)


# Executions -----------------------------------------------------------------------------------


class NodeResultOutput(serializers.Serializer):
    """One node's result: success with data, a failure with code and error, or skipped."""

    success = serializers.BooleanField(required=False)
    data = serializers.JSONField(  # type: ignore[assignment]  # see SHADOWING
        required=False, help_text="The action's output fields (on success)."
    )
    code = serializers.CharField(required=False, help_text="Stable error code, e.g. STATE_VERSION_CONFLICT.")
    error = serializers.CharField(required=False, help_text="What went wrong and what to do.")
    details = serializers.JSONField(required=False, help_text="Structured data of the failure.")
    skipped = serializers.BooleanField(required=False, help_text="The node was on a branch not taken.")
    iterations = serializers.ListField(
        child=serializers.JSONField(), required=False,
        help_text="A For Each body node's result per item, the first 100 in full (its top-level fields are the "
        "last item's).",
    )
    iterationCount = serializers.IntegerField(required=False, help_text="How many items ran the body node.")
    pinned = serializers.BooleanField(
        required=False, help_text="true: the node did not run; its pinned data stood in for its output (runs "
        "started in the editor and Test step only).",
    )


class ExecuteInput(serializers.Serializer):
    input = JSONObjectField(default=dict, help_text='The run input, the trigger\'s output: e.g. {"block": 100}.')


class ExecuteQuery(serializers.Serializer):
    def get_fields(self) -> dict[str, serializers.Field]:
        # "async" is a Python keyword, so it cannot be declared as a class attribute.
        return {
            "async": serializers.BooleanField(
                default=False, help_text="true: answer 202 with the queued execution; a worker runs it."
            )
        }


class WebhookQuery(serializers.Serializer):
    wait = WholeNumberField(
        required=False,
        min_value=1,
        max_value=30,
        help_text="Wait up to this many seconds for the run to finish and answer it (200); else 202.",
    )


class ExecutionListQuery(serializers.Serializer):
    status = serializers.ChoiceField(
        choices=WorkflowExecution.Status.choices, required=False, help_text="Only runs with this status."
    )
    trigger = serializers.ChoiceField(
        choices=WorkflowExecution.Trigger.choices, required=False, help_text="Only runs started this way."
    )
    since = serializers.DateTimeField(
        required=False, help_text="Only runs queued at or after this time (ISO 8601, e.g. 2026-12-01T10:00:00Z)."
    )
    until = serializers.DateTimeField(required=False, help_text="Only runs queued before this time (ISO 8601).")

    def to_internal_value(self, data: Any) -> Any:
        # DRF reads an empty query parameter as an absent one; a client sending ?until= meant something.
        empty = {str(name): ["Give a value, or leave the parameter out."] for name in self.fields
                 if data.get(name) == ""}
        if empty:
            raise serializers.ValidationError(empty)
        return super().to_internal_value(data)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        # since == until is an empty window (no runs), not a mistake; until before since is.
        if attrs.get("since") and attrs.get("until") and attrs["since"] > attrs["until"]:
            raise serializers.ValidationError({"until": ["Must not be earlier than since."]})
        return attrs


class ExecutionOutput(serializers.ModelSerializer):
    """The schema of an execution's one shape (keeperstate.executions.shapes.execution_json), which
    the views answer."""

    workflow = serializers.UUIDField(source="workflow_id", read_only=True)
    trigger = serializers.ChoiceField(choices=WorkflowExecution.Trigger.choices, read_only=True)
    triggeredBy = serializers.CharField(
        source="triggered_by.username", read_only=True, allow_null=True, default=None,
        help_text="The user who started it (manual and API runs), else null.",
    )
    input = JSONObjectField(read_only=True)
    nodeResults = serializers.DictField(source="node_results", child=NodeResultOutput(), read_only=True)
    errorCode = serializers.CharField(
        source="error_code", read_only=True, allow_null=True,
        help_text="The failing node's code, RUN_INTERRUPTED, RUN_SKIPPED or RUN_INTERNAL_ERROR.",
    )
    queuedAt = serializers.DateTimeField(source="queued_at", read_only=True)
    startedAt = serializers.DateTimeField(source="started_at", read_only=True, allow_null=True)
    finishedAt = serializers.DateTimeField(source="finished_at", read_only=True, allow_null=True)
    scheduledFor = serializers.DateTimeField(
        source="scheduled_for", read_only=True, allow_null=True, help_text="The schedule tick (schedule runs)."
    )
    retryOf = serializers.UUIDField(
        source="retry_of_id", read_only=True, allow_null=True,
        help_text="The failed or interrupted execution this one retries (POST /api/executions/<id>/retry/), else null.",
    )

    class Meta:
        model = WorkflowExecution
        fields = ["id", "workflow", "status", "trigger", "triggeredBy", "input", "nodeResults", "error", "errorCode",
                  "queuedAt", "startedAt", "finishedAt", "scheduledFor", "retryOf"]
        read_only_fields = fields


class TestStepInput(serializers.Serializer):
    node = serializers.CharField(min_length=1, max_length=200, help_text="The id of the saved node to run.")
    sourceExecution = serializers.UUIDField(
        required=False, allow_null=True, default=None,
        help_text="An earlier execution of this workflow whose results are the node's upstream outputs "
        "(default: none; the trigger's output is {}).",
    )
    allowWrites = StrictBooleanField(
        default=False, help_text="true: run a node that writes the workflow's state (STEP_WOULD_WRITE otherwise).",
    )


class TestStepOutput(serializers.Serializer):
    node = serializers.CharField()
    result = NodeResultOutput()
    handle = serializers.CharField(allow_null=True, help_text="The branch the node chose (Condition: true/false).")
    wroteState = serializers.BooleanField(help_text="The node may have written the workflow's state.")
    sourceExecution = serializers.UUIDField(allow_null=True)


class VersionOutput(serializers.Serializer):
    number = serializers.IntegerField()
    name = serializers.CharField()
    summary = serializers.CharField(help_text="What changed since the version before, in one line.")
    changes = serializers.JSONField(
        help_text="nodes: added/removed/changed/moved [{id, label}]; edges: added/removed [{id, source, target, "
        "sourceHandle}]; renamed: {from, to} or null."
    )
    createdBy = serializers.CharField(source="created_by.username", allow_null=True, default=None)
    createdAt = serializers.DateTimeField(source="created_at")
    nodes = serializers.JSONField()
    edges = serializers.JSONField()


class ExecutionQueuedOutput(serializers.Serializer):
    executionId = serializers.UUIDField()
    status = serializers.CharField()


class NodeExecuteInput(_OrganizationInput):
    actionType = serializers.ChoiceField(choices=[])
    config = JSONObjectField(default=dict, help_text="The action's config fields, as in a node's data.config.")
    input = JSONObjectField(
        default=dict,
        help_text="Plays the trigger's output: the config may reference it as <<@trigger:Trigger.field>>.",
    )

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        action_type = cast(serializers.ChoiceField, self.fields["actionType"])
        action_type.choices = [action.id for action in all_actions()]


# Action catalogue -----------------------------------------------------------------------------


class ConfigFieldOutput(serializers.Serializer):
    name = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]  # see SHADOWING
    kind = serializers.ChoiceField(choices=get_args(FieldKind))
    required = serializers.BooleanField()  # type: ignore[assignment]  # see SHADOWING
    acceptsReferences = serializers.BooleanField()
    acceptsSecrets = serializers.BooleanField(help_text="Whether the field may hold a secret reference "
                                              "(<<@__secrets:Secrets.NAME>>): only fields whose value leaves "
                                              "the run, an HTTP Request's URL, headers and body.")
    help = serializers.CharField()
    advanced = serializers.BooleanField()
    choices = serializers.ListField(child=serializers.CharField())
    default = serializers.JSONField(allow_null=True)
    placeholder = serializers.CharField()


class OutputFieldOutput(serializers.Serializer):
    name = serializers.CharField()
    type = serializers.CharField()
    description = serializers.CharField()


class ActionOutput(serializers.Serializer):
    id = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]  # see SHADOWING
    group = serializers.CharField()
    description = serializers.CharField()
    icon = serializers.CharField()
    egress = serializers.CharField(
        help_text="What the action sends out: none, user (the author picks the destination: HTTP Request) or fixed."
    )
    needsWorkflowContext = serializers.BooleanField()
    planGated = serializers.BooleanField()
    sourceHandles = serializers.ListField(
        child=serializers.CharField(),
        help_text="Named outgoing handles (Condition: true, false; State Set: success, conflict); empty: none.",
    )
    defaultHandle = serializers.CharField(
        allow_null=True,
        default=None,
        help_text="What an edge without a sourceHandle follows; null: such an edge is invalid.",
    )
    configFields = ConfigFieldOutput(many=True)
    outputFields = OutputFieldOutput(many=True)


class TriggerOutput(serializers.Serializer):
    id = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]  # see SHADOWING
    description = serializers.CharField()
    icon = serializers.CharField()
    configFields = ConfigFieldOutput(many=True)
    outputFields = OutputFieldOutput(many=True, help_text="Fixed fields of the run input (Schedule); else empty.")


class CatalogueOutput(serializers.Serializer):
    actions = ActionOutput(many=True)
    triggers = TriggerOutput(many=True)


# Errors (for the schema; the exception handler builds them) -----------------------------------


class ErrorOutput(serializers.Serializer):
    code = serializers.CharField(help_text="Stable error code, e.g. NOT_FOUND or STATE_VERSION_CONFLICT.")
    detail = serializers.CharField(help_text="What went wrong and what to do.")
    field = serializers.CharField(required=False, help_text="The input field at fault, when there is one.")
    details = serializers.JSONField(required=False, help_text="Structured data, e.g. expected and current.")


class WorkflowInvalidOutput(serializers.Serializer):
    code = serializers.CharField(help_text=Code.WORKFLOW_INVALID.name)
    detail = serializers.CharField(help_text="How many errors, and the first of them.")
    details = ValidationReportOutput(help_text="The full validation report.")


class FieldErrorsOutput(serializers.Serializer):
    """``{"field": ["message", ...]}``; its schema comes from keeperstate.api.schema."""


class PreviewInput(serializers.Serializer):
    nodes = nodes_field(help_text="The graph as the editor holds it, saved or not (its pinned data is read).")
    edges = edges_field()
    node = serializers.CharField(min_length=1, max_length=200, help_text="The id of the node whose field this is.")
    field = serializers.CharField(  # type: ignore[assignment]  # see SHADOWING
        min_length=1, max_length=100, help_text="The config field's name, e.g. condition or items.")
    value = serializers.JSONField(  # type: ignore[assignment]  # see SHADOWING
        allow_null=True, help_text="The field's value as typed (text with <<@…>> references, or JSON).")
    sourceExecution = serializers.UUIDField(
        required=False, allow_null=True, default=None,
        help_text="The run whose results the references read (default: the workflow's newest finished run; "
        "none: the trigger's sample input).",
    )


class PreviewOutput(serializers.Serializer):
    result = NodeResultOutput(help_text="success with data (the computed value), or the code and sentence the run "
                              "would give.")
    sourceExecution = serializers.UUIDField(allow_null=True, help_text="The run the references read, if any.")
