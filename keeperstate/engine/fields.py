"""Config fields of actions and triggers, and the one parser of their values.

Every way a config arrives (the API's JSON, the editor's form text, an import, the demo, a data
migration) goes through ``ConfigField.parse``, which turns the value into the one form that is
stored, whatever the way in: a typed literal (``" 3600 "`` and ``3600`` are both 3600), a
reference token, or text that holds references. ``parse`` is idempotent: parsing what it returned
returns it again. The validator reports its errors, the builder's forms show them, and the
workflow service stores its results; nothing else decides a field's type.

At run time ``resolve`` turns the stored form into what the action receives: the references
resolved (keeperstate.engine.references), and the text of a JSON field read as JSON by the field's
own ``read_text``, the same rule ``parse`` applied to its literal text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from django.utils.functional import Promise as StrPromise

from keeperstate.core.errors import Code, CodedError
from keeperstate.core.numbers import whole_number
from keeperstate.core.text import NotFinite, json_of_text
from keeperstate.engine.expressions import ExpressionInvalid, check_syntax
from keeperstate.engine.references import TOKEN_RE, find_references

if TYPE_CHECKING:
    from keeperstate.engine.references import Resolver

# pairs: an object of name → text (HTTP headers, query), shown as rows; boolean: true/false;
# assignments: named expressions computed in order (Set Fields), one "name = expression" a line.
FieldKind = Literal["text", "integer", "json", "expression", "select", "pairs", "boolean", "assignments"]
# A computed field's name: used bare in later expressions, so a Python name, without the leading
# "__" that bound references use.
ASSIGNED_NAME_RE = re.compile(r"(?!__)[A-Za-z_][A-Za-z0-9_]{0,63}")
_ASSIGNMENT_LINE_RE = re.compile(r"\s*(?P<name>[^=\s]+)\s*=(?!=)\s*(?P<expression>.*)")


class _Missing:
    """What ``parse`` returns for a field left empty: the stored config leaves it out."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class ConfigInvalid(CodedError):
    """A config value no action could take (an unknown option)."""

    error = Code.CONFIG_INVALID


class FieldRequired(CodedError):
    error = Code.REQUIRED


class ReferenceNotAllowed(CodedError):
    error = Code.REFERENCE_NOT_ALLOWED


class ReferenceInvalid(CodedError):
    error = Code.REFERENCE_INVALID


class ChoiceInvalid(CodedError):
    error = Code.INVALID_CHOICE


class JsonInvalid(CodedError):
    error = Code.INVALID_JSON


class FieldNumberInvalid(CodedError):
    error = Code.INVALID_NUMBER


def read_json_text(text: str) -> Any:
    """A JSON field's text as JSON (keeperstate.core.text.json_of_text); NaN stays text."""
    try:
        return json_of_text(text)
    except NotFinite:
        return text


