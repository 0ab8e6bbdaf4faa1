"""A run that plants a statement leaving its shard, for test_statements.py to run in a child
pytest (this file's name keeps it out of the suite's own collection).

The statement is sent by code compiled as a product module's (``keeperstate/planted.py``, which
does not exist): the recorder judges the product's statements, not a test's own.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.factories import make_org, make_workflow

# A write by id alone: Citus sends it to every shard (one a plain Postgres and Citus both run, so
# the run's test passes and only the check fails it).
PLANTED = "UPDATE workflow SET active = active WHERE id = %s"
SENDER = f'''
from django.db import connection

def send(workflow_id):
    with connection.cursor() as cursor:
        cursor.execute({PLANTED!r}, [workflow_id])
'''
PRODUCT_MODULE = Path(__file__).resolve().parents[2] / "keeperstate" / "planted.py"


@pytest.mark.django_db
def test_planted():
    namespace: dict = {}
    exec(compile(SENDER, str(PRODUCT_MODULE), "exec"), namespace)
    namespace["send"](make_workflow(make_org("planted")).id)
