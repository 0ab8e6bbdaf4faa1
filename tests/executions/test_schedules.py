"""Schedule arithmetic and the Schedule trigger's checks (no database)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from keeperstate.engine.schedules import Schedule, ScheduleInvalid
from keeperstate.executions.scheduling import schedule_of


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_interval_ticks_fall_on_multiples_of_the_interval():
    schedule = Schedule(interval=30)

    assert schedule.next_after(at("2026-01-01T10:00:05")) == at("2026-01-01T10:00:30")
    assert schedule.next_after(at("2026-01-01T10:00:30")) == at("2026-01-01T10:01:00")
    assert schedule.latest_due(at("2026-01-01T10:00:59")) == at("2026-01-01T10:00:30")


def test_cron_ticks_follow_the_time_zone():
    # 09:00 in Berlin is 08:00 UTC in winter
    schedule = Schedule(cron="0 9 * * *", timezone="Europe/Berlin")

    assert schedule.next_after(at("2026-01-01T07:00:00")) == at("2026-01-01T08:00:00")
    assert schedule.latest_due(at("2026-01-02T07:59:00")) == at("2026-01-01T08:00:00")
    assert schedule.latest_due(at("2026-01-01T08:00:00")) == at("2026-01-01T08:00:00")


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"interval": 5}, "interval"),
        ({"interval": "ten"}, "interval"),
        ({"interval": 2.5}, "interval"),
        ({"interval": True}, "interval"),
        ({}, "interval"),
        ({"interval": 60, "cron": "* * * * *"}, "cron"),
        ({"cron": "* * * *"}, "cron"),
        ({"cron": "61 * * * *"}, "cron"),
        ({"cron": "* * * * *", "timezone": "Mars/Olympus"}, "timezone"),
        ({"interval": 60, "overlap": "queue"}, "overlap"),
    ],
)
def test_a_bad_schedule_names_its_field(config, field):
    with pytest.raises(ScheduleInvalid) as caught:
        Schedule.from_config(config)

    assert caught.value.field == field
    assert caught.value.code == "SCHEDULE_INVALID"


def test_interval_text_of_digits_is_a_number():
    assert Schedule.from_config({"interval": " 60 "}) == Schedule(interval=60)


def test_schedule_of_reads_only_a_schedule_trigger():
    def graph(config):
        return [{"id": "t", "type": "trigger", "data": {"config": config}}]

    assert schedule_of(graph({"triggerType": "Schedule", "interval": 15, "overlap": "allow"})) == Schedule(
        interval=15, overlap="allow"
    )
    assert schedule_of(graph({"triggerType": "Manual"})) is None
    assert schedule_of(graph({"triggerType": "Schedule", "interval": 1})) is None
    assert schedule_of("not a list") is None
