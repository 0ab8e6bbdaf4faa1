"""`manage.py serve` end to end: real processes (serve, gunicorn, the embedded Postgres), real HTTP."""

from __future__ import annotations

import os
import re
import signal
import socket

import httpx
import pytest

from tests.ops.serving import (
    Managed,
    alive,
    free_port,
    own_embedded_server,
    pid_list,
    postmaster_pid,
    wait_until,
)

pytestmark = own_embedded_server

START_TIMEOUT = 180  # collectstatic, seeding, gunicorn and the worker on a loaded machine


@pytest.fixture
def serve(data_dir):
    """serve on a port-only address, up and printing its banner."""
    for _attempt in range(3):
        port = free_port()
        process = Managed("serve", str(port), "--web-workers", "1", data_dir=data_dir)
        process.port = port
        try:
            process.wait_for_line("stop with Ctrl-C", START_TIMEOUT)
            break
        except AssertionError:
            if process.process.poll() is None:
                process.kill_tree()
            # Another program on this shared machine took the free port first: try another.
            if not any("cannot listen on" in line for line in process.err):
                raise
    else:
        raise AssertionError(f"no free port for serve in 3 attempts:\n{process.output()}")
    try:
        yield process
    finally:
        if process.process.poll() is None:
            process.kill_tree()


def log_in(base: str, follow: bool = True) -> httpx.Response:
    """The demo user's login over HTTP: the page (no database) and the form post (database)."""
    with httpx.Client(base_url=base, timeout=20) as client:
        page = client.get("/accounts/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        return client.post(
            "/accounts/login/",
            data={"username": "demo", "password": "keeperstate-demo", "csrfmiddlewaretoken": token},
            follow_redirects=follow,
        )


def test_serve_runs_gunicorn_with_static_files_and_sigterm_stops_everything(serve, data_dir):
    base = f"http://127.0.0.1:{serve.port}"
    banner = serve.output()
    assert f"editor:         {base}/builder/" in banner  # a port-only address prints real URLs
    assert "log in as:      demo / keeperstate-demo" in banner
    assert "started:        worker pid" in banner  # queued and scheduled runs
    assert f"MCP (agents):   {base}/mcp/" in banner
    # serve serves MCP on its own address: without a token, the API's 401 with the Bearer challenge
    mcp = httpx.post(f"{base}/mcp/", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, timeout=20)
    assert (mcp.status_code, mcp.headers.get("WWW-Authenticate")) == (401, "Bearer")
    children = serve.descendants()
    postgres = postmaster_pid(data_dir)
    assert postgres is not None
    assert alive(postgres)

    css = httpx.get(f"{base}/static/builder/builder.css", timeout=20)
    page = log_in(base)

    assert css.status_code == 200
    assert ".topbar" in css.text
    assert css.headers["server"].startswith("gunicorn")  # served by gunicorn through whitenoise
    assert css.headers["content-encoding"] in {"gzip", "br"}  # the compressed copy collectstatic made
    assert page.status_code == 200
    assert str(page.url) == f"{base}/builder/"
    assert "Block monitor" in page.text

    assert serve.stop(signal.SIGTERM) == 0
    wait_until(lambda: not alive(postgres), 30, "the embedded Postgres to stop")
    assert [pid for pid in children if alive(pid)] == []
    assert pid_list(data_dir) == []
    assert "KeeperState stopped." in serve.out


def test_serve_restarts_a_killed_embedded_postgres_and_the_site_recovers(serve, data_dir):
    base = f"http://127.0.0.1:{serve.port}"
    old = postmaster_pid(data_dir)

    os.kill(old, signal.SIGKILL)
    answers = []  # logging in needs the database: 503 while it is down, then in again
    wait_until(lambda: answers.append(log_in(base, follow=False).status_code) or answers[-1] == 302, 60, "a login")
    line = serve.wait_for_line("the embedded Postgres had stopped; restarted it", 10, stream="err")

    new = postmaster_pid(data_dir)
    assert new != old
    assert alive(new)
    assert f"pid {new}" in line
    assert set(answers) <= {503, 302}, answers  # never a 500, never a hang
    assert log_in(base).status_code == 200  # gunicorn's workers reconnect: no restart of serve
    assert sum("restarted it" in err for err in serve.err) == 1  # one log line per outage


