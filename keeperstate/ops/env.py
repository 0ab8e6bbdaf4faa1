"""The environment, read one way: the only module of KeeperState that reads ``os.environ``.

settings.py, keeperstate.ops.database (before Django's settings exist) and the commands that
start child processes read through these helpers. A value is trimmed, and an empty one counts as
unset: the default applies. A value that cannot be read is an error, never a silent default:
``InvalidEnvironment`` (an ``ImproperlyConfigured``) names the variable, what it takes and what it
got, and manage.py prints it as its one line. Numbers are ASCII digits only, whatever Python's
``int()`` or ``str.isdigit()`` would accept ("²", "٣٠", "1_000" are refused).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import overload

from django.core.exceptions import ImproperlyConfigured

from keeperstate.core.numbers import whole_number

_DECIMAL = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


class InvalidEnvironment(ImproperlyConfigured):
    """An environment variable holds a value KeeperState cannot read; the message says which and why."""


def _raw(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


def _got(raw: str) -> str:
    shown = raw if len(raw) <= 40 else raw[:39] + "…"
    return f"(got {shown!r})"


@overload
def env_str(name: str, default: str, *, choices: Iterable[str] | None = ...,
            pattern: str | None = ..., expected: str = ...) -> str: ...
@overload
def env_str(name: str, default: None = ..., *, choices: Iterable[str] | None = ...,
            pattern: str | None = ..., expected: str = ...) -> str | None: ...
def env_str(name: str, default: str | None = None, *, choices: Iterable[str] | None = None,
            pattern: str | None = None, expected: str = "") -> str | None:
    """The trimmed value, or ``default``. With ``choices`` the value must be one of them (any case;
    the choice is returned as written there); with ``pattern`` it must match it whole, and
    ``expected`` says what that is in the error ("a rate such as 1200/min")."""
    raw = _raw(name)
    if raw is None:
        return default
    if choices is not None:
        options = list(choices)
        for option in options:
            if raw.lower() == option.lower():
                return option
        raise InvalidEnvironment(f"{name} must be one of {', '.join(options)} {_got(raw)}")
    if pattern is not None and not re.fullmatch(pattern, raw):
        raise InvalidEnvironment(f"{name} must be {expected or f'text matching {pattern}'} {_got(raw)}")
    return raw


def env_int(name: str, default: int, *, unit: str = "", minimum: int | None = 0) -> int:
    """A whole number of ``unit`` (for the error message), at least ``minimum`` (None: any, a
    leading '-' allowed), or ``default``."""
    raw = _raw(name)
    if raw is None:
        return default
    number = whole_number(raw)  # the one whole-number parser: ASCII digits, an optional minus
    if number is None or (minimum is not None and number < minimum):
        what = _number("a whole number", unit, "", minimum)
        raise InvalidEnvironment(f"{name} must be {what} {_got(raw)}")
    return number


def env_float(name: str, default: float, *, unit: str = "", minimum: float | None = 0) -> float:
    """A decimal number such as ``10`` or ``0.5`` (no exponent, no nan or inf), at least ``minimum``,
    or ``default``."""
    raw = _raw(name)
    if raw is None:
        return float(default)
    if not _DECIMAL.fullmatch(raw) or (minimum is not None and float(raw) < minimum):
        what = _number("a number", unit, " such as 10 or 0.5", minimum)
        raise InvalidEnvironment(f"{name} must be {what} {_got(raw)}")
    return float(raw)


def _number(kind: str, unit: str, example: str, minimum: float | None) -> str:
    text = (f"{kind} of {unit}" if unit else kind) + example
    return text if minimum is None else f"{text}, {minimum:g} or more"


def env_bool(name: str, default: bool) -> bool:
    """true/false, 1/0, yes/no or on/off (any case), or ``default``; anything else is an error."""
    raw = _raw(name)
    if raw is None:
        return default
    if raw.lower() in _TRUE:
        return True
    if raw.lower() in _FALSE:
        return False
    raise InvalidEnvironment(f"{name} must be true or false (or 1/0, yes/no, on/off) {_got(raw)}")


def env_list(name: str, default: Iterable[str] = ()) -> list[str]:
    """Comma-separated items, each trimmed, empty ones dropped; ``default`` when unset."""
    raw = _raw(name)
    if raw is None:
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def child_environment(*, without: Iterable[str] = (), **overrides: str) -> dict[str, str]:
    """This process's environment less the names in ``without``, with ``overrides``, for a child
    process (a benchmark's workers; serve's children inherit it as it is)."""
    dropped = set(without)
    return {**{name: value for name, value in os.environ.items() if name not in dropped}, **overrides}
