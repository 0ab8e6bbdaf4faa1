"""Hostile values for every way in: text from every Unicode category (surrogates, controls,
unassigned code points included), NUL, digits of every script, huge and negative numbers, NaN and
infinities, deep nesting and every JSON type where another is expected."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

CATEGORIES = ["Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps", "Pe", "Pi",
              "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co", "Cn"]
any_character = st.characters(categories=CATEGORIES)
digits_of_every_script = st.text(st.characters(categories=["Nd", "Nl", "No"]), min_size=1, max_size=4)
SPECIAL_TEXTS = ["", " ", "\x00", "a\x00b", "\u200b", "\u202e", "\u2028", "\ud800", "²", "٣٠", "１２０", "-0",
                 "1e400", "NaN", "Infinity", "9" * 40, "<<", ">>", "<<@trigger:Trigger.block>>",
                 "<<@__secrets:Secrets.API_KEY>>", "<<@nope:Nope.x>>", "{", "[]", '{"a": 1}', "../..", "%00",
                 "*/5 * * * *", "State Set", "trigger", "x" * 300]

texts = st.one_of(st.sampled_from(SPECIAL_TEXTS), st.text(any_character, max_size=16), digits_of_every_script)
numbers = st.one_of(
    st.integers(min_value=-(2**80), max_value=2**80),
    st.sampled_from([0, -1, 1, 2**31, 2**53, 2**53 + 1, 2**63, -(2**63), 10**30, 0.5, -0.0, 1e308]),
    st.floats(allow_nan=True, allow_infinity=True),
)
leaves = st.one_of(st.none(), st.booleans(), numbers, texts)


def _nested(depth: int, inner: Any) -> Any:
    for level in range(depth):
        inner = [inner] if level % 2 else {"a": inner}
    return inner


deep = st.builds(_nested, st.integers(min_value=1, max_value=120), leaves)
values = st.one_of(
    st.recursive(leaves, lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(texts, kids, max_size=4)),
                 max_leaves=12),
    deep,
)


def body_of(fields: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    """An object with some of ``fields`` (and stray keys), each a hostile value."""
    keys = st.one_of(st.sampled_from(fields), texts) if fields else texts
    return st.dictionaries(keys, values, max_size=6)


def encode(value: Any) -> bytes:
    """JSON as a hostile client writes it: NaN and Infinity as bare words, lone surrogates as
    \\udxxx escapes (ensure_ascii)."""
    return json.dumps(value, allow_nan=True).encode()


raw_bodies = st.one_of(values.map(encode), st.binary(max_size=40))
