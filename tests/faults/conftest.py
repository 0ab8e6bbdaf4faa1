"""Fixtures of the fault suite."""

from __future__ import annotations

import pytest

from tests.ops.serving import migrated_data_dir


@pytest.fixture(scope="module")
def migrated(tmp_path_factory):
    """A migrated, stopped data folder; each test of its own server starts from a copy, so a
    crash of one test's Postgres never reaches another."""
    return migrated_data_dir(tmp_path_factory.mktemp("template"))
