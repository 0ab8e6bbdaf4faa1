"""Every action module registers itself on import; list new ones here."""

from keeperstate.engine.actions import condition, state_delete, state_get, state_increment, state_set  # noqa: F401
