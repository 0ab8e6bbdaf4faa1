"""References between nodes: ``<<@nodeId:Label.path>>`` (DESIGN.md §3).

Resolution is by node id; the label is what the node was called when the reference was
written and only matters for telling the label from the path. A config field that is exactly
one reference takes the referenced value with its JSON type; a reference inside other text is
interpolated as text. Anything unresolvable fails the node before its action runs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from keeperstate.core.errors import Code, CodedError
from keeperstate.engine.results import Failed, Skipped, result_from_json, settled
from keeperstate.secrets.vault import SecretUnavailable, SecretVault

if TYPE_CHECKING:
    from keeperstate.engine.fields import ConfigField

NODE_ID_RE = re.compile(r"[^:<>\s]+")
TOKEN_RE = re.compile(r"<<@(?P<node>" + NODE_ID_RE.pattern + r"):(?P<rest>.*?)>>")
# An index is ASCII digits: \d would take other scripts' digits, which int() reads too.
_SEGMENT_RE = re.compile(r"^(?P<name>[^\[\]]+)(?P<indexes>(?:\[[0-9]+\])*)$")
_INDEX_RE = re.compile(r"\[([0-9]+)\]")

SECRETS_NODE_ID = "__secrets"
SECRETS_LABEL = "Secrets"
SYSTEM_NODE_ID = "__system"
SYSTEM_LABEL = "System"
SYSTEM_FIELDS = {
    "unixTimestamp": ("integer", "Seconds since 1970-01-01 UTC, fixed for the node's run."),
    "unixTimestampMs": ("integer", "Milliseconds since 1970-01-01 UTC, fixed for the node's run."),
    "isoTimestamp": ("string", "The time as ISO 8601 in UTC, fixed for the node's run."),
    "executionId": ("string", "This run's execution id (null outside a run): with a loop's index, a receiver can "
                    "drop an alert sent again."),
}


class TemplateUnresolved(CodedError):
    error = Code.TEMPLATE_UNRESOLVED


@dataclass(frozen=True)
class Reference:
    token: str
    node_id: str
    label: str
    path: str

    @property
    def steps(self) -> list[str | int] | None:
        return parse_path(self.path)


@dataclass(frozen=True)
class BoundExpression:
    """An expression whose references were replaced by names bound to their typed values."""

    text: str
    bindings: dict[str, Any]


def make_token(node_id: str, label: str, path: str) -> str:
    return f"<<@{node_id}:{label}.{path}>>"


def find_references(text: str, labels: dict[str, str] | None = None) -> list[Reference]:
    """Every reference in a text, with label and path split by the node's current label."""
    labels = labels or {}
    found = []
    for match in TOKEN_RE.finditer(text):
        node_id, rest = match["node"], match["rest"]
        label, path = split_label_path(rest, labels.get(node_id))
        found.append(Reference(token=match[0], node_id=node_id, label=label, path=path))
    return found


def placeholders(text: str, labels: dict[str, str] | None = None) -> tuple[str, list[Reference]]:
    """An expression with its references replaced, in order, by the names __ref0, __ref1, … that
    bind them, and the references."""
    refs = find_references(text, labels)
    out = text
    for i, ref in enumerate(refs):
        out = out.replace(ref.token, f" __ref{i} ", 1)
    return out, refs


def split_label_path(rest: str, current_label: str | None) -> tuple[str, str]:
    """Split ``Label.path``: by the node's current label when it matches, else at the first dot."""
    if current_label and rest.startswith(current_label + "."):
        return current_label, rest[len(current_label) + 1 :]
    label, _, path = rest.partition(".")
    return label, path


def parse_path(path: str) -> list[str | int] | None:
    """``items[0].id`` → ["items", 0, "id"]; None when the path is not of that form."""
    if not path:
        return None
    steps: list[str | int] = []
    for segment in path.split("."):
        match = _SEGMENT_RE.match(segment)
        if match is None:
            return None
        steps.append(match["name"])
        steps.extend(int(i) for i in _INDEX_RE.findall(match["indexes"]))
    return steps


def system_values(now: datetime | None = None, *, execution_id: Any = None) -> dict[str, Any]:
    now = now or datetime.now(UTC)
    return {
        "unixTimestamp": int(now.timestamp()),
        "unixTimestampMs": int(now.timestamp() * 1000),
        "isoTimestamp": now.isoformat().replace("+00:00", "Z"),
        "executionId": str(execution_id) if execution_id is not None else None,
    }


class _Unresolved(Exception):
    pass


