"""Every action module registers itself on import; list new ones here."""

from keeperstate.engine.actions import (  # noqa: F401
    condition,
    fail_run,
    for_each,
    http_request,
    set_fields,
    state_delete,
    state_get,
    state_increment,
    state_set,
    stop_loop,
)
