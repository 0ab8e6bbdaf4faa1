"""tests/wire.py's reading of libpq's trace: where the client waited for the server."""

from __future__ import annotations

from tests.wire import _round_trips


def trace(*lines: str) -> str:
    return "\n".join(f"{line[0]}\t10\t{line[2:]}" for line in lines)


def test_a_statement_answered_before_the_next_is_sent_is_a_round_trip_each():
    groups = _round_trips(trace(
        "F Parse \"\" \"SELECT 1\" 0", "F Sync",
        "B ParseComplete", "B ReadyForQuery I",
        "F Query \"COMMIT\"",
        "B CommandComplete 7 \"COMMIT\"", "B ReadyForQuery I",
    ))

    assert groups == [['Parse "" "SELECT 1" 0', "Sync"], ['Query "COMMIT"']]


def test_an_answer_read_while_more_of_the_pipeline_waits_to_be_answered_is_no_wait():
    # a statement committed on its own, its sync, then BEGIN sent at once; its answer is read
    # before the next statement is sent, but the BEGIN was still unanswered: the client had not
    # waited, and the whole pipeline is one round trip
    groups = _round_trips(trace(
        "F Parse \"\" \"UPDATE t\" 0", "F Sync", "F Parse \"\" \"BEGIN\" 0",
        "B ParseComplete", "B ReadyForQuery I",
        "F Parse \"\" \"UPDATE u\" 0", "F Sync", "F Flush",
        "B ParseComplete", "B ParseComplete", "B ReadyForQuery T",
        "F Query \"COMMIT\"",
        "B ReadyForQuery I",
    ))

    assert len(groups) == 2, groups
    assert groups[0][3:] == ['Parse "" "UPDATE u" 0', "Sync", "Flush"]
    assert groups[1] == ['Query "COMMIT"']
