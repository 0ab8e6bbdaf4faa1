"""Does a statement stay on one organization's shard? Read with Postgres's own parser (pglast).

A statement on a table distributed by ``organization_id`` (keeperstate.ops.citus.DISTRIBUTED_TABLES)
reaches one shard only when, at every query level that names such a table, ``organization_id`` is
held to one value: ``= value``, ``IN (one value)``, ``= ANY (ARRAY[one value])``, or equal to the
``organization_id`` of another such table that is (a join or a correlated subquery, which Citus
runs on the co-located shard). ``findings()`` names every place where that is not so:

* ``unconstrained``: a sharded table whose organization is not held to one value (a read or a write
  that Citus sends to every shard, or cannot plan);
* ``lock``: the same under ``FOR UPDATE``/``FOR SHARE`` (Citus refuses a lock across shards);
* ``join``: two sharded tables (in one FROM, or a subquery correlated with its outer query) not
  joined on ``organization_id`` (Citus refuses, or repartitions);
* ``moves``: an UPDATE that sets ``organization_id`` (a row never changes its shard);
* ``unrouted``: an INSERT into a sharded table that does not name ``organization_id``.

Statements are judged as written, placeholders included (``%s`` and ``%(name)s`` become ``$n``).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pglast import ast, parse_sql
from pglast.enums import A_Expr_Kind, BoolExprType, SetOperation, SubLinkType

from keeperstate.ops.citus import DISTRIBUTED_TABLES, DISTRIBUTION_COLUMN

SHARDED = frozenset(DISTRIBUTED_TABLES)
_PLACEHOLDER = re.compile(r"%\((\w+)\)s|%s|%%")


@dataclass(frozen=True)
class Finding:
    """Where a statement leaves one shard. ``held_by`` says what else bounds the relation: ``id``
    (its id held to one or a few values), ``organizations`` (its organization_id in a list or a
    subquery: a set of organizations). ``statement`` is the kind of the whole statement: ``read``
    (a SELECT that locks nothing and modifies nothing) or ``write``."""

    rule: str
    table: str
    detail: str
    held_by: frozenset[str] = frozenset()
    statement: str = "read"

    def __str__(self) -> str:
        return f"{self.rule}: {self.table} ({self.detail})"


def as_postgres(sql: str) -> str:
    """Django's and psycopg's placeholders as Postgres's ``$n``, so the parser reads the statement."""
    numbers: dict[str, int] = {}
    counter = itertools.count(1)

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "%%":
            return "%"
        if name := match.group(1):
            if name not in numbers:
                numbers[name] = next(counter)
            return f"${numbers[name]}"
        return f"${next(counter)}"

    return _PLACEHOLDER.sub(replace, sql)


def findings(sql: str) -> list[Finding]:
    """Every way ``sql`` (one or more statements) leaves one organization's shard; empty when none."""
    found: list[Finding] = []
    for raw in parse_sql(as_postgres(sql)):
        kind = "read" if _reads_only(raw.stmt) else "write"
        level_found: list[Finding] = []
        statement = _Statement(level_found)
        statement.statement(raw.stmt, None)
        found += [Finding(f.rule, f.table, f.detail, f.held_by, kind) for f in statement.settle() + level_found]
    return found


def _reads_only(node: Any) -> bool:
    if not isinstance(node, ast.SelectStmt) or node.lockingClause:
        return False
    return not any(isinstance(n, ast.UpdateStmt | ast.DeleteStmt | ast.InsertStmt | ast.LockingClause)
                   for n in _all_nodes(node))


def touches_sharded(sql: str) -> bool:
    """Whether the text names a sharded table at all (a cheap filter before parsing)."""
    lowered = sql.lower()
    return any(table in lowered for table in SHARDED)


@dataclass(eq=False)
class _Level:
    """One query level (a SELECT, or an UPDATE/DELETE/INSERT) and the relations its FROM names."""

    outer: _Level | None
    aliases: dict[str, str] = field(default_factory=dict)  # alias → relation name (every relation)
    sharded: dict[str, str] = field(default_factory=dict)  # alias → sharded table
    outer_references: set[tuple[int, str]] = field(default_factory=set)  # sharded aliases of outer levels read here

    def chain(self) -> Iterator[_Level]:
        level: _Level | None = self
        while level is not None:
            yield level
            level = level.outer