@dataclass(frozen=True)
class ConfigField:
    name: str
    label: str
    kind: FieldKind
    required: bool = False
    accepts_references: bool = True
    # The value leaves the run through egress (HTTP Request's URL, headers, body), so it may hold
    # a secret reference; no other field may (keeperstate.engine.secret_places).
    secrets: bool = False
    help: str | StrPromise = ""  # a lazy text reads the settings it names when shown
    advanced: bool = False
    choices: tuple[str, ...] = ()
    default: Any = None
    placeholder: str = ""
    # The domain's rule for a literal (reference-free) value: returns it normalised or raises a
    # CodedError (a key trimmed, a TTL clamped, a URL checked), the same rule the action applies.
    check: Callable[[Any], Any] | None = field(default=None, compare=False, repr=False)
    # json fields: how their text becomes JSON, when saved and after its references resolve.
    read_text: Callable[[str], Any] = field(default=read_json_text, compare=False, repr=False)
    # expression fields: the code of what cannot be read (CONDITION_INVALID in a Condition).
    expression_error: type[ExpressionInvalid] = field(default=ExpressionInvalid, compare=False, repr=False)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "label": self.label,
            "kind": self.kind,
            "required": self.required,
            "acceptsReferences": self.accepts_references,
            "acceptsSecrets": self.secrets,
            "help": self.help,
            "advanced": self.advanced,
            "choices": list(self.choices),
            "default": self.default,
            "placeholder": self.placeholder,
        }

    # --- parsing: what is stored ------------------------------------------------------------

    def parse(self, raw: Any) -> Any:
        """The stored form of ``raw``, MISSING for an empty field; raises a CodedError naming this
        field when no action could take it."""
        try:
            return self._parse(raw)
        except CodedError as exc:
            exc.field = self.name
            raise

    def _parse(self, raw: Any) -> Any:
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            if self.required:
                raise FieldRequired(self.required_message())
            return MISSING
        references = [ref for text in texts_of(raw) for ref in find_references(text)]
        if references and not self.accepts_references:
            raise ReferenceNotAllowed(f"{self.label} does not take @ references; enter a value.")
        for ref in references:
            if ref.steps is None:
                raise ReferenceInvalid(f"{ref.token} does not name a field. Pick the value again from the @ list.")
        return _PARSERS[self.kind](self, raw, bool(references))

    def required_message(self) -> str:
        # The help text stands under the field already; the error says only what is wrong.
        if self.accepts_references:
            return f"{self.label} is required: enter a value or pick one with @."
        return f"{self.label} is required: enter a value."

    def checked(self, value: Any) -> Any:
        return self.check(value) if self.check is not None else value

    def display(self, value: Any) -> str:
        """The stored value as the text its form field shows (parse reads it back as it was)."""
        if value is None or value is MISSING:
            return ""
        if self.kind == "assignments" and isinstance(value, list):
            return "\n".join(f"{a.get('name', '')} = {a.get('expression', '')}" for a in value if isinstance(a, dict))
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)

    # --- resolving: what the action receives --------------------------------------------------

    def resolve(self, value: Any, resolver: Resolver) -> Any:
        """The stored value with its references resolved (failures are collected by the resolver)."""
        if self.kind == "expression" and isinstance(value, str):
            return resolver.bind_expression(value, self.name)
        if self.kind == "assignments" and isinstance(value, list):
            return [(a["name"], resolver.bind_expression(a["expression"], self.name)) for a in value]
        if self.kind == "json" and isinstance(value, str) and not resolver.is_single_reference(value):
            text = resolver.resolve_text(value, self.name)
            return self.read_text(text) if isinstance(text, str) and not resolver.failures else text
        return resolver.resolve_any(value, self.name)


def texts_of(raw: Any) -> list[str]:
    """Every text in a value: references may sit in an object's values (headers, a body)."""
    if isinstance(raw, str):
        return [raw]
    if isinstance(raw, list):
        return [t for item in raw for t in texts_of(item)]
    if isinstance(raw, dict):
        return [t for item in raw.values() for t in texts_of(item)]
    return []


# --- one parser per kind ----------------------------------------------------------------------


def _text(f: ConfigField, raw: Any, references: bool) -> Any:
    if references:
        return raw  # kept as typed: the references resolve at run time
    if f.check is not None:
        return f.check(raw)
    if not isinstance(raw, str):
        raise ConfigInvalid(f"{f.label} takes text.")
    return raw


def _integer(f: ConfigField, raw: Any, references: bool) -> Any:
    if references:
        found = find_references(raw) if isinstance(raw, str) else []
        if len(found) != 1 or raw.strip() != found[0].token:
            raise FieldNumberInvalid(
                f"{f.label} takes a whole number or exactly one @ reference, nothing around it."
            )
        return raw.strip()
    number = whole_number(raw)
    if number is None:
        f.checked(raw)  # the domain's own refusal when it has one (e.g. STATE_INVALID_TTL)
        raise FieldNumberInvalid(f"{f.label} takes a whole number or exactly one @ reference.")
    return f.checked(number)


def _json(f: ConfigField, raw: Any, references: bool) -> Any:
    if not f.accepts_references:
        if isinstance(raw, str):
            try:
                raw = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise JsonInvalid(
                    f"{f.label} must be valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})."
                ) from exc
        return f.checked(raw)
    if references:
        return raw  # text or JSON holding references: typed when they resolve
    if not isinstance(raw, str):
        return f.checked(raw)
    value = f.checked(f.read_text(raw))
    # Text stays text (read again at run time by the same rule: '"4219"' stays the text 4219);
    # anything else is stored as the JSON it means.
    return raw if isinstance(value, str) else value


