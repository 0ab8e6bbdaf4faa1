"""Throttling: login lockout (django-axes) with unlock, API throttles per token and per address,
bad tokens, and each organization's runs per minute — all 429 with Retry-After."""

from __future__ import annotations

import json
import threading

import pytest
from axes.models import AccessAttempt
from axes.utils import reset
from django.db import connection
from django.test import Client

from keeperstate.executions.models import WorkflowExecution
from keeperstate.ratelimits.counters import HIT_SQL, Throttled, check_org_run_rate, hit
from keeperstate.state.models import WorkflowState
from tests.api.conftest import json_client, token_client
from tests.executions.graphs import counter_graph
from tests.factories import make_workflow
from tests.threads import run_together

pytestmark = pytest.mark.django_db

LOGIN_PAGES = ["/accounts/login/", "/admin/login/"]


@pytest.fixture
def low_login_limit(settings):
    settings.AXES_FAILURE_LIMIT = 3


def attempt(client: Client, page: str, username: str, password: str, address: str = "10.0.0.1"):
    return client.post(page, {"username": username, "password": password}, REMOTE_ADDR=address)


@pytest.mark.parametrize("page", LOGIN_PAGES)
def test_repeated_failures_lock_the_user_out_even_with_the_right_password(client, user, low_login_limit, page):
    for _ in range(3):
        attempt(client, page, "alice", "wrong")

    locked = attempt(client, page, "alice", "pw-alice")

    assert locked.status_code == 429
    assert "Too many failed logins" in locked.content.decode()
    assert "_auth_user_id" not in client.session


def test_the_lockout_is_per_user_across_addresses(client, user, low_login_limit):
    for n in range(3):
        attempt(client, "/accounts/login/", "alice", "wrong", address=f"10.0.0.{n + 1}")

    assert attempt(client, "/accounts/login/", "alice", "pw-alice", address="10.9.9.9").status_code == 429


def test_the_lockout_is_per_address_across_users(client, user, low_login_limit):
    for name in ("x1", "x2", "x3"):
        attempt(client, "/accounts/login/", name, "wrong", address="10.0.0.7")

    assert attempt(client, "/accounts/login/", "alice", "pw-alice", address="10.0.0.7").status_code == 429
    assert attempt(client, "/accounts/login/", "alice", "pw-alice", address="10.0.0.8").status_code == 302


def test_an_admin_unlock_lets_the_user_in_again(client, user, low_login_limit):
    for _ in range(3):
        attempt(client, "/accounts/login/", "alice", "wrong")
    assert AccessAttempt.objects.filter(username="alice").exists()

    reset(username="alice")  # what admin's "Access attempts" delete and axes_reset_username do
    reset(ip="10.0.0.1")

    assert attempt(client, "/accounts/login/", "alice", "pw-alice").status_code == 302


def test_fewer_failures_than_the_limit_do_not_lock(client, user, low_login_limit):
    for _ in range(2):
        attempt(client, "/accounts/login/", "alice", "wrong")

    assert attempt(client, "/accounts/login/", "alice", "pw-alice").status_code == 302


def assert_throttled(response):
    assert response.status_code == 429, response.content
    assert response.json()["code"] == "THROTTLED"
    assert response.json()["detail"]
    assert 1 <= int(response["Retry-After"]) <= 60


def test_a_token_past_its_rate_gets_429_with_retry_after(user, settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {
        **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "api_user": "5/min"}}
    api = token_client(user)

    answers = [api.get("/api/actions/") for _ in range(6)]

    assert [a.status_code for a in answers[:5]] == [200] * 5
    assert_throttled(answers[5])
    assert token_client(user).get("/api/actions/").status_code == 200  # another token, its own budget


def test_anonymous_clients_are_throttled_per_address(settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {
        **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "api_anon": "3/min"}}
    client = json_client()

    answers = [client.get("/api/schema/?format=json", REMOTE_ADDR="10.1.1.1") for _ in range(4)]

    assert [a.status_code for a in answers[:3]] == [200] * 3
    assert_throttled(answers[3])
    assert client.get("/api/schema/?format=json", REMOTE_ADDR="10.1.1.2").status_code == 200


def test_bad_tokens_from_one_address_draw_429(settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {
        **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "auth_failure": "5/min"}}
    client = json_client()
    client.credentials(HTTP_AUTHORIZATION="Token ks_" + "0" * 64)

    answers = [client.get("/api/workflows/", REMOTE_ADDR="10.2.2.2") for _ in range(7)]

    assert [a.status_code for a in answers[:5]] == [401] * 5
    assert_throttled(answers[5])


