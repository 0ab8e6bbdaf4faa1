"""The reorg-safe monitor (keeperstate.workflows.examples.reorg_safe_monitor_graph) against a real
chain that reorganises: ganache's own ``evm_snapshot`` / ``evm_revert`` make the reorganisations
(a snapshot, blocks mined, a revert, other blocks mined), shallow, exactly ``maxReorgDepth`` deep
(twice in a row, the second below the first one's ancestor) and to a shorter chain, between bursts,
with the worker killed while a run waits on a reorg alert, on a block alert, and on a block alert
whose block the chain then replaces before the next worker runs; a real worker runs the monitor on
its schedule and a real receiver records every alert it is sent.

Exact, as issue 42 asks: every block of the final chain is alerted exactly once (by the receiver's
key, dedupKey); every block alerted that the chain replaced was alerted before the reorg alert that
names it by that hash; each reorganisation is named once, with its depth; the cursor ends at the
head with its hash. A reorganisation deeper than maxReorgDepth fails the run with FAILED_BY_WORKFLOW
and alerts. Each test prints what the closing note reports: blocks mined, reorganisations made (their
depths), alerts, reorg alerts, gaps and duplicates.
"""

from __future__ import annotations

from collections import Counter

import pytest

from keeperstate.demo.graphs import ALERTS_SECRET
from keeperstate.executions.models import WorkflowExecution
from keeperstate.secrets.store import secret_put
from keeperstate.state.models import WorkflowState
from keeperstate.workflows.examples import reorg_safe_monitor_graph
from keeperstate.workflows.services import workflow_create
from tests.chain.conftest import TOKEN
from tests.workers.processes import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

MAX_REORG_DEPTH = 4  # small, so a reorganisation at the bound and one past it stay quick to make
TICK = 1  # seconds between the monitor's runs (tests/workers' FAST clocks allow 1)
CATCH_UP_SECONDS = 60  # a burst or a reorganisation is handled within a few ticks; generous for a loaded machine


@pytest.fixture
def monitor(chain, receiver, org, user, settings):
    """The reorg-safe monitor on the chain and the receiver, maxReorgDepth 4, every second, active."""
    settings.KEEPERSTATE_MIN_INTERVAL = TICK
    secret_put(organization=org, name=ALERTS_SECRET, value=TOKEN)
    nodes, edges = reorg_safe_monitor_graph(chain.url, receiver.url, max_reorg_depth=MAX_REORG_DEPTH, interval=TICK)
    return workflow_create(organization=org, user=user, name="Reorg-safe monitor", nodes=nodes, edges=edges,
                           active=True)


@pytest.fixture
def worker(processes, chain, receiver):
    allow = f"{chain.address},{receiver.address}"
    return lambda name="monitor-worker": processes.worker(name, KEEPERSTATE_HTTP_ALLOW=allow)


def cursor(workflow) -> dict | None:
    return WorkflowState.objects.filter(workflow=workflow, key="cursor").values_list("value", flat=True).first()


def caught_up(chain, workflow) -> int:
    """Wait (bounded) until the cursor is the chain's head with its hash, its alert sent; the head."""
    head = chain.head()
    target = {"number": head, "hash": chain.block(head)["hash"], "sent": True}

    def at_head():
        value = cursor(workflow)
        return value is not None and {k: value[k] for k in target} == target

    wait_until(at_head, CATCH_UP_SECONDS, f"the cursor to reach block {head} with its hash")
    return head


