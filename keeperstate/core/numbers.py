"""The one whole-number parser, for every field, setting and parameter that takes one.

Python's ``int()`` reads Unicode digits (``int("٣٠") == 30``) and ``str.isdigit()`` accepts
characters ``int()`` refuses (``"²"``), so neither decides here: a whole number is an int, an
integral float (JSON's ``10.0``), or text of ASCII digits with an optional minus sign, trimmed.
Config fields, settings and parameters take at most MAX_DIGITS digits; an expression's number()
takes as many as Python reads and a leading + (keeperstate.engine.expressions).
"""

from __future__ import annotations

import math
import re
from typing import Any

from keeperstate.core.errors import Code, CodedError

_WHOLE = re.compile(r"-?[0-9]+")
_SIGNED = re.compile(r"[+-]?[0-9]+")
MAX_DIGITS = 30  # beyond any bigint; a longer text is a mistake, not a number to convert
# The largest integer every JSON reader keeps exactly (JavaScript's Number.MAX_SAFE_INTEGER).
MAX_SAFE_INTEGER = 2**53 - 1


class NumberInvalid(CodedError):
    error = Code.INVALID_NUMBER


def whole_number(raw: Any, *, max_digits: int | None = MAX_DIGITS, plus_sign: bool = False) -> int | None:
    """The whole number ``raw`` spells, or None when it spells none (booleans spell none). A text
    is at most ``max_digits`` long (None: as long as Python reads, 4,300 digits unless configured),
    and with ``plus_sign`` it may start with + as well as -."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw
    if isinstance(raw, float):
        return int(raw) if math.isfinite(raw) and raw.is_integer() else None
    if isinstance(raw, str):
        text = raw.strip()
        if (max_digits is None or len(text) <= max_digits) and (_SIGNED if plus_sign else _WHOLE).fullmatch(text):
            try:
                return int(text)
            except ValueError:  # past sys.get_int_max_str_digits(): a number too long to read
                return None
    return None


def parse_whole_number(
    raw: Any,
    *,
    field: str | None = None,
    label: str = "The value",
    minimum: int | None = None,
    maximum: int | None = None,
    error: type[CodedError] = NumberInvalid,
    message: str | None = None,
) -> int:
    """``raw`` as a whole number within [minimum, maximum], or ``error`` (INVALID_NUMBER unless the
    caller's domain has its own code) naming ``field``, with ``message`` or a sentence built from
    ``label`` and the bounds."""
    number = whole_number(raw)
    if number is None or (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
        raise error(message or _sentence(label, minimum, maximum, raw), field=field)
    return number


def _sentence(label: str, minimum: int | None, maximum: int | None, raw: Any) -> str:
    if minimum is not None and maximum is not None:
        bounds = f" from {minimum} to {maximum}"
    elif minimum is not None:
        bounds = f", at least {minimum}"
    elif maximum is not None:
        bounds = f", at most {maximum}"
    else:
        bounds = ""
    return f"{label} must be a whole number{bounds} (got {str(raw)[:40]!r})."
