"""The error catalogue (keeperstate.core.errors.Code) is the one list of codes: every coded error
names an entry, no code is written by hand anywhere else, and docs/errors.md tables them all."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import builder
import keeperstate
from keeperstate.core.errors import Code, CodedError, error_body

ROOT = Path(__file__).resolve().parents[1]
CATALOGUE = ROOT / "keeperstate" / "core" / "errors.py"
DOCS = ROOT / "docs" / "errors.md"
CODE_SHAPE = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[A-Z]{4,}")


def all_modules():
    for package in (keeperstate, builder):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if ".migrations" not in info.name:
                yield importlib.import_module(info.name)


def coded_classes():
    list(all_modules())  # every subclass is defined once its module is imported
    found, pending = [], [CodedError]
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return [cls for cls in found if cls.__module__.startswith(("keeperstate.", "builder."))]


def source_files():
    for folder in ("keeperstate", "builder"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "migrations" not in path.parts and path != CATALOGUE:
                yield path


@pytest.mark.parametrize("cls", coded_classes(), ids=lambda cls: f"{cls.__module__}.{cls.__qualname__}")
def test_every_coded_error_names_a_catalogue_entry(cls):
    # Base classes that only group their subclasses (StateError) name none themselves.
    if cls is CodedError or (cls.__subclasses__() and "error" not in vars(cls)):
        return
    assert isinstance(getattr(cls, "error", None), Code), f"{cls.__qualname__} names no Code entry"


def test_no_code_is_written_by_hand_outside_the_catalogue():
    # A code in the source is Code.NAME; a bare "NAME" string would be a second declaration.
    bare = []
    for path in source_files():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in Code.__members__:
                bare.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.value!r}")
    assert not bare, "bare codes (use Code.<NAME>): " + ", ".join(bare)


def test_every_code_has_a_status_and_a_sentence():
    for code in Code:
        assert 400 <= code.status < 600, code
        assert code.message.endswith((".", ")")), code
        assert len(code.message) > 20, code
        assert error_body(code) == {"code": code.name, "detail": code.message}


def table_codes() -> list[str]:
    return re.findall(r"^\| `([A-Z0-9_]+)` \|", DOCS.read_text(), flags=re.M)


def test_the_docs_table_lists_exactly_the_catalogue():
    documented = table_codes()
    assert len(documented) == len(set(documented)), "a code is documented twice"
    assert set(documented) == set(Code.__members__), (
        f"missing from docs/errors.md: {sorted(set(Code.__members__) - set(documented))}; "
        f"not in the catalogue: {sorted(set(documented) - set(Code.__members__))}"
    )


def test_the_docs_table_gives_each_code_its_catalogue_status():
    rows = re.findall(r"^\| `([A-Z0-9_]+)` \| (\d{3})", DOCS.read_text(), flags=re.M)
    assert {code: int(status) for code, status in rows} == {code.name: code.status for code in Code}


def test_a_coded_error_of_any_entry_answers_that_entry():
    exc = CodedError.of(Code.NOT_FOUND, "No such token.", field="prefix")

    assert (exc.code, exc.status_code, exc.message, exc.field) == ("NOT_FOUND", 404, "No such token.", "prefix")
    assert error_body(exc) == {"code": "NOT_FOUND", "detail": "No such token.", "field": "prefix"}
