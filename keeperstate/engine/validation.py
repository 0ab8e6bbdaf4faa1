"""Static validation of a workflow graph: what the editor's Validate button, the API's validate
endpoint and every save report. Errors make a graph unrunnable; warnings point at likely
mistakes (a reference to a field the node does not output, a node nothing reaches)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from keeperstate.core.errors import CodedError
from keeperstate.core.text import has_nul, text_problem
from keeperstate.engine.expressions import check_syntax
from keeperstate.engine.graph import Graph, GraphInvalid
from keeperstate.engine.references import (
    SECRETS_NODE_ID,
    SYSTEM_FIELDS,
    SYSTEM_NODE_ID,
    TOKEN_RE,
    find_references,
)
from keeperstate.engine.registry import TRIGGERS, ActionDefinition, ConfigField, get_action
from keeperstate.secrets.names import SECRET_NAME_RE


@dataclass(frozen=True)
class Finding:
    node_id: str | None
    field: str | None
    code: str
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"nodeId": self.node_id, "field": self.field, "code": self.code, "message": self.message}


@dataclass
class ValidationReport:
    errors: list[Finding] = field(default_factory=list)
    warnings: list[Finding] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        return not self.errors

    def as_dict(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "errors": [f.as_dict() for f in self.errors],
            "warnings": [f.as_dict() for f in self.warnings],
        }

    def error(self, node_id: str | None, field_name: str | None, code: str, message: str) -> None:
        self.errors.append(Finding(node_id, field_name, code, message))

    def warn(self, node_id: str | None, field_name: str | None, code: str, message: str) -> None:
        self.warnings.append(Finding(node_id, field_name, code, message))


def validate_graph(nodes: Any, edges: Any) -> ValidationReport:
    report = ValidationReport()
    try:
        graph = Graph.parse(nodes, edges)
    except GraphInvalid as exc:
        report.error(exc.details.get("nodeId"), None, exc.code, exc.message)
        return report

    triggers = graph.triggers()
    if len(triggers) != 1:
        report.error(
            None,
            None,
            "TRIGGER_COUNT",
            f"A workflow needs exactly one trigger node; this one has {len(triggers)}.",
        )
    if (loop := graph.cycle()) is not None:
        report.error(loop[0], None, "CYCLE", f"The workflow has a cycle ({' → '.join(loop)}); remove one of its edges.")
        return report  # upstream questions have no answer in a cyclic graph

    reachable = _reachable(graph, triggers[0]) if len(triggers) == 1 else set(graph.nodes)
    # Computed once for the whole graph: asking each node for its upstream list is quadratic.
    context = _Context(graph.labels(), graph.upstream_test())
    for index, edge in enumerate(edges):
        if has_nul(edge):
            report.error(None, None, "INVALID_TEXT", f"Edge #{index + 1} contains the character U+0000; remove it.")
    for node_id in graph.nodes:
        _check_text(graph, node_id, report)
        if ">>" in graph.label(node_id) or "<<" in graph.label(node_id):
            report.error(
                node_id, "label", "INVALID_LABEL", "A node label cannot contain '<<' or '>>' (they delimit references)."
            )
        if node_id in triggers:
            _check_trigger(graph, node_id, report)
            continue
        definition = get_action(graph.action_type(node_id) or "")
        if definition is None:
            report.error(
                node_id,
                "actionType",
                "UNKNOWN_ACTION",
                f"Unknown action type '{graph.action_type(node_id)}'. Pick an action from the palette.",
            )
            continue
        _check_config(graph, node_id, definition, report, context)
        _check_handles(graph, node_id, definition, report)
        if node_id not in reachable:
            report.warn(node_id, None, "UNREACHABLE", "No path from the trigger reaches this node, so it never runs.")
    return report


def _check_text(graph: Graph, node_id: str, report: ValidationReport) -> None:
    """The text rules every way in shares (keeperstate.core.inputs): ids and labels are names people
    read and reference, so no invisible or control characters (sample-input fields: the trigger's
    own check); and no U+0000 anywhere in the node, which Postgres jsonb cannot store."""
    if problem := text_problem(node_id):
        report.error(node_id, "id", "INVALID_NODE_ID", f"The node id {problem}.")
    label = (graph.nodes[node_id].get("data") or {}).get("label")
    if isinstance(label, str) and (problem := text_problem(label)):
        report.error(node_id, "label", "INVALID_LABEL", f"The label {problem}.")
    if has_nul(graph.nodes[node_id]):
        report.error(node_id, None, "INVALID_TEXT", "The node contains the character U+0000; remove it.")


def _reachable(graph: Graph, start: str) -> set[str]:
    seen = {start}
    pending = [start]
    while pending:
        for e in graph.outgoing(pending.pop()):
            if e.target not in seen:
                seen.add(e.target)
                pending.append(e.target)
    return seen


@dataclass(frozen=True)
class _Context:
    """What every node's checks share, computed once per graph."""

    labels: dict[str, str]
    is_upstream: Callable[[str, str], bool]


def _check_trigger(graph: Graph, node_id: str, report: ValidationReport) -> None:
    trigger_type = graph.config(node_id).get("triggerType", "Manual")
    if not isinstance(trigger_type, str) or trigger_type not in TRIGGERS:
        report.error(
            node_id,
            "triggerType",
            "UNKNOWN_TRIGGER",
            f"Unknown trigger type '{trigger_type}'. Use one of: {', '.join(TRIGGERS)}.",
        )
    definition = TRIGGERS.get(trigger_type) if isinstance(trigger_type, str) else None
    found = False
    for config_field in definition.config_fields if definition else ():
        raw = graph.config(node_id).get(config_field.name)
        if raw not in (None, "") and (problem := field_problem(config_field, raw)) is not None:
            report.error(node_id, config_field.name, *problem)
            found = True
    if definition is not None and definition.check_config is not None and not found:
        try:
            definition.check_config(graph.config(node_id))
        except CodedError as exc:
            report.error(node_id, exc.field, exc.code, exc.message)


