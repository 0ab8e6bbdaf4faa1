"""How much MCP costs over the API, in one run on the same machine and database (ADR 0042):
calls per second and the median of one call, sequential from one client, for

* the API: ``GET /api/workflows/<id>/state/cursor/`` (gunicorn, WSGI);
* the ``get_state`` tool through /mcp/ in the same gunicorn (the chosen mount), raw JSON-RPC
  POSTs and through the SDK's client;
* the same tool through the SDK's own ASGI app under uvicorn (the alternative), raw JSON-RPC.

Printed with -s; the assertions are loose ratios (a shared 2-core machine), the figures go to
docs/mcp.md:  pytest -s tests/mcp/test_bench.py
"""

from __future__ import annotations

import json
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import httpx2
import pytest
from django.conf import settings

from keeperstate.state.store import StateScope, state_set
from tests.mcp.conftest import connected, run, start_site, stop_site, token_for
from tests.ops.serving import free_port
from tests.workers.processes import child_env, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

CALLS = 300
WARMUP = 20


def measure(call: Callable[[], Any]) -> tuple[float, float]:
    """(calls per second, median ms) of CALLS sequential calls after a warm-up."""
    for _ in range(WARMUP):
        call()
    times = []
    start = time.perf_counter()
    for _ in range(CALLS):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    total = time.perf_counter() - start
    return CALLS / total, statistics.median(times) * 1000


def rpc(tool: str, arguments: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": tool, "arguments": arguments}}).encode()


MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2025-06-18"}


def test_a_tool_call_against_the_equivalent_api_call(tmp_path, user, workflow):
    rates = "KEEPERSTATE_API_RATE"
    web, base = start_site(tmp_path / "gunicorn.log", **{rates: "1000000/min"})
    port = free_port()
    uvicorn = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "tests.mcp.asgi_alternative:app", "--host", "127.0.0.1", "--port",
         str(port), "--log-level", "warning"],
        stdout=open(tmp_path / "uvicorn.log", "wb"), stderr=subprocess.STDOUT,  # noqa: SIM115
        env=child_env(KEEPERSTATE_BENCH_USER=user.username), cwd=settings.BASE_DIR,
    )
    try:
        state_set(scope=StateScope(organization_id=workflow.organization_id, workflow_id=workflow.id),
                  key="cursor", value=19234001)
        token = token_for(user)
        auth, api_auth = {"Authorization": f"Bearer {token}"}, {"Authorization": f"Token {token}"}
        arguments = {"workflowId": str(workflow.id), "key": "cursor"}
        body = rpc("get_state", arguments)
        http = httpx2.Client(timeout=30)
        wait_until(lambda: uvicorn.poll() is None and _answers(http, port), 60, "uvicorn to listen")

        def api() -> None:
            r = http.get(f"{base}/api/workflows/{workflow.id}/state/cursor/", headers=api_auth)
            assert r.status_code == 200

        def mcp_wsgi() -> None:
            r = http.post(f"{base}/mcp/", content=body, headers={**MCP_HEADERS, **auth})
            assert r.status_code == 200
            assert not r.json()["result"]["isError"]

        def mcp_asgi() -> None:
            r = http.post(f"http://127.0.0.1:{port}/mcp/", content=body, headers=MCP_HEADERS)
            assert r.status_code == 200
            assert not r.json()["result"]["isError"]

        figures = {"API GET …/state/cursor/ (gunicorn)": measure(api),
                   "MCP get_state in gunicorn (WSGI, chosen)": measure(mcp_wsgi),
                   "MCP get_state, SDK's ASGI app (uvicorn)": measure(mcp_asgi)}

        async def sdk_client() -> tuple[float, float]:
            async with connected(base + "/mcp/", token) as client:
                for _ in range(WARMUP):
                    await client.call_tool("get_state", arguments)
                times = []
                start = time.perf_counter()
                for _ in range(CALLS):
                    t0 = time.perf_counter()
                    await client.call_tool("get_state", arguments)
                    times.append(time.perf_counter() - t0)
                return CALLS / (time.perf_counter() - start), statistics.median(times) * 1000

        figures["MCP get_state in gunicorn, through the SDK's client"] = run(sdk_client())
    finally:
        stop_site(web)
        uvicorn.send_signal(signal.SIGTERM)
        try:
            uvicorn.wait(timeout=20)
        except subprocess.TimeoutExpired:
            uvicorn.kill()
            uvicorn.wait(timeout=10)

    api_rate, api_p50 = figures["API GET …/state/cursor/ (gunicorn)"]
    print(f"\n{CALLS} sequential calls each, one client:")
    for name, (rate, p50) in figures.items():
        print(f"  {name:<52} {rate:7.0f} calls/s  p50 {p50:6.2f} ms  ({p50 / api_p50:4.2f}× the API's p50)")
    wsgi_rate, wsgi_p50 = figures["MCP get_state in gunicorn (WSGI, chosen)"]
    assert wsgi_p50 < api_p50 * 6  # a tool call costs a small multiple of the API call, not an order more


def _answers(http: httpx2.Client, port: int) -> bool:
    try:
        http.post(f"http://127.0.0.1:{port}/mcp/", content=b"{}", headers=MCP_HEADERS)
        return True
    except httpx2.TransportError:
        return False
