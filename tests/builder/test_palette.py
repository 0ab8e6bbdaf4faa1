"""The palette is derived from the registry: every action has an entry and its own icon."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from builder.icons import icon_path, icon_svg
from builder.palette import editor_catalogue, palette_groups
from keeperstate.engine import registry
from keeperstate.engine.registry import TRIGGERS, ActionDefinition, all_actions

pytestmark = pytest.mark.django_db


class PaletteParser(HTMLParser):
    """Reads the palette fragment: group → entries with label, description and icon markup."""

    def __init__(self):
        super().__init__()
        self.groups: dict[str, list[dict]] = {}
        self._group = None
        self._entry = None
        self._text_target = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        classes = (attrs.get("class") or "").split()
        if "palette-group" in classes:
            self._group = self.groups.setdefault(attrs["data-group"], [])
        elif "palette-entry" in classes and self._group is not None:
            self._entry = {"id": attrs["data-entry-id"], "kind": attrs["data-kind"], "label": "",
                           "description": "", "svg": False, "missing_icon": False, "icon_class": None}
            self._group.append(self._entry)
        elif self._entry is not None:
            if "icon" in classes:
                self._entry["icon_class"] = next((c for c in classes if c.startswith("icon-")), None)
                self._entry["missing_icon"] = "icon-missing" in classes
            elif tag == "svg":
                self._entry["svg"] = True
            elif "entry-label" in classes:
                self._text_target = "label"
            elif "entry-description" in classes:
                self._text_target = "description"

    def handle_endtag(self, tag):
        if tag == "button":
            self._entry = None
        if tag == "span":
            self._text_target = None

    def handle_data(self, data):
        if self._entry is not None and self._text_target:
            self._entry[self._text_target] += data.strip()


def parse_palette(html: str) -> dict[str, list[dict]]:
    parser = PaletteParser()
    parser.feed(html)
    return parser.groups


def palette_problems(groups: dict[str, list[dict]]) -> list[str]:
    """Every registered action must have an entry with its label, description and own icon."""
    entries = {e["id"]: e for group in groups.values() for e in group if e["kind"] == "action"}
    problems = []
    for action in all_actions():
        entry = entries.get(action.id)
        if entry is None:
            problems.append(f"{action.id}: no palette entry")
            continue
        if entry["label"] != action.label or entry["description"] != action.description:
            problems.append(f"{action.id}: label or description differs from the registry")
        if not entry["svg"] or entry["missing_icon"] or entry["icon_class"] != f"icon-{action.icon}":
            problems.append(f"{action.id}: no icon '{action.icon}'")
        if entry not in groups.get(action.group, []):
            problems.append(f"{action.id}: not in its group {action.group}")
    return problems


def test_every_registered_action_has_a_palette_entry_with_its_own_icon(client_as_alice):
    response = client_as_alice.get("/builder/palette/")

    assert response.status_code == 200
    assert palette_problems(parse_palette(response.content.decode())) == []


def test_palette_groups_triggers_first_then_system(client_as_alice):
    groups = parse_palette(client_as_alice.get("/builder/palette/").content.decode())

    assert list(groups)[:2] == ["Triggers", "System"]
    assert [e["id"] for e in groups["Triggers"]] == list(TRIGGERS)
    assert {e["id"] for e in groups["System"]} >= {"Condition", "State Get", "State Set"}


def test_state_icons_are_distinct_from_each_other_and_from_condition():
    svgs = {name: icon_svg(name) for name in ("state-get", "state-set", "condition")}

    assert all(svgs.values())
    assert len(set(svgs.values())) == 3


def test_every_icon_name_in_the_registry_has_a_file():
    names = [a.icon for a in all_actions()] + [t.icon for t in TRIGGERS.values()]

    assert [name for name in names if icon_path(name) is None] == []
    assert len(set(names)) == len(names), "two registry entries share an icon"


def test_the_palette_check_catches_an_action_without_an_icon(client_as_alice, monkeypatch):
    # given an action registered without an icon file (what a new action looks like at first)
    template = registry.get_action("Condition")
    assert template is not None
    newcomer = ActionDefinition(
        id="Webhook Call", label="Webhook Call", group="Network", description="Call a URL.", icon="no-such-icon",
        egress="user", config_fields=(), output_fields=(), handler=template.handler,
    )
    monkeypatch.setitem(registry._ACTIONS, newcomer.id, newcomer)

    # when the palette renders
    html = client_as_alice.get("/builder/palette/").content.decode()

    # then it shows the entry without any icon, and the registry walk reports it
    groups = parse_palette(html)
    newcomers = [e for e in groups["Network"] if e["id"] == "Webhook Call"]
    assert len(newcomers) == 1
    assert newcomers[0]["svg"] is False
    assert palette_problems(groups) == ["Webhook Call: no icon 'no-such-icon'"]


def test_palette_requires_login(client):
    response = client.get("/builder/palette/")

    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_editor_catalogue_carries_handles_icons_and_form_urls():
    catalogue = editor_catalogue()

    assert catalogue["actions"]["Condition"]["sourceHandles"] == ["true", "false"]
    assert catalogue["actions"]["State Get"]["formUrl"] == "/builder/forms/State%20Get/"
    assert catalogue["triggers"]["Manual"]["formUrl"] == "/builder/forms/trigger/Manual/"
    for entry in [*catalogue["actions"].values(), *catalogue["triggers"].values()]:
        assert re.match(r"^<svg ", entry["iconSvg"]), entry["id"]


def test_palette_groups_follow_the_registry():
    groups = palette_groups()

    assert [g.name for g in groups][0] == "Triggers"
    assert sum(len(g.entries) for g in groups) == len(all_actions()) + len(TRIGGERS)
