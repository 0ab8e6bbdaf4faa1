"""A real local Ethereum node for tests: ganache (tests/chain/package.json, installed by
``npm ci --prefix tests/chain``), one process on a loopback port, mining only when asked.

``Ganache.start`` runs ``node …/ganache/dist/node/cli.js`` with automatic mining off
(``--miner.blockTime 0`` and no transactions are ever sent, so blocks come only from
``evm_mine``), waits for it to answer ``eth_blockNumber`` (bounded), and ``stop`` ends it by its
PID (SIGTERM, a bounded wait, then SIGKILL). Nothing is downloaded at run time.

Reorganisations are ganache's own: ``snapshot()`` (``evm_snapshot``) before mining the blocks to be
replaced, then ``reorg(snapshot, n)``: ``evm_revert`` to it and ``n`` other blocks mined in their
place. Blocks mined without transactions in the same second are equal, hashes included, so the new
branch's first block gets a later timestamp than the one it replaces: another block, another hash.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CLI = HERE / "node_modules" / "ganache" / "dist" / "node" / "cli.js"
INSTALL = "npm ci --prefix tests/chain"
START_SECONDS = 60  # ganache starts in a few seconds; the bound allows a loaded 2-core machine
STOP_SECONDS = 10


def missing() -> str | None:
    """Why ganache cannot start here, or None when it can."""
    if shutil.which("node") is None:
        return "Node.js is not installed (the chain tier needs node 20 and npm)"
    if not CLI.is_file():
        return f"ganache is not installed: run `{INSTALL}`"
    return None


class ChainError(AssertionError):
    pass


@dataclass(frozen=True)
class Snapshot:
    id: str  # evm_snapshot's id
    head: int  # the head when it was taken: a reorg to it replaces the blocks above


class Ganache:
    """One ganache process. ``url`` is its JSON-RPC endpoint; ``address`` (``127.0.0.1:<port>``)
    is the entry a worker's KEEPERSTATE_HTTP_ALLOW needs to reach it and nothing else."""

    def __init__(self, port: int, log_path: Path):
        self.port = port
        self.log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None
        self._ids = 0
        self.mined = 0  # blocks mined since the start, replaced ones included

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.address}/"

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def start(self) -> Ganache:
        command = [
            shutil.which("node") or "node", str(CLI),
            "--server.host", "127.0.0.1", "--server.port", str(self.port),
            "--miner.blockTime", "0",  # no automatic blocks: only evm_mine makes them
            "--wallet.deterministic", "--wallet.totalAccounts", "1",
            "--chain.chainId", "1337",
            "--logging.quiet",
        ]
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=HERE,
                                            env={**os.environ, "NODE_ENV": "test"})
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ChainError(f"ganache exited with {self.process.returncode} before answering:\n{self.log()}")
            try:
                self.head()
                return self
            except (OSError, ChainError):
                time.sleep(0.2)
        self.stop()
        raise ChainError(f"ganache did not answer on {self.address} within {START_SECONDS} s:\n{self.log()}")

    def stop(self) -> int | None:
        """End the process by its PID: SIGTERM, then SIGKILL if it is still there after the wait."""
        process = self.process
        if process is None or process.poll() is not None:
            return process.returncode if process else None
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=STOP_SECONDS)
        return process.returncode

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-3000:] if self.log_path.exists() else ""

    # --- JSON-RPC -------------------------------------------------------------------------------

    def rpc(self, method: str, *params: Any) -> Any:
        """The result of one call; a JSON-RPC error raises ChainError."""
        self._ids += 1
        body = json.dumps({"jsonrpc": "2.0", "id": self._ids, "method": method, "params": list(params)}).encode()
        request = urllib.request.Request(self.url, body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - our own loopback node
            answer = json.loads(response.read())
        if "error" in answer:
            raise ChainError(f"{method} failed: {answer['error']}")
        return answer["result"]

    def head(self) -> int:
        """The newest block's number."""
        return int(self.rpc("eth_blockNumber"), 16)

    def mine(self, blocks: int = 1) -> int:
        """Mine a burst of ``blocks`` blocks at once (``evm_mine``) and return the new head."""
        before = self.head()
        self.rpc("evm_mine", {"blocks": blocks})
        after = self.head()
        if after != before + blocks:
            raise ChainError(f"mined {blocks} blocks from {before} but the head is {after}")
        self.mined += blocks
        return after

    def snapshot(self) -> Snapshot:
        """``evm_snapshot``: the chain as it is now, to reorganise back to."""
        return Snapshot(self.rpc("evm_snapshot"), self.head())

    def reorg(self, snapshot: Snapshot, blocks: int) -> list[str]:
        """Replace every block mined since ``snapshot`` by ``blocks`` others (``evm_revert``, then
        ``evm_mine``), as a reorganisation does; the hashes replaced, oldest first. ``blocks`` may be
        fewer than those replaced (a shorter chain) or more."""
        old_head = self.head()
        if old_head <= snapshot.head:
            raise ChainError(f"nothing was mined since the snapshot at {snapshot.head}: nothing to replace")
        replaced = [self.block(n)["hash"] for n in range(snapshot.head + 1, old_head + 1)]
        first = int(self.block(snapshot.head + 1)["timestamp"], 16)
        if self.rpc("evm_revert", snapshot.id) is not True or self.head() != snapshot.head:
            raise ChainError(f"evm_revert to {snapshot} failed")
        self.rpc("evm_mine", {"blocks": blocks, "timestamp": first + 1})
        if self.head() != snapshot.head + blocks or self.block(snapshot.head + 1)["hash"] == replaced[0]:
            raise ChainError(f"the blocks mined after reverting to {snapshot.head} are not other blocks")
        self.mined += blocks
        return replaced

    def block(self, number: int) -> dict[str, Any] | None:
        """``eth_getBlockByNumber`` of ``number`` (without transactions); None beyond the head."""
        return self.rpc("eth_getBlockByNumber", hex(number), False)
