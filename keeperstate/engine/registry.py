"""The action registry: the single source of truth for every action type.

The palette, config forms, autocomplete, validator, runner and API catalogue all read these
definitions. Adding an action is one ``register(ActionDefinition(...))`` in its own module
under ``engine/actions/`` plus its handler (and, in the builder, its icon).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from django.conf import settings
from django.utils.functional import lazy
from django.utils.text import format_lazy

from keeperstate.core.text import has_nul, text_problem
from keeperstate.engine.fields import ConfigField, ConfigInvalid
from keeperstate.engine.schedules import OVERLAP_CHOICES, Schedule, check_cron, check_interval, check_timezone

if TYPE_CHECKING:
    from keeperstate.engine.context import RunContext

@dataclass(frozen=True)
class OutputField:
    name: str
    type: str  # JSON type as an author reads it: "any", "boolean", "integer", "string", ...
    description: str
    # A loop's fields: "body" ones (item, index) are read inside its body only, "after" ones
    # (count…) after it; None: wherever the node is upstream.
    loop_scope: Literal["body", "after"] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type, "description": self.description}


Handler = Callable[[dict[str, Any], "RunContext"], dict[str, Any]]
Router = Callable[[dict[str, Any]], str | None]


@dataclass(frozen=True)
class ActionDefinition:
    id: str
    label: str
    group: str
    description: str
    icon: str  # name of the builder's SVG icon
    egress: Literal["none", "user", "fixed"]  # user: the author chooses where it goes
    config_fields: tuple[ConfigField, ...]
    output_fields: tuple[OutputField, ...]
    handler: Handler
    needs_workflow_context: bool = False
    # Named outgoing handles (Condition: true/false). Empty: every outgoing edge is followed.
    source_handles: tuple[str, ...] = ()
    # Which handle a successful run follows; only for actions with source_handles.
    route: Router | None = field(default=None)
    # What an edge without a sourceHandle means (State Set: "success"); None = it is invalid.
    default_handle: str | None = None
    plan_gated: bool = False
    # Whether running it can change anything outside the run (state, the network). The execution
    # record is written after such nodes, so a run cut short still shows what it changed; a pure
    # read (State Get, Condition) costs no write of its own.
    side_effects: bool = True
    # A loop (For Each): the runner runs the nodes reached from its ``each`` handle once per item
    # of what its handler returns, then follows ``done`` (keeperstate.engine.runner).
    loop: bool = False
    # Stop Loop: once it runs, the loop whose body holds it ends after the current item.
    stops_loop: bool = False
    # Output fields that depend on the node's config (Set Fields: one per field it computes);
    # None: ``output_fields`` whatever the config.
    outputs: Callable[[dict[str, Any]], tuple[OutputField, ...]] | None = field(default=None, compare=False,
                                                                              repr=False)

    @property
    def writes_state(self) -> bool:
        """Whether running it may write the workflow's state: state is reached only through the
        run's workflow context, so an action with side effects that needs one writes it (State
        Set, Delete, Increment); an HTTP Request changes things elsewhere, never this state."""
        return self.side_effects and self.needs_workflow_context

    def config_field(self, name: str) -> ConfigField | None:
        return next((f for f in self.config_fields if f.name == name), None)

    def output_field(self, name: str) -> OutputField | None:
        return next((f for f in self.output_fields if f.name == name), None)

    def outputs_of(self, config: dict[str, Any]) -> tuple[OutputField, ...]:
        """The output fields of a node of this action with this config."""
        return self.output_fields + (self.outputs(config) if self.outputs is not None else ())

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "label": self.label,
            "group": self.group,
            "description": self.description,
            "icon": self.icon,
            "egress": self.egress,
            "needsWorkflowContext": self.needs_workflow_context,
            "planGated": self.plan_gated,
            "sourceHandles": list(self.source_handles),
            "defaultHandle": self.default_handle,
            "configFields": [f.as_dict() for f in self.config_fields],
            "outputFields": [f.as_dict() for f in self.output_fields],
        }


@dataclass(frozen=True)
class TriggerDefinition:
    """A trigger kind. Its output is the run's input, so its fields come from its sample input."""

    id: str
    label: str
    description: str
    icon: str
    config_fields: tuple[ConfigField, ...]
    # A trigger whose run input has a fixed shape (Schedule) declares it; the others' fields come
    # from their sample input.
    output_fields: tuple[OutputField, ...] = ()
    # Checks the config as a whole (fields that go together), raising a CodedError naming a field.
    check_config: Callable[[dict[str, Any]], Any] | None = field(default=None, compare=False, repr=False)

    def config_field(self, name: str) -> ConfigField | None:
        return next((f for f in self.config_fields if f.name == name), None)

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "label": self.label,
            "description": self.description,
            "icon": self.icon,
            "configFields": [f.as_dict() for f in self.config_fields],
            "outputFields": [f.as_dict() for f in self.output_fields],
        }


