"""Outbound HTTP for workflow actions: which addresses a run may reach, and a client that
judges the address it actually connects to (DESIGN.md §12)."""
