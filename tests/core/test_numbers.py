"""The one whole-number parser: ASCII digits only, whatever int() or str.isdigit() would take."""

from __future__ import annotations

import pytest

from keeperstate.core.errors import Code, CodedError
from keeperstate.core.numbers import NumberInvalid, parse_whole_number, whole_number


@pytest.mark.parametrize(
    ("raw", "number"),
    [(30, 30), (" 30 ", 30), ("-5", -5), (10.0, 10), ("0", 0), (2**63, 2**63)],
)
def test_whole_numbers_are_read(raw, number):
    assert whole_number(raw) == number


@pytest.mark.parametrize(
    "raw",
    ["²", "٣٠", "３０", "+7", "1.5", "1e3", "0x10", "", " ", "12abc", "1 2", "--1", True, False, None, 1.5,
     float("inf"), float("nan"), [1], {"a": 1}, "9" * 31],
)
def test_anything_else_is_no_whole_number(raw):
    # "²" passes str.isdigit() and "٣٠" passes int(): neither decides here
    assert whole_number(raw) is None


def test_a_refusal_is_coded_and_names_the_field():
    with pytest.raises(NumberInvalid) as info:
        parse_whole_number("²", field="interval", label="The interval", minimum=10)

    assert (info.value.code, info.value.field, info.value.status_code) == ("INVALID_NUMBER", "interval", 400)
    assert info.value.message == "The interval must be a whole number, at least 10 (got '²')."


def test_bounds_are_checked_and_a_domain_may_bring_its_own_code():
    class Late(CodedError):
        error = Code.SCHEDULE_INVALID

    assert parse_whole_number("30", minimum=1, maximum=30) == 30
    with pytest.raises(Late) as info:
        parse_whole_number(31, minimum=1, maximum=30, error=Late, message="At most 30.")
    assert (info.value.code, info.value.message) == ("SCHEDULE_INVALID", "At most 30.")


def test_an_expression_reads_a_plus_sign_and_any_length():
    # number() in an expression: "+7" and a uint256 stay whole and exact; other callers keep MAX_DIGITS
    wei = "115792089237316195423570985008687907853269984665640564039457584007913129639935"

    assert whole_number("+7", max_digits=None, plus_sign=True) == 7
    assert whole_number(wei, max_digits=None, plus_sign=True) == 2**256 - 1
    assert whole_number(wei) is None
    assert whole_number("+7") is None
    assert whole_number("٣", max_digits=None, plus_sign=True) is None
    assert whole_number("+-7", max_digits=None, plus_sign=True) is None
