"""How many generated cases each fuzz tier ran (printed at the end of the run by tests/fuzz/conftest.py)."""

from collections import Counter

CASES: Counter[str] = Counter()
FOUND: list[str] = []
