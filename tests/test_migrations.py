"""Data migrations on a database that holds data from before them."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = ("keeperstate", "0015_demo_moves_to_its_own_app")
PARSED = ("keeperstate", "0016_workflow_configs_parsed_once")


def migrate(target):
    executor = MigrationExecutor(connection)
    executor.migrate([target])
    return executor.loader.project_state([target]).apps


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
