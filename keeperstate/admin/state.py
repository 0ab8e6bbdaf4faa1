"""Workflow state: inspect a key with its history and the organization's budget; repair a value or
an expiry, or delete a row, always through the store's maintenance functions."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin
from django.utils.html import format_html, format_html_join

from keeperstate.admin.charts import CHART_MEDIA, gauges, key_chart
from keeperstate.admin.display import (
    PrettyJSONField,
    admin_link,
    count,
    expiry_text,
    pretty_json,
    run_link,
    short_json,
    workflow_label,
)
from keeperstate.admin.scoping import TenantScopedAdmin
from keeperstate.core.buckets import RANGES
from keeperstate.core.errors import form_checked
from keeperstate.state.charts import key_series, workflow_usage
from keeperstate.state.maintenance import admin_delete, admin_update
from keeperstate.state.models import WorkflowState, WorkflowStateEvent
from keeperstate.state.selectors import org_usage
from keeperstate.state.store import StateScope
from keeperstate.state.values import check_storable

HISTORY_SHOWN = 50
VALUE_PREVIEW = 40  # characters of a value in the state list; the change page shows it whole
VALUE_TITLE = 2000  # characters of a value on hover in the list


def _actor(request: Any) -> str:
    return f"admin:{request.user.get_username()}"


class ExpiryFilter(admin.SimpleListFilter):
    title = "expiry"
    parameter_name = "expiry"

    def lookups(self, request: Any, model_admin: Any) -> list[tuple[str, str]]:
        return [("live", "Live"), ("expired", "Expired (awaiting sweep)"), ("ttl", "Has a TTL"), ("none", "No TTL")]

    def queryset(self, request: Any, queryset: Any) -> Any:
        # Live and expired as the store decides, on the database's clock.
        choice = self.value()
        if choice == "live":
            return queryset.live()
        if choice == "expired":
            return queryset.expired()
        if choice == "ttl":
            return queryset.filter(expires_at__isnull=False)
        if choice == "none":
            return queryset.filter(expires_at__isnull=True)
        return queryset


class WorkflowStateForm(forms.ModelForm):
    value = PrettyJSONField(help_text="JSON, at most 8 KB. Saving moves the version, so a run holding the old "
                            "version gets STATE_VERSION_CONFLICT instead of overwriting your repair.")

    class Meta:
        model = WorkflowState
        fields = ["value", "expires_at"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Admin's split date/time inputs share one <label>: name each for screen readers (axe).
        widget = self.fields["expires_at"].widget
        for part, name in zip(getattr(widget, "widgets", ()), ("Expiry date", "Expiry time"), strict=False):
            part.attrs["aria-label"] = name

    def clean_value(self) -> Any:
        return form_checked(check_storable, self.cleaned_data["value"])


@admin.register(WorkflowState)
class WorkflowStateAdmin(TenantScopedAdmin):
    form = WorkflowStateForm
    # Fits 1280 px: the value is cut (the change page has it whole), expiry is one phrase, the
    # writing run its short id; the organization is a filter and the times are on the change page.
    list_display = ["key", "workflow_name", "value_preview", "version_text", "expiry", "written_by"]
    list_filter = [ExpiryFilter, "organization"]
    # The workflow's name comes with each row as a subquery by its key (workflow_label), not a join.
    search_fields = ["key", "workflow_label", "workflow__id"]
    readonly_fields = ["organization", "workflow_link", "key", "version", "expiry", "written_by", "created_at",
                       "updated_at", "value_pretty", "history", "org_budget", "value_chart"]
    fields = ["organization", "workflow_link", "key", "value_pretty", "value", "version", "expires_at", "expiry",
              "written_by", "created_at", "updated_at", "org_budget", "value_chart", "history"]

    @property
    def media(self) -> Any:
        return super().media + CHART_MEDIA

    def get_queryset(self, request: Any) -> Any:
        # The expiry column shows liveness as the store decides it (see expiry).
        return super().get_queryset(request).with_liveness().annotate(workflow_label=workflow_label())

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
        events = WorkflowStateEvent.objects.filter(  # newest first by (created_at, id): the model's order
            organization_id=obj.organization_id, workflow_id=obj.workflow_id, key=obj.key
        )[:HISTORY_SHOWN]
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
                    short_json(e.old_value),
                    short_json(e.new_value),
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

    @admin.display(description="budget")
    def org_budget(self, obj: WorkflowState) -> str:
        scope = StateScope(organization_id=obj.organization_id, workflow_id=obj.workflow_id)
        return gauges(org_usage(obj.organization_id), workflow_usage(scope))

    @admin.display(description="over time")
    def value_chart(self, obj: WorkflowState) -> str:
        # The history the store keeps (as the State panel charts it): values by time, or writes per hour.
        scope = StateScope(organization_id=obj.organization_id, workflow_id=obj.workflow_id)
        return key_chart(key_series(scope=scope, key=obj.key, span=RANGES["24h"]), "ks-key-chart")

    @admin.display(description="value")
    def value_preview(self, obj: WorkflowState) -> str:
        text = json.dumps(obj.value, ensure_ascii=False)
        short = text if len(text) <= VALUE_PREVIEW else text[: VALUE_PREVIEW - 1] + "…"
        return format_html('<code class="ks-value" title="{}">{}</code>', text[:VALUE_TITLE], short)

    @admin.display(description="workflow", ordering="workflow_label")
    def workflow_name(self, obj: WorkflowState) -> str:
        name = obj.workflow_label  # type: ignore[attr-defined]  # annotated
        return format_html('<span class="ks-clip" title="{}">{}</span>', name, name)

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
        # is_live and checked_at come from the database (with_liveness), whose clock the store
        # reads: a row the store already treats as expired never shows as live here.
        text = expiry_text(obj.expires_at, obj.checked_at)  # type: ignore[attr-defined]  # annotated
        if obj.expires_at is None:
            return format_html('<span class="ks-expiry live" title="No TTL: kept until deleted">{}</span>', text)
        live = obj.is_live  # type: ignore[attr-defined]  # annotated
        return format_html('<span class="ks-expiry {}" title="{}">{}</span>', "ttl" if live else "expired",
                           f"{obj.expires_at:%Y-%m-%d %H:%M:%S %Z}", text)

    @admin.display(description="written by")
    def written_by(self, obj: WorkflowState) -> str:
        return run_link(obj.updated_by_execution_id)
