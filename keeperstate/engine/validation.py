"""Static validation of a workflow graph: what the editor's Validate button, the API's validate
endpoint and every save report. Errors make a graph unrunnable; warnings point at likely
mistakes (a reference to a field the node does not output, a node nothing reaches).

Every config field is judged by its own parser (ConfigField.parse), the one the workflow service
stores with: the report carries the nodes with each config parsed (``report.nodes``), so a save
stores exactly what was validated."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from keeperstate.core.errors import Code, CodedError
from keeperstate.core.text import has_nul, text_problem
from keeperstate.engine.fields import parse_config, texts_of
from keeperstate.engine.graph import Graph, GraphCycle, GraphInvalid
from keeperstate.engine.references import SECRETS_NODE_ID, SYSTEM_FIELDS, SYSTEM_NODE_ID, find_references
from keeperstate.engine.registry import TRIGGERS, ActionDefinition, get_action
from keeperstate.engine.shapes import shape_problems
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
    # The nodes with every config field parsed (a field that failed keeps its value as given).
    nodes: Any = None

    @property
    def valid(self) -> bool:
        return not self.errors

    def as_dict(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "errors": [f.as_dict() for f in self.errors],
            "warnings": [f.as_dict() for f in self.warnings],
        }

    def error(self, node_id: str | None, field_name: str | None, error: Code, message: str | None = None) -> None:
        self.errors.append(Finding(node_id, field_name, error.name, message or error.message))

    def warn(self, node_id: str | None, field_name: str | None, error: Code, message: str | None = None) -> None:
        self.warnings.append(Finding(node_id, field_name, error.name, message or error.message))

    def failed(self, node_id: str | None, exc: CodedError) -> None:
        """A coded error as an error of the report, at its field."""
        self.errors.append(Finding(node_id, exc.field, exc.code, exc.message))


def validate_graph(nodes: Any, edges: Any) -> ValidationReport:
    report = ValidationReport(nodes=nodes)
    try:
        graph = Graph.parse(nodes, edges)
    except GraphInvalid as exc:
        report.error(exc.details.get("nodeId"), None, exc.error, exc.message)
        return report
    for problem in shape_problems(nodes, edges):
        report.error(problem.node_id, None, Code.INVALID_SHAPE, problem.message)
    if report.errors:
        return report

    triggers = graph.triggers()
    if len(triggers) != 1:
        report.error(None, None, Code.TRIGGER_COUNT,
                     f"A workflow needs exactly one trigger node; this one has {len(triggers)}.")
    if (loop := graph.cycle()) is not None:
        report.failed(loop[0], GraphCycle(loop))
        return report  # upstream questions have no answer in a cyclic graph

    reachable = _reachable(graph, triggers[0]) if len(triggers) == 1 else set(graph.nodes)
    # Computed once for the whole graph: asking each node for its upstream list is quadratic.
    context = _Context(graph.labels(), graph.upstream_test())
    for index, edge in enumerate(edges):
        if has_nul(edge):
            report.error(None, None, Code.INVALID_TEXT, f"Edge #{index + 1} contains the character U+0000; remove it.")
    parsed: dict[str, dict[str, Any]] = {}
    for node_id in graph.nodes:
        _check_text(graph, node_id, report)
        if ">>" in graph.label(node_id) or "<<" in graph.label(node_id):
            report.error(node_id, "label", Code.INVALID_LABEL)
        if node_id in triggers:
            parsed[node_id] = _check_trigger(graph, node_id, report)
            continue
        definition = get_action(graph.action_type(node_id) or "")
        if definition is None:
            report.error(node_id, "actionType", Code.UNKNOWN_ACTION,
                         f"Unknown action type '{graph.action_type(node_id)}'. Pick an action from the palette.")
            continue
        parsed[node_id] = _check_config(graph, node_id, definition, report, context)
        _check_handles(graph, node_id, definition, report)
        if node_id not in reachable:
            report.warn(node_id, None, Code.UNREACHABLE)
    report.nodes = [_with_config(node, parsed.get(node["id"])) for node in nodes]
    return report


def _with_config(node: dict[str, Any], config: dict[str, Any] | None) -> dict[str, Any]:
    if config is None or config == (node.get("data") or {}).get("config"):
        return node
    return {**node, "data": {**node["data"], "config": config}}


def _check_text(graph: Graph, node_id: str, report: ValidationReport) -> None:
    """The text rules every way in shares (keeperstate.core.text): ids and labels are names people
    read and reference, so no invisible or control characters (sample-input fields: the trigger's
    own check); and no U+0000 anywhere in the node, which Postgres jsonb cannot store."""
    if problem := text_problem(node_id):
        report.error(node_id, "id", Code.INVALID_NODE_ID, f"The node id {problem}.")
    label = (graph.nodes[node_id].get("data") or {}).get("label")
    if isinstance(label, str) and (problem := text_problem(label)):
        report.error(node_id, "label", Code.INVALID_LABEL, f"The label {problem}.")
    if has_nul(graph.nodes[node_id]):
        report.error(node_id, None, Code.INVALID_TEXT, "The node contains the character U+0000; remove it.")


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


def _check_trigger(graph: Graph, node_id: str, report: ValidationReport) -> dict[str, Any]:
    config = graph.config(node_id)
    trigger_type = config.get("triggerType", "Manual")
    definition = TRIGGERS.get(trigger_type) if isinstance(trigger_type, str) else None
    if definition is None:
        report.error(node_id, "triggerType", Code.UNKNOWN_TRIGGER,
                     f"Unknown trigger type '{trigger_type}'. Use one of: {', '.join(TRIGGERS)}.")
        return config
    parsed, errors = parse_config(definition.config_fields, config)
    for exc in errors:
        report.failed(node_id, exc)
    if definition.check_config is not None and not errors:
        try:
            definition.check_config(parsed)
        except CodedError as exc:
            report.failed(node_id, exc)
    return parsed


def _check_config(
    graph: Graph, node_id: str, definition: ActionDefinition, report: ValidationReport, context: _Context
) -> dict[str, Any]:
    config = graph.config(node_id)
    for config_field in definition.config_fields:
        for text in texts_of(config.get(config_field.name)):
            for ref in find_references(text, context.labels):
                _check_reference(graph, node_id, config_field.name, ref, context, report)
    parsed, errors = parse_config(definition.config_fields, config)
    for exc in errors:
        report.failed(node_id, exc)
    return parsed


def _check_reference(
    graph: Graph, node_id: str, field_name: str, ref: Any, context: _Context, report: ValidationReport
) -> None:
    steps = ref.steps
    if steps is None:
        return  # the field's parser reports REFERENCE_INVALID
    if ref.node_id == SYSTEM_NODE_ID:
        if len(steps) != 1 or steps[0] not in SYSTEM_FIELDS:
            report.error(node_id, field_name, Code.REFERENCE_UNKNOWN_FIELD,
                         f"{ref.token}: the system has no such field.")
        return
    if ref.node_id == SECRETS_NODE_ID:
        if len(steps) != 1 or not isinstance(steps[0], str) or not SECRET_NAME_RE.match(steps[0]):
            report.error(
                node_id, field_name, Code.REFERENCE_INVALID,
                f"{ref.token}: a secret is named with letters, digits and _ (1–64), "
                "e.g. <<@__secrets:Secrets.API_KEY>>.",
            )
        return
    if ref.node_id not in graph.nodes:
        report.error(node_id, field_name, Code.REFERENCE_MISSING_NODE,
                     f"{ref.token} points at node '{ref.node_id}', which is gone.")
        return
    if not context.is_upstream(ref.node_id, node_id):
        report.error(
            node_id, field_name, Code.REFERENCE_NOT_UPSTREAM,
            f"{ref.token} points at node '{ref.node_id}', which does not run before this node. Connect it upstream.",
        )
        return
    known = known_output_fields(graph, ref.node_id)
    if known is not None and steps[0] not in known:
        report.warn(
            node_id, field_name, Code.REFERENCE_UNKNOWN_FIELD,
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
                node_id, None, Code.INVALID_HANDLE,
                f"Edge '{edge.id}' leaves {definition.label} without a branch; connect it from "
                f"{' or '.join(definition.source_handles)}.",
            )
