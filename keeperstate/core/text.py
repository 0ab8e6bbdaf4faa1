"""The text rules every way in shares, for things people name (workflow names, node labels, state
keys, sample-input fields) and for text Postgres jsonb cannot hold."""

from __future__ import annotations

import unicodedata
from typing import Any

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


def has_nul(value: Any) -> bool:
    """Whether any text in a JSON value (keys included) holds U+0000, which jsonb cannot store."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return True
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False