_ACTIONS: dict[str, ActionDefinition] = {}

def _sample_input_object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigInvalid('The sample input must be a JSON object, e.g. {"block": 100}.', field="sampleInput")
    for name in value:  # its fields become @ reference names: the text rules of every name
        if problem := text_problem(name):
            raise ConfigInvalid(f"The sample input's field {name!r} {problem}.", field="sampleInput")
    if has_nul(value):
        raise ConfigInvalid("The sample input contains the character U+0000; remove it.", field="sampleInput")
    return value


_SAMPLE_INPUT = ConfigField(
    name="sampleInput",
    label="Sample input",
    kind="json",
    accepts_references=False,
    help='An example of the run input as a JSON object, e.g. {"block": 100}. Its fields are offered '
    "by the @ autocomplete of later nodes.",
    check=_sample_input_object,
)

TRIGGERS: dict[str, TriggerDefinition] = {
    "Manual": TriggerDefinition(
        id="Manual",
        label="Manual",
        description="Run the workflow by hand or through the API, with an input JSON object.",
        icon="trigger-manual",
        config_fields=(_SAMPLE_INPUT,),
    ),
    "Webhook": TriggerDefinition(
        id="Webhook",
        label="Webhook",
        description="Run the workflow when a client posts a JSON object to its URL with its secret "
        "(only while the workflow is active).",
        icon="trigger-webhook",
        config_fields=(_SAMPLE_INPUT,),
    ),
    "Schedule": TriggerDefinition(
        id="Schedule",
        label="Schedule",
        description="Run the workflow every interval or on a cron schedule, while it is active.",
        icon="trigger-schedule",
        config_fields=(
            ConfigField(
                name="interval",
                label="Every (seconds)",
                kind="integer",
                accepts_references=False,
                # Read when shown, so it says the deployment's own shortest interval.
                help=format_lazy("Run every this many seconds (at least {}), e.g. 60. Leave empty to use a cron "
                                 "expression.", lazy(lambda: settings.KEEPERSTATE_MIN_INTERVAL, int)()),
                placeholder="e.g. 60",
                check=check_interval,
            ),
            ConfigField(
                name="cron",
                label="Cron",
                kind="text",
                accepts_references=False,
                help="Instead of an interval: minute hour day-of-month month day-of-week, e.g. */5 * * * *.",
                placeholder="e.g. */5 * * * *",
                check=check_cron,
            ),
            ConfigField(
                name="timezone",
                label="Time zone",
                kind="text",
                accepts_references=False,
                help="The time zone of the cron expression (an IANA name such as Europe/Berlin).",
                default="UTC",
                placeholder="e.g. UTC",
                advanced=True,
                check=check_timezone,
            ),
            ConfigField(
                name="overlap",
                label="When the previous run is still going",
                kind="select",
                accepts_references=False,
                choices=OVERLAP_CHOICES,
                default="skip",
                help="skip: record the tick as skipped; allow: run anyway, side by side.",
                advanced=True,
            ),
        ),
        output_fields=(
            OutputField("scheduledFor", "string", "The tick this run is for (ISO 8601, UTC)."),
            OutputField("firedAt", "string", "When the scheduler started the run (ISO 8601, UTC)."),
        ),
        check_config=Schedule.from_config,
    ),
}


def register(definition: ActionDefinition) -> ActionDefinition:
    if definition.id in _ACTIONS:
        raise ValueError(f"Action {definition.id!r} is registered twice")
    if bool(definition.source_handles) != (definition.route is not None):
        raise ValueError(f"Action {definition.id!r}: source_handles and route go together")
    _ACTIONS[definition.id] = definition
    return definition


def get_action(action_id: str) -> ActionDefinition | None:
    _load_actions()
    return _ACTIONS.get(action_id)


def all_actions() -> list[ActionDefinition]:
    _load_actions()
    return list(_ACTIONS.values())


def catalogue() -> dict[str, Any]:
    """The action catalogue (GET /api/actions/, the MCP's list_actions): every action and trigger kind
    with its config fields, output fields, handles, egress and group."""
    return {
        "actions": [definition.as_dict() for definition in all_actions()],
        "triggers": [definition.as_dict() for definition in TRIGGERS.values()],
    }


def _load_actions() -> None:
    # Importing the package registers every action module exactly once.
    import keeperstate.engine.actions  # noqa: F401
