"""The demo chain: its blocks, and its JSON-RPC 2.0 answers the way an Ethereum node gives them.

Pure functions of a ``DemoChain`` (where its head is, when block 0 was mined, the block time, how
it reorganises), so every process computes the same chain from the clock (keeperstate.demo.feed)
and tests pick any head.

The chain may **reorganise**: with ``reorg_every`` R and ``reorg_depth`` d, the d blocks up to each
multiple of R (R-d+1 … R, 2R-d+1 … 2R, …) are replaced by other blocks, with other hashes, once the
block after them is mined: while the head is at 2R they are as first mined, from 2R + 1 on the chain
has the others. Each block is replaced at most once (d ≤ R), and block 0 never.

Only what a block monitor needs is answered: ``eth_blockNumber`` and ``eth_getBlockByNumber``;
every other method is "method not found". Answers follow the JSON-RPC 2.0 specification (errors
-32700, -32600, -32601, -32602; batches; a notification gets no answer) and geth's reading of the
parameters (block numbers as hex text without leading zeros).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

JSON_RPC = "2.0"
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
MAX_BATCH = 100
ZERO_HASH = "0x" + "0" * 64
# geth's quantity: 0x, then no leading zero (0x0 is zero); numbers as JSON numbers are refused.
_QUANTITY = re.compile(r"^0x(0|[1-9a-fA-F][0-9a-fA-F]*)$")
_HEAD_TAGS = ("latest", "pending", "safe", "finalized")
_HELP = {
    "eth_blockNumber": 'eth_blockNumber takes no params ("params": []).',
    "eth_getBlockByNumber": 'eth_getBlockByNumber takes [block number as hex text or "latest", false], '
    'e.g. ["0x1a2", false].',
}


class RpcFailure(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def block_hash(number: int, *, replaced: bool = False) -> str:
    """A block's hash: 0x and 64 hex digits, the same for a number in every process and run (and
    another one for the block that replaced it in a reorganisation)."""
    if number < 0:
        return ZERO_HASH  # the parent of block 0
    name = f"keeperstate-demo-chain:{number}" + (":replaced" if replaced else "")
    return "0x" + hashlib.sha256(name.encode()).hexdigest()


@dataclass(frozen=True)
class DemoChain:
    head: int  # the newest block mined
    genesis: int  # when block 0 was mined (Unix seconds)
    block_seconds: int
    reorg_every: int = 0  # blocks between reorganisations; 0: it never reorganises
    reorg_depth: int = 0  # blocks each one replaces (at most reorg_every)

    def replaced(self, number: int) -> bool:
        """Whether the block at ``number`` is, by now, the one that replaced the block first mined there."""
        every, depth = self.reorg_every, min(self.reorg_depth, self.reorg_every)
        if every <= 0 or depth <= 0 or number < 1:
            return False
        reorg_at = -(-number // every) * every  # the first multiple of reorg_every at or above it
        return number > reorg_at - depth and self.head > reorg_at

    def hash_of(self, number: int) -> str:
        return block_hash(number, replaced=self.replaced(number))

    def block(self, number: int) -> dict[str, Any] | None:
        """The block as eth_getBlockByNumber gives it (without transactions), or None beyond the head."""
        if number > self.head:
            return None
        return {
            "number": hex(number),
            "hash": self.hash_of(number),
            "parentHash": self.hash_of(number - 1),
            "timestamp": hex(self.genesis + number * self.block_seconds),
            "transactions": [],
        }

    def answer(self, raw: bytes) -> Any:
        """The JSON answer to a request body: one response, a list for a batch, or None when
        nothing is to be answered (notifications only)."""
        try:
            payload = json.loads(raw, parse_constant=_refuse_constant)
        except (ValueError, RecursionError):
            return _error(None, PARSE_ERROR, "Parse error: the body is not JSON.")
        if isinstance(payload, list):
            if not payload:
                return _error(None, INVALID_REQUEST, "Invalid request: an empty batch.")
            if len(payload) > MAX_BATCH:
                return _error(None, INVALID_REQUEST, f"Invalid request: a batch holds at most {MAX_BATCH} calls.")
            answers = [answer for call in payload if (answer := self.call(call)) is not None]
            return answers or None
        return self.call(payload)

    def call(self, call: Any) -> dict[str, Any] | None:
        """The response to one request object, or None for a notification (no id)."""
        if not isinstance(call, dict):
            return _error(None, INVALID_REQUEST, "Invalid request: a call is a JSON object.")
        call_id = call.get("id")
        if not _valid_id(call_id):
            return _error(None, INVALID_REQUEST, "Invalid request: the id is text, a number or null.")
        if call.get("jsonrpc") != JSON_RPC or not isinstance(call.get("method"), str):
            return _error(call_id, INVALID_REQUEST, 'Invalid request: send {"jsonrpc": "2.0", "id", "method", '
                          '"params"}.')
        params = call.get("params", [])
        try:
            if not isinstance(params, list):
                raise RpcFailure(INVALID_PARAMS, "Invalid params: params are a list (by position).")
            result = self._dispatch(call["method"], params)
        except RpcFailure as failure:
            return None if "id" not in call else _error(call_id, failure.code, failure.message)
        return None if "id" not in call else {"jsonrpc": JSON_RPC, "id": call_id, "result": result}

    def _dispatch(self, method: str, params: list[Any]) -> Any:
        if method == "eth_blockNumber":
            if params:
                raise RpcFailure(INVALID_PARAMS, "Invalid params: " + _HELP[method])
            return hex(self.head)
        if method == "eth_getBlockByNumber":
            if len(params) != 2 or not isinstance(params[1], bool):
                raise RpcFailure(INVALID_PARAMS, "Invalid params: " + _HELP[method])
            return self.block(self._number(params[0]))
        raise RpcFailure(
            METHOD_NOT_FOUND,
            f"The method {method} does not exist; the demo chain answers eth_blockNumber and eth_getBlockByNumber.",
        )

    def _number(self, tag: Any) -> int:
        if tag in _HEAD_TAGS:
            return self.head
        if tag == "earliest":
            return 0
        if isinstance(tag, str) and _QUANTITY.match(tag):
            return int(tag, 16)
        raise RpcFailure(
            INVALID_PARAMS,
            f"Invalid params: the block number {json.dumps(tag)} is not hex text such as \"0x1a2\" (no leading "
            "zeros) or \"latest\".",
        )


def _valid_id(value: Any) -> bool:
    return value is None or isinstance(value, str) or (isinstance(value, int | float) and not isinstance(value, bool))


def _error(call_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": JSON_RPC, "id": call_id, "error": {"code": code, "message": message}}


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
