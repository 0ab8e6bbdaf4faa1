"""Management commands: run_workflow, sweep_state, bench_state and the demo data of serve."""

from __future__ import annotations

import io
import json
import os
import statistics
import subprocess
import sys
import uuid

import psycopg
import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.db import connection

from keeperstate.accounts.models import Membership
from keeperstate.demo.graphs import live_block_monitor_graph
from keeperstate.demo.seeding import MONITOR_NAME, ensure_demo
from keeperstate.ops.database import database_url
from keeperstate.state.models import WorkflowState
from keeperstate.state.store import state_set
from keeperstate.workflows.examples import block_monitor_graph
from keeperstate.workflows.models import Workflow
from tests import citus

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_ensure_demo_creates_org_user_and_monitor_once():
    org, user, workflow = ensure_demo()
    again = ensure_demo()

    assert again == (org, user, workflow)
    assert user.check_password("keeperstate-demo")
    assert Membership.objects.get(user=user, organization=org).role == "owner"
    assert workflow.name == MONITOR_NAME
    assert (workflow.nodes, workflow.edges) == live_block_monitor_graph()


def test_ensure_demo_without_password_leaves_login_disabled():
    _org, user, _wf = ensure_demo(password=None)

    assert not user.has_usable_password()


def test_run_workflow_by_id_prints_node_results():
    org, user, _demo = ensure_demo()
    nodes, edges = block_monitor_graph()
    workflow = Workflow.objects.create(organization=org, name="By input", nodes=nodes, edges=edges, created_by=user)

    first = json.loads(run("run_workflow", str(workflow.id), "--input", '{"block": 100}'))
    second = json.loads(run("run_workflow", str(workflow.id), "--input", '{"block": 101}'))

    assert first["status"] == "success"
    assert first["nodeResults"]["state-set-1"]["data"]["version"] == 1
    assert second["nodeResults"]["state-set-1"]["data"]["version"] == 2
    assert WorkflowState.objects.get(workflow=workflow, key="cursor").value == 101


def test_run_workflow_from_a_graph_file_keeps_state_between_runs(tmp_path):
    ensure_demo()
    nodes, edges = block_monitor_graph()
    path = tmp_path / "monitor.json"
    path.write_text(json.dumps({"nodes": nodes, "edges": edges}))

    run("run_workflow", str(path), "--input", '{"block": 5}')
    result = json.loads(run("run_workflow", str(path), "--input", '{"block": 6}'))

    workflow = Workflow.objects.get(pk=result["workflow"])
    assert WorkflowState.objects.get(workflow=workflow, key="cursor").value == 6
    assert Workflow.objects.filter(name="monitor.json (run_workflow)").count() == 1


def test_run_workflow_exits_nonzero_when_a_node_fails():
    org, user, _demo = ensure_demo()
    nodes, edges = block_monitor_graph()
    workflow = Workflow.objects.create(organization=org, name="By input", nodes=nodes, edges=edges, created_by=user)

    with pytest.raises(CommandError, match="failed"):
        run("run_workflow", str(workflow.id), "--input", '{"nope": 1}')


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["00000000-0000-0000-0000-000000000000"], "No workflow"),
        (["/nonexistent.json"], "neither a workflow id nor a JSON file"),
    ],
)
def test_run_workflow_explains_bad_arguments(args, message):
    with pytest.raises(CommandError, match=message):
        run("run_workflow", *args)


def test_sweep_state_removes_expired_rows_in_batches(scope):
    for i in range(5):
        state_set(scope=scope, key=f"k{i}", value=i, ttl=60)
    state_set(scope=scope, key="keep", value=1)
    with connection.cursor() as cursor:
        cursor.execute("UPDATE workflow_state SET expires_at = now() - interval '1 minute' WHERE key <> 'keep'")

    output = run("sweep_state", "--batch-size", "2")

    assert "batch 1: deleted 2" in output
    assert "batch 3: deleted 1" in output
    assert "swept 5 expired key(s)" in output
    assert list(WorkflowState.objects.values_list("key", flat=True)) == ["keep"]


@citus.BENCH
@pytest.mark.django_db(transaction=True)  # its concurrent creators use their own connections
def test_bench_state_quick_prints_each_write_against_its_bound_and_a_json_line(scope):
    output = run("bench_state", "--quick", "--iterations", "20", "--repeat", "3", "--warmup", "1")

    report = json.loads(output.strip().splitlines()[-1])
    figures, targets = report["figures"], report["targets"]
    for name in ("physical.overwrite", "table.overwrite", "store.set.overwrite", "store.set.cas", "store.get",
                 "store.increment", "store.delete", "store.create.org_0", "store.create.org_10000",
                 "concurrent.one_org", "concurrent.eight_orgs", "action.get"):
        assert figures[name] > 0
    # The verdict is the median of the counted passes' ratios (the warm-up pass is not among them),
    # printed with its quartiles and range.
    assert len(report["passes"]) == 3
    for target in targets.values():
        ratios = target["ratios"]
        assert len(ratios) == 3
        assert target["ratio"] == pytest.approx(statistics.median(ratios), abs=0.001)
        assert target["range"] == [min(ratios), max(ratios)]
        assert min(ratios) <= target["quartiles"][0] <= target["quartiles"][1] <= max(ratios)
    # Each write is held against its bound (DESIGN.md §10): its statement with the rows the contract
    # adds, on the run's plain tables.
    for name, kind in (("store.set.overwrite", "overwrite"), ("store.set.cas", "cas"),
                       ("store.increment", "increment"), ("store.delete", "delete")):
        assert targets[name]["against"] == "bound"
        assert 0 < targets[name]["bound_to_physical"]
        assert targets[name]["all"] == pytest.approx(figures[name] / figures[f"bound.{kind}"], rel=0.01)
    assert targets["store.get"]["against"] == "physical"
    assert "bound_to_physical" not in targets["store.get"]
    assert set(targets) >= {"store.set.overwrite", "store.set.cas", "store.increment", "store.delete", "store.get",
                            "store.create.org_0", "create.flat", "create.concurrent"}
    assert output.splitlines()[1].split()[:3] == ["operation", "ops/s", "physical"]
    # The benchmark cleans up after itself: its floor table and organizations are gone.
    assert Workflow.objects.count() == 1
    assert not WorkflowState.objects.exists()
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'bench_floor_%%'")
        assert cursor.fetchone()[0] == 0
        # and the history its writes made went with its workflows
        cursor.execute("SELECT count(*) FROM workflow_state_event")
        assert cursor.fetchone()[0] == 0


