"""The chain tier works: a real ganache mines bursts on demand, and a workflow run by a real worker
reads its head and the head block's hash over JSON-RPC (HTTP Request ``jsonRpc``), with the egress
guard open to the chain's address only."""

from __future__ import annotations

import re

import pytest

from keeperstate.executions.models import WorkflowExecution
from keeperstate.executions.service import queue_run
from keeperstate.state.models import WorkflowState
from keeperstate.workflows.services import workflow_create
from tests.chain.ganache import ChainError
from tests.workers.processes import free_port, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

HASH = re.compile(r"^0x[0-9a-f]{64}$")
RUN_SECONDS = 60


def node(node_id, label, config):
    return {"id": node_id, "type": "action", "position": {"x": 0, "y": 0},
            "data": {"label": label, "type": "action", "config": config}}


def line(*nodes):
    """Manual trigger → the nodes in order."""
    trigger = {"id": "trigger", "type": "trigger", "position": {"x": 0, "y": 0},
               "data": {"label": "Trigger", "type": "trigger", "config": {"triggerType": "Manual"}}}
    ids = ["trigger", *(n["id"] for n in nodes)]
    edges = [{"id": f"e{i}", "source": a, "target": b} for i, (a, b) in enumerate(zip(ids, ids[1:], strict=False))]
    return [trigger, *nodes], edges


def head_and_hash_graph(url):
    """Head (eth_blockNumber) → State Set head → Block (eth_getBlockByNumber of the head) → State Set hash."""
    block_of_head = '{"method": "eth_getBlockByNumber", "params": ["<<@head:Head.result>>", false]}'
    return line(
        node("head", "Head", {"actionType": "HTTP Request", "url": url, "jsonRpc": True,
                              "body": {"method": "eth_blockNumber", "params": []}}),
        node("save-head", "Save head", {"actionType": "State Set", "key": "head", "value": "<<@head:Head.result>>"}),
        node("block", "Block", {"actionType": "HTTP Request", "url": url, "jsonRpc": True,
                                "body": block_of_head}),
        node("save-hash", "Save hash", {"actionType": "State Set", "key": "hash",
                                        "value": "<<@block:Block.result.hash>>"}),
    )


def run_on_the_worker(workflow):
    """Queue a run for the worker and wait (bounded) for it to finish."""
    execution = queue_run(workflow, {}, trigger="api").execution
    wait_until(lambda: WorkflowExecution.objects.filter(pk=execution.pk, status__in=WorkflowExecution.FINISHED)
               .exists(), RUN_SECONDS, "the worker to finish the run")
    execution.refresh_from_db()
    return execution


def stored(workflow, key):
    return WorkflowState.objects.get(workflow=workflow, key=key).value


def test_the_chain_mines_bursts_on_demand_only(chain):
    assert chain.head() == 0

    assert chain.mine(5) == 5
    assert chain.mine() == 6

    block = chain.block(6)
    assert block["number"] == "0x6"
    assert HASH.match(block["hash"])
    assert block["parentHash"] == chain.block(5)["hash"]
    assert chain.block(7) is None
    assert chain.head() == 6  # nothing mined by itself meanwhile


def test_the_chain_answers_json_rpc_errors(chain):
    with pytest.raises(ChainError, match="eth_nope"):
        chain.rpc("eth_nope")


def test_a_worker_reads_the_head_and_its_hash_from_the_chain(chain, chain_worker, org, user):
    # given a chain at block 3 and the workflow, run by a real worker allowed to reach the chain only
    chain.mine(3)
    nodes, edges = head_and_hash_graph(chain.url)
    workflow = workflow_create(organization=org, user=user, name="Chain head", nodes=nodes, edges=edges)

    # when it runs
    first = run_on_the_worker(workflow)

    # then it stored the head (hex, as the chain says it) and that block's real hash
    assert first.status == "success", (first.error_code, first.node_results)
    assert first.node_results["head"]["data"]["result"] == "0x3"
    assert stored(workflow, "head") == "0x3"
    assert stored(workflow, "hash") == chain.block(3)["hash"]

    # and after a burst of 7 blocks between two runs, the next run sees the new head and its hash
    chain.mine(7)
    second = run_on_the_worker(workflow)
    assert second.status == "success", (second.error_code, second.node_results)
    assert stored(workflow, "head") == "0xa"
    assert stored(workflow, "hash") == chain.block(10)["hash"]
    assert stored(workflow, "hash") != chain.block(3)["hash"]


def test_a_json_rpc_error_of_the_chain_fails_the_node_on_the_worker(chain, chain_worker, org, user):
    nodes, edges = line(
        node("call", "Call", {"actionType": "HTTP Request", "url": chain.url, "jsonRpc": True,
                              "body": {"method": "eth_nope", "params": []}}),
        node("save", "Save", {"actionType": "State Set", "key": "never", "value": "<<@call:Call.result>>"}),
    )
    workflow = workflow_create(organization=org, user=user, name="Bad call", nodes=nodes, edges=edges)

    execution = run_on_the_worker(workflow)

    assert execution.status == "error"
    assert execution.error_code == "HTTP_RPC_ERROR"
    details = execution.node_results["call"]["details"]
    assert isinstance(details["code"], int)  # ganache says -32700 where geth says -32601
    assert "eth_nope does not exist" in details["message"]
    assert not WorkflowState.objects.filter(workflow=workflow, key="never").exists()


def test_the_workers_egress_guard_opens_to_the_chain_only(chain, chain_worker, org, user):
    # another loopback port on the same machine stays refused
    elsewhere = f"http://127.0.0.1:{free_port()}/"
    nodes, edges = line(node("call", "Call", {"actionType": "HTTP Request", "url": elsewhere, "jsonRpc": True,
                                              "body": {"method": "eth_blockNumber", "params": []}}))
    workflow = workflow_create(organization=org, user=user, name="Elsewhere", nodes=nodes, edges=edges)

    execution = run_on_the_worker(workflow)

    assert execution.error_code == "HTTP_EGRESS_BLOCKED"
