"""MCP tests talk to a real gunicorn serving the site on 127.0.0.1 (the test database), with the
SDK's own client. One server per module, stopped by PID; its log is printed when it fails to start."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from django.conf import settings
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from keeperstate.accounts.tokens import create_token
from tests.ops.serving import free_port
from tests.workers.processes import child_env, stop_process, wait_until


def start_site(log_path: Path, **env: str) -> tuple[subprocess.Popen[bytes], str]:
    """gunicorn serving the site (2 workers × 4 threads, as serve runs it) on a free port."""
    port = free_port()
    with open(log_path, "wb") as log:
        web = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "keeperstate.wsgi", "-b", f"127.0.0.1:{port}", "-w", "2",
             "--threads", "4"],
            stdout=log, stderr=subprocess.STDOUT, env=child_env(**env), cwd=settings.BASE_DIR,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: web.poll() is None and _answers(base + "/healthz"), 60, "gunicorn to listen")
    except AssertionError:
        stop_site(web)
        print(log_path.read_text(errors="replace")[-3000:])
        raise
    return web, base


def stop_site(web: subprocess.Popen[bytes]) -> None:
    stop_process(web)


@pytest.fixture(scope="module")
def site(django_db_setup, tmp_path_factory) -> Iterator[str]:
    """The site's base URL, served by a real gunicorn for the module's tests."""
    web, base = start_site(tmp_path_factory.mktemp("mcp") / "gunicorn.log")
    try:
        yield base
    finally:
        stop_site(web)


@pytest.fixture
def mcp_url(site) -> str:
    return site + "/mcp/"


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2):
            return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


def token_for(user: Any, name: str = "agent") -> str:
    return create_token(user, name=name)[1]


@asynccontextmanager
async def connected(url: str, token: str, mode: str = "legacy"):
    """The SDK's client over Streamable HTTP with the token as a Bearer credential; "legacy": the
    initialize handshake that today's MCP clients make."""
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:  # type: ignore[arg-type]
            yield client


def answer(result: Any) -> Any:
    """A tool result's JSON text, parsed."""
    return json.loads(result.content[0].text)


def run(coroutine: Any, timeout: float = 120) -> Any:
    """Run the client's coroutine on a thread of its own: in a whole-suite run the browser tests'
    Playwright keeps an event loop running on the main thread, where asyncio.run() refuses to start."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result(timeout=timeout)
