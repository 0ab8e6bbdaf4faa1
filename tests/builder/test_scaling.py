"""The editor's endpoints scale linearly: the @ metadata, validation and save of a 500-node
graph cost at most 12× a 50-node graph (10× the nodes).

The cost that is pinned is counted, so the test gives the same answer on a busy machine: every
Python and C function call made while serving the graph. A quadratic step written as a single
operation (``x in a_list`` in a loop) makes no calls, so the CPU time is checked as well, with a
wider bound that a linear cost keeps on a loaded machine and a quadratic one (100×) does not.
"""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest

from keeperstate.engine.offers import reference_options
from keeperstate.engine.validation import validate_graph
from keeperstate.workflows.services import workflow_update

pytestmark = pytest.mark.django_db

RUNS = 15


def chain(size: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A trigger then State Sets in a row, each referencing the one before it and the trigger."""
    nodes: list[dict[str, Any]] = [{
        "id": "trigger", "type": "trigger", "position": {"x": 0, "y": 0},
        "data": {"label": "Trigger", "type": "trigger",
                 "config": {"triggerType": "Manual", "sampleInput": {"block": 1}}},
    }]
    edges = []
    for i in range(1, size):
        previous = nodes[-1]
        ref = ("<<@trigger:Trigger.block>>" if previous["id"] == "trigger"
               else f"<<@{previous['id']}:{previous['data']['label']}.version>>")
        nodes.append({
            "id": f"set-{i}", "type": "action", "position": {"x": 0, "y": 100 * i},
            "data": {"label": f"Set {i}", "type": "action", "config": {
                "actionType": "State Set", "key": f"k{i}", "value": f"{ref} and <<@trigger:Trigger.block>>",
                "expectedVersion": ref if previous["id"] != "trigger" else "",
            }},
        })
        edges.append({"id": f"e{i}", "source": previous["id"], "target": f"set-{i}"})
    return nodes, edges


def cpu_ratio(large: Callable[[], Any], small: Callable[[], Any], repeat: int = 10) -> float:
    """The least CPU time of one large call over the least of one small call (averaged over
    ``repeat``). Process time leaves out waiting for a busy machine's CPU; the two sizes are timed
    in alternation so that a burst of noise (another process thrashing the caches) lands on both,
    and the collector is paused so the test's own live objects do not bill the code under test."""
    small_times, large_times = [], []
    gc.collect()
    gc.disable()
    try:
        for _ in range(RUNS):
            began = time.process_time()
            for _call in range(repeat):
                small()
            small_times.append((time.process_time() - began) / repeat)
            began = time.process_time()
            large()
            large_times.append(time.process_time() - began)
    finally:
        gc.enable()
    return min(large_times) / min(small_times)


def calls(work: Callable[[], Any]) -> int:
    """Function calls (Python and C) made by one run of work."""
    count = 0

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(profile)
    try:
        work()
    finally:
        sys.setprofile(None)
    return count


@pytest.mark.parametrize("surface", ["references", "validation", "save"])
def test_a_500_node_graph_costs_at_most_12_times_a_50_node_graph(surface, workflow):
    def work(size: int) -> Callable[[], Any]:
        nodes, edges = chain(size)
        last = nodes[-1]["id"]
        if surface == "references":
            return lambda: reference_options(nodes, edges, last)
        if surface == "validation":
            assert validate_graph(nodes, edges).valid
            return lambda: validate_graph(nodes, edges)
        return lambda: workflow_update(workflow, nodes=nodes, edges=edges)

    small, large = work(50), work(500)
    small(), large()  # warm: imports, caches, the first save

    assert calls(large) / calls(small) <= 12, f"{surface}: 500 nodes make {calls(large) / calls(small):.1f}× the calls"
    # A linear cost measures ~10×; a quadratic one ~100× on every attempt. Noise on a loaded CI
    # machine has pushed a single linear measurement to 38×, so the best of three attempts counts.
    ratios = []
    for _attempt in range(3):
        ratios.append(cpu_ratio(large, small))
        if ratios[-1] <= 30:
            break
    assert min(ratios) <= 30, f"{surface}: 500 nodes take {min(ratios):.1f}× the CPU time of 50 nodes"


def test_a_chain_of_3000_nodes_is_answered_without_exhausting_the_stack():
    nodes, edges = chain(3000)

    # past the 500 nodes a workflow holds, the validator says so first and reads no further
    assert [f.code for f in validate_graph(nodes, edges).errors] == ["WORKFLOW_TOO_LARGE"]
    assert len(reference_options(nodes, edges, nodes[-1]["id"])["sources"]) == 3000  # 2,999 nodes + System