class Resolver:
    """Resolves the references of one node's config against the results of earlier nodes."""

    def __init__(
        self,
        *,
        results: Mapping[str, Any],
        labels: dict[str, str],
        system: dict[str, Any],
        secrets: SecretVault | None = None,
        secret_fields: frozenset[str] = frozenset(),
    ):
        # Typed results (the runner's), or their JSON shape (a recorded run, a test).
        self.results = results
        self.labels = labels
        self.system = system
        self.secrets = secrets
        # The fields whose value leaves the run (keeperstate.engine.secret_places): a secret is
        # read for them only, so no other field can compute with one.
        self.secret_fields = secret_fields
        self.failures: list[dict[str, str]] = []

    def resolve_config(self, config: dict[str, Any], fields: Sequence[ConfigField] = ()) -> dict[str, Any]:
        """The config with references resolved; raises TemplateUnresolved naming every failure.

        Each of ``fields`` resolves its own value (ConfigField.resolve: an expression gets its
        references bound as typed names, a JSON field's text is read as JSON); any other key is
        resolved as it is.
        """
        by_name = {f.name: f for f in fields}
        resolved = {}
        for name, value in config.items():
            config_field = by_name.get(name)
            resolved[name] = config_field.resolve(value, self) if config_field else self.resolve_any(value, name)
        if self.failures:
            raise TemplateUnresolved(
                "Could not resolve "
                + "; ".join(f"{f['token']} in '{f['field']}': {f['reason']}" for f in self.failures)
                + ". Pick the value again from the @ list, or make sure that node runs before this one.",
                details={"unresolved": self.failures},
                field=self.failures[0]["field"],
            )
        return resolved

    def is_single_reference(self, text: str) -> bool:
        """Whether the whole text is one reference (it then resolves to the value's own type)."""
        refs = find_references(text, self.labels)
        return len(refs) == 1 and text.strip() == refs[0].token

    def resolve_any(self, value: Any, field: str) -> Any:
        """Texts resolved (resolve_text) at any depth of a value; other values as they are."""
        if isinstance(value, str):
            return self.resolve_text(value, field)
        if isinstance(value, list):
            return [self.resolve_any(v, field) for v in value]
        if isinstance(value, dict):
            return {k: self.resolve_any(v, field) for k, v in value.items()}
        return value

    def resolve_text(self, text: str, field: str) -> Any:
        """A text that is one reference: the referenced value with its type; otherwise the text
        with each reference interpolated (objects and lists as compact JSON)."""
        refs = find_references(text, self.labels)
        if not refs:
            return text
        if self.is_single_reference(text):
            return self._value(refs[0], field)
        out = text
        for ref in refs:
            value = self._value(ref, field)
            out = out.replace(ref.token, value if isinstance(value, str) else _compact(value), 1)
        return out

    def bind_expression(self, text: str, field: str) -> BoundExpression:
        """An expression whose references are names bound to the typed values."""
        out, refs = placeholders(text, self.labels)
        return BoundExpression(text=out, bindings={f"__ref{i}": self._value(ref, field) for i, ref in enumerate(refs)})

    def _value(self, ref: Reference, field: str) -> Any:
        try:
            if ref.node_id == SECRETS_NODE_ID and field not in self.secret_fields:
                raise _Unresolved("a secret may stand only in an HTTP Request's URL, headers or body")
            return self._lookup(ref)
        except _Unresolved as exc:
            self.failures.append({"token": ref.token, "field": field, "reason": str(exc)})
            return None

    def _lookup(self, ref: Reference) -> Any:
        steps = ref.steps
        if steps is None:
            raise _Unresolved(f"'{ref.path}' is not a field path (write fields as a.b or items[0].id)")
        if ref.node_id == SYSTEM_NODE_ID:
            name = steps[0]
            if len(steps) != 1 or not isinstance(name, str) or name not in self.system:
                raise _Unresolved(f"the system has no field '{ref.path}'")
            return self.system[name]
        if ref.node_id == SECRETS_NODE_ID:
            return self._secret(steps)
        if ref.node_id not in self.labels:
            raise _Unresolved(f"there is no node '{ref.node_id}' in this workflow")
        raw = self.results.get(ref.node_id)
        result = settled(result_from_json(raw)) if raw is not None else None
        if result is None:
            raise _Unresolved(f"node '{ref.node_id}' has not run before this node (is it connected upstream?)")
        if isinstance(result, Skipped):
            raise _Unresolved(f"node '{ref.node_id}' was skipped (its branch was not taken)")
        if isinstance(result, Failed):
            raise _Unresolved(f"node '{ref.node_id}' failed")
        return walk(result.data, steps, ref.path)

    def _secret(self, steps: list[str | int]) -> str:
        name = steps[0]
        if len(steps) != 1 or not isinstance(name, str):
            raise _Unresolved("a secret is named by one name, e.g. <<@__secrets:Secrets.API_KEY>>")
        if self.secrets is None:
            raise _Unresolved("secrets are not available here")
        try:
            return self.secrets.value(name)
        except SecretUnavailable as exc:
            raise _Unresolved(str(exc)) from exc
        except CodedError as exc:
            raise _Unresolved(exc.message) from exc


def walk(data: Any, steps: list[str | int], path: str) -> Any:
    current = data
    for step in steps:
        if isinstance(step, int):
            if not isinstance(current, list) or step >= len(current):
                raise _Unresolved(f"no item [{step}] in '{path}'")
            current = current[step]
        else:
            if not isinstance(current, dict) or step not in current:
                raise _Unresolved(f"no field '{step}' in '{path}'")
            current = current[step]
    return current


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