class Figures:
    """What the receiver got, judged against the chain as it is now."""

    def __init__(self, chain, receiver):
        head = chain.head()
        self.canonical = {n: chain.block(n)["hash"] for n in range(head + 1)}
        self.deliveries = list(receiver.deliveries)
        seen: set[str] = set()
        self.kept, self.duplicates = [], []
        for alert in self.deliveries:
            (self.duplicates if alert["dedupKey"] in seen else self.kept).append(alert)
            seen.add(alert["dedupKey"])
        self.blocks = [a for a in self.kept if a["type"] == "block"]
        self.reorgs = [a for a in self.kept if a["type"] == "reorg"]
        alerted = Counter((a["block"], a["hash"]) for a in self.blocks)
        self.gaps = [n for n, h in self.canonical.items() if alerted[(n, h)] == 0]
        self.twice = {block: n for block, n in alerted.items() if n > 1}
        self.replaced = [(a["block"], a["hash"]) for a in self.blocks if self.canonical.get(a["block"]) != a["hash"]]

    def unnamed(self) -> list[tuple[int, str]]:
        """Replaced blocks alerted but not named, by their hash, in a reorg alert kept after theirs."""
        position = {a["dedupKey"]: i for i, a in enumerate(self.kept)}
        missing = []
        for number, old_hash in self.replaced:
            named = [position[r["dedupKey"]] for r in self.reorgs if old_hash in r["oldHashes"]
                     and r["from"] <= number <= r["to"]]
            if not named or min(named) < position[f"block-{old_hash}"]:
                missing.append((number, old_hash))
        return missing

    def out_of_order(self) -> list[tuple[int, int]]:
        """Kept block alerts that do not follow the one before: each is the next block, or the
        first block a reorg alert sent just before it names."""
        wrong, previous = [], None
        for alert in self.kept:
            if alert["type"] == "reorg":
                previous = alert["from"] - 1
            elif alert["type"] == "block":
                if previous is not None and alert["block"] != previous + 1:
                    wrong.append((previous, alert["block"]))
                previous = alert["block"]
        return wrong

    def summary(self, title: str, mined: int, made: list[int], runs) -> str:
        statuses = dict(Counter(runs.values_list("status", flat=True)))
        return (f"{title}: blocks mined {mined} (head {max(self.canonical)}), reorgs made {len(made)} (depths {made}); "
                f"alerts delivered {len(self.deliveries)}, kept {len(self.kept)} ({len(self.blocks)} block, "
                f"{len(self.reorgs)} reorg: depths {[r['depth'] for r in self.reorgs]}); replaced blocks alerted "
                f"{len(self.replaced)}, not named {[n for n, _ in self.unnamed()]}; gaps {self.gaps}; duplicates "
                f"{[(d['type'], d.get('block', d.get('from'))) for d in self.duplicates]}; runs {statuses}")


def test_every_block_of_the_final_chain_is_alerted_once_and_every_replaced_one_named(
    chain, receiver, monitor, worker, processes
):
    made: list[int] = []  # each reorganisation's depth below the monitor's cursor

    def reorganise(snapshot, blocks):
        made.append(cursor(monitor)["number"] - snapshot.head)
        chain.reorg(snapshot, blocks)

    # given the monitor on a worker, at block 0, and a burst
    current = worker()
    caught_up(chain, monitor)
    chain.mine(3)
    caught_up(chain, monitor)

    # when the chain reorganises 1 deep (block 4 replaced, a longer chain)
    snapshot = chain.snapshot()
    chain.mine(1)
    caught_up(chain, monitor)
    reorganise(snapshot, 2)
    caught_up(chain, monitor)
    chain.mine(5)
    caught_up(chain, monitor)

    # and exactly maxReorgDepth deep (13–16), then at once maxReorgDepth deep again from the new head,
    # below the first one's ancestor (11–14): the cursor still keeps the hashes to find 10
    below = chain.snapshot()
    chain.mine(2)
    caught_up(chain, monitor)
    snapshot = chain.snapshot()
    chain.mine(MAX_REORG_DEPTH)
    caught_up(chain, monitor)
    reorganise(snapshot, 2)
    caught_up(chain, monitor)
    reorganise(below, MAX_REORG_DEPTH + 1)
    caught_up(chain, monitor)

    # and to a shorter chain: 3 blocks replaced by 1, the new head below the monitor's cursor
    snapshot = chain.snapshot()
    chain.mine(3)
    caught_up(chain, monitor)
    reorganise(snapshot, 1)
    caught_up(chain, monitor)

    # and 2 deep while the worker is killed with the run waiting on that reorg alert, before the
    # cursor went back: the next worker's run finds the same reorganisation and alerts it again
    snapshot = chain.snapshot()
    chain.mine(2)
    caught_up(chain, monitor)
    receiver.hold(type="reorg")
    reorganise(snapshot, 3)
    assert receiver.holding.wait(CATCH_UP_SECONDS), "no run sent the reorg alert"
    processes.kill(current)
    receiver.release()
    current = worker("second-worker")
    caught_up(chain, monitor)

    # and a burst during which the worker is killed between a block's alert and marking it sent:
    # the next worker's run sends that alert again
    receiver.hold(block=chain.head() + 4)
    chain.mine(8)
    assert receiver.holding.wait(CATCH_UP_SECONDS), "no run alerted the held block"
    processes.kill(current)
    receiver.release()
    current = worker("third-worker")
    caught_up(chain, monitor)

    # and a burst during which the worker is killed the same way, and the chain then replaces that
    # block (and the 3 before it) before any worker runs again: the reorg alert names it
    snapshot = chain.snapshot()
    receiver.hold(block=snapshot.head + MAX_REORG_DEPTH)
    chain.mine(8)
    assert receiver.holding.wait(CATCH_UP_SECONDS), "no run alerted the held block"
    processes.kill(current)
    receiver.release()
    reorganise(snapshot, 10)
    worker("fourth-worker")
    head = caught_up(chain, monitor)

    # then every block of the final chain was alerted exactly once (by key), in order
    figures = Figures(chain, receiver)
    runs = WorkflowExecution.objects.filter(workflow=monitor)
    print(figures.summary("reorgs", chain.mined, made, runs))
    assert figures.gaps == []
    assert figures.twice == {}
    assert figures.out_of_order() == []
    # every replaced block it alerted was named, by that hash, in a reorg alert sent after it
    assert figures.replaced
    assert figures.unnamed() == []
    # each reorganisation was named once, with its depth
    assert [r["depth"] for r in figures.reorgs] == made == [1, MAX_REORG_DEPTH, MAX_REORG_DEPTH, 3, 2, MAX_REORG_DEPTH]
    # only the alerts in flight when the worker was killed were delivered twice, under their keys
    # (the third kill's block was replaced, so named instead of sent again)
    assert sorted(d["type"] for d in figures.duplicates) == ["block", "reorg"]
    # and the cursor is the head with its hash, keeping the newest 2 × maxReorgDepth + 1 hashes
    window = range(head - 2 * MAX_REORG_DEPTH, head + 1)
    assert cursor(monitor) == {"number": head, "hash": figures.canonical[head], "sent": True,
                               "recent": [figures.canonical[n] for n in window]}
    assert set(runs.values_list("status", flat=True)) <= {"success", "skipped", "interrupted"}
    assert runs.filter(status="interrupted").count() == 3


