"""Where a graph's loops are: each For Each's body (the nodes reached from its ``each`` handle),
which loop holds a node, and what "runs before" means around a loop. The runner, the validator
and the editor's autocomplete read the same answers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from keeperstate.engine.graph import Graph
from keeperstate.engine.registry import get_action

LOOP_HANDLE = "each"
AFTER_HANDLE = "done"


@dataclass(frozen=True)
class Loops:
    bodies: dict[str, frozenset[str]]  # each loop node's body
    owners: dict[str, str]  # each body node's innermost loop

    def enclosing(self, node_id: str) -> list[str]:
        """The loops whose bodies hold ``node_id``, the outermost first."""
        return sorted((loop for loop, body in self.bodies.items() if node_id in body),
                      key=lambda loop: -len(self.bodies[loop]))

    def runs_before(self, candidate: str, node_id: str, is_upstream: Callable[[str, str], bool]) -> bool:
        """Whether ``candidate``'s result is there when ``node_id`` runs: it is upstream, or it is in
        the body of a loop that ran before ``node_id`` outside that body (its last iteration)."""
        if is_upstream(candidate, node_id):
            return True
        return any(
            node_id not in self.bodies[loop] and (is_upstream(loop, node_id))
            for loop in self.enclosing(candidate)
        )


def is_loop(graph: Graph, node_id: str) -> bool:
    definition = get_action(graph.action_type(node_id) or "")
    return bool(definition and definition.loop)


def loops_of(graph: Graph) -> Loops:
    bodies = graph.loop_bodies(lambda node_id: is_loop(graph, node_id), LOOP_HANDLE)
    owners: dict[str, str] = {}
    for loop, body in sorted(bodies.items(), key=lambda item: -len(item[1])):  # inner bodies last
        owners.update(dict.fromkeys(body, loop))
    return Loops(bodies, owners)
