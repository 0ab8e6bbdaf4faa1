"""The chain tier (marker ``chain``, tests/conftest.py's TIERS): tests against a real local
Ethereum node, ganache, pinned in tests/chain/package.json and installed by the README's test
command and .ci/run (``npm ci --prefix tests/chain``; nothing is downloaded at run time).

Fixtures for any test in this folder:

* ``chain`` — a fresh ganache for the test (tests/chain/ganache.py): on a free 127.0.0.1 port, at
  block 0, mining only when asked. ``chain.mine(n)`` mines a burst of n blocks and returns the new
  head, ``chain.head()`` reads it, ``chain.block(n)`` is ``eth_getBlockByNumber`` (its ``hash``,
  ``parentHash``, ``timestamp``), ``chain.rpc(method, *params)`` any call; ``chain.url`` is the
  JSON-RPC URL for a workflow's HTTP Request and ``chain.address`` (``127.0.0.1:<port>``) the one
  KEEPERSTATE_HTTP_ALLOW entry that lets a worker reach it and nothing else. Started with a bounded
  wait (60 s) for its first answer, and stopped by its PID after the test, failed or not.
* ``processes`` — real ``manage.py worker`` processes on the test database (tests/workers), ended
  by PID after the test; their logs are printed when the test failed.
* ``chain_worker`` — one worker whose egress guard allows only the chain
  (``KEEPERSTATE_HTTP_ALLOW=chain.address``), with tests/workers' fast clocks.
* ``receiver`` — an alert receiver on 127.0.0.1 (tests/chain/receiver.py) that records every alert
  sent with ``Authorization: Bearer`` TOKEN, duplicates included, and can hold one delivery while a
  test kills the worker; stopped after the test.

A test here needs the database committed for the worker to see it:
``pytest.mark.django_db(transaction=True)``. Without node or the installed ganache the tier fails
and says what to run; ``-m "not chain"`` leaves it out on purpose.
"""

from __future__ import annotations

import pytest

from tests.chain.ganache import Ganache, missing
from tests.chain.receiver import AlertReceiver
from tests.workers.processes import free_port

TOKEN = "chain-tier-alerts-token"  # the receiver's bearer token: the monitors' ALERTS_TOKEN secret


@pytest.fixture
def chain(tmp_path, request):
    if (why := missing()) is not None:
        # Not a skip: the README's test command installs ganache, and a skipped tier would hide a gap.
        pytest.fail(f"the chain tier cannot run: {why} (or leave the tier out: -m 'not chain')")
    node = Ganache(free_port(), tmp_path / "ganache.log")
    try:
        yield node.start()
    finally:
        node.stop()
        report = getattr(request.node, "rep_call", None)
        if report is not None and report.failed:
            print(f"--- ganache (pid {node.pid}) ---\n{node.log()}")


@pytest.fixture
def chain_worker(chain, processes):
    return processes.worker("chain-worker", KEEPERSTATE_HTTP_ALLOW=chain.address)


@pytest.fixture
def receiver():
    running = AlertReceiver(TOKEN).start()
    try:
        yield running
    finally:
        running.stop()
