"""The palette and the editor's action catalogue, both read from the action registry.

Triggers come first, then every registered action in its palette group, in registration
order. Nothing here names an action: a new registry entry appears once it has an icon file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.urls import reverse
from django.utils.safestring import SafeString

from builder.icons import icon_svg
from keeperstate.engine.registry import TRIGGERS, all_actions, catalogue

TRIGGERS_GROUP = "Triggers"


@dataclass(frozen=True)
class PaletteEntry:
    kind: str  # "trigger" or "action"
    id: str
    label: str
    description: str
    icon: str

    @property
    def svg(self) -> SafeString | None:
        return icon_svg(self.icon)


@dataclass(frozen=True)
class PaletteGroup:
    name: str
    entries: tuple[PaletteEntry, ...]

    @property
    def slug(self) -> str:
        return self.name.lower().replace(" ", "-")


def palette_groups() -> list[PaletteGroup]:
    groups: dict[str, list[PaletteEntry]] = {
        TRIGGERS_GROUP: [PaletteEntry("trigger", t.id, t.label, t.description, t.icon) for t in TRIGGERS.values()]
    }
    for action in all_actions():
        groups.setdefault(action.group, []).append(
            PaletteEntry("action", action.id, action.label, action.description, action.icon)
        )
    return [PaletteGroup(name, tuple(entries)) for name, entries in groups.items()]


def form_url(kind: str, entry_id: str) -> str:
    if kind == "trigger":
        return reverse("builder:trigger-form", args=[entry_id])
    return reverse("builder:action-form", args=[entry_id])


def editor_catalogue() -> dict[str, Any]:
    """What the editor's JavaScript needs to draw and configure nodes of every kind: the API's
    catalogue (the registry's ``catalogue()``) by id, with each entry's icon and form address, and
    whether an action writes the workflow's state (Test step asks first) or loops."""
    listed = catalogue()
    actions = {a.id: a for a in all_actions()}
    return {
        "actions": {
            entry["id"]: {
                **entry,
                "iconSvg": str(icon_svg(entry["icon"]) or ""),
                "formUrl": form_url("action", entry["id"]),
                "writesState": actions[entry["id"]].writes_state,
                "loop": actions[entry["id"]].loop,
            }
            for entry in listed["actions"]
        },
        "triggers": {
            entry["id"]: {
                **entry, "iconSvg": str(icon_svg(entry["icon"]) or ""), "formUrl": form_url("trigger", entry["id"]),
            }
            for entry in listed["triggers"]
        },
    }
