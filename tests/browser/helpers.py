"""What a user does in the editor, as small steps the browser tests share."""

from __future__ import annotations

import re

from playwright.sync_api import Locator, Page, expect


def log_in_as(page: Page, username: str) -> None:
    """Log in with the test password of `username` (tests.factories.make_user)."""
    page.goto("/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(f"pw-{username}")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/builder/")


def create_workflow(page: Page, name: str) -> None:
    page.goto("/builder/")
    page.get_by_label("Name").fill(name)
    page.get_by_role("button", name="Create workflow").click()
    wait_for_editor(page)


def open_editor(page: Page, workflow_id) -> None:
    page.goto(f"/builder/workflows/{workflow_id}/")
    wait_for_editor(page)


def wait_for_editor(page: Page) -> None:
    page.wait_for_selector("body[data-editor-ready]")


def card(page: Page, node_id: str) -> Locator:
    return page.locator(f'.node[data-node-id="{node_id}"]')


def select_node(page: Page, node_id: str) -> None:
    card(page, node_id).locator(".node-head").click()
    wait_for_form(page, node_id)


def wait_for_form(page: Page, node_id: str) -> None:
    page.wait_for_selector(f'#inspector .node-panel[data-node-id="{node_id}"] .config-form')


def add_from_palette(page: Page, action_id: str, expected_node_id: str) -> None:
    page.locator(f'.palette-entry[data-entry-id="{action_id}"]').click()
    expect(card(page, expected_node_id)).to_have_class(has_class("selected"))
    wait_for_form(page, expected_node_id)


def field(page: Page, name: str) -> Locator:
    return page.locator(f'#inspector .config-form [name="{name}"]')


def field_box(page: Page, name: str) -> Locator:
    return page.locator(f'#inspector .config-form .field[data-field="{name}"]')


def menu(page: Page) -> Locator:
    return page.locator("#ref-menu")


def pick_reference(page: Page, input_: Locator, query: str, token: str) -> None:
    """Type @query in a field, wait for the token among the options, choose it with Enter."""
    input_.press_sequentially("@" + query)
    option = menu(page).locator(f'.ref-option[data-token="{token}"]')
    expect(option).to_be_visible()
    expect(option).to_have_class(has_class("active"))
    input_.press("Enter")
    expect(menu(page)).to_be_hidden()


def save(page: Page) -> None:
    page.locator("#btn-save").click()
    expect(page.locator("#status")).to_contain_text("Saved")
    expect(page.locator("#dirty-indicator")).to_be_hidden()


def run(page: Page, run_input: str) -> None:
    """Run from the editor and wait for this run's own outcome.

    The status's text cannot tell two runs apart: the same input finishing in the same second
    reads the same. Its data-execution-id can: it names the execution shown, and only that.
    """
    status = page.locator("#run-status")
    page.locator("#run-input").fill(run_input)
    previous = status.get_attribute("data-execution-id")
    page.locator("#btn-run").click()
    another = re.compile(rf"^(?!{re.escape(previous)}$)." if previous else r".")
    expect(status).to_have_attribute("data-execution-id", another)
    expect(status).to_have_text(re.compile(r"^Run "))  # this run's, not the page's "Last run"


def result_row(page: Page, node_id: str) -> Locator:
    return page.locator(f'#run-results [data-node-id="{node_id}"]')


def has_class(css_class: str) -> re.Pattern:
    """Matches a class attribute that holds css_class."""
    return re.compile(rf"(^|\s){re.escape(css_class)}(\s|$)")


def show_results(page: Page) -> None:
    page.locator("#tab-results").click()
    expect(page.locator("#results-pane")).to_be_visible()


def show_state(page: Page) -> None:
    page.locator("#tab-state").click()
    expect(page.locator("#state-panel")).to_be_visible()


def state_row(page: Page, key: str) -> Locator:
    """A live key's row in the State panel (a <details>: its summary expands the history)."""
    return page.locator(f'#state-entries .state-entry[data-state-key="{key}"]')


def boxes(page: Page) -> dict[str, dict]:
    """Every card's bounding box on the screen, by node id."""
    return {
        node_id: page.locator(f'.node[data-node-id="{node_id}"]').bounding_box()
        for node_id in page.eval_on_selector_all(".node", "cards => cards.map(c => c.dataset.nodeId)")
    }


def overlapping(a: dict, b: dict) -> bool:
    return a["x"] < b["x"] + b["width"] and b["x"] < a["x"] + a["width"] and \
        a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"]


def inside(box: dict, frame: dict) -> bool:
    return box["x"] >= frame["x"] and box["y"] >= frame["y"] and \
        box["x"] + box["width"] <= frame["x"] + frame["width"] and \
        box["y"] + box["height"] <= frame["y"] + frame["height"]


def accept_next_dialog(page: Page) -> list[str]:
    """Accept the next confirm() and keep its message."""
    messages: list[str] = []
    page.once("dialog", lambda dialog: (messages.append(dialog.message), dialog.accept()))
    return messages
