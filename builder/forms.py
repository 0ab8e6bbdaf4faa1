"""Config forms built from the action registry (DESIGN.md §8).

Every registered action and trigger gets a Django form whose fields come from its
ConfigFields. The form only displays: its inputs hold text exactly as typed (a ``<<@…>>`` token
is never stripped or turned into digits), and each field's text is judged and typed by the
field's own parser (ConfigField.parse), the one the validator and every save use, so a form never
accepts what Validate would refuse, nor refuses what it accepts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from django import forms

from keeperstate.core.errors import CodedError, form_error
from keeperstate.engine.fields import MISSING, ConfigField
from keeperstate.engine.registry import TRIGGERS, get_action


@dataclass(frozen=True)
class FormSpec:
    """What a config form is built from: an action or a trigger of the registry."""

    kind: Literal["action", "trigger"]
    id: str
    label: str
    description: str
    icon: str
    fields: tuple[ConfigField, ...]

    @property
    def type_key(self) -> str:
        return "actionType" if self.kind == "action" else "triggerType"


def spec_for_action(action_id: str) -> FormSpec | None:
    definition = get_action(action_id)
    if definition is None:
        return None
    return FormSpec(
        "action", definition.id, definition.label, definition.description, definition.icon, definition.config_fields
    )


def _trigger_type_field() -> ConfigField:
    return ConfigField(
        name="triggerType",
        label="Trigger type",
        kind="select",
        required=True,
        accepts_references=False,
        choices=tuple(TRIGGERS),
        help=" ".join(f"{t.label}: {t.description}" for t in TRIGGERS.values()),
    )


def spec_for_trigger(trigger_id: str) -> FormSpec | None:
    trigger = TRIGGERS.get(trigger_id)
    if trigger is None:
        return None
    fields = (_trigger_type_field(), *trigger.config_fields)
    return FormSpec("trigger", trigger.id, trigger.label, trigger.description, trigger.icon, fields)


def example_placeholder(text: str) -> str:
    """A placeholder that reads as an example, not as a value already filled in."""
    return text if text.lower().startswith("e.g.") else f"e.g. {text}"


def _widget(config_field: ConfigField) -> forms.Widget:
    attrs: dict[str, Any] = {
        "data-kind": config_field.kind,
        "autocomplete": "off",
        "spellcheck": "false",
    }
    if config_field.placeholder:
        attrs["placeholder"] = example_placeholder(config_field.placeholder)
    if config_field.accepts_references:
        attrs["data-references"] = "true"
    if config_field.help:
        attrs["aria-describedby"] = f"cfg-{config_field.name}-help"
    if config_field.kind == "json":
        return forms.Textarea(attrs={**attrs, "rows": 4})
    if config_field.kind == "assignments":
        return forms.Textarea(attrs={**attrs, "rows": 4})
    if config_field.kind == "expression":
        return forms.Textarea(attrs={**attrs, "rows": 3})
    if config_field.kind in ("select", "boolean"):
        return forms.Select(attrs=attrs)
    if config_field.kind == "pairs":
        # The JSON object itself; static/builder/js/pairs.js shows it as rows of name and value.
        return forms.Textarea(attrs={**attrs, "rows": 3, "class": "pairs-source"})
    # text and integer alike: a plain text input, so a reference can be typed into a number field
    return forms.TextInput(attrs=attrs)


def _django_field(config_field: ConfigField) -> forms.Field:
    # Required-ness and every other rule are judged in ConfigForm.clean with the registry's
    # messages; Django only carries the text.
    if config_field.kind in ("select", "boolean"):
        blank = [] if config_field.required or config_field.default is not None else [("", "—")]
        options = config_field.choices if config_field.kind == "select" else ("true", "false")
        choices = blank + [(c, c) for c in options]
        return forms.ChoiceField(
            label=config_field.label, required=False, choices=choices, widget=_widget(config_field)
        )
    return forms.CharField(label=config_field.label, required=False, strip=False, widget=_widget(config_field))


def as_text(value: Any, config_field: ConfigField | None = None) -> str:
    """A config value as the text its form field shows (the field's own display, so its parser
    reads the text back as the value)."""
    if config_field is not None:
        return config_field.display(value)
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


@dataclass(frozen=True)
class FieldRow:
    field: forms.BoundField
    config: ConfigField


class ConfigForm(forms.Form):
    """The config form of one action or trigger; ``config`` holds the normalised config."""

    def __init__(self, spec: FormSpec, data: Any = None, initial: dict[str, Any] | None = None):
        super().__init__(data=data, initial=initial, auto_id="cfg-%s")
        self.spec = spec
        self.config: dict[str, Any] = {}
        for config_field in spec.fields:
            self.fields[config_field.name] = _django_field(config_field)

    def rows(self) -> list[FieldRow]:
        return [FieldRow(self[f.name], f) for f in self.spec.fields if not f.advanced]

    def advanced_rows(self) -> list[FieldRow]:
        return [FieldRow(self[f.name], f) for f in self.spec.fields if f.advanced]

    def advanced_open(self) -> bool:
        """Open the Advanced section when one of its fields holds an error or a value of its own
        (not just its default), so a reloaded expectedVersion is seen at once."""
        return any(
            row.field.errors or (row.field.value() and row.field.value() != as_text(row.config.default))
            for row in self.advanced_rows()
        )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        config: dict[str, Any] = {} if self.spec.kind == "trigger" else {"actionType": self.spec.id}
        for config_field in self.spec.fields:
            if self.has_error(config_field.name):
                continue
            try:
                value = config_field.parse(cleaned.get(config_field.name))
            except CodedError as exc:
                self.add_error(config_field.name, form_error(exc))
                continue
            if value is not MISSING:
                config[config_field.name] = value
        self.config = config
        return cleaned


def initial_values(spec: FormSpec, node_config: dict[str, Any] | None, query: Any) -> dict[str, str]:
    """The text each field starts with: the query string first, then the node's config."""
    node_config = node_config or {}
    initial: dict[str, str] = {}
    for config_field in spec.fields:
        if config_field.name in query:
            initial[config_field.name] = _shown(config_field, str(query.get(config_field.name)))
        elif config_field.name in node_config:
            initial[config_field.name] = as_text(node_config[config_field.name], config_field)
        elif config_field.name == "triggerType":
            initial[config_field.name] = spec.id
        elif config_field.kind in ("select", "boolean") and config_field.default is not None:
            # a select must show a choice; text fields leave their default to the placeholder
            initial[config_field.name] = as_text(config_field.default)
    return initial


def _shown(config_field: ConfigField, text: str) -> str:
    """Query text as its field shows it: the editor sends a stored list of Set Fields as JSON,
    shown as its lines; text that does not parse is shown as it came, for the form to judge."""
    if config_field.kind != "assignments":
        return text
    try:
        return config_field.display(config_field.parse(text))
    except CodedError:
        return text


def form_data(spec: FormSpec, payload: dict[str, Any]) -> dict[str, str]:
    """Form data from a JSON body: every value as the text its field would hold."""
    data = {f.name: as_text(payload.get(f.name), f) for f in spec.fields if f.name in payload}
    if spec.kind == "trigger":
        data.setdefault("triggerType", spec.id)
    return data