def test_a_reorganisation_deeper_than_max_reorg_depth_fails_the_run_with_its_code_and_alerts(
    chain, receiver, monitor, worker
):
    # given the monitor caught up at block 6, keeping the hashes of blocks 0–6
    worker()
    caught_up(chain, monitor)
    chain.mine(1)
    below = chain.snapshot()  # at block 1
    chain.mine(5)
    caught_up(chain, monitor)
    kept = cursor(monitor)

    # when blocks 2–6 are replaced: one more than maxReorgDepth (block 1 is still there, below the
    # maxReorgDepth + 1 blocks the check looks at)
    replaced = chain.reorg(below, 7)
    assert len(replaced) == MAX_REORG_DEPTH + 1

    # then its runs fail with FAILED_BY_WORKFLOW, after one too-deep alert (the receiver keeps one)
    failing = WorkflowExecution.objects.filter(workflow=monitor, error_code="FAILED_BY_WORKFLOW")
    wait_until(lambda: failing.count() >= 2, CATCH_UP_SECONDS, "two runs to fail")
    first = failing.earliest("queued_at")
    assert first.status == "error"
    assert f"deeper than maxReorgDepth ({MAX_REORG_DEPTH})" in first.error
    assert first.node_results["too-deep"]["details"] == {"block": 6, "hash": kept["hash"],
                                                          "maxReorgDepth": MAX_REORG_DEPTH}
    assert first.node_results["too-deep-alert"]["success"] is True  # the alert went before the failure
    figures = Figures(chain, receiver)
    (too_deep,) = [a for a in figures.kept if a["type"] == "reorg-too-deep"]
    assert too_deep["cursor"] == kept
    assert any(d["type"] == "reorg-too-deep" for d in figures.duplicates)  # sent again, kept once
    # and nothing was alerted or moved past it: no block of the new chain, no reorg alert, the cursor as it was
    assert figures.reorgs == []
    assert not any(a["hash"] == chain.block(a["block"])["hash"] for a in figures.blocks if a["block"] > below.head)
    assert cursor(monitor) == kept
    print(figures.summary("too deep", chain.mined, [len(replaced)],
                          WorkflowExecution.objects.filter(workflow=monitor)))