def _check_config(
    graph: Graph, node_id: str, definition: ActionDefinition, report: ValidationReport, context: _Context
) -> None:
    config = graph.config(node_id)
    for config_field in definition.config_fields:
        raw = config.get(config_field.name)
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            if config_field.required:
                report.error(
                    node_id,
                    config_field.name,
                    "REQUIRED",
                    f"{config_field.label} is required.",  # the form shows the help beside it
                )
            continue
        refs = [ref for text in _texts(raw) for ref in find_references(text, context.labels)]
        for ref in refs:
            _check_reference(graph, node_id, config_field.name, ref, context, report)
        problem = field_problem(config_field, raw)
        if problem is not None:
            report.error(node_id, config_field.name, *problem)


def _texts(raw: Any) -> list[str]:
    """Every text in a field's value: references may sit in an object's values (headers, a body)."""
    if isinstance(raw, str):
        return [raw]
    if isinstance(raw, list):
        return [t for item in raw for t in _texts(item)]
    if isinstance(raw, dict):
        return [t for item in raw.values() for t in _texts(item)]
    return []


def field_problem(config_field: ConfigField, raw: Any) -> tuple[str, str] | None:
    """(code, message) of what is wrong with a field's raw value, judged without running it.

    Shared with the builder's forms: integer fields take a literal or exactly one reference, an
    expression must parse, and a literal is checked as the action would check it.
    """
    text = raw if isinstance(raw, str) else None
    tokens = TOKEN_RE.findall(text) if text is not None else []
    if config_field.kind == "integer" and tokens:
        if len(tokens) != 1 or text is None or TOKEN_RE.fullmatch(text.strip()) is None:
            return (
                "INVALID_NUMBER",
                f"{config_field.label} takes a whole number or exactly one @ reference, nothing around it.",
            )
        return None
    if config_field.kind == "select" and raw not in config_field.choices:
        return (
            "INVALID_CHOICE",
            f"{config_field.label} must be one of: {', '.join(config_field.choices)}.",
        )
    if config_field.kind == "expression":
        try:
            check_syntax(TOKEN_RE.sub(" __ref ", text or ""))
        except CodedError as exc:
            return exc.code, exc.message
        return None
    # A pairs object keeps its shape and names whatever its values reference, so it is always checked.
    if (tokens and config_field.kind != "pairs") or config_field.check is None:
        return None
    try:
        config_field.check(raw)
    except CodedError as exc:
        return exc.code, exc.message
    return None


def _check_reference(
    graph: Graph, node_id: str, field_name: str, ref: Any, context: _Context, report: ValidationReport
) -> None:
    steps = ref.steps
    if steps is None:
        report.error(node_id, field_name, "REFERENCE_INVALID", f"{ref.token} does not name a field.")
        return
    if ref.node_id == SYSTEM_NODE_ID:
        if len(steps) != 1 or steps[0] not in SYSTEM_FIELDS:
            report.error(node_id, field_name, "REFERENCE_UNKNOWN_FIELD", f"{ref.token}: the system has no such field.")
        return
    if ref.node_id == SECRETS_NODE_ID:
        if len(steps) != 1 or not isinstance(steps[0], str) or not SECRET_NAME_RE.match(steps[0]):
            report.error(
                node_id, field_name, "REFERENCE_INVALID",
                f"{ref.token}: a secret is named with letters, digits and _ (1–64), "
                "e.g. <<@__secrets:Secrets.API_KEY>>.",
            )
        return
    if ref.node_id not in graph.nodes:
        report.error(
            node_id, field_name, "REFERENCE_MISSING_NODE", f"{ref.token} points at node '{ref.node_id}', which is gone."
        )
        return
    if not context.is_upstream(ref.node_id, node_id):
        report.error(
            node_id,
            field_name,
            "REFERENCE_NOT_UPSTREAM",
            f"{ref.token} points at node '{ref.node_id}', which does not run before this node. Connect it upstream.",
        )
        return
    known = known_output_fields(graph, ref.node_id)
    if known is not None and steps[0] not in known:
        report.warn(
            node_id,
            field_name,
            "REFERENCE_UNKNOWN_FIELD",
            f"{ref.token}: '{graph.label(ref.node_id)}' has no output field '{steps[0]}' "
            f"(it has {', '.join(sorted(known)) or 'none'}).",
        )


def known_output_fields(graph: Graph, node_id: str) -> set[str] | None:
    """The top-level output fields a node is known to produce; None when unknown (no sample)."""
    node = graph.nodes[node_id]
    if node.get("type") == "trigger":
        sample = graph.config(node_id).get("sampleInput")
        return set(sample) if isinstance(sample, dict) else None
    definition = get_action(graph.action_type(node_id) or "")
    return {f.name for f in definition.output_fields} if definition else None


def _check_handles(graph: Graph, node_id: str, definition: ActionDefinition, report: ValidationReport) -> None:
    if not definition.source_handles:
        return
    for edge in graph.outgoing(node_id):
        if edge.source_handle is None and definition.default_handle is not None:
            continue
        if edge.source_handle not in definition.source_handles:
            report.error(
                node_id,
                None,
                "INVALID_HANDLE",
                f"Edge '{edge.id}' leaves {definition.label} without a branch; connect it from "
                f"{' or '.join(definition.source_handles)}.",
            )
