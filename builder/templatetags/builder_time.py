"""Relative times as the builder's pages show them ("in 8 s", "3 min ago"), the same units as
static/builder/js/when.js, which keeps them current in the page."""

from __future__ import annotations

from datetime import datetime

from django import template
from django.utils import timezone

register = template.Library()

UNITS = ((86400, "d"), (3600, "h"), (60, "min"), (1, "s"))


@register.filter
def relative(moment: datetime | None, now: datetime | None = None) -> str:
    if moment is None:
        return ""
    seconds = round((moment - (now or timezone.now())).total_seconds())
    size = abs(seconds)
    if size < 1:
        return "now"
    unit, name = next((u, n) for u, n in UNITS if size >= u)
    amount = f"{size // unit} {name}"
    return f"in {amount}" if seconds > 0 else f"{amount} ago"
