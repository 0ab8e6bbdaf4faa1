"""The one safe expression language (DESIGN.md §14): Condition, Set Fields and For Each.

Python's parser reads the expression (after ``if(`` is renamed: ``if`` is a Python keyword), and
this module allows only literals (``true``/``false``/``null`` as JSON spells them), names bound to
references and to a Set Fields node's earlier fields, comparisons, ``and``/``or``/``not``,
arithmetic on numbers, ``+`` on text, subscripts on values (``x["name"]``, ``x[0]``) and calls of
the closed list of FUNCTIONS. No attribute access, nothing else callable, no ``eval``. Numbers are
Python's: whole numbers stay exact at any size (a block number, a wei amount beyond 2^64).

What each operator does with each JSON type is one table (OPERATORS): the evaluator follows it in
a run and the validator before one (``type_problems``), and a refusal is the same sentence in both.
Comparing by order two texts that both read as numbers fails, saying to wrap them in number():
text order puts "0x10" before "0xf", which silenced a monitor once. Text against a number fails
too. A text is compiled once (parsed and checked) and kept, so a loop evaluates it without parsing.
Why not CEL or simpleeval: docs/adr/0041-our-own-expression-evaluator.md.
"""

from __future__ import annotations

import ast
import io
import json
import math
import operator
import re
import sys
import tokenize
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from itertools import product
from typing import Any, NamedTuple

from keeperstate.core.errors import Code, CodedError
from keeperstate.core.numbers import whole_number

MAX_EXPRESSION_LENGTH = 2000
MAX_RANGE = 10_000
LITERAL_NAMES = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}
_IF = "__if"  # what ``if(`` is renamed to before Python parses it

_HEX = re.compile(r"[+-]?0[xX][0-9a-fA-F]+")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")

_COMPARE = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
_ARITHMETIC = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
# How the operators are written, as the operator table (below) and messages name them.
_SYMBOL: dict[type[ast.AST], str] = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%",
    ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
}
_SIGN = {ast.USub: "-", ast.UAdd: "+"}


class ExpressionInvalid(CodedError):
    """An expression outside a Condition (Set Fields, For Each) that cannot be read or evaluated."""

    error = Code.EXPRESSION_INVALID


class ConditionInvalid(ExpressionInvalid):
    error = Code.CONDITION_INVALID


# --- the closed list of functions ---------------------------------------------------------------


@dataclass(frozen=True)
class Function:
    call: Callable[..., Any]
    arity: tuple[int, int | None]  # the least and the most arguments (None: any number)
    returns: str | None  # its result's type when it is always the same (see typing in validation)
    lazy: bool = False  # receives its arguments unevaluated (``if``: only the branch taken runs)


class _Refused(Exception):
    """A function's refusal: becomes the expression's coded error, naming the function."""


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def looks_numeric(text: str) -> bool:
    """Whether a text reads as a number (decimal or 0x hex): such texts are not ordered as text."""
    stripped = text.strip()
    return bool(_HEX.fullmatch(stripped) or _DECIMAL.fullmatch(stripped))


def to_number(value: Any) -> int | float:
    """number(x): a number from a number, decimal text or 0x hex text; whole numbers stay exact."""
    if _is_number(value):
        return value
    if isinstance(value, str):
        text = value.strip()
        if _HEX.fullmatch(text):
            return int(text, 16)
        whole = whole_number(text, max_digits=None, plus_sign=True)  # exact at any size (a wei amount)
        if whole is not None:
            return whole
        if _DECIMAL.fullmatch(text):
            number = float(text)
            if math.isfinite(number):
                return number
            digits = sys.get_int_max_str_digits()  # Python's limit on reading a whole number (0: none)
            raise _Refused(f"number() cannot hold {_show(value)}: a decimal is at most about 1.8e308"
                           + (f" and a whole number at most {digits:,} digits long" if digits else ""))
    raise _Refused(f"number() takes a number, decimal text or 0x hex text, not {kind_of(value)} {_show(value)}")


