"""The service's backend (keeperstate.ops.postgres, ADR 0082), read on the wire (libpq's trace): a
transaction's BEGIN goes with its first statement (and with a statement sent ahead of the
transaction, committed on its own), and a write whose answer is held goes with the COMMIT, one
round trip each where psycopg sends two; rows, row counts and errors come back as before, and a
transaction is still all or nothing."""

from __future__ import annotations

import psycopg
import pytest
from django.db import IntegrityError, connection, transaction

from keeperstate.core.transactions import answer_with_commit
from tests.test_database import database_connection
from tests.wire import traced

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def table():
    with connection.cursor() as cursor:
        cursor.execute("CREATE TEMPORARY TABLE t_begin (id int PRIMARY KEY, n int NOT NULL)")
        cursor.execute("INSERT INTO t_begin VALUES (1, 10)")
    yield "t_begin"
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE t_begin")


def rows() -> list[tuple[int, int]]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, n FROM t_begin ORDER BY id")
        return cursor.fetchall()


def test_begin_and_the_first_statement_are_one_round_trip(table):
    with traced() as trips, transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE t_begin SET n = n + %s WHERE id = %s RETURNING n", [5, 1])
        assert cursor.fetchone() == (15,)
        assert cursor.rowcount == 1

    assert len(trips) == 2, trips  # BEGIN with the UPDATE; then COMMIT
    assert trips[0][0] == 'Parse "" "BEGIN" 0'
    assert any("UPDATE t_begin" in message for message in trips[0])
    assert trips[1] == ['Query "COMMIT"']
    assert rows() == [(1, 15)]


def test_a_refused_first_statement_fails_the_transaction_and_writes_nothing(table):
    with pytest.raises(IntegrityError), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("INSERT INTO t_begin VALUES (%s, %s)", [1, 20])  # the key is taken

    assert rows() == [(1, 10)]
    with transaction.atomic(), connection.cursor() as cursor:  # the connection goes on
        cursor.execute("INSERT INTO t_begin VALUES (%s, %s)", [2, 20])
    assert rows() == [(1, 10), (2, 20)]


def test_a_later_refusal_rolls_back_the_first_statement_too(table):
    def update_then_refused() -> None:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("UPDATE t_begin SET n = %s WHERE id = %s", [99, 1])
            cursor.execute("INSERT INTO t_begin VALUES (%s, %s)", [1, 20])

    with pytest.raises(IntegrityError):
        update_then_refused()

    assert rows() == [(1, 10)]  # the UPDATE went with the BEGIN, and with the rollback


def test_a_first_statement_without_parameters_keeps_its_own_begin(table):
    # It may hold several commands, which only the simple protocol takes, outside a pipeline.
    with traced() as trips, transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE t_begin SET n = n + 1; UPDATE t_begin SET n = n * 2")

    assert trips == [['Query "BEGIN"'], ['Query "UPDATE t_begin SET n = n + 1; UPDATE t_begin SET n = n * 2"'],
                     ['Query "COMMIT"']]
    assert rows() == [(1, 22)]


def test_outside_a_transaction_a_statement_is_sent_as_it_was(table):
    with traced() as trips, connection.cursor() as cursor:
        cursor.execute("UPDATE t_begin SET n = %s WHERE id = %s", [7, 1])

    assert len(trips) == 1
    assert not any("BEGIN" in message for message in trips[0])
    assert rows() == [(1, 7)]


def test_a_held_write_and_the_commit_are_one_round_trip(table):
    with traced() as trips, transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE t_begin SET n = n + %s WHERE id = %s", [1, 1])
        answer_with_commit()
        cursor.execute("INSERT INTO t_begin VALUES (%s, %s)", [2, 20])

    assert len(trips) == 2, trips  # BEGIN with the UPDATE; the INSERT with the COMMIT
    last = " ".join(trips[1])
    assert last.index("INSERT INTO t_begin") < last.index('Parse "" "COMMIT" 0')
    assert "Sync" in trips[1]
    assert rows() == [(1, 11), (2, 20)]


def test_a_held_write_alone_goes_with_its_begin_and_its_commit(table):
    with traced() as trips, transaction.atomic(), connection.cursor() as cursor:
        answer_with_commit()
        cursor.execute("INSERT INTO t_begin VALUES (%s, %s)", [2, 20])

    assert len(trips) == 1, trips
    assert rows() == [(1, 10), (2, 20)]


def test_a_held_write_the_database_refuses_fails_the_commit_and_nothing_is_kept(table):
    def update_then_held_refusal() -> None:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("UPDATE t_begin SET n = %s WHERE id = %s", [99, 1])
            answer_with_commit()
            cursor.execute("INSERT INTO t_begin VALUES (%s, %s)", [1, 20])  # the key is taken

    with pytest.raises(IntegrityError) as refused:
        update_then_held_refusal()

    assert refused.value.__cause__.sqlstate == "23505"  # the driver's error, as callers read it
    assert rows() == [(1, 10)]
    with transaction.atomic(), connection.cursor() as cursor:  # the connection goes on
        cursor.execute("INSERT INTO t_begin VALUES (%s, %s)", [2, 20])
    assert rows() == [(1, 10), (2, 20)]


