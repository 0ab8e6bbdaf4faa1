"""A data folder per test module, initialised and migrated once: every test of the module starts
its processes on it and leaves its embedded Postgres stopped (a shared machine runs out of room
for a fresh initdb per test, and each costs ~20 s)."""

from __future__ import annotations

import pytest

from tests.ops.serving import migrated_data_dir, stop_embedded_postgres


@pytest.fixture(scope="module")
def prepared_dir(tmp_path_factory):
    path = migrated_data_dir(tmp_path_factory.mktemp("data"))
    yield path
    stop_embedded_postgres(path)


@pytest.fixture
def data_dir(prepared_dir):
    """The module's prepared folder, with no server running before or after the test."""
    stop_embedded_postgres(prepared_dir)
    yield prepared_dir
    stop_embedded_postgres(prepared_dir)
