"""The API's whole path for one workflow, as a client walks it: create, edit, run 100 times with an
Idempotency-Key each, read the executions, retry a failed run, restore a version. On one server
and on a distributed database alike (KEEPERSTATE_CITUS=1, docs/testing.md): `-s` prints the
counts."""

from __future__ import annotations

import pytest

from tests.executions.graphs import counter_graph

pytestmark = pytest.mark.django_db

RUNS = 100


def all_pages(api, url: str) -> list[dict]:
    found: list[dict] = []
    while url:
        response = api.get(url)
        assert response.status_code == 200, response.json()
        found += response.json()["results"]
        url = response.json()["next"]
    return found


def test_create_edit_run_100_times_read_retry_and_restore(api):
    # create, then edit (a second version)
    nodes, edges = counter_graph()
    created = api.post("/api/workflows/", {"name": "Counter", "nodes": nodes, "edges": edges})
    assert created.status_code == 201, created.json()
    workflow = created.json()["id"]
    edited = api.patch(f"/api/workflows/{workflow}/", {"name": "Counter, renamed"})
    assert edited.status_code == 200, edited.json()

    # run 100 times, each with its own Idempotency-Key; the first key once more is a replay
    answers = [api.post(f"/api/workflows/{workflow}/execute/", {"input": {}}, HTTP_IDEMPOTENCY_KEY=f"run-{n}")
               for n in range(RUNS)]
    replay = api.post(f"/api/workflows/{workflow}/execute/", {"input": {}}, HTTP_IDEMPOTENCY_KEY="run-0")
    assert [a.status_code for a in answers] == [201] * RUNS
    assert {a.json()["status"] for a in answers} == {"success"}
    assert (replay.status_code, replay.json()["id"]) == (200, answers[0].json()["id"])

    # read the executions: the list, and one by its id
    listed = all_pages(api, f"/api/workflows/{workflow}/executions/?pageSize=50")
    one = api.get(f"/api/executions/{answers[41].json()['id']}/")
    assert len(listed) == RUNS
    assert {e["id"] for e in listed} == {a.json()["id"] for a in answers}
    assert (one.status_code, one.json()["status"]) == (200, "success")

    # a run that fails (the counter holds text), then its retry once the counter is a number again
    state = f"/api/workflows/{workflow}/state/runs/"
    assert api.put(state, {"value": "not a number"}).status_code == 200
    failed = api.post(f"/api/workflows/{workflow}/execute/", {"input": {}})
    assert (failed.status_code, failed.json()["status"]) == (201, "error")
    assert api.put(state, {"value": RUNS}).status_code == 200
    retried = api.post(f"/api/executions/{failed.json()['id']}/retry/")
    assert (retried.status_code, retried.json()["status"], retried.json()["retryOf"]) == (
        201, "success", failed.json()["id"]
    )

    # restore version 1: its name again, as a new version
    restored = api.post(f"/api/workflows/{workflow}/versions/1/restore/")
    versions = all_pages(api, f"/api/workflows/{workflow}/versions/")
    assert (restored.status_code, restored.json()["name"]) == (200, "Counter")
    assert [v["number"] for v in versions] == [3, 2, 1]

    counter = api.get(state).json()
    assert counter["value"] == RUNS + 1
    print(f"\nAPI path: created 1, edited 1, {RUNS} runs answered 201 success (1 replay 200), "
          f"{len(listed)} executions listed, 1 read, 1 failed run retried 201 success, version 1 restored "
          f"as version 3; counter {counter['value']} at version {counter['version']}")
