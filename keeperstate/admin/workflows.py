"""Workflows (their graph, switches and webhook secret) and their executions (read-only)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin

from keeperstate.admin.charts import CHART_MEDIA, gauges
from keeperstate.admin.display import admin_link, pretty_json
from keeperstate.admin.scoping import TenantScopedAdmin
from keeperstate.audit.log import audit
from keeperstate.executions.models import WorkflowExecution
from keeperstate.executions.scheduling import refresh_schedule
from keeperstate.state.charts import workflow_usage
from keeperstate.state.store import StateScope
from keeperstate.workflows.models import Workflow
from keeperstate.workflows.services import rotate_webhook_secret


@admin.register(Workflow)
class WorkflowAdmin(TenantScopedAdmin):
    list_display = ["name", "organization", "active", "next_run_at", "updated_at", "deleted_at"]
    list_filter = ["active", "organization", ("deleted_at", admin.EmptyFieldListFilter)]
    search_fields = ["name", "description", "id"]
    readonly_fields = ["id", "next_run_at", "webhook_path", "created_by", "created_at", "updated_at", "state_keys"]
    autocomplete_fields = ["organization"]
    fields = ["id", "organization", "name", "description", "active", "next_run_at", "webhook_path", "state_keys",
              "nodes", "edges", "created_by", "created_at", "updated_at", "deleted_at"]
    actions = ["rotate_webhook_secrets"]

    def get_readonly_fields(self, request: Any, obj: Workflow | None = None) -> Any:
        # A saved workflow never changes organization (its rows shard by it, docs/scaling.md).
        fields = list(super().get_readonly_fields(request, obj))
        return [*fields, "organization"] if obj is not None else fields

    @property
    def media(self) -> Any:
        return super().media + CHART_MEDIA

    @admin.display(description="state keys")
    def state_keys(self, obj: Workflow) -> str:
        if not obj.pk:
            return "—"
        return gauges(workflow=workflow_usage(StateScope(organization_id=obj.organization_id, workflow_id=obj.pk)))

    def save_model(self, request: Any, obj: Workflow, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        refresh_schedule(obj)  # the active flag, the graph or deleted_at may have changed
        audit("workflow.update" if change else "workflow.create", organization=obj.organization_id, target=obj,
              details={"fields": sorted(form.changed_data), "via": "admin"})

    @admin.action(description="Rotate the webhook secret of the selected workflows")
    def rotate_webhook_secrets(self, request: Any, queryset: Any) -> None:
        for workflow in queryset:
            rotate_webhook_secret(workflow)
        self.message_user(
            request, f"New webhook secrets for {queryset.count()} workflow(s); the old ones stopped working."
        )

    def delete_model(self, request: Any, obj: Workflow) -> None:
        audit("workflow.hard_delete", organization=obj.organization_id, target=obj, details={"via": "admin"})
        super().delete_model(request, obj)

    def delete_queryset(self, request: Any, queryset: Any) -> None:
        for workflow in queryset:
            audit("workflow.hard_delete", organization=workflow.organization_id, target=workflow,
                  details={"via": "admin"})
        super().delete_queryset(request, queryset)


@admin.register(WorkflowExecution)
class WorkflowExecutionAdmin(TenantScopedAdmin):
    tenant_path = "workflow__organization"

    list_display = ["id", "workflow", "status", "trigger", "queued", "finished"]
    # Only workflows with runs in view (the scoped queryset): another tenant's names never show.
    list_filter = ["status", "trigger", ("workflow", admin.RelatedOnlyFieldListFilter), "workflow__organization"]
    search_fields = ["id", "workflow__name"]
    date_hierarchy = "queued_at"
    readonly_fields = ["id", "workflow_link", "status", "trigger", "triggered_by", "queued_at", "scheduled_for",
                       "started_at", "finished_at", "error_code", "error", "input_pretty", "results_pretty"]
    fields = list(readonly_fields)

    class Media:
        css = {"all": ["keeperstate/admin.css"]}

    def has_add_permission(self, request: Any) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    # Runs every few seconds are told apart by their seconds; the list shows them (UTC).
    @admin.display(description="queued at", ordering="queued_at")
    def queued(self, obj: WorkflowExecution) -> str:
        return f"{obj.queued_at:%Y-%m-%d %H:%M:%S}"

    @admin.display(description="finished at", ordering="finished_at")
    def finished(self, obj: WorkflowExecution) -> str:
        return f"{obj.finished_at:%Y-%m-%d %H:%M:%S}" if obj.finished_at else "—"

    @admin.display(description="workflow")
    def workflow_link(self, obj: WorkflowExecution) -> str:
        return admin_link(obj.workflow)

    @admin.display(description="input")
    def input_pretty(self, obj: WorkflowExecution) -> str:
        return pretty_json(obj.input)

    @admin.display(description="node results")
    def results_pretty(self, obj: WorkflowExecution) -> str:
        return pretty_json(obj.node_results)
