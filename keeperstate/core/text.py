"""The text rules every way in shares, for things people name (workflow names, node labels, state
keys, sample-input fields) and for text Postgres jsonb cannot hold."""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Iterator
from typing import Any

from keeperstate.core.numbers import MAX_SAFE_INTEGER

# Unicode categories a name people read must not contain: controls (Cc: NUL, newline, tab…),
# format characters (Cf: zero-width space U+200B, right-to-left override U+202E, BOM…), line
# and paragraph separators (Zl U+2028, Zp U+2029), and lone surrogates (Cs). They render as
# nothing or reorder what follows, so two names that look alike would differ.
UNREADABLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def text_problem(text: str) -> str | None:
    """Why a name, label or key cannot be shown as typed; None when every character is visible
    text or an ordinary space."""
    if text.isascii() and text.isprintable():  # the usual key or label: no character to look up
        return None
    for char in text:
        category = unicodedata.category(char)
        if category in UNREADABLE_CATEGORIES:
            kind = {"Cc": "a control character", "Cs": "an unpaired surrogate"}.get(
                category, "an invisible or direction-changing character"
            )
            return f"contains {kind} (U+{ord(char):04X}); use visible text"
    return None


def json_texts(value: Any) -> Iterator[str]:
    """Every text in a JSON value, its objects' keys included (without recursion: a value nested
    deeper than Python's stack is walked too)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def has_nul(value: Any) -> bool:
    """Whether any text in a JSON value (keys included) holds U+0000, which jsonb cannot store."""
    return any("\x00" in text for text in json_texts(value))


class NotFinite(ValueError):
    """Text that spells a number JSON cannot hold: NaN, Infinity, -Infinity."""


def json_of_text(text: str) -> Any:
    """What text typed by a person means as JSON (DESIGN.md §6, value typing).

    Valid JSON text is that JSON (``{"a":1}``, ``[1]``, ``true``, ``"quoted"``, ``null``); a bare
    number only when it round-trips exactly and is a safe integer or a finite float ("4219" is
    4219, but "007", "1.50", "1e3" and wei amounts beyond 2^53 stay text); anything else is the text
    itself, untrimmed. Raises NotFinite for NaN and Infinity, which no JSON reader keeps.
    """
    stripped = text.strip()
    try:
        parsed = json.loads(stripped, parse_constant=_not_finite)
    except NotFinite:
        raise
    except ValueError:
        return text
    if isinstance(parsed, bool) or not isinstance(parsed, int | float):
        return parsed
    if json.dumps(parsed) != stripped:
        return text  # "007", "1.50", "1e3": the text is not the number's own spelling
    if isinstance(parsed, int) and abs(parsed) > MAX_SAFE_INTEGER:
        return text  # beyond 2^53 a JavaScript reader would round it: keep the exact digits
    return parsed


def _not_finite(name: str) -> Any:
    raise NotFinite(name)
