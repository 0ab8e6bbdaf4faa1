"""Validation and typing of state inputs: keys, values, TTL and expectedVersion.

Pure functions, no database: the store calls them before any write, so a rejected input never
reaches Postgres and nothing is written (DESIGN.md §6).
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from django.conf import settings

from keeperstate.core.numbers import MAX_SAFE_INTEGER, whole_number
from keeperstate.core.text import NotFinite, json_of_text, text_problem
from keeperstate.state.errors import (
    StateInvalidExpectedVersion,
    StateInvalidKey,
    StateInvalidTTL,
    StateInvalidValue,
    StateValueTooLarge,
)

MAX_BIGINT = 2**63 - 1
# json.dumps writes U+0000 as the escape \u0000; an escaped backslash followed by "u0000" is
# text the user typed and is fine, hence the even run of backslashes before it.
_ESCAPED_NUL = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")
# One encoder for every value: json.dumps with options other than its defaults builds a new
# JSONEncoder on each call, half of what encoding a cursor or counter costs.
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def nfc(text: str) -> str:
    """Text in Unicode's composed form (NFC), the one spelling keys are stored and found by."""
    return text if text.isascii() else unicodedata.normalize("NFC", text)


def normalize_key(key: Any) -> str:
    """A key is text of 1–256 characters after trimming, every character visible: no controls,
    format or separator characters (keeperstate.core.text.text_problem); in Unicode's NFC form, so
    "café" typed with a combining accent (NFD) is the same key as with "é", stored and looked up."""
    if isinstance(key, bool) or not isinstance(key, str | int):
        raise StateInvalidKey("The state key must be text, for example 'cursor'.", field="key")
    text = nfc(str(key).strip())
    limit = settings.KEEPERSTATE_MAX_KEY_LENGTH
    if not text:
        raise StateInvalidKey("The state key is empty. Enter a name such as 'cursor'.", field="key")
    if len(text) > limit:
        raise StateInvalidKey(
            f"The state key is {len(text)} characters long; keys are at most {limit} characters.", field="key"
        )
    if problem := text_problem(text):
        # Controls, invisible and direction-changing characters (Cc, Cf, Zl, Zp): a key that
        # shows blank or reversed in the State panel and admin cannot be told from another.
        raise StateInvalidKey(f"The state key {problem}, such as 'cursor'.", field="key")
    return text


def coerce_editor_text(text: str) -> Any:
    """The JSON a State Set value's text means (keeperstate.core.text.json_of_text), refusing what
    state cannot hold: empty text, JSON ``null`` and non-finite numbers."""
    if not text.strip():
        raise StateInvalidValue(
            "The value is empty. Enter text, a number or JSON; to clear a key, delete it instead.", field="value"
        )
    try:
        parsed = json_of_text(text)
    except NotFinite as exc:
        raise StateInvalidValue(
            f"The value '{text.strip()}' is not a finite number. Store a finite number or quote it as text.",
            field="value",
        ) from exc
    if parsed is None:
        raise StateInvalidValue(
            "The value is JSON null, which state cannot hold: State Get already reports a missing key "
            "as exists: false. Store a real value or delete the key.",
            field="value",
        )
    return parsed


def encode_value(value: Any) -> str:
    """Validate a JSON value for storage and return its compact JSON text (what is measured)."""
    if value is None:
        raise StateInvalidValue(
            "The value is null, which state cannot hold. Store a real value or delete the key.", field="value"
        )
    if isinstance(value, str) and not value.strip():
        raise StateInvalidValue(
            "The value is empty. Enter text, a number or JSON; to clear a key, delete it instead.", field="value"
        )
    try:
        text = _ENCODER.encode(value)
    except ValueError as exc:
        raise StateInvalidValue(
            "The value contains a number that is not finite (NaN or Infinity). Store finite numbers only.",
            field="value",
        ) from exc
    except TypeError as exc:
        raise StateInvalidValue(
            f"The value is not JSON ({type(value).__name__}). Store text, numbers, booleans, lists or objects.",
            field="value",
        ) from exc
    if "\\u0000" in text and _ESCAPED_NUL.search(text):
        raise StateInvalidValue(
            "The value contains the character U+0000, which Postgres cannot store. Remove it.", field="value"
        )
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:  # a lone surrogate: only in-process callers get one past the body reader
        raise StateInvalidValue(
            "The value contains an unpaired UTF-16 surrogate, which is not text; remove it.", field="value"
        ) from exc
    limit = settings.KEEPERSTATE_MAX_VALUE_BYTES
    if size > limit:
        raise StateValueTooLarge(
            f"The value is {size} bytes of JSON; state holds at most {limit} bytes per key. Keep cursors, "
            "ids and markers in state; fetch a large payload with an HTTP Request when a run needs it.",
            details={"size": size, "limit": limit},
            field="value",
        )
    return text


def check_storable(value: Any) -> Any:
    """The value itself once it is known to fit in state (encode_value's checks)."""
    encode_value(value)
    return value


def parse_ttl(ttl: Any) -> int | None:
    """TTL in whole seconds ≥ 1, clamped to 365 days; None or empty text means no expiry."""
    if ttl is None or (isinstance(ttl, str) and not ttl.strip()):
        return None
    seconds = whole_number(ttl)
    if seconds is None or seconds < 1:
        raise StateInvalidTTL(
            f"TTL must be a whole number of seconds, 1 or more (got {ttl!r}). Leave it empty for no expiry.",
            field="ttl",
        )
    return min(seconds, settings.KEEPERSTATE_MAX_TTL_SECONDS)


def parse_expected_version(expected: Any) -> int | None:
    """expectedVersion: a whole number ≥ 0 (0 = the key must not exist); None or empty = no check."""
    if expected is None or (isinstance(expected, str) and not expected.strip()):
        return None
    version = whole_number(expected)
    # Versions are Postgres bigints: a number past 2^63 − 1 can never match, so it is a mistake
    # to report, not a conflict to retry.
    if version is None or version < 0 or version > MAX_BIGINT:
        raise StateInvalidExpectedVersion(
            f"expectedVersion must be a whole number, 0 or more (got {expected!r}): pass the version "
            "returned by State Get, or 0 to write only if the key does not exist.",
            field="expectedVersion",
        )
    return version


def parse_increment(by: Any) -> int:
    """State Increment's step: a whole number (negative decrements); None or empty means 1."""
    if by is None or (isinstance(by, str) and not by.strip()):
        return 1
    step = whole_number(by)
    if step is None or abs(step) > MAX_SAFE_INTEGER:
        raise StateInvalidValue(
            f"'By' must be a whole number such as 1 or -5 (got {by!r}), or one @ reference to one.", field="by"
        )
    return step
