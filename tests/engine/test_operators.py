"""One table decides what each operator does with each JSON type (expressions.OPERATORS): the
evaluator follows it in a run, the validator before one, and a refusal reads the same in both,
with the documented codes (DESIGN.md §14)."""

from __future__ import annotations

from itertools import product

import pytest

from keeperstate.engine import runner
from keeperstate.engine.context import RunContext
from keeperstate.engine.expressions import (
    OPERATORS,
    ConditionInvalid,
    ExpressionInvalid,
    Known,
    evaluate,
    json_type,
    known_of,
    static_type,
    type_problems,
)
from keeperstate.engine.validation import validate_graph

# One value of each JSON type: no zero (a division), no text that reads as a number (§14's rule).
SAMPLES = {"null": None, "boolean": True, "integer": 3, "number": 1.5, "string": "a", "array": [1],
           "object": {"a": 1}}
BINARY = sorted({symbol for symbol, types in OPERATORS if len(types) == 2})
PAIRS = [(symbol, left, right) for symbol in BINARY for left, right in product(SAMPLES, SAMPLES)]


def outcome_in_a_run(text: str, *values: object) -> tuple[str | None, str | None]:
    """(the result's JSON type, None) or (None, the refusal) of evaluating the text."""
    try:
        result = evaluate(text, {f"__ref{i}": v for i, v in enumerate(values)}, error=ExpressionInvalid)
    except ExpressionInvalid as exc:
        return None, exc.message
    return json_type(result), None


def test_a_run_does_what_the_table_says():
    # every operator on a value of every JSON type: the result's type, or a refusal where the table has None
    outcomes = {(s, left, right): outcome_in_a_run(f"__ref0 {s} __ref1", SAMPLES[left], SAMPLES[right])
                for s, left, right in PAIRS}

    assert {key: result for key, (result, _refusal) in outcomes.items()} == {key: OPERATORS[key[0], key[1:]]
                                                                             for key in PAIRS}


def test_before_a_run_the_same_types_tell_the_same():
    wrong = []
    for symbol, left, right in PAIRS:
        names, text = {"__ref0": Known(left), "__ref1": Known(right)}, f"__ref0 {symbol} __ref1"
        expected = OPERATORS[symbol, (left, right)]
        refused = bool(type_problems(text, names))
        if refused != (expected is None) or (expected is not None and static_type(text, names) != expected):
            wrong.append((symbol, left, right))

    assert wrong == []


def test_a_refusal_reads_the_same_before_a_run_and_in_it():
    differ = []
    for symbol, left, right in (p for p in PAIRS if OPERATORS[p[0], p[1:]] is None):
        text, values = f"__ref0 {symbol} __ref1", (SAMPLES[left], SAMPLES[right])
        _result, in_a_run = outcome_in_a_run(text, *values)
        before = type_problems(text, {"__ref0": known_of(values[0]), "__ref1": known_of(values[1])})
        if before != [in_a_run]:
            differ.append((text, values, before, in_a_run))

    assert differ == []


@pytest.mark.parametrize(
    ("text", "refused"),
    [
        ("__ref0 + __ref1", False),  # text + an unknown value may be two texts joined
        ("__ref0 - __ref1", True),  # text - anything never is
        ("__ref1 > __ref0", False),  # an unknown value may be text too
        ("-__ref0", True),
    ],
)
def test_an_unknown_type_gets_the_benefit_of_the_doubt(text, refused):
    names = {"__ref0": Known("string", "abc"), "__ref1": Known(None)}

    assert bool(type_problems(text, names)) == refused


def test_a_sign_follows_the_table_too():
    assert [OPERATORS["-", (t,)] for t in ("integer", "number", "string")] == ["integer", "number", None]
    assert outcome_in_a_run("-__ref0", "a") == (None, type_problems("-__ref0", {"__ref0": known_of("a")})[0])


def _condition_graph(condition: str, sample: dict[str, object]) -> tuple[list[dict], list[dict]]:
    nodes = [
        {"id": "trigger", "type": "trigger",
         "data": {"label": "Trigger", "config": {"triggerType": "Manual", "sampleInput": sample}}},
        {"id": "check", "type": "action",
         "data": {"label": "Check", "config": {"actionType": "Condition", "condition": condition}}},
    ]
    return nodes, [{"id": "e1", "source": "trigger", "target": "check"}]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("sample", "condition"),
    [
        ({"block": "0x10", "head": "0xf"}, "<<@trigger:Trigger.block>> > <<@trigger:Trigger.head>>"),
        ({"block": "0x10"}, "<<@trigger:Trigger.block>> > 15"),
        ({"block": "abc"}, "<<@trigger:Trigger.block>> + 1 > 2"),
        ({"block": None}, "<<@trigger:Trigger.block>> >= 1"),
    ],
)
def test_a_condition_says_the_same_at_save_and_at_run(sample, condition):
    # given a Condition its sample input is sure to fail
    nodes, edges = _condition_graph(condition, sample)

    # when it is validated, and when it runs on that input
    saved = validate_graph(nodes, edges).errors
    ran = runner.run_graph(nodes, edges, sample, RunContext()).results["check"]

    # then both say CONDITION_INVALID in the same words
    assert [(f.field, f.code, f.message) for f in saved] == [("condition", ran.code, ran.error)]
    assert ran.code == ConditionInvalid.error.name
