"""Config forms built from the action registry (DESIGN.md §8).

Every registered action and trigger gets a Django form whose fields come from its
ConfigFields. Values are text exactly as typed, so a ``<<@…>>`` token is never stripped or
turned into digits; each field is judged by the validator's own ``field_problem``, so a form
never accepts what Validate would refuse, nor refuses what it accepts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from django import forms
from django.core.exceptions import ValidationError

from keeperstate.core.errors import CodedError
from keeperstate.engine.references import TOKEN_RE, find_references
from keeperstate.engine.registry import TRIGGERS, ConfigField, get_action
from keeperstate.engine.validation import field_problem

_MISSING = object()


class FieldProblem(Exception):
    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


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


def required_message(config_field: ConfigField) -> str:
    # The help text stands under the field already; the error says only what is wrong.
    return f"{config_field.label} is required: enter a value or pick one with @." if config_field.accepts_references \
        else f"{config_field.label} is required: enter a value."


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


def normalise_field(config_field: ConfigField, raw: Any) -> Any:
    """The config value of one field's text, or _MISSING when it is left empty.

    Raises FieldProblem with the validator's code and message when the text is not acceptable.
    Integer literals become ints; references and JSON/text values stay text as typed (the
    runner types them), except a JSON field that takes no references, which becomes its JSON.
    """
    text = "" if raw is None else str(raw)
    if not text.strip():
        if config_field.required:
            raise FieldProblem("REQUIRED", required_message(config_field))
        return _MISSING
    has_tokens = bool(TOKEN_RE.search(text))
    if has_tokens and not config_field.accepts_references:
        raise FieldProblem(
            "REFERENCE_NOT_ALLOWED", f"{config_field.label} does not take @ references; enter a value."
        )
    for ref in find_references(text):
        if ref.steps is None:
            raise FieldProblem(
                "REFERENCE_INVALID", f"{ref.token} does not name a field. Pick the value again from the @ list."
            )
    if config_field.kind == "json" and not config_field.accepts_references:
        return _json_literal(config_field, text)
    if config_field.kind in ("pairs", "boolean"):
        problem = field_problem(config_field, text)
        if problem is not None:
            raise FieldProblem(*problem)
        return _checked(config_field, text)  # an object of rows / true or false
    if config_field.kind == "select":
        if text not in config_field.choices:
            choices = ", ".join(config_field.choices)
            raise FieldProblem("INVALID_CHOICE", f"{config_field.label} must be one of: {choices}.")
        return text
    problem = field_problem(config_field, text)
    if problem is not None:
        raise FieldProblem(*problem)
    if has_tokens:
        return text.strip() if config_field.kind == "integer" else text
    if config_field.kind == "integer":
        return _integer_literal(config_field, text)
    if config_field.kind == "expression":
        return text.strip()
    if config_field.kind == "text" and config_field.check is not None:
        return _checked(config_field, text)  # e.g. a literal key, trimmed
    return text  # JSON/text values stay as typed: the runner coerces editor text when it runs


def _json_literal(config_field: ConfigField, text: str) -> Any:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FieldProblem(
            "INVALID_JSON",
            f"{config_field.label} must be valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}).",
        ) from exc
    return _checked(config_field, value) if config_field.check is not None else value


def _integer_literal(config_field: ConfigField, text: str) -> Any:
    if config_field.check is not None:
        return _checked(config_field, text)
    stripped = text.strip()
    if not stripped.lstrip("-").isdigit():
        raise FieldProblem(
            "INVALID_NUMBER", f"{config_field.label} takes a whole number or exactly one @ reference."
        )
    return int(stripped)


def _checked(config_field: ConfigField, value: Any) -> Any:
    try:
        return config_field.check(value)  # type: ignore[misc]
    except CodedError as exc:
        raise FieldProblem(exc.code, exc.message) from exc


def as_text(value: Any) -> str:
    """A stored config value as the text its form field shows."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


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
                value = normalise_field(config_field, cleaned.get(config_field.name))
            except FieldProblem as problem:
                self.add_error(config_field.name, ValidationError(problem.message, code=problem.code))
                continue
            if value is not _MISSING:
                config[config_field.name] = value
        self.config = config
        return cleaned

    def error_data(self) -> dict[str, list[dict[str, str]]]:
        return {name: [{"code": e["code"], "message": e["message"]} for e in errors]
                for name, errors in self.errors.get_json_data().items()}


def initial_values(spec: FormSpec, node_config: dict[str, Any] | None, query: Any) -> dict[str, str]:
    """The text each field starts with: the query string first, then the node's config."""
    node_config = node_config or {}
    initial: dict[str, str] = {}
    for config_field in spec.fields:
        if config_field.name in query:
            initial[config_field.name] = str(query.get(config_field.name))
        elif config_field.name in node_config:
            initial[config_field.name] = as_text(node_config[config_field.name])
        elif config_field.name == "triggerType":
            initial[config_field.name] = spec.id
        elif config_field.kind in ("select", "boolean") and config_field.default is not None:
            # a select must show a choice; text fields leave their default to the placeholder
            initial[config_field.name] = as_text(config_field.default)
    return initial


def form_data(spec: FormSpec, payload: dict[str, Any]) -> dict[str, str]:
    """Form data from a JSON body: every value as the text its field would hold."""
    data = {f.name: as_text(payload.get(f.name)) for f in spec.fields if f.name in payload}
    if spec.kind == "trigger":
        data.setdefault("triggerType", spec.id)
    return data


def spec_for_node(node: dict[str, Any]) -> FormSpec | None:
    config = _node_config(node)
    if node.get("type") == "trigger":
        return spec_for_trigger(str(config.get("triggerType") or "Manual"))
    action_type = config.get("actionType")
    return spec_for_action(action_type) if isinstance(action_type, str) else None


def _node_config(node: Any) -> dict[str, Any]:
    data = node.get("data") if isinstance(node, dict) else None
    config = data.get("config") if isinstance(data, dict) else None
    return config if isinstance(config, dict) else {}


def normalise_graph(nodes: Any) -> Any:
    """The nodes with each config passed through its form, so that saved configs are the
    normalised ones (integer literals as numbers, a sample input as an object). A node whose
    form has errors is left as it is: the validator reports the same errors for it."""
    if not isinstance(nodes, list):
        return nodes
    result = []
    for node in nodes:
        spec = spec_for_node(node) if isinstance(node, dict) else None
        if spec is None:
            result.append(node)
            continue
        config = _node_config(node)
        form = ConfigForm(spec, data=form_data(spec, config))
        if not form.is_valid():
            result.append(node)
            continue
        known = {f.name for f in spec.fields} | {spec.type_key}
        merged = {k: v for k, v in config.items() if k not in known}
        merged.update(form.config)
        result.append({**node, "data": {**node["data"], "config": merged}})
    return result
