"""Fail Run: end the run as failed, on purpose, with the author's message and details
(code FAILED_BY_WORKFLOW), for what must never pass silently: a chain reorganised deeper than a
monitor can follow, a value no later node should see."""

from __future__ import annotations

import json
from typing import Any

from keeperstate.core.errors import Code, CodedError
from keeperstate.engine.context import RunContext
from keeperstate.engine.fields import ConfigField, ConfigInvalid
from keeperstate.engine.registry import ActionDefinition, register

MAX_MESSAGE = 2000


class FailedByWorkflow(CodedError):
    error = Code.FAILED_BY_WORKFLOW


def check_details(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigInvalid('Details is a JSON object, e.g. {"block": 120}; leave it empty for none.',
                            field="details")
    return value


def run_fail_run(config: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
    message = config.get("message")
    # A message that is one reference arrives typed: a number or an object reads as its JSON.
    text = message if isinstance(message, str) else json.dumps(message, separators=(",", ":"), ensure_ascii=False)
    details = config.get("details")
    raise FailedByWorkflow(text.strip()[:MAX_MESSAGE] or None,
                           details=check_details(details) if details is not None else None)


FAIL_RUN = register(
    ActionDefinition(
        id="Fail Run",
        label="Fail Run",
        group="System",
        description="Stop the run as failed (code FAILED_BY_WORKFLOW) with your message, so it never passes "
        "silently; put an alert before it.",
        icon="fail-run",
        egress="none",
        side_effects=False,
        config_fields=(
            ConfigField(
                name="message",
                label="Message",
                kind="text",
                required=True,
                help="Why the run failed and what to do, shown as the run's error; @ references are "
                "interpolated, e.g. The chain reorganised below block <<@…>>: reset the cursor.",
                placeholder="What went wrong, and what to do",
            ),
            ConfigField(
                name="details",
                label="Details",
                kind="json",
                help='Optional: a JSON object kept with the failure (its details), e.g. {"block": <<@…>>}.',
                placeholder='{"block": <<@…>>}',
                check=check_details,
            ),
        ),
        output_fields=(),
        handler=run_fail_run,
    )
)
