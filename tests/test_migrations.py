"""Data migrations on a database that holds data from before them."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = ("keeperstate", "0015_demo_moves_to_its_own_app")
PARSED = ("keeperstate", "0016_workflow_configs_parsed_once")
SHARDED = ("keeperstate", "0017_state_and_executions_shard_by_organization")

# A distributed database is migrated, then laid out (docs/scaling.md, "Moving there"): its migrations
# are not run back across the layout.
pytestmark = pytest.mark.single_server(
    "migrates the test database back to 0015 and forward again; a distributed database's migrations run before "
    "its layout, and Citus runs none of their multi-statement SQL on its distributed tables"
)


def migrate(target):
    executor = MigrationExecutor(connection)
    executor.migrate([target])
    return executor.loader.project_state([target]).apps


@pytest.fixture(autouse=True)
def back_to_the_latest():
    """A test that migrates back leaves the database at the newest migrations, as later tests expect."""
    yield
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_configs_stored_before_are_parsed_once_and_a_bad_field_is_kept():
    # given: a graph saved through the API before saves parsed configs
    apps = migrate(BEFORE)
    organization = apps.get_model("keeperstate", "Organization").objects.create(name="Acme", slug="acme")
    trigger = {"id": "trigger", "type": "trigger", "data": {"label": "Every minute", "type": "trigger", "config": {
        "triggerType": "Schedule", "interval": " 60 ", "overlap": "skip"}}}
    fetch = {"id": "fetch", "type": "action", "data": {"label": "Fetch", "type": "action", "config": {
        "actionType": "HTTP Request", "url": "https://rpc.example/", "headers": '{"Accept": "application/json"}',
        "timeout": "5", "failOnError": "false"}}}
    save = {"id": "save", "type": "action", "data": {"label": "Save", "type": "action", "config": {
        "actionType": "State Set", "key": " cursor ", "value": "4219", "ttl": "abc"}}}
    edges = [{"id": "e1", "source": "trigger", "target": "fetch"}, {"id": "e2", "source": "fetch", "target": "save"}]
    workflow = apps.get_model("keeperstate", "Workflow").objects.create(
        organization=organization, name="Old", nodes=[trigger, fetch, save], edges=edges
    )

    # when
    apps = migrate(PARSED)

    # then
    nodes = apps.get_model("keeperstate", "Workflow").objects.get(pk=workflow.pk).nodes
    configs = {node["id"]: node["data"]["config"] for node in nodes}
    assert configs["trigger"]["interval"] == 60
    assert configs["fetch"] == {"actionType": "HTTP Request", "url": "https://rpc.example/",
                                "headers": {"Accept": "application/json"}, "timeout": 5, "failOnError": False}
    assert (configs["save"]["key"], configs["save"]["value"]) == ("cursor", 4219)
    assert configs["save"]["ttl"] == "abc"  # no parser takes it: kept for the next save to report


@pytest.mark.django_db(transaction=True)
def test_rows_from_before_get_their_workflows_organization_and_keys_lead_with_it():
    # given: state, history, a tombstone, a due mark and an execution written before 0017
    apps = migrate(PARSED)
    org = apps.get_model("keeperstate", "Organization").objects.create(name="Acme", slug="acme")
    workflow = apps.get_model("keeperstate", "Workflow").objects.create(organization=org, name="Old")
    execution = apps.get_model("keeperstate", "WorkflowExecution").objects.create(workflow=workflow)
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO workflow_state (organization_id, workflow_id, key, value) "
                       "VALUES (%s, %s, 'a', '1')",
                       [org.id, workflow.id])
        cursor.execute("DELETE FROM workflow_state WHERE key = 'a'")  # a tombstone and two events
        cursor.execute("INSERT INTO workflow_state_history_due (workflow_id, key) VALUES (%s, 'a')", [workflow.id])
        cursor.execute("INSERT INTO workflow_state (organization_id, workflow_id, key, value) "
                       "VALUES (%s, %s, 'b', '1')",
                       [org.id, workflow.id])

    # when
    migrate(SHARDED)

    # then: every row carries the organization, and the keys lead with it
    with connection.cursor() as cursor:
        for table in ("workflow_state_event", "workflow_state_tombstone", "workflow_state_usage",
                      "workflow_state_history_due", "workflow_execution"):
            cursor.execute(f"SELECT array_agg(DISTINCT organization_id), count(*) FROM {table}")
            assert cursor.fetchone() == ([org.id], {"workflow_state_event": 3}.get(table, 1)), table
        cursor.execute("SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'workflow_execution_pkey'")
        assert cursor.fetchone()[0] == "PRIMARY KEY (organization_id, id)"
        cursor.execute("SELECT organization_id FROM workflow_execution WHERE id = %s", [execution.id])
        assert cursor.fetchone()[0] == org.id
        # and the triggers installed with the keys work: the next life of 'a' continues at 2
        cursor.execute("INSERT INTO workflow_state (organization_id, workflow_id, key, value) "
                       "VALUES (%s, %s, 'a', '2') "
                       "RETURNING version", [org.id, workflow.id])
        assert cursor.fetchone()[0] == 2
EDITOR_VERSIONS = ("keeperstate", "0018_workflow_versions")


@pytest.mark.django_db(transaction=True)
def test_workflows_from_before_versions_keep_their_graph_as_version_one():
    # given a workflow saved before versions existed
    apps = migrate(PARSED)
    Organization = apps.get_model("keeperstate", "Organization")
    Workflow = apps.get_model("keeperstate", "Workflow")
    org = Organization.objects.create(name="Acme", slug="acme-versions")
    workflow = Workflow.objects.create(organization=org, name="Old", nodes=[{"id": "trigger"}], edges=[])

    # when versions arrive
    apps = migrate(EDITOR_VERSIONS)

    # then its graph is version 1
    [version] = apps.get_model("keeperstate", "WorkflowVersion").objects.filter(workflow_id=workflow.pk)
    assert (version.number, version.name, version.nodes) == (1, "Old", [{"id": "trigger"}])
    assert version.summary == "The graph when versions began: 1 node(s)"
