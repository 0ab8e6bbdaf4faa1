"""Organization secrets: names and rules (names.py), encryption at rest (crypto.py), the
services people use to keep them (store.py), what a run may read (vault.py) and how their
values are kept out of results and logs (redaction.py)."""
