"""Schedules of the Schedule trigger: an interval in seconds or a 5-field cron in a time zone.

Pure time arithmetic, no database: the validator checks a trigger's schedule with it, and the
scheduler asks it for due ticks. Interval ticks fall on multiples of the interval since the Unix
epoch, so every scheduler process computes the same ticks without talking to the others; the
database then allows one execution per (workflow, tick).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError
from django.conf import settings

from keeperstate.core.errors import Code, CodedError
from keeperstate.core.numbers import parse_whole_number

OVERLAP_CHOICES = ("skip", "allow")
# At most one run a year: past it, a tick's date overflows Python's calendar (year 9999), and no
# schedule needs a longer one.
MAX_INTERVAL = 365 * 24 * 3600


class ScheduleInvalid(CodedError):
    error = Code.SCHEDULE_INVALID


def check_interval(value: Any) -> int:
    """A whole number of seconds, from KEEPERSTATE_MIN_INTERVAL to MAX_INTERVAL (365 days)."""
    minimum = settings.KEEPERSTATE_MIN_INTERVAL
    return parse_whole_number(
        value, field="interval", minimum=minimum, maximum=MAX_INTERVAL, error=ScheduleInvalid,
        message=f"The interval is a whole number of seconds from {minimum} to {MAX_INTERVAL:,} (365 days), "
        "e.g. 60 for every minute.",
    )


def check_cron(value: Any) -> str:
    """Five fields: minute, hour, day of month, month, day of week (e.g. '*/5 * * * *')."""
    text = value.strip() if isinstance(value, str) else ""
    if len(text.split()) != 5:
        raise ScheduleInvalid(
            "A cron expression has 5 fields: minute hour day-of-month month day-of-week, e.g. '*/5 * * * *'.",
            field="cron",
        )
    try:
        CronSim(text, datetime(2000, 1, 1, tzinfo=UTC))
    except CronSimError as exc:
        raise ScheduleInvalid(f"The cron expression '{text}' is not valid: {exc}.", field="cron") from None
    return text


def check_timezone(value: Any) -> str:
    text = value.strip() if isinstance(value, str) else ""
    try:
        ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError):
        raise ScheduleInvalid(
            f"Unknown time zone '{text}'. Use an IANA name such as UTC or Europe/Berlin.", field="timezone"
        ) from None
    return text


@dataclass(frozen=True)
class Schedule:
    interval: int | None = None
    cron: str | None = None
    timezone: str = "UTC"
    overlap: str = "skip"

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Schedule:
        """The schedule of a Schedule trigger's config; ScheduleInvalid names the field at fault."""
        interval, cron = config.get("interval"), config.get("cron")
        has_interval = interval not in (None, "")
        has_cron = isinstance(cron, str) and bool(cron.strip())
        if has_interval == has_cron:
            raise ScheduleInvalid(
                "Give either an interval in seconds or a cron expression, not both and not neither.",
                field="interval" if not has_interval else "cron",
            )
        overlap = config.get("overlap") or "skip"
        if overlap not in OVERLAP_CHOICES:
            raise ScheduleInvalid("Overlap is 'skip' or 'allow'.", field="overlap")
        return cls(
            interval=check_interval(interval) if has_interval else None,
            cron=check_cron(cron) if has_cron else None,
            timezone=check_timezone(config.get("timezone") or "UTC"),
            overlap=overlap,
        )

    def next_after(self, moment: datetime) -> datetime:
        """The first tick strictly after ``moment``."""
        if self.interval is not None:
            seconds = (math.floor(moment.timestamp() / self.interval) + 1) * self.interval
            return datetime.fromtimestamp(seconds, UTC)
        assert self.cron is not None
        local = moment.astimezone(ZoneInfo(self.timezone))
        return next(CronSim(self.cron, local)).astimezone(UTC)

    def latest_due(self, moment: datetime) -> datetime:
        """The last tick at or before ``moment``: a scheduler that was down runs it once."""
        if self.interval is not None:
            seconds = math.floor(moment.timestamp() / self.interval) * self.interval
            return datetime.fromtimestamp(seconds, UTC)
        assert self.cron is not None
        local = moment.astimezone(ZoneInfo(self.timezone))
        # CronSim in reverse yields ticks strictly before its start: start a second later.
        return next(CronSim(self.cron, local + timedelta(seconds=1), reverse=True)).astimezone(UTC)
