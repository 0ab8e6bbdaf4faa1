"""The expression language of DESIGN.md §14: its closed list of functions, subscripts, JSON's
equality, and the refusal to order texts that read as numbers."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from keeperstate.engine.expressions import (
    ConditionInvalid,
    ExpressionInvalid,
    Known,
    check_syntax,
    evaluate,
    static_type,
    type_problems,
)

WEI = 2**70 + 12345  # beyond 2^64: a wei amount


def run(text, **bindings):
    return evaluate(text, bindings, error=ExpressionInvalid)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("number('0x10')", 16),
        ("number('0X1a')", 26),
        ("number(' 42 ')", 42),
        ("number('-1.5')", -1.5),
        ("number(7)", 7),
        (f"number('{hex(WEI)}')", WEI),
        (f"number('{WEI}')", WEI),
        (f"number('{2**256 - 1}')", 2**256 - 1),  # a uint256, past any fixed number of digits
        ("hex(255)", "0xff"),
        (f"hex({WEI})", hex(WEI)),
        ("text(5)", "5"),
        ("text([1, 'a'])", '[1,"a"]'),
        ("text(true)", "true"),
        ("length('abc')", 3),
        ("length([1, 2])", 2),
        ("min(3, 1, 2)", 1),
        ("max([3, 9])", 9),
        ("abs(-4)", 4),
        ("round(2.5)", 3),
        ("round(-2.5)", -3),
        ("floor(2.7)", 2),
        ("ceil(2.1)", 3),
        ("lower('AbC')", "abc"),
        ("upper('abc')", "ABC"),
        ("trim('  x ')", "x"),
        ("startsWith('0xabc', '0x')", True),
        ("contains('hello', 'ell')", True),
        ("contains([1, 2], 2)", True),
        ("contains([1, 2], true)", False),  # true is not 1
        ("coalesce(null, null, 3)", 3),
        ("if(true, 'yes', 'no')", "yes"),
        ("if(false, 1 / 0, 'no')", "no"),  # only the branch taken runs
        ("json('{\"a\": [1]}')", {"a": [1]}),
        ("range(3, 6)", [3, 4, 5, 6]),
        ("range(5, 4)", []),
        ("append([1, 2], 3)", [1, 2, 3]),
        ("append([], [1])", [[1]]),  # the item as it is, a list too
        ("reverse([1, 2, 3])", [3, 2, 1]),
        ("reverse([])", []),
        ("slice([1, 2, 3, 4], 1)", [2, 3, 4]),
        ("slice([1, 2, 3, 4], -2)", [3, 4]),  # the last two
        ("slice([1, 2, 3, 4], 0, -1)", [1, 2, 3]),  # all but the last
        ("slice([1, 2, 3], 1, 2)", [2]),
        ("slice([1, 2, 3], -10)", [1, 2, 3]),  # bounds beyond the list are clamped, as JavaScript's
        ("slice([1, 2, 3], 5)", []),
        ("slice('0xabcdef', 2, 4)", "ab"),
        ("slice(append(['a', 'b', 'c'], 'd'), -3)", ["b", "c", "d"]),  # a window of the newest three
        ("[10, 20, 30][1]", 20),
        ("[10, 20, 30][-1]", 30),
        ("x['name']", "cursor"),
        ("true == 1", False),
        ("1 == 1.0", True),
        (f"number('{hex(WEI)}') + 1 > {WEI}", True),
        ("'a' + 'b'", "ab"),
        ("'apple' < 'banana'", True),  # text that does not read as numbers orders as text
    ],
)
def test_functions_and_values(text, expected):
    assert run(text, x={"name": "cursor"}) == expected


def test_number_keeps_whole_text_whole_and_exact():
    assert [(v, type(v)) for v in (run("number('+7')"), run("number(' -7 ')"))] == [(7, int), (-7, int)]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("'0x10' > '0xf'", "Wrap each side in number()"),  # text order puts 0x10 first: never silently
        ("'10' < '9'", "Wrap each side in number()"),
        ("'0x10' > 15", "Cannot compare text with a number"),
        ("number('0xzz')", "number() takes"),
        ("number(true)", "number() takes"),
        ("number('٣')", "number() takes"),  # ASCII digits only (keeperstate.core.numbers)
        ("number('1e999')", "number() cannot hold '1e999'"),
        ("hex(-1)", "hex() takes a whole number of 0 or more"),
        ("hex(1.5)", "hex() takes a whole number"),
        ("range(1, 20000)", "at most 10000"),
        ("range('1', 3)", "wrap text in number()"),
        ("if(1, 2, 3)", "if() needs true or false first"),
        ("x['missing']", "has no field 'missing'"),
        ("[1][5]", "has no item [5]"),
        ("json('{')", "json() takes JSON text"),
        ("lower(5)", "lower() takes text"),
        ("'a' + 1", "'+' needs numbers"),
        ("1 / 0", "divides by zero"),
        ("eval('1')", "eval() is not a function"),
        ("x.keys()", "attribute access"),
        ("number()", "takes 1 argument"),
        ("{'a': 1}", "an object literal"),
        ("[1, 2][0:1]", "a slice (x[0:2]; take one item with x[0])"),
        ("append('ab', 'c')", "append() takes a list, not text"),
        ("reverse('abc')", "reverse() takes a list"),
        ("slice(5, 1)", "slice() takes a list or text"),
        ("slice([1], '1')", "slice() takes whole numbers"),
        ("slice([1], 0.5)", "slice() takes whole numbers"),
        ("slice([1], true)", "slice() takes whole numbers"),
        ("slice([1])", "takes 2 to 3 argument(s)"),
    ],
)
def test_refusals_say_what_to_do(text, message):
    with pytest.raises(ExpressionInvalid, match=re.escape(message)):
        run(text, x={"name": "cursor"})


def test_a_condition_refuses_with_its_own_code_and_other_fields_with_theirs():
    with pytest.raises(ConditionInvalid) as condition:
        evaluate("'0x10' > '0xf'", {})
    with pytest.raises(ExpressionInvalid) as expression:
        evaluate("'0x10' > '0xf'", {}, error=ExpressionInvalid)

    assert (condition.value.code, expression.value.code) == ("CONDITION_INVALID", "EXPRESSION_INVALID")


def test_if_is_a_function_even_though_it_is_a_python_keyword():
    assert run("if(__ref0 > 1, 'big', 'small') + ' / ' + 'if('", __ref0=3) == "big / if("


def test_names_outside_the_bound_ones_are_refused_when_checked_with_names():
    check_syntax("head + 1", error=ExpressionInvalid, names={"head"})
    with pytest.raises(ExpressionInvalid, match="'start' is not a value"):
        check_syntax("start + 1", error=ExpressionInvalid, names={"head"})


@given(st.integers(min_value=0, max_value=2**256))
def test_number_of_hex_is_the_number_at_any_size(n):
    assert run("number(hex(__ref0))", __ref0=n) == n
    assert run("number(text(__ref0))", __ref0=n) == n


@given(st.integers(min_value=0, max_value=2**256), st.integers(min_value=0, max_value=2**256))
def test_hex_texts_compare_as_their_numbers_once_wrapped(a, b):
    assert run("number(hex(__ref0)) < number(hex(__ref1))", __ref0=a, __ref1=b) == (a < b)


def test_types_known_before_a_run():
    assert static_type("number(<<x>>)".replace("<<x>>", "__ref0")) == "number"
    assert static_type("hex(1)") == "string"
    assert static_type("range(1, 3)") == "array"
    assert static_type("append([], 1)") == "array"
    assert static_type("reverse([1])") == "array"
    assert static_type("slice([1, 2], 1)") == "array"
    assert static_type("slice('abc', 1)") == "string"
    assert static_type("slice(__ref0, 1)") is None  # a list or a text: known when the run has it
    assert static_type("1 + 2") == "integer"
    assert static_type("if(true, 'a', 'b')") == "string"
    assert static_type("__ref0", {"__ref0": Known("boolean")}) == "boolean"


def test_type_problems_that_a_run_would_meet():
    text_sample = {"__ref0": Known("string", "0x10"), "__ref1": Known("string", "0xf")}

    assert type_problems("__ref0 > __ref1", text_sample)  # two numeric-looking texts by order
    assert type_problems("__ref0 > 15", {"__ref0": Known("string", "abc")})
    assert type_problems("__ref0 + 1", {"__ref0": Known("string")})
    assert not type_problems("number(__ref0) > number(__ref1)", text_sample)
    assert not type_problems("__ref0 > 15", {"__ref0": Known(None)})  # unknown: judged at run time