@citus.BENCH
@pytest.mark.django_db(transaction=True)
def test_bench_state_check_fails_when_a_target_is_missed(scope, monkeypatch):
    # A target no store can reach: --check turns the printed MISSED into a failing exit.
    from keeperstate.management.commands import bench_state

    monkeypatch.setitem(bench_state.TARGETS, "store.get", ("select", "physical", 1000.0))

    with pytest.raises(CommandError, match="missed .* store.get"):
        run("bench_state", "--quick", "--iterations", "10", "--check")


@citus.BENCH
@pytest.mark.django_db(transaction=True)
def test_bench_state_ci_profile_measures_only_what_a_target_compares(scope):
    output = run("bench_state", "--ci", "--iterations", "10", "--repeat", "1", "--warmup", "0")

    report = json.loads(output.strip().splitlines()[-1])
    assert not [name for name in report["figures"] if name.startswith(("table.", "action."))]
    assert set(report["targets"]) == {*bench_targets(), "create.flat", "create.concurrent"}
    assert "10 operations per member and pass, 1 pass(es) counted after 0 warm-up" in output


def bench_targets() -> set[str]:
    from keeperstate.management.commands import bench_state

    return set(bench_state.TARGETS)


@citus.BENCH
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("fast", "slow", "typical", "everything"),
    [
        # a third of the gets 100× as fast cannot carry a typical get slower than the target allows
        (0.01, 1.1, 1 / 1.1, 30 / (10 * 0.01 + 20 * 1.1)),
        # nor can a typical get that meets it carry a tail of the store's own that all operations show
        (2.0, 0.9, 1 / 0.9, 30 / (10 * 2.0 + 20 * 0.9)),
    ],
    ids=["typical-missed", "all-missed"],
)
def test_bench_state_check_needs_both_the_typical_get_and_all_gets(scope, monkeypatch, fast, slow, typical, everything):
    from keeperstate.management.commands import bench_state

    real = bench_state.Bench.interleaved

    def skewed(self, group):
        took = real(self, group)
        if "store.get" in took:  # the floor's gets 1 s each; the store's, one in three `fast`, the rest `slow`
            count = len(took["store.get"])
            took["physical.select"] = [1.0] * count
            took["store.get"] = [fast if i % 3 == 0 else slow for i in range(count)]
        return took

    monkeypatch.setattr(bench_state.Bench, "interleaved", skewed)
    out = io.StringIO()
    with pytest.raises(CommandError, match="missed .* store.get"):
        call_command("bench_state", "--quick", "--iterations", "30", "--check", stdout=out)
    target = json.loads(out.getvalue().strip().splitlines()[-1])["targets"]["store.get"]
    assert target["ratio"] == pytest.approx(typical, abs=0.001)
    assert target["all"] == pytest.approx(everything, rel=0.01)
    assert (target["ratio"] >= 0.95) != (target["all"] >= 0.95)  # one of the two meets it, and it is not enough


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_sweep_state_draws_a_progress_bar_in_a_terminal(scope):
    for i in range(3):
        state_set(scope=scope, key=f"k{i}", value=i, ttl=60)
    with connection.cursor() as cursor:
        cursor.execute("UPDATE workflow_state SET expires_at = now() - interval '1 minute'")
    out = _Terminal()

    call_command("sweep_state", "--batch-size", "2", stdout=out)

    text = out.getvalue()
    assert "\r[####################..........] 2/3" in text
    assert "\r[##############################] 3/3" in text
    assert "batch 1" not in text
    assert "swept 3 expired key(s)\n" in text
    assert text.rstrip().endswith("trimmed the history of 0 key(s)")


@pytest.mark.parametrize("command", ["bench_state", "bench_runs", "sweep_state", "create_api_token demo"])
def test_a_command_on_an_unmigrated_database_says_to_migrate_in_one_sentence(command):
    """A real process on a real, empty database of the same server: no traceback, no driver text."""
    empty = f"keeperstate_empty_{uuid.uuid4().hex[:8]}"
    server = database_url(connection.settings_dict)  # CREATE DATABASE needs a connection outside the test's transaction
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {empty}")
    try:
        url = database_url({**connection.settings_dict, "NAME": empty})
        done = subprocess.run(
            [sys.executable, "manage.py", *command.split()], cwd=settings.BASE_DIR, capture_output=True, text=True,
            env={**os.environ, "DATABASE_URL": url}, timeout=120,
        )
    finally:
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE {empty} WITH (FORCE)")

    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "does not exist" not in done.stderr
    assert done.stderr.strip().startswith("CommandError: The database is missing")
    assert "Run `python manage.py migrate` first" in done.stderr