_PINNED = ("pinned",)
_VALUE, _OTHER = "value", "other"


class _Statement:
    def __init__(self, found: list[Finding]):
        self.found = found
        self.parent: dict[Any, Any] = {}
        # Relations whose organization is not held to one value: (key, rule, table, alias, held by).
        self.loose: list[tuple[Any, str, str, str, set[str]]] = []

    def settle(self) -> list[Finding]:
        """The loose relations as findings. Relations joined on organization_id are bounded
        together: each is held by whatever holds any of them (a subquery correlated with a list of
        the user's organizations is bounded by that list)."""
        held: dict[Any, set[str]] = {}
        for key, *_rest, bounds in self.loose:
            held.setdefault(self.root(key), set()).update(bounds)
        return [Finding(rule, table, f"organization_id of {alias!r} is not held to one value",
                        frozenset(held[self.root(key)]))
                for key, rule, table, alias, _bounds in self.loose]

    # --- union-find over (level, alias) and the one "held to a value" node -------------------------

    def root(self, key: Any) -> Any:
        self.parent.setdefault(key, key)
        while self.parent[key] != key:
            self.parent[key] = self.parent[self.parent[key]]
            key = self.parent[key]
        return key

    def union(self, a: Any, b: Any) -> None:
        self.parent[self.root(a)] = self.root(b)

    def pinned(self, key: Any) -> bool:
        return self.root(key) == self.root(_PINNED)

    # --- statements ---------------------------------------------------------------------------------

    def statement(self, node: Any, outer: _Level | None) -> None:
        if isinstance(node, ast.SelectStmt):
            self.select(node, outer)
        elif isinstance(node, ast.UpdateStmt | ast.DeleteStmt | ast.InsertStmt):
            self.modify(node, outer)
        elif isinstance(node, ast.ExplainStmt):
            self.statement(node.query, outer)
        # Utility statements (TRUNCATE, SET, DDL, transaction control) route nothing by organization.

    def ctes(self, with_clause: Any, outer: _Level | None) -> set[str]:
        names: set[str] = set()
        for cte in getattr(with_clause, "ctes", None) or ():
            self.statement(cte.ctequery, outer)
            names.add(cte.ctename)
        return names

    def select(self, node: ast.SelectStmt, outer: _Level | None) -> None:
        ctes = self.ctes(node.withClause, outer)
        if node.op != SetOperation.SETOP_NONE:
            self.select(node.larg, outer)
            self.select(node.rarg, outer)
            return
        level = _Level(outer)
        conjuncts: list[Any] = []
        for item in node.fromClause or ():
            self.from_item(item, level, conjuncts, ctes)
        conjuncts += _and_terms(node.whereClause)
        self.judge(level, conjuncts, locks=bool(node.lockingClause), extra=(
            node.targetList, node.havingClause, node.sortClause, node.valuesLists, node.groupClause,
        ))

    def modify(self, node: Any, outer: _Level | None) -> None:
        ctes = self.ctes(node.withClause, outer)
        level = _Level(outer)
        conjuncts: list[Any] = []
        target = node.relation
        self.from_item(target, level, conjuncts, ctes)
        table = target.relname
        if isinstance(node, ast.InsertStmt):
            if table in SHARDED and DISTRIBUTION_COLUMN not in {col.name for col in node.cols or ()}:
                self.found.append(Finding("unrouted", table, "INSERT without organization_id"))
            if node.selectStmt is not None:
                self.statement(node.selectStmt, outer)
            self.expressions((_returning(node),), level)
            if node.onConflictClause is not None:
                self.expressions((node.onConflictClause.targetList, node.onConflictClause.whereClause), level)
            return
        for item in getattr(node, "fromClause", None) or getattr(node, "usingClause", None) or ():
            self.from_item(item, level, conjuncts, ctes)
        if isinstance(node, ast.UpdateStmt) and table in SHARDED:
            if any(target.name == DISTRIBUTION_COLUMN for target in node.targetList or ()):
                self.found.append(Finding("moves", table, "UPDATE sets organization_id"))
        conjuncts += _and_terms(node.whereClause)
        self.judge(level, conjuncts, locks=False, extra=(getattr(node, "targetList", None), _returning(node)))

    def from_item(self, item: Any, level: _Level, conjuncts: list[Any], ctes: set[str]) -> None:
        if isinstance(item, ast.RangeVar):
            alias = item.alias.aliasname if item.alias else item.relname
            level.aliases[alias] = item.relname
            if item.relname in SHARDED and item.relname not in ctes:
                level.sharded[alias] = item.relname
        elif isinstance(item, ast.JoinExpr):
            self.from_item(item.larg, level, conjuncts, ctes)
            self.from_item(item.rarg, level, conjuncts, ctes)
            conjuncts += _and_terms(item.quals)
        elif isinstance(item, ast.RangeSubselect):
            self.statement(item.subquery, level if item.lateral else level.outer)
            if item.alias:
                level.aliases[item.alias.aliasname] = "(subquery)"
        elif isinstance(item, ast.RangeFunction):
            self.expressions((item.functions,), level)
            if item.alias:
                level.aliases[item.alias.aliasname] = "(function)"

    # --- judging one level ------------------------------------------------------------------------------

    def judge(self, level: _Level, conjuncts: list[Any], *, locks: bool, extra: tuple[Any, ...]) -> None:
        for term in conjuncts:
            self.equality(term, level)
        # Subqueries after this level's own equalities, so a correlated one sees what is held here.
        self.expressions((*conjuncts, *extra), level)
        for alias, table in level.sharded.items():
            if not self.pinned((id(level), alias)):
                rule = "lock" if locks else "unconstrained"
                self.loose.append(((id(level), alias), rule, table, alias, set(_held_by(alias, level, conjuncts))))
        keys = [(id(level), alias) for alias in level.sharded] + sorted(level.outer_references)
        for a, b in itertools.combinations(keys, 2):
            if self.root(a) != self.root(b):
                self.found.append(Finding("join", f"{a[1]} & {b[1]}", "not joined on organization_id"))

    def equality(self, term: Any, level: _Level) -> None:
        if not isinstance(term, ast.A_Expr) or _operator(term) != "=":
            return
        left = self.side(term.lexpr, level)
        if term.kind == A_Expr_Kind.AEXPR_OP:
            right = self.side(term.rexpr, level)
        elif term.kind == A_Expr_Kind.AEXPR_IN and len(term.rexpr) == 1:
            right = self.side(term.rexpr[0], level)
        elif (term.kind == A_Expr_Kind.AEXPR_OP_ANY and isinstance(term.rexpr, ast.A_ArrayExpr)
              and len(term.rexpr.elements or ()) == 1):
            right = self.side(term.rexpr.elements[0], level)
        else:
            return
        for a, b in ((left, right), (right, left)):
            if isinstance(a, tuple) and b == _VALUE:
                self.union(a, _PINNED)
        if isinstance(left, tuple) and isinstance(right, tuple):
            self.union(left, right)

    def side(self, node: Any, level: _Level) -> Any:
        """A sharded relation's organization_id as (level, alias); a value; or something else."""
        while isinstance(node, ast.TypeCast):
            node = node.arg
        if isinstance(node, ast.A_Const | ast.ParamRef):
            return _VALUE
        if not isinstance(node, ast.ColumnRef):
            return _OTHER
        names = [part.sval for part in node.fields if isinstance(part, ast.String)]
        if not names or names[-1] != DISTRIBUTION_COLUMN:
            return _OTHER
        found = _resolve(names[:-1], level)
        if found is None:
            return _OTHER
        owner, alias = found
        return (id(owner), alias)

    def expressions(self, nodes: tuple[Any, ...], level: _Level) -> None:
        """Every subquery in these expressions is a level of its own, inside ``level``; every column of
        an outer level's sharded table read here makes that table part of this level's join."""
        for node in _walk(nodes):
            if isinstance(node, ast.SubLink):
                self.statement(node.subselect, level)
            elif isinstance(node, ast.ColumnRef) and level.outer is not None:
                names = [part.sval for part in node.fields if isinstance(part, ast.String)]
                if len(names) >= 2:
                    found = _resolve(names[:-1], level)
                    if found is not None and found[0] is not level:
                        level.outer_references.add((id(found[0]), found[1]))