def test_a_busy_port_fails_in_one_line_before_any_banner_and_leaves_no_pid(data_dir):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        process = Managed("serve", f"127.0.0.1:{port}", data_dir=data_dir)
        code = process.stop(sig=0, timeout=120)  # signal 0: just wait for it to exit

    assert code == 1
    assert process.out == []  # no banner, not even the "starting" line
    assert len(process.err) == 1
    assert process.err[0].startswith("KeeperState cannot start: cannot listen on")
    assert f"manage.py serve {port + 1}" in process.err[0]
    assert pid_list(data_dir) == []
    pid = postmaster_pid(data_dir)
    assert pid is None or not alive(pid)  # it started the embedded server, so it stopped it


def test_serve_restarts_a_killed_web_server_on_the_same_socket(serve):
    base = f"http://127.0.0.1:{serve.port}"
    gunicorn = next(c.pid for c in _children(serve) if "gunicorn" in " ".join(c.cmdline()))

    os.killpg(gunicorn, signal.SIGKILL)  # the arbiter and its workers
    serve.wait_for_line("the web server (gunicorn)", 30, stream="err")

    wait_until(lambda: _answers(base), 60, "the restarted web server")
    assert log_in(base).status_code == 200


def test_killing_serve_outright_stops_its_children_and_the_embedded_postgres(serve, data_dir):
    children = [c.pid for c in _children(serve)]
    postgres = postmaster_pid(data_dir)

    os.kill(serve.pid, signal.SIGKILL)

    wait_until(lambda: not any(alive(pid) for pid in children), 30, "the children to stop")
    wait_until(lambda: not alive(postgres), 30, "the embedded Postgres to stop")
    serve.process.wait(timeout=10)
    assert pid_list(data_dir) == []


def test_serve_starts_the_worker_when_the_command_exists(monkeypatch):
    from keeperstate.management.commands import serve as serve_command

    listener = socket.socket()
    try:
        monkeypatch.setattr(serve_command, "get_commands", lambda: {"worker": "keeperstate"})
        with_worker = serve_command.Command()._children(listener, 2)
        monkeypatch.setattr(serve_command, "get_commands", lambda: {})
        without = serve_command.Command()._children(listener, 2)
    finally:
        listener.close()

    assert [c.argv[-1] for c in with_worker] == ["warning", "worker"]
    assert [c.name for c in without] == ["web server (gunicorn)"]


def _children(serve: Managed) -> list:
    import psutil

    return psutil.Process(serve.pid).children()


def _answers(base: str) -> bool:
    try:
        httpx.get(f"{base}/accounts/login/", timeout=2)
    except httpx.HTTPError:
        return False
    return True


@pytest.mark.parametrize("folder", ["unwritable", "not a folder", "broken database"])
def test_a_bad_data_folder_fails_in_one_line_before_any_banner(tmp_path, folder):
    data_dir = tmp_path / "data"
    if folder == "unwritable":
        data_dir = "/proc/keeperstate-cannot-be-here"
    elif folder == "not a folder":
        data_dir.mkdir()
        (data_dir / "postgres").write_text("a file where the database folder belongs")
    else:
        (data_dir / "postgres").mkdir(parents=True)
        (data_dir / "postgres" / "PG_VERSION").write_text("9\n")  # initdb is skipped; the start fails

    process = Managed("serve", str(free_port()), data_dir=data_dir)
    code = process.stop(sig=0, timeout=120)

    assert code == 1
    assert process.out == []
    assert len(process.err) == 1, process.output()
    assert process.err[0].startswith("KeeperState cannot start: ")
    if folder != "unwritable":
        assert pid_list(data_dir) == []
