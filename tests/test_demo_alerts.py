"""The demo alerts sink (/demo/alerts/, keeperstate.demo.feed): kept once per dedupKey, held by the
database; the page shows formatted JSON, every kept row page by page, and no template internals."""

from __future__ import annotations

import json
import threading

import pytest
from django.db import IntegrityError, connection, transaction
from django.test import Client

from keeperstate.demo import feed as demo_feed
from keeperstate.demo.models import DemoAlert
from keeperstate.demo.seeding import ensure_demo
from keeperstate.secrets.vault import SecretVault


@pytest.fixture
def sink(db):
    """Post alerts as the demo monitor does: with the demo organization's ALERTS_TOKEN."""
    org, _user, _monitor = ensure_demo(password=None)
    token = SecretVault(org.pk).value(demo_feed.ALERTS_SECRET)

    def post(payload, client=None):
        raw = payload if isinstance(payload, str) else json.dumps(payload)
        return (client or Client()).post("/demo/alerts/", raw, content_type="application/json",
                                         HTTP_AUTHORIZATION=f"Bearer {token}")

    return post


@pytest.fixture
def viewer(db):
    """A member of the demo organization, whose alerts these are."""
    _org, demo_user, _monitor = ensure_demo(password=None)
    client = Client()
    client.force_login(demo_user)
    return client


def test_a_new_alert_is_kept(sink):
    response = sink({"block": 5, "dedupKey": "block-5"})

    assert response.status_code == 201
    alert = DemoAlert.objects.get()
    assert response.json() == {"received": alert.pk, "duplicate": False}
    assert (alert.payload, alert.dedup_key) == ({"block": 5, "dedupKey": "block-5"}, "block-5")


def test_a_second_alert_with_the_same_dedup_key_is_a_duplicate_not_kept(sink):
    first = sink({"block": 5, "dedupKey": "block-5"}).json()["received"]

    again = sink({"block": 5, "dedupKey": "block-5", "retry": True})

    assert again.status_code == 200
    assert again.json() == {"received": first, "duplicate": True}
    assert DemoAlert.objects.count() == 1
    assert DemoAlert.objects.get().payload == {"block": 5, "dedupKey": "block-5"}


def test_a_whole_number_key_is_its_decimal_text(sink):
    sink({"dedupKey": 26})

    assert sink({"dedupKey": "26"}).json()["duplicate"] is True
    assert DemoAlert.objects.get().dedup_key == "26"


def test_alerts_without_a_key_are_all_kept(sink):
    sink({"block": 1})
    sink({"block": 1})
    sink("plain text")

    assert DemoAlert.objects.count() == 3
    assert set(DemoAlert.objects.values_list("dedup_key", flat=True)) == {None}


def test_different_keys_are_different_alerts(sink):
    for block in range(5):
        assert sink({"block": block, "dedupKey": f"block-{block}"}).status_code == 201

    assert DemoAlert.objects.count() == 5


@pytest.mark.parametrize("key", [True, "", "  ", 1.5, {"a": 1}, ["x"], "k" * 256])
def test_a_dedup_key_that_is_no_key_is_refused(sink, key):
    response = sink({"dedupKey": key})

    assert response.status_code == 400
    assert response.json()["field"] == "dedupKey"
    assert DemoAlert.objects.count() == 0


def test_the_database_holds_the_key_unique(db):
    DemoAlert.objects.create(payload={}, dedup_key="k")

    with pytest.raises(IntegrityError), transaction.atomic():
        DemoAlert.objects.create(payload={}, dedup_key="k")


@pytest.mark.concurrency
def test_racing_senders_of_one_key_keep_one_alert(transactional_db):
    org, _user, _monitor = ensure_demo(password=None)
    token = SecretVault(org.pk).value(demo_feed.ALERTS_SECRET)
    barrier = threading.Barrier(4)
    answers: list[dict] = []

    def send():
        try:
            barrier.wait(timeout=30)
            response = Client().post("/demo/alerts/", {"dedupKey": "block-9"}, content_type="application/json",
                                     HTTP_AUTHORIZATION=f"Bearer {token}")
            answers.append(response.json())
        finally:
            connection.close()

    threads = [threading.Thread(target=send) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert not any(t.is_alive() for t in threads)
    kept = DemoAlert.objects.get()
    assert sorted(a["duplicate"] for a in answers) == [False, True, True, True]
    assert {a["received"] for a in answers} == {kept.pk}


def test_the_newest_alerts_are_kept(sink, monkeypatch):
    monkeypatch.setattr(demo_feed, "KEEP_ALERTS", 3)

    for block in range(5):
        sink({"block": block})

    assert sorted(a["block"] for a in DemoAlert.objects.values_list("payload", flat=True)) == [2, 3, 4]


def test_a_thousand_alerts_are_kept():
    assert demo_feed.KEEP_ALERTS == 1000


def test_the_page_shows_payloads_as_formatted_json(sink, viewer):
    sink({"block": 26, "hash": "0xab", "note": "<b>bold</b>", "dedupKey": "block-26"})

    html = viewer.get("/demo/alerts/").content.decode()

    assert "&quot;block&quot;: 26,\n" in html  # JSON, indented one key a line, escaped
    assert "&lt;b&gt;bold&lt;/b&gt;" in html
    assert "{'block'" not in html  # not Python's text of a dict
    assert "<code>block-26</code>" in html


def test_the_page_shows_the_head_and_no_template_internals(viewer, db, monkeypatch):
    monkeypatch.setattr(demo_feed, "now", lambda: demo_feed.GENESIS + 4321 * demo_feed.block_seconds())

    html = viewer.get("/demo/alerts/").content.decode()

    assert '<strong id="feed-block">4321</strong>' in html
    assert "Node" not in html  # Django's <Block Node: …> once stood where the block number belongs


def test_every_kept_alert_is_on_a_page(viewer, db):
    DemoAlert.objects.bulk_create([DemoAlert(payload={"n": n}) for n in range(120)])

    first = viewer.get("/demo/alerts/").content.decode()
    last = viewer.get("/demo/alerts/?page=3").content.decode()
    listed = viewer.get("/demo/alerts/?format=json&page=3").json()

    assert first.count('class="alert-payload"') == 50
    assert "page 1 of 3" in first
    assert 'href="?page=2"' in first
    assert 'http-equiv="refresh"' in first
    assert 'http-equiv="refresh"' not in last
    assert last.count('class="alert-payload"') == 20
    assert (listed["count"], listed["page"], listed["pages"], len(listed["alerts"])) == (120, 3, 3, 20)
    seen = {a["payload"]["n"] for page in (1, 2, 3)
            for a in viewer.get(f"/demo/alerts/?format=json&page={page}").json()["alerts"]}
    assert seen == set(range(120))


def test_the_json_variant_carries_the_dedup_key(sink, viewer):
    sink({"block": 3, "dedupKey": "block-3"})

    listed = viewer.get("/demo/alerts/?format=json").json()["alerts"]

    assert listed[0]["dedupKey"] == "block-3"
    assert listed[0]["payload"] == {"block": 3, "dedupKey": "block-3"}


@pytest.mark.parametrize("query", ["?format=json", ""])
def test_a_user_of_another_organization_does_not_see_the_demo_alerts(sink, user, query):
    # given an alert of the demo organization, and alice of acme logged in
    sink({"dedupKey": "block-1", "text": "private to the demo organization"})
    client = Client()
    client.force_login(user)

    response = client.get(f"/demo/alerts/{query}")

    assert response.status_code == 404
    assert b"private to the demo organization" not in response.content
    if query:
        assert response.json()["code"] == "NOT_FOUND"
