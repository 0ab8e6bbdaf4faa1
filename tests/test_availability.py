"""A database that cannot be written to (down, failing over, a replica reached) is told from one that
refused a statement: the first answers 503 DATABASE_UNAVAILABLE with Retry-After, and the log says
so once per outage (keeperstate.ops.availability)."""

from __future__ import annotations

import logging

import psycopg
import psycopg_pool
import pytest
from django.db import DataError, IntegrityError, OperationalError
from procrastinate.exceptions import ConnectorException

from keeperstate.ops import availability


@pytest.fixture(autouse=True)
def no_outage():
    """Each test starts and ends with this process's view of the database at no outage."""
    availability.OUTAGE.since, availability.OUTAGE.met = None, 0
    yield
    availability.OUTAGE.since, availability.OUTAGE.met = None, 0


def raised_from(cause: Exception, wrapper: type[Exception]) -> Exception:
    try:
        try:
            raise cause
        except Exception as exc:
            raise wrapper(str(exc)) from exc
    except Exception as wrapped:
        return wrapped


class ReadOnly(psycopg.errors.ReadOnlySqlTransaction):
    """As psycopg raises it from a replica: SQLSTATE 25006."""


@pytest.mark.parametrize("exc", [
    OperationalError("connection failed: connection to server at 127.0.0.1, port 5451 failed: Connection refused"),
    raised_from(psycopg.OperationalError("server closed the connection unexpectedly"), OperationalError),
    raised_from(psycopg.errors.AdminShutdown("terminating connection due to administrator command"), OperationalError),
    raised_from(ReadOnly("cannot execute UPDATE in a read-only transaction"), IntegrityError),
    psycopg_pool.PoolTimeout("couldn't get a connection after 30.00 sec"),
    raised_from(psycopg.OperationalError("consuming input failed: EOF detected"), ConnectorException),
], ids=["refused", "closed", "57P01", "25006", "pool timeout", "procrastinate's wrapper"])
def test_a_database_that_cannot_take_writes_is_unavailable(exc):
    assert availability.unavailable(exc)


@pytest.mark.parametrize("exc", [
    DataError("unsupported Unicode escape sequence"),
    raised_from(psycopg.errors.UniqueViolation("duplicate key value"), IntegrityError),
    ValueError("not a database error"),
    None,
], ids=["data", "unique", "other", "none"])
def test_a_refused_statement_is_not_unavailability(exc):
    assert not availability.unavailable(exc)


def test_an_outage_is_one_line_and_its_end_another_whatever_meets_it(caplog):
    with caplog.at_level(logging.WARNING, logger="keeperstate.database"):
        for where in ("the API", "the worker", "the API", "a heartbeat"):
            availability.noticed(OperationalError("server closed the connection unexpectedly\nmore"), where)
        availability.connected()
        availability.connected()  # a connection made after the end is no news

    messages = [record.getMessage() for record in caplog.records]
    assert len(messages) == 2
    assert messages[0].startswith("database unavailable (server closed the connection unexpectedly, in the API): ")
    assert messages[1].startswith("database writable again after ")
    assert messages[1].endswith("(4 request(s) or step(s) met the outage)")
    assert not availability.OUTAGE.ongoing


def test_the_state_store_leaves_an_outage_to_its_caller_and_names_a_refusal_its_own():
    from keeperstate.state.db import storage_errors
    from keeperstate.state.errors import StateStorageError

    with pytest.raises(OperationalError), storage_errors("write"):  # the request answers DATABASE_UNAVAILABLE
        raise OperationalError("server closed the connection unexpectedly")
    with pytest.raises(StateStorageError), storage_errors("write"):
        raise DataError("unsupported Unicode escape sequence")


@pytest.mark.django_db(transaction=True)
def test_a_run_meeting_the_outage_answers_database_unavailable(user, workflow, database_down):
    from tests.api.conftest import token_client

    api = token_client(user)
    database_down()

    response = api.post(f"/api/workflows/{workflow.id}/execute/", {"input": {}}, HTTP_IDEMPOTENCY_KEY="k-1")

    assert response.status_code == 503
    assert response.json()["code"] == "DATABASE_UNAVAILABLE"
    assert response["Retry-After"] == str(availability.RETRY_AFTER_SECONDS)


@pytest.mark.django_db(transaction=True)
def test_a_queued_run_meeting_the_outage_ends_its_job_with_one_line_and_no_traceback(workflow, database_down, caplog):
    from keeperstate.executions.models import WorkflowExecution
    from keeperstate.executions.service import queue_run
    from keeperstate.executions.tasks import run_execution

    execution = queue_run(workflow, {}, trigger=WorkflowExecution.Trigger.API).execution
    database_down()

    # The job returns: Procrastinate would log a job that raised with its traceback, one per job.
    with caplog.at_level(logging.WARNING):
        run_execution(execution_id=str(execution.id), organization_id=execution.organization_id)

    assert [record.getMessage()[:22] for record in caplog.records] == ["database unavailable ("]
    assert "the queued run of execution" in caplog.records[0].getMessage()
    assert all(record.exc_info is None for record in caplog.records)


@pytest.mark.django_db(transaction=True)
def test_a_queued_run_whose_statement_is_refused_still_fails_its_job(workflow, monkeypatch):
    from keeperstate.executions import service
    from keeperstate.executions.models import WorkflowExecution
    from keeperstate.executions.service import queue_run
    from keeperstate.executions.tasks import run_execution

    execution = queue_run(workflow, {}, trigger=WorkflowExecution.Trigger.API).execution

    def refused(*args, **kwargs):
        raise DataError("a statement the database refused")

    monkeypatch.setattr(service, "run_queued", refused)
    with pytest.raises(DataError):
        run_execution(execution_id=str(execution.id), organization_id=execution.organization_id)
