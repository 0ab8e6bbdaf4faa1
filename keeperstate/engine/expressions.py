"""A safe evaluator for Condition expressions.

Python's own parser reads the expression; this module walks the tree and allows only
comparisons, ``and``/``or``/``not``, arithmetic on numbers, ``+`` on text, literals, parentheses
and the names bound to references. No attribute access, no calls, no subscripts, no ``eval``.
``true``/``false``/``null`` are accepted as JSON spells them.
"""

from __future__ import annotations

import ast
import operator
from typing import Any

from keeperstate.core.errors import Code, CodedError

MAX_EXPRESSION_LENGTH = 2000
LITERAL_NAMES = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}

_COMPARE = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
_ARITHMETIC = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_SYMBOL = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%"}


class ConditionInvalid(CodedError):
    error = Code.CONDITION_INVALID


def check_syntax(text: str) -> None:
    """Raise ConditionInvalid when the text is not an allowed expression (used by validators)."""
    _Checker().visit(_parse(text))


def evaluate(text: str, bindings: dict[str, Any] | None = None) -> Any:
    tree = _parse(text)
    _Checker().visit(tree)
    return _Evaluator(bindings or {}).eval(tree.body)


def _parse(text: str) -> ast.Expression:
    if not text or not text.strip():
        raise ConditionInvalid("The condition is empty. Write a comparison such as <<@…>> > 10.", field="condition")
    if len(text) > MAX_EXPRESSION_LENGTH:
        raise ConditionInvalid(
            f"The condition is longer than {MAX_EXPRESSION_LENGTH} characters; split it over several nodes.",
            field="condition",
        )
    try:
        return ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ConditionInvalid(
            f"The condition is not a valid expression (near column {exc.offset}). Use comparisons "
            "(==, !=, <, >, <=, >=), and, or, not, arithmetic, numbers, 'quoted text', true, false, null.",
            field="condition",
        ) from exc


_ALLOWED = (
    ast.Expression,
    ast.BoolOp,
    ast.And,
    ast.Or,
    ast.UnaryOp,
    ast.Not,
    ast.USub,
    ast.UAdd,
    ast.BinOp,
    ast.Compare,
    ast.Constant,
    ast.Name,
    ast.Load,
    ast.List,
    ast.Tuple,
    *_COMPARE,
    *_ARITHMETIC,
)


class _Checker(ast.NodeVisitor):
    def generic_visit(self, node: ast.AST) -> None:
        if not isinstance(node, _ALLOWED):
            raise ConditionInvalid(
                f"The condition uses {type(node).__name__}, which is not allowed: only comparisons, and/or/not, "
                "arithmetic, literals and references may be used.",
                field="condition",
            )
        super().generic_visit(node)


class _Evaluator:
    def __init__(self, bindings: dict[str, Any]):
        self.bindings = bindings

    def eval(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in self.bindings:
                return self.bindings[node.id]
            if node.id in LITERAL_NAMES:
                return LITERAL_NAMES[node.id]
            raise ConditionInvalid(
                f"'{node.id}' is not a value. Quote text ('{node.id}') or pick a field with @.", field="condition"
            )
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
            self._require_numbers(operand, operand, "-" if isinstance(node.op, ast.USub) else "+")
            return -operand if isinstance(node.op, ast.USub) else +operand
        if isinstance(node, ast.BinOp):
            return self._arithmetic(node)
        if isinstance(node, ast.Compare):
            left = self.eval(node.left)
            for op, right_node in zip(node.ops, node.comparators, strict=True):
                right = self.eval(right_node)
                try:
                    ok = _COMPARE[type(op)](left, right)
                except TypeError as exc:
                    raise ConditionInvalid(
                        f"Cannot compare {_kind(left)} with {_kind(right)}. Compare values of the same kind, or "
                        "check that the key exists first (… .exists and …).",
                        field="condition",
                    ) from exc
                if not ok:
                    return False
                left = right
            return True
        raise ConditionInvalid(f"Unsupported expression: {type(node).__name__}.", field="condition")

    def _arithmetic(self, node: ast.BinOp) -> Any:
        left, right = self.eval(node.left), self.eval(node.right)
        symbol = _SYMBOL[type(node.op)]
        if isinstance(node.op, ast.Add) and isinstance(left, str) and isinstance(right, str):
            return left + right
        self._require_numbers(left, right, symbol)
        try:
            return _ARITHMETIC[type(node.op)](left, right)
        except ZeroDivisionError as exc:
            raise ConditionInvalid("The condition divides by zero.", field="condition") from exc

    @staticmethod
    def _require_numbers(left: Any, right: Any, symbol: str) -> None:
        for value in (left, right):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ConditionInvalid(
                    f"'{symbol}' needs numbers, got {_kind(value)}.",
                    field="condition",
                )


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a list"
    return "an object"
