"""``manage.py citus_layout``: the statements docs/scaling.md prints are the ones it runs, and it
refuses, in one sentence, a database it cannot lay out."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from keeperstate.ops import citus

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]


def documented_layout() -> str:
    page = (ROOT / "docs" / "scaling.md").read_text()
    section = page.split("## The Citus layout", 1)[1]
    return re.search(r"```sql\n(.*?)\n```", section, re.S).group(1)


def test_docs_scaling_md_prints_exactly_the_layout_of_a_fresh_database():
    with connection.cursor() as cursor:
        statements = [step.sql for step in citus.plan(cursor, fresh=True)]
    assert documented_layout() == "\n".join(statements)


def test_the_layout_drops_and_adds_again_the_same_foreign_keys_around_the_distribution():
    with connection.cursor() as cursor:
        statements = [step.sql for step in citus.plan(cursor, fresh=True)]
    dropped = [s.split(" DROP CONSTRAINT ")[1].rstrip(";") for s in statements if " DROP CONSTRAINT " in s]
    added = [s.split(" ADD CONSTRAINT ")[1].split(" ")[0] for s in statements if " ADD CONSTRAINT " in s]
    first_distribution = next(i for i, s in enumerate(statements) if "create_distributed_table" in s)
    last_drop = max(i for i, s in enumerate(statements) if " DROP CONSTRAINT " in s)
    assert dropped == added
    assert len(dropped) == 9
    assert last_drop < statements.index("SELECT create_reference_table('organization');") < first_distribution


@pytest.mark.single_server("a plain database is what it refuses; the Citus run's database is a coordinator")
def test_a_database_without_citus_is_refused_in_one_sentence():
    with pytest.raises(CommandError) as refused:
        call_command("citus_layout", "--check", stdout=io.StringIO())
    message = str(refused.value)
    assert message.startswith("This database has no citus extension: run CREATE EXTENSION citus")
    assert "\n" not in message
