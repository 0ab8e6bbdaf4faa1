"""Django admin's executions list: filtered by workflow, times to the second."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from keeperstate.executions.service import run_workflow
from tests.factories import make_workflow

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    admin = get_user_model().objects.create_superuser("root", "root@example.com", "pw-root")
    client.force_login(admin)
    return client


def test_executions_filter_by_workflow_and_show_seconds(admin_client, org, monitor):
    other = make_workflow(org, name="Other")
    mine = run_workflow(monitor, {"block": 1})
    run_workflow(other, {})
    changelist = reverse("admin:keeperstate_workflowexecution_changelist")

    page = admin_client.get(changelist).content.decode()
    filtered = admin_client.get(changelist, {"workflow__id__exact": str(monitor.id)})

    assert "By workflow" in page
    assert "Block monitor" in page
    assert filtered.status_code == 200
    assert list(filtered.context["cl"].result_list) == [mine]
    assert f"{mine.queued_at:%Y-%m-%d %H:%M:%S}" in filtered.content.decode()
