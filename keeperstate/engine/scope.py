"""What a node can read when it runs, answered once for the runner, the validator and the
editor's @ offers: which node is the trigger, which nodes run before a node, and where the loops
are (each For Each's body and the loops that hold a node).

"Runs before" is being upstream over edges, plus one rule for loops (DESIGN.md §14): a loop's
body is the nodes reached from its ``each`` handle; a body node also runs before every node that
runs after its loop outside the body, which reads it as its last iteration. The runner walks
``Scope.order`` loop by loop (``Scope.level``), so what it has run when a node starts is what
``runs_before`` says, and the offers list exactly those nodes (tests/engine/test_scope.py).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from keeperstate.engine.graph import Graph, GraphInvalid
from keeperstate.engine.registry import get_action

TRIGGER_TYPE = "trigger"
LOOP_HANDLE = "each"
AFTER_HANDLE = "done"


def is_trigger(graph: Graph, node_id: str) -> bool:
    return graph.nodes[node_id].get("type") == TRIGGER_TYPE


def triggers(graph: Graph) -> list[str]:
    """Every trigger node; a workflow has exactly one (the validator's TRIGGER_COUNT)."""
    return [node_id for node_id in graph.nodes if is_trigger(graph, node_id)]


def trigger_of(graph: Graph) -> str:
    """The trigger node's id; GraphInvalid when there is not exactly one."""
    found = triggers(graph)
    if len(found) != 1:
        raise GraphInvalid(
            f"A workflow needs exactly one trigger node; this one has {len(found)}.", details={"triggers": found}
        )
    return found[0]


def trigger_config(nodes: Any) -> dict[str, Any] | None:
    """The config of a saved graph's trigger (its triggerType, schedule, sample input); None when
    the nodes are no graph or hold no trigger or several."""
    try:
        graph = Graph.parse(nodes, [])
        return graph.config(trigger_of(graph))
    except GraphInvalid:
        return None


def reached_from(graph: Graph, starts: Iterable[str]) -> set[str]:
    """The nodes reached over edges from ``starts``, the starts included."""
    seen: set[str] = set()
    pending = list(starts)
    while pending:
        current = pending.pop()
        if current not in seen:
            seen.add(current)
            pending.extend(e.target for e in graph.outgoing(current))
    return seen


def is_loop(graph: Graph, node_id: str) -> bool:
    definition = get_action(graph.action_type(node_id) or "")
    return bool(definition and definition.loop)


@dataclass(frozen=True)
class Scope:
    """One acyclic graph's answers, computed once (``scope_of``): asking each node for its
    upstream list would be quadratic, so "upstream" is a bit set per node."""

    graph: Graph
    order: list[str]  # every node after the nodes it is reached from (topological)
    bodies: dict[str, frozenset[str]]  # each loop node's body
    owners: dict[str, str]  # each body node's innermost loop
    _index: dict[str, int]
    _ancestors: dict[str, int]  # each node's upstream nodes, bit i standing for the i-th of ``order``

    def is_upstream(self, candidate: str, node_id: str) -> bool:
        return candidate in self._index and bool(self._ancestors[node_id] >> self._index[candidate] & 1)

    def upstream(self, node_id: str) -> list[str]:
        """The nodes node_id is reached from, nearest first."""
        seen: dict[str, None] = {}
        queue = deque(e.source for e in self.graph.incoming(node_id))
        while queue:
            current = queue.popleft()
            if current not in seen:
                seen[current] = None
                queue.extend(e.source for e in self.graph.incoming(current))
        return list(seen)

    def loops_done_before(self, node_id: str) -> list[str]:
        """The loops that have finished when node_id runs: upstream of it, with it outside their body."""
        return [loop for loop, body in self.bodies.items() if node_id not in body and self.is_upstream(loop, node_id)]

    def runs_before(self, candidate: str, node_id: str) -> bool:
        """Whether ``candidate``'s result is there when ``node_id`` runs: it is upstream, or in the
        body of a loop that finished before (its last iteration)."""
        return self.is_upstream(candidate, node_id) or any(
            candidate in self.bodies[loop] for loop in self.loops_done_before(node_id)
        )

    def sources(self, node_id: str) -> list[str]:
        """The nodes that run before node_id (``runs_before``), nearest first: its upstream nodes,
        then the bodies of the loops done before it."""
        upstream = self.upstream(node_id)
        done = set(self.loops_done_before(node_id))
        after_loops = (n for loop in upstream if loop in done for n in sorted(self.bodies[loop]))
        return list(dict.fromkeys([*upstream, *after_loops]))

    def enclosing(self, node_id: str) -> list[str]:
        """The loops whose bodies hold ``node_id``, the outermost first."""
        return sorted((loop for loop, body in self.bodies.items() if node_id in body),
                      key=lambda loop: -len(self.bodies[loop]))

    def level(self, loop: str | None) -> list[str]:
        """The nodes one loop runs once per item (None: the run itself), in run order: its body
        without the bodies of the loops inside it, which those loops run."""
        return [node_id for node_id in self.order if self.owners.get(node_id) == loop]


def scope_of(graph: Graph) -> Scope:
    """The graph's scope; GraphCycle when it has a cycle (no node of one runs before another)."""
    order = graph.topological_order()
    index = {node_id: i for i, node_id in enumerate(order)}
    ancestors: dict[str, int] = {}
    for node_id in order:  # each node ORs its sources' sets: linear in the edges
        found = 0
        for e in graph.incoming(node_id):
            found |= ancestors[e.source] | (1 << index[e.source])
        ancestors[node_id] = found
    bodies = {
        loop: frozenset(reached_from(graph, (e.target for e in graph.outgoing(loop) if e.source_handle == LOOP_HANDLE)))
        for loop in graph.nodes if is_loop(graph, loop)
    }
    owners: dict[str, str] = {}
    for loop, body in sorted(bodies.items(), key=lambda item: -len(item[1])):  # inner bodies last
        owners.update(dict.fromkeys(body, loop))
    return Scope(graph, order, bodies, owners, index, ancestors)