def test_a_statement_after_a_held_write_waits_for_its_answer(table):
    with transaction.atomic(), connection.cursor() as cursor:
        answer_with_commit()
        cursor.execute("UPDATE t_begin SET n = %s WHERE id = %s", [30, 1])
        cursor.execute("SELECT n FROM t_begin WHERE id = %s", [1])
        assert cursor.fetchone() == (30,)

    assert rows() == [(1, 30)]


def test_a_held_writes_refusal_reaches_the_next_statement_and_rolls_all_back(table):
    def held_refusal_then_a_read() -> None:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("UPDATE t_begin SET n = %s WHERE id = %s", [99, 1])
            answer_with_commit()
            cursor.execute("INSERT INTO t_begin VALUES (%s, %s)", [1, 20])
            cursor.execute("SELECT count(*) FROM t_begin WHERE n > %s", [0])

    with pytest.raises(IntegrityError):
        held_refusal_then_a_read()

    assert rows() == [(1, 10)]


def test_an_error_after_a_held_write_rolls_it_back(table):
    class Stop(Exception):
        pass

    def held_write_then_an_error() -> None:
        with transaction.atomic(), connection.cursor() as cursor:
            answer_with_commit()
            cursor.execute("INSERT INTO t_begin VALUES (%s, %s)", [2, 20])
            raise Stop

    with pytest.raises(Stop):
        held_write_then_an_error()

    assert rows() == [(1, 10)]
    assert connection.connection._held is None


def test_outside_a_transaction_nothing_is_held(table):
    with connection.cursor() as cursor:
        answer_with_commit()
        cursor.execute("UPDATE t_begin SET n = %s WHERE id = %s", [5, 1])
        assert cursor.rowcount == 1  # answered at once, in autocommit

    assert rows() == [(1, 5)]


# -- a statement sent ahead of a transaction (send_ahead): committed on its own -----------------


@pytest.fixture
def counts():
    """A table other connections see (a temporary one is the session's own)."""
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE t_ahead (id int PRIMARY KEY, hits int NOT NULL)")
        cursor.execute("INSERT INTO t_ahead VALUES (1, 0)")
    yield "t_ahead"
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE t_ahead")


HIT = "UPDATE t_ahead SET hits = hits + 1 WHERE id = %(id)s RETURNING hits"


def hits() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT hits FROM t_ahead WHERE id = 1")
        return cursor.fetchone()[0]


def test_a_statement_sent_ahead_goes_with_the_begin_and_the_first_statement(table, counts):
    ahead = connection.send_ahead(HIT, {"id": 1})
    with traced() as trips, transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE t_begin SET n = n + %s WHERE id = %s RETURNING n", [5, 1])
        assert cursor.fetchone() == (15,)  # the transaction's statement answers as before
        assert ahead.rows() == [("1",)]  # and the one sent ahead has its own answer

    assert len(trips) == 2, trips  # the statement sent ahead, its sync, BEGIN, the UPDATE; then COMMIT
    first = " ".join(trips[0])
    assert first.index("UPDATE t_ahead") < first.index("Sync") < first.index('"BEGIN"') < first.index("UPDATE t_begin")
    assert rows() == [(1, 15)]
    assert hits() == 1


def test_a_statement_sent_ahead_is_committed_on_its_own_and_holds_no_lock(table, counts):
    class Stop(Exception):
        pass

    def update_then_stop() -> None:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("UPDATE t_begin SET n = %s WHERE id = %s", [99, 1])
            with database_connection() as other:  # the row it wrote is not locked by this transaction
                other.execute("SET lock_timeout = '2s'")
                written = other.execute("UPDATE t_ahead SET hits = hits + 10 WHERE id = 1 RETURNING hits").fetchone()
                assert written == (11,)
            raise Stop

    ahead = connection.send_ahead(HIT, {"id": 1})
    with pytest.raises(Stop):
        update_then_stop()

    assert ahead.rows() == [("1",)]
    assert rows() == [(1, 10)]  # the transaction rolled back
    assert hits() == 11  # and what was sent ahead of it stays


def test_a_statement_sent_ahead_that_fails_keeps_its_error_and_the_transaction_goes_on(table, counts):
    ahead = connection.send_ahead("UPDATE t_ahead SET hits = hits / %(zero)s WHERE id = 1 RETURNING hits", {"zero": 0})
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE t_begin SET n = n + %s WHERE id = %s RETURNING n", [5, 1])
        assert cursor.fetchone() == (15,)

    with pytest.raises(psycopg.errors.DivisionByZero):
        ahead.rows()
    assert rows() == [(1, 15)]
    assert hits() == 0


