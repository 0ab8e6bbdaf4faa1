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
from keeperstate.engine.registry import TRIGGERS, all_actions

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
    """What the editor's JavaScript needs to draw and configure nodes of every kind."""

    def fields(config_fields: Any) -> list[dict[str, Any]]:
        return [
            {"name": f.name, "label": f.label, "kind": f.kind, "acceptsReferences": f.accepts_references}
            for f in config_fields
        ]

    return {
        "actions": {
            a.id: {
                "id": a.id,
                "label": a.label,
                "group": a.group,
                "description": a.description,
                "icon": a.icon,
                "iconSvg": str(icon_svg(a.icon) or ""),
                "sourceHandles": list(a.source_handles),
                # the handle an edge without sourceHandle leaves from (None: every edge names one)
                "defaultHandle": getattr(a, "default_handle", None),
                "configFields": fields(a.config_fields),
                "formUrl": form_url("action", a.id),
                # Test step asks before running a node that may write the workflow's state
                "sideEffects": a.side_effects,
                "loop": a.loop,
            }
            for a in all_actions()
        },
        "triggers": {
            t.id: {
                "id": t.id,
                "label": t.label,
                "description": t.description,
                "icon": t.icon,
                "iconSvg": str(icon_svg(t.icon) or ""),
                "configFields": fields(t.config_fields),
                "formUrl": form_url("trigger", t.id),
            }
            for t in TRIGGERS.values()
        },
    }
