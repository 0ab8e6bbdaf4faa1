"""The workflow graph (React Flow shape): its nodes and edges, read once, and their order.

What runs before what, the loops and the trigger are keeperstate.engine.scope's answers. Sticky
notes (``"type": "note"``) are kept in a workflow's nodes for its authors and are no part of the
graph: parsing leaves them out, so the runner, the validator and the @ offers never see them, and
no edge may touch one."""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from keeperstate.core.errors import Code, CodedError
from keeperstate.engine.references import NODE_ID_RE

NOTE_TYPE = "note"


def is_note(node: Any) -> bool:
    """A sticky note: text on the canvas, kept with the workflow, never run or validated."""
    return isinstance(node, dict) and node.get("type") == NOTE_TYPE


class GraphInvalid(CodedError):
    error = Code.WORKFLOW_INVALID


class GraphCycle(GraphInvalid):
    """A cycle: no node of it can run before another (the validator, the runner, the autocomplete)."""

    error = Code.CYCLE

    def __init__(self, loop: list[str]):
        super().__init__(
            f"The workflow has a cycle ({' → '.join(loop)}), so no node of it runs before another; "
            "remove one of its edges.",
            details={"cycle": loop},
        )


# What one workflow may hold (DESIGN.md §8), on every way in: each save keeps a version, and the
# editor, the validator and the runner all walk the whole graph.
MAX_NODES = 500
MAX_EDGES = 1_000
MAX_GRAPH_BYTES = 1024 * 1024  # of the graph's compact JSON, {"nodes": …, "edges": …}, as UTF-8


class WorkflowTooLarge(CodedError):
    error = Code.WORKFLOW_TOO_LARGE


def check_size(nodes: Any, edges: Any) -> None:
    """Raise WorkflowTooLarge for a graph past MAX_NODES, MAX_EDGES or MAX_GRAPH_BYTES. The counts
    are checked first: they cost nothing, and a graph within them is measured once."""
    counts = {"nodes": len(nodes) if isinstance(nodes, list) else 0,
              "edges": len(edges) if isinstance(edges, list) else 0}
    limits = {"nodes": MAX_NODES, "edges": MAX_EDGES, "bytes": MAX_GRAPH_BYTES}
    size = 0
    if counts["nodes"] <= MAX_NODES and counts["edges"] <= MAX_EDGES:
        size = len(json.dumps({"nodes": nodes, "edges": edges}, separators=(",", ":"), ensure_ascii=False)
                   .encode("utf-8", "surrogatepass"))
        if size <= MAX_GRAPH_BYTES:
            return
    details = {**counts, "bytes": size or None, "limits": limits}
    raise WorkflowTooLarge(
        f"The workflow has {counts['nodes']:,} nodes and {counts['edges']:,} edges"
        + (f" in {size:,} bytes of JSON" if size else "")
        + f"; a workflow holds at most {MAX_NODES:,} nodes, {MAX_EDGES:,} edges and {MAX_GRAPH_BYTES:,} bytes "
        "(1 MB) of graph JSON. Split it into workflows, or move large payloads out of its configs.",
        details=details,
    )


@dataclass(frozen=True)
class Edge:
    id: str
    source: str
    target: str
    source_handle: str | None = None


