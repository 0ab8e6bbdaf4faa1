"""Executions: the one service every run goes through, whoever starts it (``service``), the
scheduler, housekeeping, heartbeats and the worker's task."""
