"""Every action module registers itself on import; list new ones here."""

from keeperstate.engine.actions import condition, state_get, state_set  # noqa: F401
