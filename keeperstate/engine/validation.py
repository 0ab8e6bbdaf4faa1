"""Static validation of a workflow graph: what the editor's Validate button, the API's validate
endpoint and every save report. Errors make a graph unrunnable; warnings point at likely
mistakes (a reference to a field the node does not output, a node nothing reaches).

Every config field is judged by its own parser (ConfigField.parse), the one the workflow service
stores with: the report carries the nodes with each config parsed (``report.nodes``), so a save
stores exactly what was validated."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from keeperstate.core.errors import Code, CodedError
from keeperstate.core.text import has_nul, text_problem
from keeperstate.engine.expressions import Known, kind_of, known_of, static_type, type_problems
from keeperstate.engine.fields import ConfigField, parse_config, texts_of
from keeperstate.engine.graph import Graph, GraphCycle, GraphInvalid, WorkflowTooLarge, check_size, is_note
from keeperstate.engine.pins import PINNED_KEY
from keeperstate.engine.references import (
    SECRETS_NODE_ID,
    SYSTEM_FIELDS,
    SYSTEM_NODE_ID,
    TOKEN_RE,
    find_references,
    placeholders,
)
from keeperstate.engine.registry import TRIGGERS, ActionDefinition, get_action
from keeperstate.engine.scope import AFTER_HANDLE, Scope, is_trigger, reached_from, scope_of, triggers
from keeperstate.engine.secret_places import holds_secret, misplaced_secrets, not_allowed
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
        check_size(nodes, edges)
    except WorkflowTooLarge as exc:
        report.failed(None, exc)
        return report  # nothing more of it is read
    try:
        graph = Graph.parse(nodes, edges)
    except GraphInvalid as exc:
        report.error(exc.details.get("nodeId"), None, exc.error, exc.message)
        return report
    for problem in shape_problems(nodes, edges):
        report.error(problem.node_id, None, Code.INVALID_SHAPE, problem.message)
    if report.errors:
        return report

    found = triggers(graph)
    if len(found) != 1:
        report.error(None, None, Code.TRIGGER_COUNT,
                     f"A workflow needs exactly one trigger node; this one has {len(found)}.")
    if (loop := graph.cycle()) is not None:
        report.failed(loop[0], GraphCycle(loop))
        return report  # upstream questions have no answer in a cyclic graph

    for node in nodes:
        if is_note(node) and has_nul(node):  # a note is not validated, but jsonb must be able to hold it
            report.error(node["id"], None, Code.INVALID_TEXT, "The note contains the character U+0000; remove it.")
    reachable = reached_from(graph, found) if len(found) == 1 else set(graph.nodes)
    scope = scope_of(graph)
    context = _Context(graph.labels(), scope)
    _check_loops(graph, scope, report)
    for index, edge in enumerate(edges):
        if has_nul(edge):
            report.error(None, None, Code.INVALID_TEXT, f"Edge #{index + 1} contains the character U+0000; remove it.")
        if holds_secret(edge):
            report.failed(None, not_allowed(f"edge #{index + 1}"))
    parsed: dict[str, dict[str, Any]] = {}
    for node_id in graph.nodes:
        _check_text(graph, node_id, report)
        node_definition = None if node_id in found else get_action(graph.action_type(node_id) or "")
        for misplaced in misplaced_secrets(graph.nodes[node_id], node_definition):
            report.failed(node_id, misplaced)
        if ">>" in graph.label(node_id) or "<<" in graph.label(node_id):
            report.error(node_id, "label", Code.INVALID_LABEL)
        if node_id in found:
            parsed[node_id] = _check_trigger(graph, node_id, report)
            continue
        definition = get_action(graph.action_type(node_id) or "")
        if definition is None:
            report.error(node_id, "actionType", Code.UNKNOWN_ACTION,
                         f"Unknown action type '{graph.action_type(node_id)}'. Pick an action from the palette.")
            continue
        parsed[node_id] = _check_config(graph, node_id, definition, report, context)
        _check_handles(graph, node_id, definition, report)
        _check_pin(graph, node_id, definition, report)
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


@dataclass(frozen=True)
class _Context:
    """What every node's checks share, computed once per graph."""

    labels: dict[str, str]
    scope: Scope


