"""Admin's charts: budget gauges (native <meter>s with their numbers, drawn by the server, so
they need no script) and a key over time (the State panel's chart: its data from
keeperstate.state.charts in the page as JSON, drawn by static/keeperstate/admin-charts.js).
Gauges share their classes and wording with static/builder/js/charts.js renderGauges."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.forms import Media, Script
from django.utils.html import format_html, format_html_join, json_script
from django.utils.safestring import SafeString

from keeperstate.admin.display import count, size
from keeperstate.state.charts import WorkflowUsage
from keeperstate.state.selectors import OrgUsage

NEAR = 0.8
FULL = 0.95

CHART_MEDIA = Media(
    css={"all": ["keeperstate/admin.css", "builder/charts.css"]},
    # django-stubs predate Django 5.2's Script(src, **attributes) in Media.js
    js=["vendor/chart.js/chart.umd.min.js", Script("keeperstate/admin-charts.js", type="module")],  # type: ignore[list-item, arg-type]
)


def percent(share: float) -> str:
    """As charts.js percent(): "0.01 %", and "< 0.01 %" rather than "0.00 %" for a used budget."""
    if 0 < share < 0.0001:
        return "< 0.01 %"
    return f"{100 * share:.{2 if 0 < share < 0.001 else 1}f} %"


def _gauge(name: str, label: str, value: int, maximum: int, fmt: Callable[[int], str]) -> tuple[Any, ...]:
    share = value / maximum if maximum else 0.0
    level = " — full" if share >= FULL else " — near the limit" if share >= NEAR else ""
    text = f"{fmt(value)} of {fmt(maximum)} ({percent(share)}){level}"
    return (
        name, " near-limit" if share >= NEAR else "", value, maximum, f"ks-{name}", label,
        maximum, min(value, maximum), NEAR * maximum, FULL * maximum, f"ks-{name}", f"ks-{name}", f"ks-{name}", text,
    )


def gauges(usage: OrgUsage | None = None, workflow: WorkflowUsage | None = None) -> SafeString:
    """The organization's live keys and bytes against its budget and/or a workflow's keys
    against its ceiling, as meters with "12 of 10,000 (0.1 %)" beside each."""
    items = []
    if workflow is not None:
        items.append(_gauge("workflow-keys", "This workflow's keys", workflow.live_keys, workflow.max_keys, count))
    if usage is not None:
        items.append(_gauge("org-keys", "Organization's keys", usage.live_keys, usage.max_keys, count))
        items.append(_gauge("org-bytes", "Organization's bytes", usage.stored_bytes, usage.max_bytes, size))
    rows = format_html_join(
        "",
        '<div class="gauge{1}" data-gauge="{0}" data-value="{2}" data-max="{3}">'
        '<span class="gauge-label" id="{4}-label">{5}</span>'
        '<meter min="0" max="{6}" value="{7}" low="{8}" high="{9}" optimum="0" aria-labelledby="{10}-label {11}-text">'
        "</meter><span class=\"gauge-text\" id=\"{12}-text\">{13}</span></div>",
        items,
    )
    return format_html('<div class="gauges" data-chart="gauges">{}</div>', rows)


def key_chart(series: dict[str, Any], element_id: str) -> SafeString:
    """The place of a key's chart, and its data for admin-charts.js."""
    return format_html(
        '<div class="ks-chart" data-chart-source="{}" data-chart-kind="key"></div>{}',
        element_id, json_script(series, element_id),
    )
