"""The environment is read one way (keeperstate.ops.env): what each helper accepts, what it refuses
and how it says so, and that no other module of keeperstate/ or builder/ reads os.environ."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from keeperstate.ops.env import (
    InvalidEnvironment,
    child_environment,
    env_bool,
    env_float,
    env_int,
    env_list,
    env_str,
)

ROOT = Path(__file__).resolve().parents[2]
NAME = "KEEPERSTATE_TEST_ENV_VALUE"


@pytest.fixture
def value(monkeypatch):
    """Set the test variable: ``value("42")``; ``value(None)`` removes it."""

    def set_value(raw: str | None) -> None:
        if raw is None:
            monkeypatch.delenv(NAME, raising=False)
        else:
            monkeypatch.setenv(NAME, raw)

    return set_value


def refusal(read) -> str:
    with pytest.raises(InvalidEnvironment) as caught:
        read()
    assert isinstance(caught.value, ImproperlyConfigured)
    return str(caught.value)


@pytest.mark.parametrize("raw", [None, "", "   "])
def test_unset_or_empty_gives_the_default_for_every_helper(value, raw):
    value(raw)

    assert env_str(NAME) is None
    assert env_str(NAME, "fallback") == "fallback"
    assert env_int(NAME, 7) == 7
    assert env_float(NAME, 2.5) == 2.5
    assert env_bool(NAME, True) is True
    assert env_bool(NAME, False) is False
    assert env_list(NAME, ["a", "b"]) == ["a", "b"]


def test_str_is_trimmed(value):
    value("  some value \n")

    assert env_str(NAME) == "some value"


def test_str_choices_are_matched_in_any_case_and_returned_as_written(value):
    value("warning")

    assert env_str(NAME, "INFO", choices=["DEBUG", "INFO", "WARNING"]) == "WARNING"


def test_str_outside_its_choices_is_refused_with_the_choices(value):
    value("loud")

    message = refusal(lambda: env_str(NAME, "INFO", choices=["DEBUG", "INFO"]))

    assert message == f"{NAME} must be one of DEBUG, INFO (got 'loud')"


def test_str_pattern_must_match_whole(value):
    value("12/min or so")

    message = refusal(lambda: env_str(NAME, "1/min", pattern=r"[0-9]+/[a-z]+", expected="a rate such as 1200/min"))

    assert message == f"{NAME} must be a rate such as 1200/min (got '12/min or so')"


@pytest.mark.parametrize(("raw", "number"), [("0", 0), ("42", 42), (" 30 ", 30), ("007", 7)])
def test_int_reads_ascii_digits(value, raw, number):
    value(raw)

    assert env_int(NAME, 1) == number


@pytest.mark.parametrize("raw", ["abc", "1.5", "1e3", "+5", "1_000", "²", "٣٠", "１２", "0x10", "-3", "- 3", "3 4"])
def test_int_refuses_anything_but_ascii_digits(value, raw):
    value(raw)

    message = refusal(lambda: env_int(NAME, 1, unit="seconds"))

    assert message.startswith(f"{NAME} must be a whole number of seconds, 0 or more (got ")
    assert repr(raw.strip()) in message


def test_int_takes_a_minus_sign_only_where_negatives_make_sense(value):
    value("-3")

    assert env_int(NAME, 1, minimum=None) == -3
    assert env_int(NAME, 1, minimum=-5) == -3
    assert refusal(lambda: env_int(NAME, 1, minimum=-2)) == f"{NAME} must be a whole number, -2 or more (got '-3')"


def test_int_below_its_minimum_is_refused(value):
    value("0")

    assert refusal(lambda: env_int(NAME, 4, minimum=1)) == f"{NAME} must be a whole number, 1 or more (got '0')"


@pytest.mark.parametrize(("raw", "number"), [("10", 10.0), ("0.5", 0.5), (".5", 0.5), ("2.", 2.0)])
def test_float_reads_decimal_numbers(value, raw, number):
    value(raw)

    assert env_float(NAME, 1.0) == number


@pytest.mark.parametrize("raw", ["abc", "1e3", "nan", "inf", "1_0", "²", "٣٠", "0,5", "-1", "."])
def test_float_refuses_anything_but_a_plain_decimal(value, raw):
    value(raw)

    message = refusal(lambda: env_float(NAME, 1.0, unit="seconds"))

    assert message == f"{NAME} must be a number of seconds such as 10 or 0.5, 0 or more (got {raw!r})"


@pytest.mark.parametrize("raw", ["1", "true", "TRUE", " Yes ", "on"])
def test_bool_true_spellings(value, raw):
    value(raw)

    assert env_bool(NAME, False) is True


@pytest.mark.parametrize("raw", ["0", "false", "False", " NO ", "off"])
def test_bool_false_spellings(value, raw):
    value(raw)

    assert env_bool(NAME, True) is False


@pytest.mark.parametrize("raw", ["maybe", "2", "enabled", "y", "t"])
def test_bool_anything_else_is_an_error_not_false(value, raw):
    value(raw)

    message = refusal(lambda: env_bool(NAME, False))

    assert message == f"{NAME} must be true or false (or 1/0, yes/no, on/off) (got {raw!r})"


def test_list_items_are_trimmed_and_empty_ones_dropped(value):
    value(" a.example , ,b.example:8000,, ")

    assert env_list(NAME, ["default"]) == ["a.example", "b.example:8000"]


def test_list_of_only_commas_is_empty_not_the_default(value):
    value(",,")

    assert env_list(NAME, ["default"]) == []


def test_a_long_value_is_shortened_in_the_message(value):
    value("x" * 200)

    message = refusal(lambda: env_int(NAME, 1))

    assert len(message) < 120
    assert message.endswith("…')")


def test_child_environment_is_this_environment_with_overrides(value):
    value("inherited")

    env = child_environment(DJANGO_DEBUG="false")

    assert env[NAME] == "inherited"
    assert env["DJANGO_DEBUG"] == "false"


# --- settings read through the helpers, in processes of their own ------------------------------


def run_python(args: list[str], tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env={**base, "KEEPERSTATE_DATA_DIR": str(tmp_path / "data"), **env},
        capture_output=True, text=True, timeout=120,
    )


def test_a_value_settings_cannot_read_stops_manage_py_in_one_line(tmp_path):
    done = run_python(["manage.py", "check"], tmp_path, KEEPERSTATE_MIN_INTERVAL="abc")

    assert done.returncode == 1
    assert done.stderr == (
        "KeeperState cannot start: KEEPERSTATE_MIN_INTERVAL must be a whole number of seconds, 1 or more "
        "(got 'abc')\n"
    )


def test_settings_read_lists_numbers_and_switches_through_the_helpers(tmp_path):
    script = (
        "import json; from django.conf import settings; "
        "print(json.dumps([settings.ALLOWED_HOSTS, settings.CSRF_TRUSTED_ORIGINS, settings.KEEPERSTATE_HTTP_ALLOW, "
        "settings.KEEPERSTATE_RUN_HEARTBEAT_SECONDS, settings.DEBUG, settings.LOGGING['loggers']['keeperstate']]))"
    )
    done = run_python(
        ["-c", script], tmp_path, DJANGO_SETTINGS_MODULE="keeperstate.settings",
        DJANGO_ALLOWED_HOSTS=" a.example , b.example ,", DJANGO_CSRF_TRUSTED_ORIGINS="",
        KEEPERSTATE_HTTP_ALLOW="10.0.0.0/8, host:8080", KEEPERSTATE_RUN_HEARTBEAT_SECONDS="0.5",
        DJANGO_DEBUG=" On ", KEEPERSTATE_LOG_LEVEL="warning",
    )

    assert done.returncode == 0, done.stderr
    hosts, origins, allow, heartbeat, debug, logger = json.loads(done.stdout)
    assert hosts == ["a.example", "b.example"]
    assert origins == []
    assert allow == ["10.0.0.0/8", "host:8080"]
    assert heartbeat == 0.5
    assert debug is True
    assert logger["level"] == "WARNING"


# --- no module but keeperstate/ops/env.py reads the environment ---------------------------------

READER = Path("keeperstate/ops/env.py")


def environ_reads(source: str) -> list[tuple[int, str]]:
    """Lines of ``source`` that read the environment: any use of ``os.environ`` except assigning
    or deleting one variable (``os.environ[name] = value``) and ``os.environ.setdefault(...)``,
    which pass a value on to child processes; and ``os.getenv``, ``os.environb`` or importing
    ``environ``/``getenv`` from ``os`` at all."""
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "os":
            found += [(node.lineno, f"from os import {a.name}") for a in node.names
                      if a.name in {"environ", "environb", "getenv", "getenvb"}]
        if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "os"):
            continue
        if node.attr in {"getenv", "getenvb", "environb"}:
            found.append((node.lineno, f"os.{node.attr}"))
        elif node.attr == "environ":
            parent = parents.get(node)
            writes = isinstance(parent, ast.Subscript) and isinstance(parent.ctx, ast.Store | ast.Del)
            sets_default = (isinstance(parent, ast.Attribute) and parent.attr == "setdefault"
                            and isinstance(parents.get(parent), ast.Call))
            if not (writes or sets_default):
                found.append((node.lineno, "os.environ"))
    return sorted(found)


def test_the_scan_finds_reads_and_lets_writes_pass():
    source = (
        "import os\n"
        "from os import getenv\n"
        "a = os.environ.get('A')\n"
        "b = os.environ['B']\n"
        "c = {**os.environ}\n"
        "d = os.getenv('D')\n"
        "os.environ['E'] = 'e'\n"
        "os.environ.setdefault('F', 'f')\n"
        "del os.environ['G']\n"
    )

    assert [line for line, _what in environ_reads(source)] == [2, 3, 4, 5, 6]


def test_no_module_but_env_reads_the_environment():
    modules = sorted([*(ROOT / "keeperstate").rglob("*.py"), *(ROOT / "builder").rglob("*.py")])
    assert ROOT / READER in modules

    reads = [
        f"{path.relative_to(ROOT)}:{line}: {what}"
        for path in modules if path.relative_to(ROOT) != READER
        for line, what in environ_reads(path.read_text())
    ]

    assert reads == [], "read the environment through keeperstate.ops.env:\n" + "\n".join(reads)