def _check_loops(graph: Graph, scope: Scope, report: ValidationReport) -> None:
    """Each For Each's body is reached from its each handle only, is not on its done branch, loops
    nest two deep at most, and a Stop Loop stands in a body (LOOP_BODY_INVALID)."""
    for node_id in graph.nodes:
        definition = get_action(graph.action_type(node_id) or "")
        if definition is not None and definition.stops_loop and node_id not in scope.owners:
            report.error(node_id, None, Code.LOOP_BODY_INVALID,
                         "Stop Loop ends the For Each whose each branch holds it; this one is in no loop's body. "
                         "Connect it on a For Each's each branch (after a Condition, to stop on a test).")
    for loop, body in scope.bodies.items():
        label = graph.label(loop)
        after = reached_from(graph, [e.target for e in graph.outgoing(loop) if e.source_handle == AFTER_HANDLE])
        for node_id in sorted(body & after):
            report.error(node_id, None, Code.LOOP_BODY_INVALID,
                         f"This node is in For Each '{label}''s body and on its done branch; a node runs either "
                         "once per item (each) or once after the loop (done), not both.")
        for node_id in sorted(body):
            for edge in graph.incoming(node_id):
                if edge.source != loop and edge.source not in body:
                    report.error(node_id, None, Code.LOOP_BODY_INVALID,
                                 f"This node is in For Each '{label}''s body but is also reached from "
                                 f"'{graph.label(edge.source)}' outside it; connect the loop's body from its each "
                                 "handle only.")
        if len(scope.enclosing(loop)) >= 2:
            report.error(loop, None, Code.LOOP_BODY_INVALID,
                         "A For Each may sit inside another's body, but not deeper: loops nest two levels at most.")
        for other, other_body in scope.bodies.items():
            if other != loop and body & other_body and other not in body and loop not in other_body:
                report.error(loop, None, Code.LOOP_BODY_INVALID,
                             f"For Each '{label}' and '{graph.label(other)}' share body nodes without one being "
                             "inside the other; give each loop its own nodes.")


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


# "@body.block", "@Cursor.value": what a failed @ pick leaves in a field (an @ not after a word
# character, so an e-mail address is not one, then a name, a dot and a field).
_LITERAL_REFERENCE_RE = re.compile(r"(?<![\w<])@[A-Za-z_][\w-]*\.[A-Za-z_][\w.\[\]-]*")


def _check_config(
    graph: Graph, node_id: str, definition: ActionDefinition, report: ValidationReport, context: _Context
) -> dict[str, Any]:
    config = graph.config(node_id)
    for config_field in definition.config_fields:
        literal = None
        for text in texts_of(config.get(config_field.name)):
            for ref in find_references(text, context.labels):
                _check_reference(graph, node_id, config_field.name, ref, context, report)
            if config_field.accepts_references and literal is None:
                literal = _LITERAL_REFERENCE_RE.search(TOKEN_RE.sub("", text))
        if literal is not None:
            report.warn(node_id, config_field.name, Code.REFERENCE_LITERAL,
                        f"{literal.group(0)} is sent as the text '{literal.group(0)}', not the value it names: "
                        "type @ and pick the field from the list to make it a reference.")
    parsed, errors = parse_config(definition.config_fields, config)
    for exc in errors:
        report.failed(node_id, exc)
    failed = {exc.field for exc in errors}
    for config_field in definition.config_fields:
        if config_field.name in failed:
            continue
        if config_field.kind in ("expression", "assignments"):
            _check_types(graph, node_id, config_field, parsed.get(config_field.name), context, report)
        elif config_field.kind == "json" and isinstance(parsed.get(config_field.name), str):
            _check_json_text(graph, node_id, config_field, parsed[config_field.name], context, report)
    return parsed


_MARK = 7_310_000_000_000  # stands in for a reference in a JSON text: a number nobody writes


def _check_json_text(graph: Graph, node_id: str, config_field: ConfigField, text: str, context: _Context,
                     report: ValidationReport) -> None:
    """A JSON text whose references interpolate as text: one that is known to be text and stands
    outside quotes (``{"hash": <<@…hex>>}``) makes the body no JSON at run time, so it goes out as
    text/plain (or, for JSON-RPC, fails). A warning at the field, saying to quote it."""
    refs = find_references(text, context.labels)
    if not refs or text.strip() == refs[0].token:
        return  # a single reference keeps its type
    probe = text
    for i, ref in enumerate(refs):
        probe = probe.replace(ref.token, str(_MARK + i), 1)
    try:
        bare = _bare_numbers(json.loads(probe))
    except ValueError:
        return  # not written as JSON with the references in it: text, as meant
    for i, ref in enumerate(refs):
        if _MARK + i in bare and _known_reference(graph, ref).type == "string":
            report.warn(node_id, config_field.name, Code.INVALID_JSON,
                        f"{ref.token} is text, so in {config_field.label} it must stand in quotes "
                        f'("{ref.token}"); as written, the value sent is not JSON.')


def _bare_numbers(value: Any) -> set[Any]:
    """The numbers of a parsed JSON value (its texts left out)."""
    if isinstance(value, dict):
        return {n for item in value.values() for n in _bare_numbers(item)}
    if isinstance(value, list):
        return {n for item in value for n in _bare_numbers(item)}
    return {value} if isinstance(value, int) and not isinstance(value, bool) else set()


def _check_types(graph: Graph, node_id: str, config_field: ConfigField, value: Any, context: _Context,
                 report: ValidationReport) -> None:
    """What an expression is sure to refuse when it runs, judged by the types known now (the
    trigger's sample input, declared output fields, the Set Fields above): an error at its field."""
    expressions = (
        [(None, value)] if isinstance(value, str)
        else [(a["name"], a["expression"]) for a in value] if isinstance(value, list) else []
    )
    known: dict[str, Known] = {}
    for name, expression in expressions:
        text, refs = placeholders(expression, context.labels)
        names = {**known, **{f"__ref{i}": _known_reference(graph, ref) for i, ref in enumerate(refs)}}
        for problem in type_problems(text, names):
            where = f"Field {name!r}: " if name else ""
            report.error(node_id, config_field.name, config_field.expression_error.error, where + problem)
        if name is not None:
            known[name] = Known(static_type(text, names))


