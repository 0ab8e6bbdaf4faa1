"""A transaction's BEGIN goes with its first statement (keeperstate.ops.postgres, ADR 0082): one
round trip where psycopg sends two, read on the wire (libpq's trace), with the statement's rows,
row count and errors as before, and the transaction's all-or-nothing kept."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction

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
    with pytest.raises(IntegrityError), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("UPDATE t_begin SET n = %s WHERE id = %s", [99, 1])
            cursor.execute("INSERT INTO t_begin VALUES (%s, %s)", [1, 20])

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

    assert len(trips) == 1 and not any("BEGIN" in message for message in trips[0])
    assert rows() == [(1, 7)]
