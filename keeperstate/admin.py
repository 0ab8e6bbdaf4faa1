"""Django admin: inspect and repair organizations, workflows, executions and state.

State rows are written by runs; an admin may repair a value or expiry (through the store, so
the same checks apply and the trigger moves the version) or delete a row, but not add one.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join

from keeperstate.admin_display import count, expiry_text, run_link, usage_text
from keeperstate.admin_scoping import TenantScopedAdmin, TenantScopedInline
from keeperstate.audit import audit
from keeperstate.errors import CodedError
from keeperstate.executions.scheduling import refresh_schedule
from keeperstate.models import (
    ApiToken,
    AuditEvent,
    Membership,
    Organization,
    Workflow,
    WorkflowExecution,
    WorkflowState,
    WorkflowStateEvent,
)
from keeperstate.state.maintenance import admin_delete, admin_update
from keeperstate.state.selectors import org_usage
from keeperstate.state.values import encode_value
from keeperstate.workflows import rotate_webhook_secret


class PrettyJSONField(forms.JSONField):
    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, forms.fields.InvalidJSONInput):
            return value
        return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


def pretty_json(value: Any) -> str:
    text = json.dumps(value, indent=2, ensure_ascii=False)
    return format_html('<pre class="ks-json">{}</pre>', text)  # a class, not style=: pages run under a strict CSP


def admin_link(obj: Any, text: str | None = None) -> str:
    if obj is None:
        return "—"
    url = reverse(f"admin:{obj._meta.app_label}_{obj._meta.model_name}_change", args=[obj.pk])
    return format_html('<a href="{}">{}</a>', url, text or str(obj))


HISTORY_SHOWN = 50
VALUE_PREVIEW = 40  # characters of a value in the state list; the change page shows it whole
VALUE_TITLE = 2000  # characters of a value on hover in the list


def _actor(request: Any) -> str:
    return f"admin:{request.user.get_username()}"


def _short(value: Any) -> str:
    if value is None:
        return "—"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "…"


admin.site.site_header = "KeeperState administration"
admin.site.site_title = "KeeperState admin"
admin.site.index_title = "Organizations, workflows, runs and state"
# The side menu takes a quarter of a 1280 px window from every list; Home and the breadcrumbs
# lead to the same places.
admin.site.enable_nav_sidebar = False


class MembershipInline(TenantScopedInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Organization)
class OrganizationAdmin(TenantScopedAdmin):
    tenant_path = "pk"

    list_display = ["name", "slug", "state_usage", "created_at"]
    readonly_fields = ["state_usage"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [MembershipInline]

    def has_add_permission(self, request: Any) -> bool:
        # A new organization would have no admin yet: only superusers create them.
        return self.sees_every_tenant(request) and super().has_add_permission(request)

    @admin.display(description="state budget")
    def state_usage(self, obj: Organization) -> str:
        return usage_text(org_usage(obj.pk)) if obj.pk else "—"


@admin.register(Membership)
class MembershipAdmin(TenantScopedAdmin):
    list_display = ["user", "organization", "role", "created_at"]
    list_filter = ["role", "organization"]
    search_fields = ["user__username", "organization__name"]
    autocomplete_fields = ["user", "organization"]


@admin.register(Workflow)
class WorkflowAdmin(TenantScopedAdmin):
    list_display = ["name", "organization", "active", "next_run_at", "updated_at", "deleted_at"]
    list_filter = ["active", "organization", ("deleted_at", admin.EmptyFieldListFilter)]
    search_fields = ["name", "description", "id"]
    readonly_fields = ["id", "next_run_at", "webhook_path", "created_by", "created_at", "updated_at"]
    autocomplete_fields = ["organization"]
    fields = ["id", "organization", "name", "description", "active", "next_run_at", "webhook_path", "nodes", "edges",
              "created_by", "created_at", "updated_at", "deleted_at"]
    actions = ["rotate_webhook_secrets"]

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

    list_display = ["id", "workflow", "status", "trigger", "queued_at", "finished_at"]
    list_filter = ["status", "trigger", "workflow__organization"]
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

    @admin.display(description="workflow")
    def workflow_link(self, obj: WorkflowExecution) -> str:
        return admin_link(obj.workflow)

    @admin.display(description="input")
    def input_pretty(self, obj: WorkflowExecution) -> str:
        return pretty_json(obj.input)

    @admin.display(description="node results")
    def results_pretty(self, obj: WorkflowExecution) -> str:
        return pretty_json(obj.node_results)


class ExpiryFilter(admin.SimpleListFilter):
    title = "expiry"
    parameter_name = "expiry"

    def lookups(self, request: Any, model_admin: Any) -> list[tuple[str, str]]:
        return [("live", "Live"), ("expired", "Expired (awaiting sweep)"), ("ttl", "Has a TTL"), ("none", "No TTL")]

    def queryset(self, request: Any, queryset: Any) -> Any:
        now = timezone.now()
        return {
            "live": queryset.filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now)),
            "expired": queryset.filter(expires_at__lte=now),
            "ttl": queryset.filter(expires_at__isnull=False),
            "none": queryset.filter(expires_at__isnull=True),
        }.get(self.value() or "", queryset)


class WorkflowStateForm(forms.ModelForm):
    value = PrettyJSONField(help_text="JSON, at most 8 KB. Saving moves the version, so a run holding the old "
                            "version gets STATE_VERSION_CONFLICT instead of overwriting your repair.")

    class Meta:
        model = WorkflowState
        fields = ["value", "expires_at"]

    def clean_value(self) -> Any:
        value = self.cleaned_data["value"]
        try:
            encode_value(value)
        except CodedError as exc:
            raise forms.ValidationError(exc.message, code=exc.code) from exc
        return value


@admin.register(WorkflowState)
class WorkflowStateAdmin(TenantScopedAdmin):
    form = WorkflowStateForm
    # Fits 1280 px: the value is cut (the change page has it whole), expiry is one phrase, the
    # writing run its short id; the organization is a filter and the times are on the change page.
    list_display = ["key", "workflow_name", "value_preview", "version_text", "expiry", "written_by"]
    list_filter = [ExpiryFilter, "organization"]
    search_fields = ["key", "workflow__name", "workflow__id"]
    list_select_related = ["workflow"]
    readonly_fields = ["organization", "workflow_link", "key", "version", "expiry", "written_by", "created_at",
                       "updated_at", "value_pretty", "history", "org_budget"]
    fields = ["organization", "workflow_link", "key", "value_pretty", "value", "version", "expires_at", "expiry",
              "written_by", "created_at", "updated_at", "org_budget", "history"]

    class Media:
        css = {"all": ["keeperstate/admin.css"]}

    def has_add_permission(self, request: Any) -> bool:
        return False  # state is written by workflow runs

    def save_model(self, request: Any, obj: WorkflowState, form: Any, change: bool) -> None:
        admin_update(
            state_id=obj.pk,
            value=form.cleaned_data["value"],
            expires_at=form.cleaned_data["expires_at"],
            actor=_actor(request),
        )
        # The trigger moved the version: read it back so the success message names the new one.
        obj.refresh_from_db()

    def delete_model(self, request: Any, obj: WorkflowState) -> None:
        admin_delete(state_ids=[obj.pk], actor=_actor(request))

    def delete_queryset(self, request: Any, queryset: Any) -> None:
        admin_delete(state_ids=list(queryset.values_list("pk", flat=True)), actor=_actor(request))

    @admin.display(description="history (newest first)")
    def history(self, obj: WorkflowState) -> str:
        events = WorkflowStateEvent.objects.filter(workflow_id=obj.workflow_id, key=obj.key)[:HISTORY_SHOWN]
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{} → {}</td><td><code>{}</code></td><td><code>{}</code></td>"
            "<td>{}</td></tr>",
            (
                (
                    f"{e.created_at:%Y-%m-%d %H:%M:%S}",
                    e.get_operation_display(),
                    e.old_version or "—",
                    e.new_version or "—",
                    _short(e.old_value),
                    _short(e.new_value),
                    run_link(e.execution_id) if e.execution_id else e.made_by,
                )
                for e in events
            ),
        )
        return format_html(
            "<table><thead><tr><th>when</th><th>change</th><th>version</th><th>old value</th><th>new value</th>"
            "<th>by</th></tr></thead><tbody>{}</tbody></table>",
            rows,
        )

    @admin.display(description="organization budget")
    def org_budget(self, obj: WorkflowState) -> str:
        return usage_text(org_usage(obj.organization_id))

    @admin.display(description="value")
    def value_preview(self, obj: WorkflowState) -> str:
        text = json.dumps(obj.value, ensure_ascii=False)
        short = text if len(text) <= VALUE_PREVIEW else text[: VALUE_PREVIEW - 1] + "…"
        return format_html('<code class="ks-value" title="{}">{}</code>', text[:VALUE_TITLE], short)

    @admin.display(description="workflow", ordering="workflow__name")
    def workflow_name(self, obj: WorkflowState) -> str:
        return format_html('<span class="ks-clip" title="{}">{}</span>', obj.workflow.name, obj.workflow.name)

    @admin.display(description="version", ordering="version")
    def version_text(self, obj: WorkflowState) -> str:
        return f"v{count(obj.version)}"

    @admin.display(description="current value")
    def value_pretty(self, obj: WorkflowState) -> str:
        return pretty_json(obj.value)

    @admin.display(description="workflow")
    def workflow_link(self, obj: WorkflowState) -> str:
        return admin_link(obj.workflow)

    @admin.display(description="expiry", ordering="expires_at")
    def expiry(self, obj: WorkflowState) -> str:
        text = expiry_text(obj.expires_at, timezone.now())
        if obj.expires_at is None:
            return format_html('<span class="ks-expiry live" title="No TTL: kept until deleted">{}</span>', text)
        expired = obj.expires_at <= timezone.now()
        return format_html('<span class="ks-expiry {}" title="{}">{}</span>', "expired" if expired else "ttl",
                           f"{obj.expires_at:%Y-%m-%d %H:%M:%S %Z}", text)

    @admin.display(description="written by")
    def written_by(self, obj: WorkflowState) -> str:
        return run_link(obj.updated_by_execution_id)


@admin.register(AuditEvent)
class AuditEventAdmin(TenantScopedAdmin):
    """Read-only: the database refuses changes anyway (append-only trigger)."""

    list_display = ["created_at", "action", "actor_name", "organization", "target_type", "target_repr", "address"]
    list_filter = ["action", "organization"]
    search_fields = ["actor_name", "target_repr", "target_id", "address"]
    date_hierarchy = "created_at"
    readonly_fields = ["created_at", "action", "actor_id", "actor_name", "organization", "target_type", "target_id",
                       "target_repr", "address", "details"]
    fields = list(readonly_fields)

    def has_add_permission(self, request: Any) -> bool:
        return False

    def has_change_permission(self, request: Any, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: Any, obj: Any = None) -> bool:
        return False


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens by name and prefix only (the table holds no token). Created through the API or
    ``create_api_token``, where the token can be shown once; revoked here by deleting. Staff who
    are not superusers see their own tokens."""

    list_display = ["name", "token_key", "user", "created", "expiry"]
    list_filter = ["expiry"]
    search_fields = ["name", "token_key", "user__username"]
    fields = ["name", "token_key", "user", "created", "expiry"]
    readonly_fields = ["token_key", "user", "created"]

    def get_queryset(self, request: Any) -> Any:
        queryset = super().get_queryset(request)
        return queryset if request.user.is_superuser else queryset.filter(user=request.user)

    def has_add_permission(self, request: Any) -> bool:
        return False

    def delete_model(self, request: Any, obj: ApiToken) -> None:
        audit("token.revoke", target=obj, details={"name": obj.name, "prefix": obj.token_key, "via": "admin"})
        super().delete_model(request, obj)

    def delete_queryset(self, request: Any, queryset: Any) -> None:
        for token in queryset:
            audit("token.revoke", target=token, details={"name": token.name, "prefix": token.token_key,
                                                         "via": "admin"})
        super().delete_queryset(request, queryset)
from keeperstate import admin_secrets  # noqa: E402, F401  (organization secrets, write-only)
