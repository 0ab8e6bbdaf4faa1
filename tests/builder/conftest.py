"""Builder fixtures: the logged-in clients are shared (tests/conftest.py)."""