def test_a_statement_sent_ahead_of_a_begin_sent_alone_goes_alone_first(table, counts):
    ahead = connection.send_ahead(HIT, {"id": 1})
    with traced() as trips, transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE t_begin SET n = n + 1; UPDATE t_begin SET n = n * 2")

    assert trips[0] == [f'Query "{HIT.replace("%(id)s", "1")}"']
    assert trips[1] == ['Query "BEGIN"']
    assert ahead.rows() == [("1",)]
    assert rows() == [(1, 22)]


def test_a_statement_sent_ahead_of_no_transaction_goes_when_its_answer_is_asked(counts):
    ahead = connection.send_ahead(HIT, {"id": 1})
    assert hits() == 0  # in autocommit: nothing waits for a transaction

    assert ahead.rows() == [("1",)]
    assert hits() == 1


def test_a_withdrawn_statement_is_never_sent(table, counts):
    connection.send_ahead(HIT, {"id": 1}).withdraw()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE t_begin SET n = n + %s WHERE id = %s", [1, 1])

    assert hits() == 0


def test_inside_a_transaction_nothing_is_sent_ahead(counts):
    with transaction.atomic():
        assert connection.send_ahead(HIT, {"id": 1}) is None


def test_a_statement_sent_ahead_is_prepared_once_on_its_session(table, counts):
    once = HIT.replace("RETURNING", "/* a statement of its own */ RETURNING")  # never prepared before
    answers = []
    with traced() as trips:
        for n in (1, 2):
            ahead = connection.send_ahead(once, {"id": 1})
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("UPDATE t_begin SET n = n + %s WHERE id = %s", [n, 1])
                answers.append(ahead.rows())

    sent = [" ".join(trip) for trip in trips]
    assert len(trips) == 4, trips  # each transaction: the count with BEGIN and the UPDATE; COMMIT
    assert 'Parse "_ks_ahead_' in sent[0]
    assert "UPDATE t_ahead" in sent[0]
    assert 'Parse "_ks_ahead_' not in sent[2]
    assert 'Bind "" "_ks_ahead_' in sent[2]
    assert answers == [[("1",)], [("2",)]]


def test_a_statement_sent_ahead_that_cannot_be_prepared_keeps_its_error_and_is_prepared_again(table):
    def later_then_update() -> object:
        ahead = connection.send_ahead("UPDATE t_later SET n = n + %(n)s RETURNING n", {"n": 1})
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("UPDATE t_begin SET n = n + %s WHERE id = %s", [1, 1])
        return ahead

    refused = later_then_update()  # no such table yet: its PREPARE is refused
    with pytest.raises(psycopg.errors.UndefinedTable):
        refused.rows()
    with connection.cursor() as cursor:
        cursor.execute("CREATE TEMPORARY TABLE t_later (n int NOT NULL)")
        cursor.execute("INSERT INTO t_later VALUES (0)")

    assert later_then_update().rows() == [("1",)]  # prepared now that it can be
    assert rows() == [(1, 12)]


def test_a_statement_sent_ahead_is_prepared_again_after_psycopg_deallocates_all(table, counts):
    # psycopg sends DEALLOCATE ALL when a statement it sees rolls back (a savepoint's), and its
    # own prepared statements are then gone from the session: so is the one sent ahead
    def one_run(n: int) -> list:
        ahead = connection.send_ahead(HIT, {"id": 1})
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("UPDATE t_begin SET n = n + %s WHERE id = %s", [n, 1])
            try:
                with transaction.atomic():  # a savepoint, rolled back
                    cursor.execute("INSERT INTO t_begin VALUES (%s, %s)", [1, 0])
            except IntegrityError:
                pass
        return ahead.rows()

    answers = [one_run(n) for n in range(8)]  # psycopg prepares its statements past the fifth

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE name LIKE '_ks_ahead_%%'")
        prepared = cursor.fetchone()[0]
    assert answers == [[(str(n),)] for n in range(1, 9)]
    assert hits() == 8
    assert prepared == 1


def test_a_statement_sent_ahead_whose_prepared_statement_is_gone_goes_again_alone(table, counts):
    def one_run() -> tuple[list, list]:
        ahead = connection.send_ahead(HIT, {"id": 1})
        with traced() as trips, transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("UPDATE t_begin SET n = n + %s WHERE id = %s", [1, 1])
            answer = ahead.rows()
        return answer, trips

    one_run()
    with connection.cursor() as cursor:  # by another hand than psycopg's, which would say so
        cursor.execute("SELECT name FROM pg_prepared_statements WHERE name LIKE '_ks_ahead_%%'")
        (name,) = cursor.fetchone()
        cursor.execute(f'DEALLOCATE "{name}"')

    healed, trips = one_run()
    again, _ = one_run()

    assert healed == [("2",)]  # refused as unknown, then sent alone: counted once
    assert any(trip == [f'Query "{HIT.replace("%(id)s", "1")}"'] for trip in trips), trips
    assert again == [("3",)]  # prepared again
    assert hits() == 3