def _resolve(qualifier: list[str], level: _Level) -> tuple[_Level, str] | None:
    """The level and sharded alias a column belongs to; None when it is not a sharded table's."""
    for candidate in level.chain():
        if qualifier:
            alias = qualifier[-1]
            if alias in candidate.aliases:
                return (candidate, alias) if alias in candidate.sharded else None
        elif candidate.aliases:
            # Unqualified: Postgres allows it only when one relation has the column.
            if len(candidate.sharded) == 1:
                return candidate, next(iter(candidate.sharded))
            return None
    return None


def _held_by(alias: str, level: _Level, conjuncts: list[Any]) -> Iterator[str]:
    """What else than one organization bounds the relation ``alias`` (see Finding.held_by)."""
    for term in conjuncts:
        if isinstance(term, ast.SubLink) and term.subLinkType == SubLinkType.ANY_SUBLINK:
            column, values = term.testexpr, True
        elif isinstance(term, ast.A_Expr) and _operator(term) == "=" and term.kind in (
                A_Expr_Kind.AEXPR_OP, A_Expr_Kind.AEXPR_IN, A_Expr_Kind.AEXPR_OP_ANY):
            column, values = term.lexpr, _is_value(term.rexpr)
        else:
            continue
        if not values or not isinstance(column, ast.ColumnRef):
            continue
        names = [part.sval for part in column.fields if isinstance(part, ast.String)]
        if (names[:-1] or [alias]) != [alias] and _resolve(names[:-1], level) != (level, alias):
            continue
        if names[-1] == "id":
            yield "id"
        elif names[-1] == DISTRIBUTION_COLUMN:
            yield "organizations"


