"""Every HTML page works under the Content-Security-Policy: no violation reported by Chromium
(the page fixture fails a test on any), including admin and the Swagger UI docs page."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from tests.browser.conftest import log_in

pytestmark = pytest.mark.django_db(transaction=True)


def test_api_docs_render_under_the_csp(page):
    page.goto("/api/docs/")

    page.wait_for_selector(".swagger-ui .info .title")
    assert "KeeperState API" in page.inner_text(".swagger-ui .info .title")


def test_admin_pages_render_under_the_csp(page, monitor):
    get_user_model().objects.create_superuser("root", "root@example.com", "pw-root")
    page.goto("/admin/login/")
    page.fill("#id_username", "root")
    page.fill("#id_password", "pw-root")
    page.click("input[type=submit]")
    page.wait_for_url("**/admin/")

    for path in ("/admin/keeperstate/workflow/", f"/admin/keeperstate/workflow/{monitor.id}/change/",
                 "/admin/keeperstate/auditevent/", "/admin/keeperstate/organization/"):
        page.goto(path)
        page.wait_for_load_state("load")


def test_login_and_editor_render_under_the_csp(page, user, monitor):
    log_in(page, "alice", "pw-alice")

    page.goto(f"/builder/workflows/{monitor.id}/")
    page.wait_for_selector(".palette-entry")
