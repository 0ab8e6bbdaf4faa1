"""The Condition evaluator: what it allows and what it refuses."""

from __future__ import annotations

import pytest

from keeperstate.engine.expressions import ConditionInvalid, evaluate


@pytest.mark.parametrize(
    ("text", "bindings", "expected"),
    [
        ("__ref0 > 99", {"__ref0": 100}, True),
        ("__ref0 > __ref1", {"__ref0": 99, "__ref1": 100}, False),
        ("not __ref0 or __ref1 > __ref2", {"__ref0": False, "__ref1": 1, "__ref2": None}, True),
        ("__ref0 == 'main' and 1 + 2 * 3 == 7", {"__ref0": "main"}, True),
        ("(10 - 4) / 4 == 1.5 and 7 % 4 == 3 and 7 // 2 == 3", {}, True),
        ("__ref0 != null", {"__ref0": None}, False),
        ("true and not false", {}, True),
        ("'a' + 'b' == 'ab'", {}, True),
        ("2 in [1, 2, 3]", {}, True),
        ("1 < 2 < 3", {}, True),
        ("-__ref0 == -5", {"__ref0": 5}, True),
        ("[1][0]", {}, 1),  # subscripts on values (DESIGN.md §14)
    ],
)
def test_allowed_expressions(text, bindings, expected):
    assert evaluate(text, bindings) == expected


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os')",
        "().__class__",
        "open('x')",
        "lambda: 1",
        "x",
        "2 ** 10",
        "'a' * 1000000000",
        "1 +",
        "",
        "1 if 2 else 3",
        "[i for i in [1]]",
    ],
)
def test_refused_expressions(text):
    with pytest.raises(ConditionInvalid) as info:
        evaluate(text, {})
    assert info.value.code == "CONDITION_INVALID"


def test_comparing_incompatible_types_explains_itself():
    with pytest.raises(ConditionInvalid, match="Cannot compare a number with null"):
        evaluate("__ref0 > __ref1", {"__ref0": 1, "__ref1": None})


def test_division_by_zero_is_an_error_not_a_crash():
    with pytest.raises(ConditionInvalid, match="divides by zero"):
        evaluate("1 / 0", {})
