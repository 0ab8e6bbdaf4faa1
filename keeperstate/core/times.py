"""How a moment is written in the JSON of workflows and executions: ISO 8601 in the current time
zone, ``Z`` for UTC (what DRF's DateTimeField writes, so the schema's ``date-time`` holds)."""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone


def json_time(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    text = timezone.localtime(moment).isoformat() if timezone.is_aware(moment) else moment.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text