def _is_value(node: Any) -> bool:
    """A value, a list of values or an array of them (no column of the statement's own tables)."""
    if isinstance(node, tuple | list):
        return all(_is_value(item) for item in node)
    while isinstance(node, ast.TypeCast):
        node = node.arg
    if isinstance(node, ast.A_ArrayExpr):
        return all(_is_value(item) for item in node.elements or ())
    return isinstance(node, ast.A_Const | ast.ParamRef)


def _all_nodes(node: Any) -> Iterator[Any]:
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, tuple | list):
            stack.extend(current)
        elif isinstance(current, ast.Node):
            yield current
            stack.extend(getattr(current, name) for name in current)


def _returning(node: Any) -> Any:
    return getattr(node, "returningList", None) or getattr(node, "returningClause", None)


def _and_terms(node: Any) -> list[Any]:
    if node is None:
        return []
    if isinstance(node, ast.BoolExpr) and node.boolop == BoolExprType.AND_EXPR:
        return [term for arg in node.args for term in _and_terms(arg)]
    return [node]


def _operator(node: ast.A_Expr) -> str | None:
    names = [part.sval for part in node.name or () if isinstance(part, ast.String)]
    return names[-1] if names else None


def _walk(nodes: Any) -> Iterator[Any]:
    """Nodes of expression trees, not descending into subqueries (their SubLink is yielded)."""
    stack = list(nodes) if isinstance(nodes, tuple | list) else [nodes]
    while stack:
        node = stack.pop()
        if node is None:
            continue
        if isinstance(node, tuple | list):
            stack.extend(node)
            continue
        if not isinstance(node, ast.Node):
            continue
        yield node
        if isinstance(node, ast.SubLink):
            stack.append(node.testexpr)
            continue
        if isinstance(node, ast.SelectStmt):
            continue
        for name in node:
            value = getattr(node, name)
            if isinstance(value, ast.Node | tuple | list):
                stack.append(value)
