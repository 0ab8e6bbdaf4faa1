"""workflow_state is keyed by its key: (organization_id, workflow_id, key) becomes the primary key.

The table had the primary key (organization_id, id), the unique key (organization_id,
workflow_id, key) that every reader uses, and Django's index on workflow_id for its foreign key.
For an organization or workflow its statistics did not know yet (new since the last ANALYZE,
estimated at a row), the planner took the smaller of the indexes that seemed to find that row:
the primary key on the organization alone, or the index on the workflow alone, with the rest as a
filter. A Get in a workflow of 20,000 keys then read 346 pages instead of 4, an Increment 361
instead of 15 (tests/state/test_store.py), on each connection's first calls of each statement,
until the next ANALYZE.
As the history (0020) and the tombstones (0021) did, the key the readers use becomes the primary
key, and it is the only index that leads with the organization or the workflow:

* Django's pk, id, gets an index of its own, not unique (a distributed table's unique indexes
  must hold its distribution column; ids come from one sequence): admin's pages and repairs look
  rows up by id alone, which the old primary key served only by reading all of it (no skip scan
  before Postgres 18).
* The index on workflow_id goes; the field becomes DO_NOTHING, so a deleted workflow's state rows
  go with the composite foreign key (organization_id, workflow_id) → workflow ON DELETE CASCADE
  (migration 0017), which finds them by the key's prefix, and the triggers see them go as they saw
  Django's deletes (the usage and history guards, keeperstate/state/sql.py).

Online: the new indexes are built CONCURRENTLY and the old one dropped so; the swap holds the
table's lock only to switch constraints (the columns are NOT NULL already). The way back builds
the old keys and index the same way.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False  # CREATE / DROP INDEX CONCURRENTLY

    dependencies = [("keeperstate", "0021_state_tombstones_keyed_by_key")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    "CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS workflow_state_key_pkey "
                    "ON workflow_state (organization_id, workflow_id, key);",
                    migrations.RunSQL.noop,  # the swap back drops it with its constraint
                ),
                migrations.RunSQL(
                    "CREATE INDEX CONCURRENTLY IF NOT EXISTS workflow_state_id_idx ON workflow_state (id);",
                    "DROP INDEX CONCURRENTLY IF EXISTS workflow_state_id_idx;",
                ),
                migrations.RunSQL(
                    "ALTER TABLE workflow_state DROP CONSTRAINT workflow_state_pkey, "
                    "DROP CONSTRAINT workflow_state_unique_key, "
                    "ADD CONSTRAINT workflow_state_pkey PRIMARY KEY USING INDEX workflow_state_key_pkey;",
                    [
                        "CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS workflow_state_org_pkey "
                        "ON workflow_state (organization_id, id);",
                        "CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS workflow_state_org_key "
                        "ON workflow_state (organization_id, workflow_id, key);",
                        "ALTER TABLE workflow_state DROP CONSTRAINT workflow_state_pkey, "
                        "ADD CONSTRAINT workflow_state_pkey PRIMARY KEY USING INDEX workflow_state_org_pkey, "
                        "ADD CONSTRAINT workflow_state_unique_key UNIQUE USING INDEX workflow_state_org_key;",
                    ],
                ),
                migrations.RunSQL(
                    "DROP INDEX CONCURRENTLY IF EXISTS workflow_state_workflow_id_ef53cea4;",
                    "CREATE INDEX CONCURRENTLY IF NOT EXISTS workflow_state_workflow_id_ef53cea4 "
                    "ON workflow_state (workflow_id);",
                ),
            ],
            state_operations=[
                migrations.RemoveConstraint(model_name="workflowstate", name="workflow_state_unique_key"),
                migrations.AddIndex(
                    model_name="workflowstate", index=models.Index(fields=["id"], name="workflow_state_id_idx")
                ),
                migrations.AlterField(
                    model_name="workflowstate",
                    name="workflow",
                    field=models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="state_entries",
                        to="keeperstate.workflow",
                    ),
                ),
            ],
        ),
    ]
