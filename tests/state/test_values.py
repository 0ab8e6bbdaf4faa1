"""Value typing, coercion and input checks (no database needed)."""

from __future__ import annotations

import math

import pytest

from keeperstate.state.errors import (
    StateInvalidExpectedVersion,
    StateInvalidKey,
    StateInvalidTTL,
    StateInvalidValue,
)
from keeperstate.state.values import (
    coerce_editor_text,
    encode_value,
    normalize_key,
    parse_expected_version,
    parse_ttl,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("4219", 4219),
        ("-12", -12),
        ("1.5", 1.5),
        ("007", "007"),
        ("1.50", "1.50"),
        ("1e3", "1e3"),
        (str(2**53 + 1), str(2**53 + 1)),
        (str(2**53 - 1), 2**53 - 1),
        ("true", True),
        ("false", False),
        ('{"a":1}', {"a": 1}),
        ("[1, 2]", [1, 2]),
        ('"quoted"', "quoted"),
        ('"4219"', "4219"),
        ("plain text", "plain text"),
        ("0xff", "0xff"),
    ],
)
def test_editor_text_coercion(text, expected):
    assert coerce_editor_text(text) == expected
    assert type(coerce_editor_text(text)) is type(expected)


@pytest.mark.parametrize("text", ["", "   ", "\n\t", "null", " null ", "NaN", "Infinity", "-Infinity"])
def test_editor_text_rejected(text):
    with pytest.raises(StateInvalidValue) as info:
        coerce_editor_text(text)
    assert info.value.code == "STATE_INVALID_VALUE"


@pytest.mark.parametrize(
    "value", [None, "", "  ", math.nan, math.inf, {"a": math.nan}, "a\x00b", {"k\x00": 1}, object()]
)
def test_encode_rejects_values_state_cannot_hold(value):
    with pytest.raises(StateInvalidValue):
        encode_value(value)


def test_encode_keeps_an_escaped_backslash_u0000_that_is_plain_text():
    assert encode_value("a\\u0000b") == '"a\\\\u0000b"'


def test_encode_is_compact_utf8_json():
    assert encode_value({"a": [1, "é"]}) == '{"a":[1,"é"]}'


@pytest.mark.parametrize("key", ["", "   ", "a\nb", "tab\there", "x" * 257, None, True, 1.5, ["k"]])
def test_invalid_keys(key):
    with pytest.raises(StateInvalidKey):
        normalize_key(key)


def test_key_of_256_characters_after_trimming_is_fine():
    assert normalize_key("  " + "k" * 256 + " ") == "k" * 256


def test_numeric_key_from_a_reference_becomes_text():
    assert normalize_key(42) == "42"


@pytest.mark.parametrize(
    ("raw", "expected"), [(None, None), ("", None), (1, 1), ("60", 60), (60.0, 60), (10**12, 365 * 24 * 3600)]
)
def test_ttl_parsing(raw, expected):
    assert parse_ttl(raw) == expected


@pytest.mark.parametrize("raw", [0, -1, "0", "12abc", 1.5, "1.5", True, "two", [1]])
def test_ttl_rejected(raw):
    with pytest.raises(StateInvalidTTL):
        parse_ttl(raw)


@pytest.mark.parametrize(("raw", "expected"), [(None, None), (" ", None), (0, 0), ("0", 0), (3, 3), ("3", 3)])
def test_expected_version_parsing(raw, expected):
    assert parse_expected_version(raw) == expected


@pytest.mark.parametrize("raw", [-1, "-1", "v3", 1.5, False, "<<@x:X.version>>"])
def test_expected_version_rejected(raw):
    with pytest.raises(StateInvalidExpectedVersion):
        parse_expected_version(raw)
