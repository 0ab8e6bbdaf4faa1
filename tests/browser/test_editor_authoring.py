"""Authoring aids: copy, paste and duplicate (references between copies re-pointed, across
workflows too), palette search, the shortcuts panel, export and import, versions with Restore,
and the API tokens page."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from keeperstate.accounts.models import ApiToken
from keeperstate.workflows.models import Workflow
from tests.browser.helpers import card, open_editor, save, select_node
from tests.factories import make_workflow

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

EDGES = "gs => gs.map(g => [g.dataset.source, g.dataset.target, g.dataset.handle || null])"


def edge_pairs(page):
    return sorted(tuple(e) for e in page.eval_on_selector_all("#edges .edge", EDGES))


def saved_config(workflow_id, node_id):
    workflow = Workflow.objects.get(pk=workflow_id)
    return next(n for n in workflow.nodes if n["id"] == node_id)["data"]["config"]


def test_copy_paste_repoints_references_between_the_copies(author_page, monitor, org, user, artifacts):
    page = author_page
    open_editor(page, monitor.id)
    select_node(page, "state-get-1")
    card(page, "condition-1").locator(".node-head").click(modifiers=["Shift"])
    page.keyboard.press("Control+c")
    expect(page.locator("#status")).to_contain_text("Copied 2 nodes")

    page.keyboard.press("Control+v")

    expect(card(page, "state-get-2")).to_be_visible()
    expect(card(page, "condition-2")).to_be_visible()
    assert ("state-get-2", "condition-2", None) in edge_pairs(page)
    page.screenshot(path=str(artifacts / "editor-paste.png"))
    card(page, "trigger").locator(".handle.out").click()  # pasted unconnected: run it after the trigger
    card(page, "state-get-2").locator(".node-head").click()
    save(page)
    condition = saved_config(monitor.id, "condition-2")["condition"]
    assert "<<@state-get-2:State Get 2.exists>>" in condition  # the copy reads the copy
    assert "<<@trigger:Trigger.block>>" in condition  # a node outside the copy: kept

    # Ctrl+D duplicates; the same clipboard pastes into another workflow
    select_node(page, "state-set-1")
    page.keyboard.press("Control+d")
    expect(card(page, "state-set-2")).to_be_visible()
    other = make_workflow(org, name="Other", user=user)
    open_editor(page, other.id)
    page.keyboard.press("Control+v")
    expect(card(page, "state-set-1")).to_be_visible()


def test_palette_search_filters_and_enter_adds(author_page, monitor):
    page = author_page
    open_editor(page, monitor.id)
    select_node(page, "state-set-1")
    search = page.locator("#palette-search")

    search.fill("incr")

    visible = page.locator(".palette-entry:visible")
    expect(visible).to_have_count(1)
    expect(visible).to_have_attribute("data-entry-id", "State Increment")
    search.press("Enter")
    expect(card(page, "state-increment-1")).to_be_visible()
    expect(page.locator(".palette-entry:visible").first).to_be_visible()  # the search is cleared


def test_question_mark_opens_the_shortcuts(author_page, monitor, artifacts):
    page = author_page
    open_editor(page, monitor.id)
    page.locator("#canvas").focus()

    page.keyboard.press("?")

    dialog = page.locator("#shortcuts")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("Duplicate the selected nodes")
    page.screenshot(path=str(artifacts / "editor-shortcuts.png"))
    page.locator("#shortcuts-close").click()
    expect(dialog).to_be_hidden()


def test_export_and_import_through_the_ui(author_page, monitor, tmp_path):
    page = author_page
    open_editor(page, monitor.id)

    with page.expect_download() as download:
        page.locator("#btn-export").click()
    path = tmp_path / "monitor.json"
    download.value.save_as(path)
    exported = json.loads(path.read_text())
    assert exported["name"] == "Block monitor"
    assert [n["id"] for n in exported["nodes"]] == [n["id"] for n in monitor.nodes]

    page.locator("#import-file").set_input_files(str(path))

    page.wait_for_url(lambda url: str(monitor.id) not in url and "/builder/workflows/" in url)
    imported = Workflow.objects.exclude(pk=monitor.pk).get(name="Block monitor")
    assert imported.nodes == monitor.nodes


def test_versions_list_their_changes_and_restore_an_earlier_one(author_page, monitor, artifacts):
    page = author_page
    open_editor(page, monitor.id)
    select_node(page, "state-set-1")
    page.keyboard.press("Delete")
    save(page)

    page.locator("#link-versions").click()

    versions = page.locator("#versions-list .version")
    expect(versions).to_have_count(2)
    expect(versions.first).to_contain_text("Removed State Set; 1 connection removed")
    expect(versions.first).to_contain_text("alice")
    versions.first.locator("summary").click()
    expect(versions.first.locator(".diff-removed").first).to_contain_text("State Set (state-set-1)")
    page.screenshot(path=str(artifacts / "versions-page.png"))

    page.once("dialog", lambda dialog: dialog.accept())
    versions.nth(1).get_by_role("button", name="Restore version").click()

    expect(page.locator("#versions-status")).to_contain_text("Restored version")
    expect(versions).to_have_count(3)
    expect(versions.first).to_contain_text("Restored version")
    assert any(n["id"] == "state-set-1" for n in Workflow.objects.get(pk=monitor.pk).nodes)


def test_the_tokens_page_makes_shows_once_and_revokes(author_page, user, artifacts):
    page = author_page
    page.locator(".tokens-nav").click()
    expect(page.locator("#tokens-status")).to_have_text("No tokens yet.")

    page.locator("#token-name").fill("deploy script")
    page.locator("#token-days").fill("30")
    page.get_by_role("button", name="Make token").click()

    value = page.locator("#token-value")
    expect(value).not_to_be_empty()
    token = value.text_content()
    row = page.locator("#token-list tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("deploy script")
    assert token not in page.locator("#token-list").inner_text()  # the list shows a prefix only
    page.screenshot(path=str(artifacts / "tokens-page.png"))

    page.reload()
    expect(page.locator("#token-value")).to_be_empty()  # shown once
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Revoke deploy script").click()
    expect(page.locator("#tokens-status")).to_contain_text("Revoked deploy script")
    expect(page.locator("#token-list tbody tr")).to_have_count(0)
    assert not ApiToken.objects.filter(user=user).exists()