@dataclass
class Graph:
    nodes: dict[str, dict[str, Any]]
    edges: list[Edge]
    _incoming: dict[str, list[Edge]] = field(default_factory=dict, repr=False)
    _outgoing: dict[str, list[Edge]] = field(default_factory=dict, repr=False)

    @classmethod
    def parse(cls, nodes: Any, edges: Any) -> Graph:
        """Read nodes and edges; raise GraphInvalid for a shape no workflow can have."""
        if not isinstance(nodes, list) or not isinstance(edges, list):
            raise GraphInvalid("A workflow needs a list of nodes and a list of edges.")
        by_id: dict[str, dict[str, Any]] = {}
        notes: set[str] = set()
        for i, node in enumerate(nodes):
            node_id = node.get("id") if isinstance(node, dict) else None
            if not isinstance(node_id, str) or not NODE_ID_RE.fullmatch(node_id):
                raise GraphInvalid(
                    f"Node #{i + 1} needs a text id without spaces, ':', '<' or '>' (e.g. state-get-1), "
                    "so references can name it.",
                    details={"index": i},
                )
            if not isinstance(node.get("data", {}), dict):
                raise GraphInvalid(f"Node '{node_id}' has data that is not an object.", details={"nodeId": node_id})
            if node_id in by_id or node_id in notes:
                raise GraphInvalid(
                    f"Two nodes share the id '{node_id}'; ids must be unique.", details={"nodeId": node_id}
                )
            if is_note(node):
                notes.add(node_id)
            else:
                by_id[node_id] = node
        parsed: list[Edge] = []
        for i, edge in enumerate(edges):
            if not isinstance(edge, dict) or not isinstance(edge.get("source"), str) or not isinstance(
                edge.get("target"), str
            ):
                raise GraphInvalid(f"Edge #{i + 1} needs a source and a target node id.", details={"index": i})
            for end in ("source", "target"):
                if edge[end] in notes:
                    raise GraphInvalid(
                        f"Edge '{edge.get('id', i + 1)}' connects the sticky note '{edge[end]}'; notes take no "
                        "connections. Delete the edge.",
                        details={"edgeId": edge.get("id"), "nodeId": edge[end]},
                    )
                if edge[end] not in by_id:
                    raise GraphInvalid(
                        f"Edge '{edge.get('id', i + 1)}' points at a node '{edge[end]}' that does not exist.",
                        details={"edgeId": edge.get("id"), "nodeId": edge[end]},
                    )
            handle = edge.get("sourceHandle")
            parsed.append(Edge(str(edge.get("id", f"e{i + 1}")), edge["source"], edge["target"], handle or None))
        graph = cls(nodes=by_id, edges=parsed)
        for node_id in by_id:
            graph._incoming[node_id] = []
            graph._outgoing[node_id] = []
        for e in parsed:
            graph._outgoing[e.source].append(e)
            graph._incoming[e.target].append(e)
        return graph

    def incoming(self, node_id: str) -> list[Edge]:
        return self._incoming.get(node_id, [])

    def outgoing(self, node_id: str) -> list[Edge]:
        return self._outgoing.get(node_id, [])

    def label(self, node_id: str) -> str:
        data = self.nodes[node_id].get("data") or {}
        label = data.get("label")
        return label if isinstance(label, str) and label else node_id

    def labels(self) -> dict[str, str]:
        return {nid: self.label(nid) for nid in self.nodes}

    def config(self, node_id: str) -> dict[str, Any]:
        data = self.nodes[node_id].get("data") or {}
        config = data.get("config") or {}
        return config if isinstance(config, dict) else {}

    def action_type(self, node_id: str) -> str | None:
        value = self.config(node_id).get("actionType")
        return value if isinstance(value, str) else None

    def cycle(self) -> list[str] | None:
        """One cycle as a list of node ids, or None when the graph is acyclic.

        Depth-first with an explicit stack: a long chain (thousands of nodes) must not exhaust
        Python's recursion limit.
        """
        white, grey, black = 0, 1, 2
        colour = dict.fromkeys(self.nodes, white)
        for root in self.nodes:
            if colour[root] != white:
                continue
            path = [root]  # the grey nodes, root first
            position = {root: 0}
            pending = [iter(self.outgoing(root))]
            colour[root] = grey
            while pending:
                edge = next(pending[-1], None)
                if edge is None:
                    colour[path.pop()] = black
                    pending.pop()
                    continue
                target = edge.target
                if colour[target] == grey:
                    return path[position[target] :] + [target]
                if colour[target] == white:
                    colour[target] = grey
                    position[target] = len(path)
                    path.append(target)
                    pending.append(iter(self.outgoing(target)))
        return None

    def topological_order(self) -> list[str]:
        if (loop := self.cycle()) is not None:
            raise GraphCycle(loop)
        indegree = {nid: len(self.incoming(nid)) for nid in self.nodes}
        queue = deque(nid for nid, d in indegree.items() if d == 0)
        order = []
        while queue:
            current = queue.popleft()
            order.append(current)
            for e in self.outgoing(current):
                indegree[e.target] -= 1
                if indegree[e.target] == 0:
                    queue.append(e.target)
        return order
