"""Workflows (their graph, switches and webhook secret) and their executions (read-only)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from keeperstate.accounts.access import administered_organizations
from keeperstate.accounts.models import Organization
from keeperstate.admin.charts import CHART_MEDIA, gauges
from keeperstate.admin.display import admin_link, pretty_json, workflow_label
from keeperstate.admin.scoping import TenantScopedAdmin
from keeperstate.audit.log import audit
from keeperstate.core.errors import form_error
from keeperstate.executions.models import WorkflowExecution
from keeperstate.executions.scheduling import refresh_schedule
from keeperstate.state.charts import workflow_usage
from keeperstate.state.store import StateScope
from keeperstate.workflows.models import Workflow
from keeperstate.workflows.move import MoveRefused, move_workflow
from keeperstate.workflows.services import rotate_webhook_secret, workflow_hard_delete


class MoveForm(forms.Form):
    """The target of a move: an organization the user may move to, other than the workflow's."""

    organization = forms.ModelChoiceField(queryset=Organization.objects.none(), label="Move to organization")

    def __init__(self, *args: Any, workflow: Workflow, organizations: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        field = self.fields["organization"]
        field.queryset = organizations.exclude(pk=workflow.organization_id).order_by("name")  # type: ignore[attr-defined]


@admin.register(Workflow)
class WorkflowAdmin(TenantScopedAdmin):
    list_display = ["name", "organization", "active", "next_run_at", "updated_at", "deleted_at"]
    list_filter = ["active", "organization", ("deleted_at", admin.EmptyFieldListFilter)]
    search_fields = ["name", "description", "id"]
    readonly_fields = ["id", "next_run_at", "webhook_path", "created_by", "created_at", "updated_at", "state_keys",
                       "move_link"]
    autocomplete_fields = ["organization"]
    fields = ["id", "organization", "move_link", "name", "description", "active", "next_run_at", "webhook_path",
              "state_keys", "nodes", "edges", "created_by", "created_at", "updated_at", "deleted_at"]
    actions = ["rotate_webhook_secrets", "move_to_organization"]

    def get_readonly_fields(self, request: Any, obj: Workflow | None = None) -> Any:
        # A saved workflow's organization is not a field to edit: its rows shard by it
        # (docs/scaling.md) and never change it. The move copies them, from its own page.
        fields = list(super().get_readonly_fields(request, obj))
        return [*fields, "organization"] if obj is not None else fields

    def get_fields(self, request: Any, obj: Workflow | None = None) -> Any:
        fields = list(super().get_fields(request, obj))
        return fields if obj is not None else [name for name in fields if name != "move_link"]

    def get_urls(self) -> Any:
        move = path("<path:object_id>/move/", self.admin_site.admin_view(self.move_view),
                    name="keeperstate_workflow_move")
        return [move, *super().get_urls()]

    @admin.display(description="move")
    def move_link(self, obj: Workflow) -> str:
        if not obj.pk:
            return "—"
        url = reverse("admin:keeperstate_workflow_move", args=[obj.pk])
        return format_html('<a href="{}">Move to organization…</a> (with its state, runs and versions)', url)

    def move_targets(self, request: Any) -> Any:
        if self.sees_every_tenant(request):
            return Organization.objects.all()
        return administered_organizations(request.user)

    def move_view(self, request: Any, object_id: str) -> Any:
        """Move one workflow (keeperstate/workflows/move.py): pick the organization, confirm."""
        workflow = self.get_object(request, object_id)
        if workflow is None:  # or another tenant's: the same answer, nothing is told
            self.message_user(request, "No such workflow; it may have been deleted.", messages.WARNING)
            return HttpResponseRedirect(reverse("admin:keeperstate_workflow_changelist"))
        if not self.has_change_permission(request, workflow):
            raise PermissionDenied
        form = MoveForm(request.POST or None, workflow=workflow, organizations=self.move_targets(request))
        if request.method == "POST" and form.is_valid():
            target = form.cleaned_data["organization"]
            source = workflow.organization
            try:
                moved = move_workflow(workflow, target, by_user=request.user)
            except MoveRefused as exc:
                form.add_error(None, form_error(exc))
            else:
                self.message_user(
                    request, f"'{moved}' moved from {source} to {target} with its state, runs and versions.",
                    messages.SUCCESS,
                )
                return HttpResponseRedirect(reverse("admin:keeperstate_workflow_change", args=[moved.pk]))
        context = {
            **self.admin_site.each_context(request),
            "title": f"Move '{workflow}' to another organization",
            "opts": self.opts,
            "original": workflow,
            "form": form,
            "media": self.media + form.media,
        }
        return TemplateResponse(request, "admin/keeperstate/workflow/move.html", context)

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

    @admin.action(description="Move to organization…")
    def move_to_organization(self, request: Any, queryset: Any) -> Any:
        # One at a time: a move is one transaction per workflow, each with its own refusals.
        if queryset.count() != 1:
            self.message_user(request, "Select exactly one workflow to move; each moves on its own.",
                              messages.WARNING)
            return None
        return HttpResponseRedirect(reverse("admin:keeperstate_workflow_move", args=[queryset.get().pk]))

    def delete_model(self, request: Any, obj: Workflow) -> None:
        workflow_hard_delete(obj, details={"via": "admin"})

    def delete_queryset(self, request: Any, queryset: Any) -> None:
        # Each by its key, as the API's delete (Django's collector reads every related table by the
        # workflows' ids alone).
        for workflow in queryset:
            workflow_hard_delete(workflow, details={"via": "admin"})


@admin.register(WorkflowExecution)
class WorkflowExecutionAdmin(TenantScopedAdmin):
    # Its own organization, the run's shard key: the workflow's would join the two tables by the
    # workflow's id alone, which a sharded database refuses (docs/scaling.md). So does the workflow's
    # name, shown and searched as a subquery by the workflow's key (workflow_label).
    list_display = ["id", "workflow_name", "status", "trigger", "queued", "finished"]
    # Only workflows with runs in view (the scoped queryset): another tenant's names never show.
    list_filter = ["status", "trigger", ("workflow", admin.RelatedOnlyFieldListFilter), "organization"]
    search_fields = ["id", "workflow_label"]
    date_hierarchy = "queued_at"
    readonly_fields = ["id", "workflow_link", "status", "trigger", "triggered_by", "queued_at", "scheduled_for",
                       "started_at", "finished_at", "error_code", "error", "input_pretty", "results_pretty"]
    fields = list(readonly_fields)

    class Media:
        css = {"all": ["keeperstate/admin.css"]}

    def get_queryset(self, request: Any) -> Any:
        return super().get_queryset(request).annotate(workflow_label=workflow_label())

    def has_add_permission(self, request: Any) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    @admin.display(description="workflow", ordering="workflow_label")
    def workflow_name(self, obj: WorkflowExecution) -> str:
        return obj.workflow_label  # type: ignore[attr-defined]  # annotated

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