def _expression(f: ConfigField, raw: Any, references: bool) -> Any:
    text = raw.strip() if isinstance(raw, str) else ""
    check_syntax(TOKEN_RE.sub(" __ref ", text), error=f.expression_error)
    return text


def _assignments(f: ConfigField, raw: Any, references: bool) -> Any:
    """Set Fields' fields: a list of {"name", "expression"}, or the editor's text of one
    ``name = expression`` a line. Each expression may use the names defined above it."""
    if isinstance(raw, str) and raw.lstrip().startswith("["):
        try:
            raw = json.loads(raw)  # the stored list, sent as JSON text
        except ValueError:
            pass
    if isinstance(raw, str):
        raw = _assignment_lines(f, raw)
    if not isinstance(raw, list) or not raw:
        raise f.expression_error(f'{f.label} is a list of fields, each {{"name", "expression"}}, or one '
                                 "name = expression a line.")
    parsed: list[dict[str, str]] = []
    names: set[str] = set()
    for index, assignment in enumerate(raw):
        if not isinstance(assignment, dict) or not isinstance(assignment.get("expression"), str):
            raise f.expression_error(f'Field #{index + 1} needs a "name" and an "expression" (text).')
        name = assignment.get("name")
        if not isinstance(name, str) or not ASSIGNED_NAME_RE.fullmatch(name):
            raise f.expression_error(
                f"Field #{index + 1}'s name {name!r} must be letters, digits and _ (1–64, not starting with a "
                "digit or __), so later expressions can use it."
            )
        if name in names:
            raise f.expression_error(f"Two fields are named {name!r}; give each its own name.")
        expression = assignment["expression"].strip()
        try:
            check_syntax(TOKEN_RE.sub(" __ref ", expression), error=f.expression_error, names={"__ref", *names})
        except ExpressionInvalid as exc:
            raise f.expression_error(f"Field {name!r}: {exc.message}") from None
        names.add(name)
        parsed.append({"name": name, "expression": expression})
    return parsed


def _assignment_lines(f: ConfigField, text: str) -> list[dict[str, str]]:
    lines = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        match = _ASSIGNMENT_LINE_RE.fullmatch(line)
        if match is None:
            raise f.expression_error(f"Line {number} is not name = expression (e.g. start = head + 1).")
        lines.append({"name": match["name"], "expression": match["expression"]})
    return lines


def _select(f: ConfigField, raw: Any, references: bool) -> Any:
    if raw not in f.choices:
        raise ChoiceInvalid(f"{f.label} must be one of: {', '.join(f.choices)}.")
    return f.checked(raw)


def _boolean(f: ConfigField, raw: Any, references: bool) -> Any:
    if isinstance(raw, str) and raw.strip().lower() in ("true", "false"):
        raw = raw.strip().lower() == "true"
    if f.check is not None:
        return f.check(raw)
    if not isinstance(raw, bool):
        raise ConfigInvalid(f"{f.label} is true or false.")
    return raw


def _pairs(f: ConfigField, raw: Any, references: bool) -> Any:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            pass  # the check says what an object of rows looks like
    if f.check is not None:
        return f.check(raw)
    if not isinstance(raw, dict):
        raise ConfigInvalid(f"{f.label} is an object of name → text.")
    return raw


_PARSERS: dict[str, Callable[[ConfigField, Any, bool], Any]] = {
    "text": _text,
    "integer": _integer,
    "json": _json,
    "expression": _expression,
    "select": _select,
    "boolean": _boolean,
    "pairs": _pairs,
    "assignments": _assignments,
}


def parse_config(fields: tuple[ConfigField, ...], config: dict[str, Any]) -> tuple[dict[str, Any], list[CodedError]]:
    """A node's config with every known field parsed (an empty one left out), and the errors of
    the fields that could not be; such a field keeps its value as given. Keys no field names (the
    action type, anything a client added) are kept as they are."""
    known = {f.name for f in fields}
    parsed = {key: value for key, value in config.items() if key not in known}
    errors: list[CodedError] = []
    for config_field in fields:
        if config_field.name not in config and not config_field.required:
            continue
        raw = config.get(config_field.name)
        try:
            value = config_field.parse(raw)
        except CodedError as exc:
            errors.append(exc)
            if config_field.name in config:
                parsed[config_field.name] = raw
            continue
        if value is not MISSING:
            parsed[config_field.name] = value
    return parsed, errors
