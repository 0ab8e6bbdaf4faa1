"""The demo's block monitor (keeperstate.demo.graphs.live_block_monitor_graph) against a real chain:
ganache mines bursts of blocks between the monitor's ticks, a real worker runs it on its schedule,
and a real receiver records every alert it is sent.

Exactness, as issue 21 asks: every block from the first the monitor saw to the head is alerted,
with that block's real hash as its dedupKey, none is skipped, and the cursor ends at the head.
Without faults each block is delivered exactly once; with the worker killed between an alert and
the cursor's move, that one block is delivered again by the next run (at least once) and the
receiver, keeping one per dedupKey, still holds each block once.
"""

from __future__ import annotations

from collections import Counter

import pytest

from keeperstate.demo.graphs import ALERTS_SECRET, live_block_monitor_graph
from keeperstate.executions.models import WorkflowExecution
from keeperstate.secrets.store import secret_put
from keeperstate.state.models import WorkflowState
from keeperstate.workflows.services import workflow_create
from tests.chain.conftest import TOKEN
from tests.workers.processes import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

TICK = 1  # seconds between the monitor's runs (tests/workers' FAST clocks allow 1)
CATCH_UP_SECONDS = 60  # a burst is alerted within a few ticks; the bound allows a loaded machine
BURSTS = [1, 3, 7, 12, 2]


@pytest.fixture
def monitor(chain, receiver, org, user, settings):
    """The demo monitor pointed at the chain and the receiver, ticking every second, active."""
    settings.KEEPERSTATE_MIN_INTERVAL = TICK
    secret_put(organization=org, name=ALERTS_SECRET, value=TOKEN)
    nodes, edges = live_block_monitor_graph(rpc_url=chain.url, alerts_url=receiver.url)
    nodes[0]["data"]["config"]["interval"] = TICK
    return workflow_create(organization=org, user=user, name="Block monitor", nodes=nodes, edges=edges,
                           active=True)


def cursor(workflow) -> int | None:
    return WorkflowState.objects.filter(workflow=workflow, key="cursor").values_list("value", flat=True).first()


def caught_up(workflow, head: int) -> None:
    wait_until(lambda: cursor(workflow) == head, CATCH_UP_SECONDS, f"the cursor to reach block {head}")


def summary(chain, receiver, monitor) -> str:
    """What the closing note of issue 21 reports: blocks, deliveries, gaps, duplicates, runs."""
    head, blocks = chain.head(), receiver.blocks()
    gaps = sorted(set(range(blocks[0], head + 1)) - set(blocks)) if blocks else []
    runs = WorkflowExecution.objects.filter(workflow=monitor)
    return (f"chain head {head} ({head} blocks mined after block 0); alerts delivered {len(receiver.deliveries)}, "
            f"blocks alerted {len(blocks)} ({blocks[0]}–{blocks[-1]}), gaps {gaps}, delivered twice "
            f"{receiver.delivered_twice()}; runs {runs.count()} "
            f"({dict(Counter(runs.values_list('status', flat=True)))})")


def assert_real_hashes(chain, receiver) -> None:
    for alert in receiver.deliveries:
        real = chain.block(alert["block"])["hash"]
        assert alert["hash"] == alert["dedupKey"] == real, alert


def test_every_block_of_every_burst_is_alerted_exactly_once(chain, processes, receiver, monitor):
    # given the monitor running on a worker that may reach the chain and the receiver only
    processes.worker("monitor-worker", KEEPERSTATE_HTTP_ALLOW=f"{chain.address},{receiver.address}")
    caught_up(monitor, 0)  # its first tick starts at the head: block 0

    # when the chain mines bursts between its ticks
    for burst in BURSTS:
        caught_up(monitor, chain.mine(burst))

    # then every block since the first was delivered, exactly once, with its real hash
    head = chain.head()
    assert head == sum(BURSTS)
    assert receiver.blocks() == list(range(head + 1))
    assert receiver.delivered_twice() == {}
    assert_real_hashes(chain, receiver)
    # and no run failed on the way (a tick that came while a run was still going is skipped: overlap skip)
    statuses = set(WorkflowExecution.objects.filter(workflow=monitor).values_list("status", flat=True))
    assert statuses <= {"success", "skipped"}, statuses
    print(summary(chain, receiver, monitor))


def test_a_worker_killed_mid_loop_resumes_after_the_last_block_it_finished(chain, processes, receiver, monitor):
    allow = f"{chain.address},{receiver.address}"
    worker = processes.worker("monitor-worker", KEEPERSTATE_HTTP_ALLOW=allow)
    caught_up(monitor, 0)

    # given a burst of 10 blocks, and the worker killed while its run waits on block 6's alert
    receiver.hold(block=6)
    chain.mine(10)
    assert receiver.holding.wait(CATCH_UP_SECONDS), "no run delivered block 6"
    processes.kill(worker)
    receiver.release()
    killed = WorkflowExecution.objects.get(workflow=monitor, status="running")
    assert cursor(monitor) == 5  # blocks 1–5 were finished, block 6 was alerted, not yet saved

    # when a new worker takes over
    processes.worker("next-worker", KEEPERSTATE_HTTP_ALLOW=allow)
    caught_up(monitor, 10)

    # then the killed run says what happened to it
    killed.refresh_from_db()
    assert (killed.status, killed.error_code) == ("interrupted", "RUN_INTERRUPTED")
    # and the next run resumed after block 5: only block 6 was delivered twice, by its dedupKey
    assert receiver.blocks() == list(range(11))
    assert receiver.delivered_twice() == {6: 2}
    assert_real_hashes(chain, receiver)
    # then a new burst goes on from there, once each
    caught_up(monitor, chain.mine(4))
    assert receiver.blocks() == list(range(15))
    assert receiver.delivered_twice() == {6: 2}
    print(summary(chain, receiver, monitor))
