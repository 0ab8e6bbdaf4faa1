"""How admin pages write numbers, sizes, expiry and runs: one format everywhere.

Counts take thousands separators ("10,000"); sizes are bytes below 1 KB and otherwise KB, MB
or GB with at most one decimal ("3.1 KB", "50 MB"), the same rule as the editor's State panel
(static/builder/js/state-panel.js formatBytes), so a figure reads the same on both.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django import forms
from django.db.models import OuterRef, Subquery
from django.urls import reverse
from django.utils.html import format_html

from keeperstate.state.selectors import OrgUsage

SIZE_UNITS = ("KB", "MB", "GB")
SHORT_ID = 8


def count(number: int) -> str:
    return f"{number:,}"


def size(num_bytes: int) -> str:
    if num_bytes < 1024:
        return f"{count(num_bytes)} byte{'' if num_bytes == 1 else 's'}"
    value = num_bytes / 1024
    unit = 0
    while value >= 1024 and unit < len(SIZE_UNITS) - 1:
        value /= 1024
        unit += 1
    text = f"{value:.1f}".removesuffix(".0")
    return f"{text} {SIZE_UNITS[unit]}"


def usage_text(usage: OrgUsage) -> str:
    """e.g. "12 of 10,000 keys · 3.1 KB of 50 MB"."""
    return (
        f"{count(usage.live_keys)} of {count(usage.max_keys)} keys · "
        f"{size(usage.stored_bytes)} of {size(usage.max_bytes)}"
    )


def span(seconds: float) -> str:
    """A rough length of time: "40 s", "5 min", "2 h", "3 d"."""
    seconds = abs(seconds)
    for unit_seconds, unit in ((86400, "d"), (3600, "h"), (60, "min")):
        if seconds >= unit_seconds:
            return f"{round(seconds / unit_seconds)} {unit}"
    return f"{round(seconds)} s"


def expiry_text(expires_at: datetime | None, now: datetime) -> str:
    """ "live" (no TTL), "expires in 5 min" or "expired 2 h ago"."""
    if expires_at is None:
        return "live"
    left = (expires_at - now).total_seconds()
    return f"expires in {span(left)}" if left > 0 else f"expired {span(left)} ago"


def run_link(execution_id: Any) -> str:
    """A run as its short id linking to its admin page, as the state history shows it."""
    if execution_id is None:
        return "—"
    url = reverse("admin:keeperstate_workflowexecution_change", args=[execution_id])
    return format_html('<a href="{}" title="Execution {}">run {}</a>', url, execution_id, str(execution_id)[:SHORT_ID])


class PrettyJSONField(forms.JSONField):
    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, forms.fields.InvalidJSONInput):
            return value
        return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


def pretty_json(value: Any) -> str:
    text = json.dumps(value, indent=2, ensure_ascii=False)
    return format_html('<pre class="ks-json">{}</pre>', text)  # a class, not style=: pages run under a strict CSP


def workflow_label() -> Subquery:
    """The name of a row's workflow, for a list page: a subquery by the workflow's key
    (organization, id), which stays on the row's shard, where a join on the workflow's id alone is
    what a sharded database refuses (docs/scaling.md). No LIMIT: the key finds one row."""
    from keeperstate.workflows.models import Workflow

    return Subquery(
        Workflow.objects.filter(organization_id=OuterRef("organization_id"), pk=OuterRef("workflow_id"))
        .order_by()
        .values("name")
    )


def admin_link(obj: Any, text: str | None = None) -> str:
    if obj is None:
        return "—"
    url = reverse(f"admin:{obj._meta.app_label}_{obj._meta.model_name}_change", args=[obj.pk])
    return format_html('<a href="{}">{}</a>', url, text or str(obj))


def short_json(value: Any) -> str:
    if value is None:
        return "—"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "…"