def _hex(value: Any) -> str:
    if not (_is_number(value) and float(value).is_integer() and value >= 0):
        raise _Refused(f"hex() takes a whole number of 0 or more, not {kind_of(value)} {_show(value)}")
    return hex(int(value))


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _length(value: Any) -> int:
    if not isinstance(value, str | list | dict):
        raise _Refused(f"length() takes text, a list or an object, not {kind_of(value)}")
    return len(value)


def _numbers(name: str, values: tuple[Any, ...]) -> list[Any]:
    if len(values) == 1 and isinstance(values[0], list):
        values = tuple(values[0])  # min([3, 1]) as min(3, 1)
    if not values or not all(_is_number(v) for v in values):
        raise _Refused(f"{name}() takes numbers")
    return list(values)


def _number_arg(name: str, value: Any) -> int | float:
    if not _is_number(value):
        raise _Refused(f"{name}() takes a number, not {kind_of(value)} {_show(value)}")
    return value


def _round(value: Any) -> int:
    number = _number_arg("round", value)
    return int(math.floor(number + 0.5)) if number >= 0 else -int(math.floor(-number + 0.5))  # half away from 0


def _text_arg(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise _Refused(f"{name}() takes text, not {kind_of(value)} {_show(value)}")
    return value


def _contains(container: Any, item: Any) -> bool:
    if isinstance(container, str):
        return _text_arg("contains", item) in container
    if isinstance(container, list):
        return any(_strict_equal(element, item) for element in container)
    if isinstance(container, dict):
        return isinstance(item, str) and item in container
    raise _Refused(f"contains() looks in text, a list or an object, not {kind_of(container)}")


def _json(value: Any) -> Any:
    text = _text_arg("json", value)
    try:
        return json.loads(text, parse_constant=_no_constant)
    except ValueError as exc:
        raise _Refused(f"json() takes JSON text: {str(exc)[:80]}") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _range(start: Any, end: Any) -> list[int]:
    first, last = whole_number(start), whole_number(end)
    if first is None or last is None or isinstance(start, str) or isinstance(end, str):
        raise _Refused(f"range() takes two whole numbers (wrap text in number()), not {_show(start)}, {_show(end)}")
    if last - first + 1 > MAX_RANGE:
        raise _Refused(f"range({first}, {last}) would make {last - first + 1} numbers; at most {MAX_RANGE}")
    return list(range(first, last + 1))


def _coalesce(*values: Any) -> Any:
    return next((value for value in values if value is not None), None)


def _list_arg(name: str, value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise _Refused(f"{name}() takes a list, not {kind_of(value)} {_show(value)}")
    return value


def _append(items: Any, item: Any) -> list[Any]:
    return [*_list_arg("append", items), item]


def _reverse(items: Any) -> list[Any]:
    return _list_arg("reverse", items)[::-1]


def _slice(value: Any, start: Any, end: Any = None) -> Any:
    """Items start to end (end left out) of a list or a text, counted from the end when negative,
    as JavaScript's slice: slice(x, -3) is the last three, slice(x, 0, -1) all but the last."""
    if not isinstance(value, list | str):
        raise _Refused(f"slice() takes a list or text, not {kind_of(value)} {_show(value)}")
    bounds = [start] if end is None else [start, end]
    if any(isinstance(b, bool | str) or whole_number(b) is None for b in bounds):
        raise _Refused(f"slice() takes whole numbers for where to start and end, not {_show(bounds)}")
    first = whole_number(start)
    return value[first:] if end is None else value[first:whole_number(end)]


FUNCTIONS: dict[str, Function] = {
    "number": Function(to_number, (1, 1), "number"),
    "hex": Function(_hex, (1, 1), "string"),
    "text": Function(_text, (1, 1), "string"),
    "length": Function(_length, (1, 1), "integer"),
    "min": Function(lambda *v: min(_numbers("min", v)), (1, None), "number"),
    "max": Function(lambda *v: max(_numbers("max", v)), (1, None), "number"),
    "abs": Function(lambda v: abs(_number_arg("abs", v)), (1, 1), "number"),
    "round": Function(_round, (1, 1), "integer"),
    "floor": Function(lambda v: math.floor(_number_arg("floor", v)), (1, 1), "integer"),
    "ceil": Function(lambda v: math.ceil(_number_arg("ceil", v)), (1, 1), "integer"),
    "lower": Function(lambda v: _text_arg("lower", v).lower(), (1, 1), "string"),
    "upper": Function(lambda v: _text_arg("upper", v).upper(), (1, 1), "string"),
    "trim": Function(lambda v: _text_arg("trim", v).strip(), (1, 1), "string"),
    "startsWith": Function(lambda s, p: _text_arg("startsWith", s).startswith(_text_arg("startsWith", p)), (2, 2),
                           "boolean"),
    "contains": Function(_contains, (2, 2), "boolean"),
    "coalesce": Function(_coalesce, (1, None), None),
    _IF: Function(lambda: None, (3, 3), None, lazy=True),  # evaluated in _Evaluator.call
    "json": Function(_json, (1, 1), None),
    "range": Function(_range, (2, 2), "array"),
    "append": Function(_append, (2, 2), "array"),
    "reverse": Function(_reverse, (1, 1), "array"),
    "slice": Function(_slice, (2, 3), None),  # a list or a text, as its first argument (see _infer)
}
FUNCTION_NAMES = sorted(name if name != _IF else "if" for name in FUNCTIONS)


# --- compiling: parse once, check once ------------------------------------------------------------


def _renamed_if(text: str) -> str:
    """``if(`` → ``__if(`` wherever ``if`` is a word followed by a parenthesis, outside strings."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return text  # the parser reports what is wrong
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    cuts = [
        offsets[token.start[0] - 1] + token.start[1]
        for token, following in zip(tokens, tokens[1:], strict=False)
        if token.type == tokenize.NAME and token.string == "if" and following.string == "("
    ]
    for cut in reversed(cuts):
        text = text[:cut] + _IF + text[cut + 2:]
    return text


_ALLOWED = (
    ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.UAdd, ast.BinOp,
    ast.Compare, ast.Constant, ast.Name, ast.Load, ast.List, ast.Tuple, ast.Subscript, ast.Call,
    ast.In, ast.NotIn, *_COMPARE, *_ARITHMETIC,
)


def _compile(text: str, error: type[ExpressionInvalid]) -> ast.Expression:
    """The checked tree of an expression, or ``error`` saying what is wrong with it."""
    tree, problem = _compiled(text)
    if problem is not None:
        raise error(problem.format(noun=_noun(error)))
    assert tree is not None
    return tree


@lru_cache(maxsize=2048)
def _compiled(text: str) -> tuple[ast.Expression | None, str | None]:
    """(the checked tree, None) or (None, what is wrong, with ``{noun}`` for "condition" or
    "expression"). Cached per text: trees are never changed, so a loop evaluates without parsing."""
    if not text or not text.strip():
        return None, "The {noun} is empty. Write a comparison such as <<@…>> > 10."
    if len(text) > MAX_EXPRESSION_LENGTH:
        return None, f"The {{noun}} is longer than {MAX_EXPRESSION_LENGTH} characters; split it over several nodes."
    try:
        tree = ast.parse(_renamed_if(text.strip()), mode="eval")
    except SyntaxError as exc:
        return None, (
            f"The {{noun}} is not a valid expression (near column {exc.offset}). Use comparisons "
            "(==, !=, <, >, <=, >=), and, or, not, arithmetic, numbers, 'quoted text', true, false, null "
            f"and the functions {', '.join(FUNCTION_NAMES)}."
        )
    nodes = list(ast.walk(tree))
    for node in nodes:
        if not isinstance(node, _ALLOWED):
            return None, (
                f"The {{noun}} uses {_describe(node)}, which is not allowed: only comparisons, and/or/not, "
                "arithmetic, literals, references, subscripts such as x[0] and the functions "
                f"{', '.join(FUNCTION_NAMES)}."
            )
    for node in nodes:
        if isinstance(node, ast.Call) and (problem := _call_problem(node)):
            return None, problem
    return tree, None


def _call_problem(node: ast.Call) -> str | None:
    name = node.func.id if isinstance(node.func, ast.Name) else None
    function = FUNCTIONS.get(name or "")
    if function is None or node.keywords:
        shown = _shown_name(name) if name else "that"
        return f"{shown}() is not a function of expressions; use one of {', '.join(FUNCTION_NAMES)}."
    least, most = function.arity
    count = len(node.args)
    if count < least or (most is not None and count > most):
        wanted = str(least) if least == most else f"{least} or more" if most is None else f"{least} to {most}"
        return f"{_shown_name(name)}() takes {wanted} argument(s), not {count}."
    return None


def check_syntax(
    text: str, *, error: type[ExpressionInvalid] = ConditionInvalid, names: set[str] | None = None
) -> None:
    """Raise ``error`` when the text is not an allowed expression; with ``names`` (the names it may
    use: its references and, in Set Fields, the fields above it), also when it uses another one."""
    tree = _compile(text, error)
    if names is None:
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id not in names and node.id not in LITERAL_NAMES:
            if not (node.id in FUNCTIONS and _is_called(tree, node)):
                raise error(_unknown_name(node.id))


def _is_called(tree: ast.AST, name: ast.Name) -> bool:
    return any(isinstance(n, ast.Call) and n.func is name for n in ast.walk(tree))


def evaluate(
    text: str, bindings: dict[str, Any] | None = None, *, error: type[ExpressionInvalid] = ConditionInvalid
) -> Any:
    tree = _compile(text, error)
    return _Evaluator(bindings or {}, error).eval(tree.body)


# --- evaluating -----------------------------------------------------------------------------------


class _Evaluator:
    def __init__(self, bindings: dict[str, Any], error: type[ExpressionInvalid]):
        self.bindings = bindings
        self.error = error

    def fail(self, message: str) -> ExpressionInvalid:
        return self.error(message)

    def eval(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in self.bindings:
                return self.bindings[node.id]
            if node.id in LITERAL_NAMES:
                return LITERAL_NAMES[node.id]
            raise self.fail(_unknown_name(node.id))
        if isinstance(node, ast.List | ast.Tuple):
            return [self.eval(e) for e in node.elts]
        if isinstance(node, ast.BoolOp):  # short-circuits, so `not exists or x > value` is safe
            is_and = isinstance(node.op, ast.And)
            for value_node in node.values:
                value = self.eval(value_node)
                if bool(value) != is_and:
                    return value
            return value
        if isinstance(node, ast.UnaryOp):
            operand = self.eval(node.operand)
            if isinstance(node.op, ast.Not):
                return not operand
            if problem := refusal(_SIGN[type(node.op)], known_of(operand)):
                raise self.fail(problem)
            return -operand if isinstance(node.op, ast.USub) else +operand
        if isinstance(node, ast.BinOp):
            return self._arithmetic(node)
        if isinstance(node, ast.Compare):
            return self._compare(node)
        if isinstance(node, ast.Subscript):
            return self._subscript(self.eval(node.value), self.eval(node.slice))
        if isinstance(node, ast.Call):
            return self._call(node)
        raise self.fail(f"Unsupported expression: {type(node).__name__}.")

    def _call(self, node: ast.Call) -> Any:
        assert isinstance(node.func, ast.Name)  # _check_call
        name = node.func.id
        function = FUNCTIONS[name]
        if name == _IF:
            condition = self.eval(node.args[0])
            if not isinstance(condition, bool):
                raise self.fail(f"if() needs true or false first, got {kind_of(condition)} {_show(condition)}.")
            return self.eval(node.args[1] if condition else node.args[2])
        try:
            return function.call(*(self.eval(a) for a in node.args))
        except _Refused as exc:
            raise self.fail(f"{exc}.") from None

    def _compare(self, node: ast.Compare) -> bool:
        left = self.eval(node.left)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = self.eval(right_node)
            if isinstance(op, ast.In | ast.NotIn):
                try:
                    found = _contains(right, left)
                except _Refused as exc:
                    raise self.fail(f"'in' {str(exc).partition(' looks in ')[2] or exc}.") from None
                ok = found if isinstance(op, ast.In) else not found
            elif isinstance(op, ast.Eq | ast.NotEq):
                equal = _strict_equal(left, right)
                ok = equal if isinstance(op, ast.Eq) else not equal
            else:
                if problem := refusal(_SYMBOL[type(op)], known_of(left), known_of(right)):
                    raise self.fail(problem)
                ok = _COMPARE[type(op)](left, right)
            if not ok:
                return False
            left = right
        return True

    def _arithmetic(self, node: ast.BinOp) -> Any:
        left, right = self.eval(node.left), self.eval(node.right)
        if problem := refusal(_SYMBOL[type(node.op)], known_of(left), known_of(right)):
            raise self.fail(problem)
        try:  # numbers, or two texts joined by +
            return _ARITHMETIC[type(node.op)](left, right)
        except ZeroDivisionError:
            raise self.fail(f"The {_noun(self.error)} divides by zero.") from None
        except OverflowError:
            raise self.fail(f"The {_noun(self.error)} makes a number too large to hold.") from None

    def _subscript(self, value: Any, key: Any) -> Any:
        if isinstance(value, dict):
            if not isinstance(key, str):
                raise self.fail(f"An object's field is named by text, e.g. x['name'], not {_show(key)}.")
            if key not in value:
                raise self.fail(f"The object has no field {key!r} (it has {', '.join(map(repr, value)) or 'none'}).")
            return value[key]
        if isinstance(value, list):
            if isinstance(key, bool) or not isinstance(key, int):
                raise self.fail(f"A list's item is numbered, e.g. x[0], not {_show(key)}.")
            if not -len(value) <= key < len(value):
                raise self.fail(f"The list has no item [{key}] (it has {len(value)}).")
            return value[key]
        raise self.fail(f"Only objects and lists have items; {kind_of(value)} {_show(value)} has none.")


def _strict_equal(left: Any, right: Any) -> bool:
    """JSON's equality: true is not 1, and 1 is 1.0."""
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(_strict_equal(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_strict_equal(left[k], right[k]) for k in left)
    return bool(left == right)


def _unknown_name(name: str) -> str:
    if name.startswith("__ref"):
        return "A reference in the expression could not be bound; pick it again from the @ list."
    return f"'{name}' is not a value. Quote text ('{name}'), pick a field with @, or define it above in Set Fields."


def _noun(error: type[ExpressionInvalid]) -> str:
    return "condition" if issubclass(error, ConditionInvalid) else "expression"


def _shown_name(name: str | None) -> str:
    return "if" if name == _IF else str(name)


def _describe(node: ast.AST) -> str:
    return {"Attribute": "attribute access (x.y)", "Dict": "an object literal", "Lambda": "lambda",
            "Slice": "a slice (x[0:2]; take one item with x[0])"}.get(
        type(node).__name__, type(node).__name__
    )


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:37] + "…"


def json_type(value: Any) -> str:
    """A value's JSON type in the one vocabulary of the registry's output fields, the @ offers and
    the API's catalogue: null, boolean, integer, number, string, array, object."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


# Each JSON type as a message names it ("needs a number, got a list").
_TYPE_IN_WORDS = {"null": "null", "boolean": "a boolean", "integer": "a number", "number": "a number",
                  "string": "text", "array": "a list", "object": "an object"}


def kind_of(value: Any) -> str:
    """A value's JSON type as an error message says it."""
    return _TYPE_IN_WORDS[json_type(value)]


# --- types, where they are known before a run (the validator; Set Fields' output types) ------------

_UNKNOWN = object()


class Known(NamedTuple):
    """What is known of a value: its JSON type (``json_type``'s vocabulary; None: unknown before
    the run) and, in a run or for a sample or a literal, the value. A tuple, cheap to make: a run
    makes two for each operator it evaluates."""

    type: str | None
    value: Any = _UNKNOWN


def static_type(text: str, names: dict[str, Known] | None = None) -> str | None:
    """The JSON type an expression always has, when it can be told without running it."""
    tree, _problem = _compiled(text)
    return _infer(tree.body, names or {}, []).type if tree is not None else None


def type_problems(text: str, names: dict[str, Known]) -> list[str]:
    """What the expression is sure to refuse at run time, judged by the types known now (the
    operator table, ``refusal``), in the words the run would use."""
    tree, _problem = _compiled(text)
    problems: list[str] = []
    if tree is not None:
        _infer(tree.body, names, problems)
    return problems


def known_of(value: Any) -> Known:
    return Known(json_type(value), value)


def _infer(node: ast.AST, names: dict[str, Known], problems: list[str]) -> Known:
    """What is known of a node's value before the run; what is sure to be refused goes to ``problems``."""
    infer = _INFER.get(type(node))
    return infer(node, names, problems) if infer is not None else Known(None)


def _infer_name(node: ast.Name, names: dict[str, Known], problems: list[str]) -> Known:
    if node.id in LITERAL_NAMES:
        return known_of(LITERAL_NAMES[node.id])
    return names.get(node.id, Known(None))


def _infer_list(node: ast.List | ast.Tuple, names: dict[str, Known], problems: list[str]) -> Known:
    for element in node.elts:
        _infer(element, names, problems)
    return Known("array")


def _infer_bool_op(node: ast.BoolOp, names: dict[str, Known], problems: list[str]) -> Known:
    kinds = {_infer(value, names, problems).type for value in node.values}
    return Known(kinds.pop() if len(kinds) == 1 else None)


def _infer_unary(node: ast.UnaryOp, names: dict[str, Known], problems: list[str]) -> Known:
    operand = _infer(node.operand, names, problems)
    if isinstance(node.op, ast.Not):
        return Known("boolean")
    return _operation(_SIGN[type(node.op)], (operand,), problems)


def _infer_bin_op(node: ast.BinOp, names: dict[str, Known], problems: list[str]) -> Known:
    operands = (_infer(node.left, names, problems), _infer(node.right, names, problems))
    return _operation(_SYMBOL[type(node.op)], operands, problems)


def _infer_compare(node: ast.Compare, names: dict[str, Known], problems: list[str]) -> Known:
    left = _infer(node.left, names, problems)
    for op, comparator in zip(node.ops, node.comparators, strict=True):
        right = _infer(comparator, names, problems)
        if (symbol := _SYMBOL.get(type(op))) in _ORDER:  # == and != take any values, in has its own rule
            _operation(symbol, (left, right), problems)
        left = right
    return Known("boolean")


def _infer_subscript(node: ast.Subscript, names: dict[str, Known], problems: list[str]) -> Known:
    _infer(node.value, names, problems)
    _infer(node.slice, names, problems)
    return Known(None)


def _infer_call(node: ast.Call, names: dict[str, Known], problems: list[str]) -> Known:
    arguments = [_infer(argument, names, problems) for argument in node.args]
    name = node.func.id if isinstance(node.func, ast.Name) else ""
    if name == _IF and len(arguments) == 3:
        return Known(arguments[1].type if arguments[1].type == arguments[2].type else None)
    if name == "slice" and arguments:
        return Known(arguments[0].type if arguments[0].type in ("array", "string") else None)
    function = FUNCTIONS.get(name)
    return Known(function.returns if function else None)


_INFER: dict[type[ast.AST], Callable[[Any, dict[str, Known], list[str]], Known]] = {
    ast.Constant: lambda node, names, problems: known_of(node.value),
    ast.Name: _infer_name,
    ast.List: _infer_list,
    ast.Tuple: _infer_list,
    ast.BoolOp: _infer_bool_op,
    ast.UnaryOp: _infer_unary,
    ast.BinOp: _infer_bin_op,
    ast.Compare: _infer_compare,
    ast.Subscript: _infer_subscript,
    ast.Call: _infer_call,
}


def _operation(symbol: str, operands: tuple[Known, ...], problems: list[str]) -> Known:
    if problem := refusal(symbol, *operands):
        problems.append(problem)
        return Known(None)
    return Known(result_type(symbol, *operands))


# --- the operators: one table, for the run and for the types known before it ----------------------

_TYPES = tuple(_TYPE_IN_WORDS)
_NUMBERS = ("integer", "number")
_ORDER = ("<", "<=", ">", ">=")
_ARITHMETIC_SYMBOLS = ("+", "-", "*", "/", "//", "%")


def _operator_table() -> dict[tuple[str, tuple[str, ...]], str | None]:
    """(operator, operand types) → the result's type, None where the operator refuses them:
    arithmetic on numbers (whole numbers stay whole, but for /), + on two texts, order between two
    numbers or two texts, a sign on a number; nothing else."""
    table: dict[tuple[str, tuple[str, ...]], str | None] = {}
    for left in _TYPES:
        for sign in ("-", "+"):
            table[sign, (left,)] = left if left in _NUMBERS else None
        for right in _TYPES:
            numbers = left in _NUMBERS and right in _NUMBERS
            whole = left == right == "integer"
            texts = left == right == "string"
            for symbol in _ARITHMETIC_SYMBOLS:
                table[symbol, (left, right)] = (
                    ("integer" if whole and symbol != "/" else "number") if numbers
                    else "string" if texts and symbol == "+" else None
                )
            for symbol in _ORDER:
                table[symbol, (left, right)] = "boolean" if numbers or texts else None
    return table


OPERATORS = _operator_table()


def refusal(symbol: str, *operands: Known) -> str | None:
    """Why the operator refuses these operands, or None: one sentence, whether asked in a run (the
    values known) or before one (the types known so far, values where a sample or a literal gives
    them). An operand of unknown type gets the benefit of the doubt: refused only when no type it
    could have would pass. Ordering two texts that both read as numbers is refused too, when their
    values are known: text order puts "0x10" before "0xf" (DESIGN.md §14)."""
    types = tuple(known.type for known in operands if known.type is not None)
    if len(types) == len(operands):  # a run's values, or types all known: one look in the table
        if OPERATORS[symbol, types] is None:
            return _sentence(symbol, operands)
    elif all(OPERATORS[symbol, each] is None
             for each in product(*((k.type,) if k.type else _TYPES for k in operands))):
        return _sentence(symbol, operands)
    if symbol in _ORDER and all(isinstance(k.value, str) and looks_numeric(k.value) for k in operands):
        left, right = operands
        return (f"Both sides read as numbers but are text ({_show(left.value)} and {_show(right.value)}): text "
                'order puts "0x10" before "0xf". Wrap each side in number(), e.g. number(a) > number(b).')
    return None


def result_type(symbol: str, *operands: Known) -> str | None:
    """The type of what the operator makes of these operands, when their types are known."""
    if any(known.type is None for known in operands):
        return None
    return OPERATORS[symbol, tuple(str(known.type) for known in operands)]


def _sentence(symbol: str, operands: tuple[Known, ...]) -> str:
    """A refusal's sentence, naming the operand at fault (and its value, where known)."""
    if symbol in _ORDER:
        left, right = operands
        values = f" ({_show(left.value)}, {_show(right.value)})" if _UNKNOWN not in (left.value, right.value) else ""
        return (f"Cannot compare {_type_text(left.type)} with {_type_text(right.type)} by order{values}. Compare "
                "values of the same kind: wrap text in number() to compare it with a number, or check that the key "
                "exists first (… .exists and …).")
    fault = next(k for k in operands if k.type is not None and k.type not in _NUMBERS)
    value = f" {_show(fault.value)}" if fault.value is not _UNKNOWN else ""
    if len(operands) == 1:
        return f"'{symbol}' needs a number, got {_type_text(fault.type)}{value}."
    hint = ("" if fault.type != "string" else " Wrap text in number() to add, or a number in text() to join."
            if symbol == "+" else " Wrap text in number() to calculate with it.")
    return f"'{symbol}' needs numbers, got {_type_text(fault.type)}{value}.{hint}"


def _type_text(kind: str | None) -> str:
    return _TYPE_IN_WORDS.get(kind or "", "a value")
