"""Time buckets of the charts (the runs chart, a key's writes): a range is so many buckets of one
step, starting at whole steps from EPOCH and ending with the bucket that holds now, so every
chart of a range has the same buckets and a bucket's bounds can filter a list."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.utils import timezone

from keeperstate.core.errors import Code, CodedError


@dataclass(frozen=True)
class Range:
    """A chart's span: ``buckets`` buckets of ``step`` each, ending at the bucket now is in."""

    name: str
    step: timedelta
    buckets: int


# Enough bars to see a trend, few enough to click one in the side column.
RANGES = {
    "1h": Range("1h", timedelta(minutes=2), 30),
    "24h": Range("24h", timedelta(hours=1), 24),
    "7d": Range("7d", timedelta(hours=6), 28),
}
DEFAULT_RANGE = "24h"
EPOCH = datetime(2000, 1, 1, tzinfo=UTC)  # the buckets' origin: they start at whole steps


class StatsRangeInvalid(CodedError):
    error = Code.STATS_INVALID_RANGE


def parse_range(value: str | None) -> Range:
    """The range a query names (``1h``, ``24h`` or ``7d``; none: 24h), else STATS_INVALID_RANGE."""
    if value is None:
        return RANGES[DEFAULT_RANGE]
    if value not in RANGES:
        raise StatsRangeInvalid(field="range", details={"allowed": list(RANGES)})
    return RANGES[value]


def window(span: Range, now: datetime | None = None) -> tuple[datetime, datetime]:
    """[start, end) of the chart: whole steps from EPOCH, the last one holding ``now``."""
    now = now or timezone.now()
    elapsed = (now - EPOCH) // span.step + 1
    end = EPOCH + elapsed * span.step
    return end - span.buckets * span.step, end
