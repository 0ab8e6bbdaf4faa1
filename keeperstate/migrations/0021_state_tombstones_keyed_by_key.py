"""A tombstone is keyed by its key: (organization_id, workflow_id, key) becomes the primary key.

The table had its primary key (organization_id, id) and the unique key (organization_id,
workflow_id, key), which is what every reader uses: a key's creation looks up its tombstone (the
version trigger), a delete upserts it. For an organization the statistics took for one row (a new
one, before the next ANALYZE), the planner took the primary key, the smaller, with the workflow
and key as a filter: every tombstone of the organization on every key created (20,000 rows, 2.8
ms, 285 pages in tests/state/test_history.py's case). As with the history (0020, ADR 0063), the
key the readers use becomes the primary key and the table keeps one index.

Online: the new key is built CONCURRENTLY; the swap holds the table's lock only to switch
constraints (the columns are NOT NULL already). The way back builds (organization_id, id) and the
unique key the same way.
"""

from django.db import migrations


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY

    dependencies = [("keeperstate", "0020_state_history_keyed_by_key")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    "CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS workflow_state_tombstone_key_pkey "
                    "ON workflow_state_tombstone (organization_id, workflow_id, key);",
                    "DROP INDEX CONCURRENTLY IF EXISTS workflow_state_tombstone_key_pkey;",
                ),
                migrations.RunSQL(
                    "ALTER TABLE workflow_state_tombstone DROP CONSTRAINT workflow_state_tombstone_pkey, "
                    "DROP CONSTRAINT workflow_state_tombstone_unique_key, "
                    "ADD CONSTRAINT workflow_state_tombstone_pkey PRIMARY KEY USING INDEX workflow_state_tombstone_key_pkey;",
                    [
                        "CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS workflow_state_tombstone_org_pkey "
                        "ON workflow_state_tombstone (organization_id, id);",
                        "CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS workflow_state_tombstone_org_key "
                        "ON workflow_state_tombstone (organization_id, workflow_id, key);",
                        "ALTER TABLE workflow_state_tombstone DROP CONSTRAINT workflow_state_tombstone_pkey, "
                        "ADD CONSTRAINT workflow_state_tombstone_pkey PRIMARY KEY USING INDEX workflow_state_tombstone_org_pkey, "
                        "ADD CONSTRAINT workflow_state_tombstone_unique_key UNIQUE USING INDEX workflow_state_tombstone_org_key;",
                    ],
                ),
            ],
            state_operations=[
                migrations.RemoveConstraint(model_name="workflowstatetombstone", name="workflow_state_tombstone_unique_key"),
            ],
        ),
    ]
