"""State Set and Delete as one function call each, and the version bump's trigger skipped by
writers that bump for it.

* ``keeperstate_set_key`` (keeperstate/models/state_sql.py): Set overwrites the live key (at the
  expected version, if any) or creates it in one call; creating a key used to cost an UPDATE
  that found nothing, then the creation. ``keeperstate_delete_key``: the delete and its history
  event. PL/pgSQL keeps both functions' plans; the statements they replace were planned on
  every call.
* The version bump's trigger gets a WHEN clause (keeperstate/models/state_sql.py, VERSION_BUMP_WHEN):
  a writer that already sets ``version = version + 1, updated_at = now()``, as the store does, no
  longer pays for a call of the trigger's function; every other update of value or expires_at is
  bumped as before. Going back keeps the clause: the bump's body is unchanged, so the rule is the
  same with or without it.
"""

from django.db import migrations

from keeperstate.models.state_sql import (
    DELETE_KEY_FUNCTION_SQL,
    DROP_DELETE_KEY_FUNCTION_SQL,
    DROP_SET_KEY_FUNCTION_SQL,
    SET_KEY_FUNCTION_SQL,
    STATE_TRIGGERS_SQL,
)


class Migration(migrations.Migration):

    dependencies = [
        ('keeperstate', '0012_state_triggers_without_pgtrigger_ignore_check'),
    ]

    operations = [
        migrations.RunSQL(sql=STATE_TRIGGERS_SQL, reverse_sql=migrations.RunSQL.noop),
        migrations.RunSQL(sql=SET_KEY_FUNCTION_SQL, reverse_sql=DROP_SET_KEY_FUNCTION_SQL),
        migrations.RunSQL(sql=DELETE_KEY_FUNCTION_SQL, reverse_sql=DROP_DELETE_KEY_FUNCTION_SQL),
    ]