def test_default_limits_do_not_throttle_a_busy_client(user):
    api = token_client(user)

    assert {api.get("/api/actions/").status_code for _ in range(100)} == {200}


def test_an_organizations_runs_per_minute_are_capped_in_the_api(user, monitor, settings):
    settings.KEEPERSTATE_ORG_RUNS_PER_MINUTE = 3
    api = token_client(user)

    answers = [api.post(f"/api/workflows/{monitor.id}/execute/", {"input": {"block": n}}) for n in range(4)]

    assert [a.status_code for a in answers[:3]] == [201] * 3
    assert_throttled(answers[3])
    assert WorkflowExecution.objects.count() == 3


def test_an_organizations_runs_per_minute_are_capped_in_the_editor(user, monitor, settings):
    settings.KEEPERSTATE_ORG_RUNS_PER_MINUTE = 2
    client = Client()
    client.force_login(user)
    url = f"/api/workflows/{monitor.id}/execute/"  # the editor's Run

    answers = [client.post(url, json.dumps({"input": {"block": n}}), content_type="application/json")
               for n in range(3)]

    assert [a.status_code for a in answers] == [201, 201, 429]
    assert answers[2].json()["code"] == "THROTTLED"
    assert int(answers[2]["Retry-After"]) >= 1


def test_a_node_run_alone_counts_as_a_run_of_the_organization_in_every_way_in(user, monitor, settings):
    # given an organization allowed two runs a minute
    settings.KEEPERSTATE_ORG_RUNS_PER_MINUTE = 2
    api = token_client(user)
    node = {"actionType": "Condition", "config": {"condition": "1 > 0"}}

    # when a direct node execution, a Test step and a run take their turns
    direct = api.post("/api/execute/node/", node)
    step = api.post(f"/api/workflows/{monitor.id}/test-step/", {"node": "condition-1"})
    run = api.post(f"/api/workflows/{monitor.id}/execute/", {"input": {"block": 1}})
    again = api.post("/api/execute/node/", node)

    # then each counted against the one cap: the third and fourth are refused
    assert (direct.status_code, step.status_code) == (200, 200)
    assert_throttled(run)
    assert_throttled(again)


def test_a_node_run_alone_counts_against_the_organization_it_names(user, monitor, other_org, settings):
    api = token_client(user)
    node = {"actionType": "Condition", "config": {"condition": "1 > 0"}}

    mine = api.post("/api/execute/node/", {**node, "organization": monitor.organization.slug})
    foreign = api.post("/api/execute/node/", {**node, "organization": other_org.slug})

    assert mine.status_code == 200
    assert foreign.status_code == 400
    assert "not a member" in foreign.json()["organization"][0]


def test_the_run_cap_is_per_organization(user, monitor, foreign_workflow, settings):
    settings.KEEPERSTATE_ORG_RUNS_PER_MINUTE = 1
    check_org_run_rate(monitor.organization_id)

    with pytest.raises(Throttled):
        check_org_run_rate(monitor.organization_id)
    check_org_run_rate(foreign_workflow.organization_id)  # another organization: its own minute


@pytest.mark.django_db(transaction=True)
def test_the_counter_is_exact_under_concurrent_callers():
    # given 12 threads, each with its own connection, racing for a limit of 5
    barrier = threading.Barrier(12)
    allowed: list[bool] = []

    def one() -> None:
        try:
            barrier.wait(timeout=30)
            allowed.append(hit("test_race", "org-1", limit=5, period=3600).allowed)
        finally:
            connection.close()

    threads = [threading.Thread(target=one) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    # then exactly five passed
    assert len(allowed) == 12
    assert allowed.count(True) == 5


def _org_hits(organization_id: int) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT coalesce(sum(hits), 0) FROM rate_counter WHERE scope = 'org_runs' AND ident = %s",
                       [str(organization_id)])
        return cursor.fetchone()[0]


def _counter_capped_at(limit: int, org, user, settings):
    """A counter workflow of an organization allowed ``limit`` runs a minute."""
    settings.KEEPERSTATE_ORG_RUNS_PER_MINUTE = limit
    nodes, edges = counter_graph()
    return make_workflow(org, user=user, nodes=nodes, edges=edges)