_DECLARED = {"integer": "integer", "number": "number", "string": "string", "boolean": "boolean", "object": "object"}


def _known_reference(graph: Graph, ref: Any) -> Known:
    """What is known of a referenced value before the run: a sample input's value, or the type a
    node's action declares for the field (a top-level field only)."""
    steps = ref.steps
    if ref.node_id == SECRETS_NODE_ID:
        return Known("string")
    if ref.node_id == SYSTEM_NODE_ID and steps and len(steps) == 1 and steps[0] in SYSTEM_FIELDS:
        return Known(SYSTEM_FIELDS[steps[0]][0])
    if not steps or ref.node_id not in graph.nodes:
        return Known(None)
    if is_trigger(graph, ref.node_id):
        value: Any = graph.config(ref.node_id).get("sampleInput")
        for step in steps:
            if isinstance(step, int) and isinstance(value, list) and step < len(value):
                value = value[step]
            elif isinstance(step, str) and isinstance(value, dict) and step in value:
                value = value[step]
            else:
                return Known(None)
        return known_of(value)
    definition = get_action(graph.action_type(ref.node_id) or "")
    if definition is None or len(steps) != 1:
        return Known(None)
    declared = next((f for f in definition.outputs_of(graph.config(ref.node_id)) if f.name == steps[0]), None)
    return Known(_DECLARED.get(declared.type) if declared else None)


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
    if not context.scope.runs_before(ref.node_id, node_id):
        report.error(
            node_id, field_name, Code.REFERENCE_NOT_UPSTREAM,
            f"{ref.token} points at node '{ref.node_id}', which does not run before this node. Connect it upstream.",
        )
        return
    known = known_output_fields(graph, ref.node_id)
    if known is not None and steps[0] not in known:
        message = (f"{ref.token}: '{graph.label(ref.node_id)}' has no output field '{steps[0]}' "
                   f"(it has {', '.join(sorted(known)) or 'none'}).")
        if is_trigger(graph, ref.node_id):
            report.warn(node_id, field_name, Code.REFERENCE_UNKNOWN_FIELD, message)  # a sample is only an example
        else:  # an action declares its outputs: no run will have another field
            report.error(node_id, field_name, Code.REFERENCE_UNKNOWN_FIELD, message)
        return
    _check_loop_scope(graph, node_id, field_name, ref, steps[0], context, report)


def _check_loop_scope(graph: Graph, node_id: str, field_name: str, ref: Any, output: Any, context: _Context,
                      report: ValidationReport) -> None:
    """A loop's item and index are read inside its body only; its count and the rest after it."""
    definition = get_action(graph.action_type(ref.node_id) or "")
    declared = definition.output_field(output) if definition is not None and definition.loop else None
    if declared is None or declared.loop_scope is None:
        return
    inside = node_id in context.scope.bodies.get(ref.node_id, frozenset())
    if declared.loop_scope == "body" and not inside:
        report.error(node_id, field_name, Code.LOOP_BODY_INVALID,
                     f"{ref.token}: '{output}' is the current item's, read inside For Each "
                     f"'{graph.label(ref.node_id)}''s body (its each branch) only.")
    elif declared.loop_scope == "after" and inside:
        report.error(node_id, field_name, Code.LOOP_BODY_INVALID,
                     f"{ref.token}: '{output}' is known after For Each '{graph.label(ref.node_id)}' ends; inside "
                     "its body read item and index.")


def known_output_fields(graph: Graph, node_id: str) -> set[str] | None:
    """The top-level output fields a node is known to produce; None when unknown (no sample)."""
    if is_trigger(graph, node_id):
        sample = graph.config(node_id).get("sampleInput")
        return set(sample) if isinstance(sample, dict) else None
    definition = get_action(graph.action_type(node_id) or "")
    return {f.name for f in definition.outputs_of(graph.config(node_id))} if definition else None


def _check_pin(graph: Graph, node_id: str, definition: ActionDefinition, report: ValidationReport) -> None:
    """Pinned data (keeperstate.engine.pins) stands in for the node's output: a JSON object, like
    every action's data. A loop's output is its items, which the runner needs: it cannot be pinned."""
    data = graph.nodes[node_id].get("data") or {}
    if PINNED_KEY not in data:
        return
    if definition.loop:
        report.error(node_id, PINNED_KEY, Code.PINNED_DATA_INVALID,
                     "A For Each cannot be pinned: it runs its body for its items. Pin a node inside or before it.")
    elif not isinstance(data[PINNED_KEY], dict):
        report.error(node_id, PINNED_KEY, Code.PINNED_DATA_INVALID,
                     f"Pinned data of '{graph.label(node_id)}' is {kind_of(data[PINNED_KEY])}; it stands in for "
                     "the node's output, which is a JSON object such as {\"status\": 200}.")


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
