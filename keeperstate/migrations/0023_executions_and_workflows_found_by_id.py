"""Executions and workflows get an index on id; the executions' index on workflow_id goes.

Migration 0017 made (organization_id, id) the primary key of workflow and workflow_execution
(docs/scaling.md), but Django addresses both by id alone: a run's own updates and its finish
(keeperstate/executions/service.py), the worker's claim of a queued run (its job carries the
execution's id), heartbeats, a waited webhook's status, `/hooks/<id>/`, the API's and admin's
pages. Postgres before 18 has no skip scan: such a lookup read the whole primary key, or the
table. On the Postgres 15 server, an execution by id among 300,000 took 26 ms (a parallel
sequential scan, 4,286 pages) against 0.03 ms with the organization named (7 pages); each run
made several. An index on id alone serves them; not unique, because a distributed table's unique
indexes must hold its distribution column (ids are UUIDs, made unique by their generation).

The executions' single-column index on workflow_id goes in the same step: execution_workflow_queued
(workflow_id, queued_at DESC) leads with it and serves every reader (a workflow's runs, Django's
cascade), so a run's insert keeps the same number of index entries.

Online: CREATE and DROP INDEX CONCURRENTLY; the way back the same.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    atomic = False  # CREATE / DROP INDEX CONCURRENTLY

    dependencies = [("keeperstate", "0022_state_keyed_by_key")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    "CREATE INDEX CONCURRENTLY IF NOT EXISTS workflow_execution_id_idx ON workflow_execution (id);",
                    "DROP INDEX CONCURRENTLY IF EXISTS workflow_execution_id_idx;",
                ),
                migrations.RunSQL(
                    "CREATE INDEX CONCURRENTLY IF NOT EXISTS workflow_id_idx ON workflow (id);",
                    "DROP INDEX CONCURRENTLY IF EXISTS workflow_id_idx;",
                ),
                migrations.RunSQL(
                    "DROP INDEX CONCURRENTLY IF EXISTS workflow_execution_workflow_id_53557214;",
                    "CREATE INDEX CONCURRENTLY IF NOT EXISTS workflow_execution_workflow_id_53557214 "
                    "ON workflow_execution (workflow_id);",
                ),
            ],
            state_operations=[
                migrations.AddIndex(
                    model_name="workflowexecution",
                    index=models.Index(fields=["id"], name="workflow_execution_id_idx"),
                ),
                migrations.AddIndex(
                    model_name="workflow",
                    index=models.Index(fields=["id"], name="workflow_id_idx"),
                ),
                migrations.AlterField(
                    model_name="workflowexecution",
                    name="workflow",
                    field=models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=models.deletion.CASCADE,
                        related_name="executions",
                        to="keeperstate.workflow",
                    ),
                ),
            ],
        ),
    ]