@pytest.mark.django_db(transaction=True)
def test_a_run_in_one_commit_past_the_cap_is_rolled_back_whole(org, user, settings):
    # given a counter workflow, whose runs count with their first statement (count_run_ahead), and
    # an organization allowed two runs a minute; its own transactions, as served
    workflow = _counter_capped_at(2, org, user, settings)
    api = token_client(user)

    # when it runs three times
    answers = [api.post(f"/api/workflows/{workflow.id}/execute/", {"input": {}}) for _ in range(3)]

    # then the third is refused, and nothing of it is kept: its increment ran before the count's
    # answer was read, and was rolled back with the rest of its transaction
    assert [a.status_code for a in answers[:2]] == [201, 201]
    assert_throttled(answers[2])
    assert WorkflowState.objects.get(workflow=workflow, key="runs").value == 2
    assert WorkflowExecution.objects.filter(workflow=workflow).count() == 2
    assert _org_hits(org.id) == 2  # a refused run is not counted


@pytest.mark.django_db(transaction=True)
def test_a_queued_run_past_the_cap_leaves_no_record_and_no_job(org, user, settings):
    # given an organization allowed two runs a minute, and runs queued for a worker (?async=true),
    # counted with their record's insert (count_run_ahead)
    workflow = _counter_capped_at(2, org, user, settings)
    api = token_client(user)
    jobs_before = _jobs()

    # when three are queued
    answers = [api.post(f"/api/workflows/{workflow.id}/execute/?async=true", {"input": {}}) for _ in range(3)]

    # then the third is refused, and its record and its job were rolled back with the count's answer
    assert [a.status_code for a in answers[:2]] == [202, 202]
    assert_throttled(answers[2])
    assert WorkflowExecution.objects.filter(workflow=workflow).count() == 2
    assert _jobs() - jobs_before == 2
    assert _org_hits(org.id) == 2


def _jobs() -> int:
    with connection.cursor() as cursor:  # Procrastinate's table: not emptied between tests
        cursor.execute("SELECT count(*) FROM procrastinate_jobs")
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_runs_in_one_commit_racing_for_the_cap_keep_it_exactly(org, user, settings):
    # given 8 clients, each on its own connection, racing to run a counter allowed 5 runs a minute
    workflow = _counter_capped_at(5, org, user, settings)
    clients = [token_client(user) for _ in range(8)]

    codes = run_together(8, lambda n: clients[n].post(f"/api/workflows/{workflow.id}/execute/",
                                                      {"input": {}}).status_code)

    # then exactly five ran, and the counter and the records say the same
    assert sorted(codes) == [201] * 5 + [429] * 3
    assert WorkflowState.objects.get(workflow=workflow, key="runs").value == 5
    assert WorkflowExecution.objects.filter(workflow=workflow).count() == 5
    assert _org_hits(org.id) == 5


def _wal_records_of_a_hit(table: str) -> int:
    """The WAL records one counter upsert writes, measured on the statement itself (EXPLAIN's
    WAL figure belongs to this backend alone; the cluster's WAL position also moves with every
    other session, autovacuum and checkpoint, which made a position-based check flaky)."""
    params = {"scope": "test_wal", "ident": "ident-0", "window": 0, "limit": 10_000}
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, WAL, FORMAT JSON) " + HIT_SQL.replace("rate_counter", table), params)
        return cursor.fetchone()[0][0]["Plan"].get("WAL Records", 0)


def test_the_counters_need_no_disk_flush_and_a_hit_writes_no_wal_for_them():
    # given the counters' table (ADR 0061: a window is worth a minute, its commit need not wait
    # for the disk), and a logged twin of it that shows what the measure sees on a logged table
    with connection.cursor() as cursor:
        cursor.execute("SELECT relpersistence FROM pg_class WHERE relname = 'rate_counter'")
        assert cursor.fetchone() == ("u",)
        cursor.execute("CREATE TABLE test_rate_counter_logged (LIKE rate_counter INCLUDING ALL)")

    # when hits are counted
    for n in range(100):
        hit("test_wal", f"ident-{n % 10}", limit=10_000, period=3600)

    # then they counted exactly, and the counter's upsert writes no WAL, where the same upsert on
    # a logged table writes its heap and index records
    with connection.cursor() as cursor:
        cursor.execute("SELECT sum(hits) FROM rate_counter WHERE scope = 'test_wal'")
        assert cursor.fetchone() == (100,)
    assert _wal_records_of_a_hit("rate_counter") == 0
    assert _wal_records_of_a_hit("test_rate_counter_logged") > 0


def test_webhook_calls_from_one_address_are_throttled_on_their_own_rate(monitor, settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {
        **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "webhook": "2/min", "api_anon": "1/min"}}
    monitor.active = True
    monitor.save(update_fields=["active"])
    hook = Client(HTTP_X_KEEPERSTATE_SECRET=monitor.webhook_secret)

    answers = [hook.post(f"/hooks/{monitor.id}/", "{}", content_type="application/json") for _ in range(3)]

    assert [a.status_code for a in answers[:2]] == [202, 202]
    assert_throttled(answers[2])
