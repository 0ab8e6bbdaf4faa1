"""The reads on every request's path that are written once as SQL (keeperstate.core.rows) find what
their querysets find: the workflow a user may see (WorkflowQuerySet.visible_to and its SQL form,
visible_to_sql), the workflow a webhook runs, and the tokens of a key with their users (knox's own
queryset)."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser
from django.db import connection
from django.http import Http404
from django.utils import timezone

from keeperstate.accounts.access import get_workflow_for, hooked_workflow, workflows_visible_to
from keeperstate.accounts.models import ApiToken, Membership
from keeperstate.accounts.tokens import create_token
from keeperstate.api.authentication import tokens_with_key
from keeperstate.ratelimits.counters import hit_params
from keeperstate.workflows.models import Workflow, WorkflowQuerySet
from tests.factories import make_org, make_user, make_workflow

pytestmark = pytest.mark.django_db


def fields(instance: Any) -> dict[str, Any]:
    return {field.attname: getattr(instance, field.attname) for field in type(instance)._meta.concrete_fields}


@pytest.fixture
def world(org, other_org, user):
    """Workflows alive and soft-deleted in two organizations and one nobody belongs to; members of
    one organization (alice, eve), of both (carol), of none (dave), and nobody signed in."""
    own = make_workflow(org, user=user, nodes=[{"id": "trigger", "data": {"label": "Trigger"}}])
    deleted = make_workflow(org, name="Gone")
    deleted.soft_delete()
    foreign = make_workflow(other_org, name="Theirs")
    foreign_deleted = make_workflow(other_org, name="Theirs, gone")
    foreign_deleted.soft_delete()
    lonely = make_workflow(make_org("initech"), name="Nobody's")
    in_both = make_user("carol", org)
    Membership.objects.create(user=in_both, organization=other_org)
    users = [user, in_both, make_user("dave"), make_user("eve", other_org), AnonymousUser()]
    return users, [own, deleted, foreign, foreign_deleted, lonely]


def test_visible_to_sql_selects_exactly_what_visible_to_selects(world):
    users, workflows = world
    statement = f'SELECT w."id" FROM "workflow" w WHERE {WorkflowQuerySet.visible_to_sql("w")}'
    for who in users[:-1]:  # the SQL form is for a signed-in user's id
        with connection.cursor() as cursor:
            cursor.execute(statement, [who.pk])
            found = {row[0] for row in cursor.fetchall()}
        assert found == set(Workflow.objects.visible_to(who).values_list("pk", flat=True)), who
    assert not Workflow.objects.visible_to(users[-1]).exists()


def test_get_workflow_for_finds_exactly_what_workflows_visible_to_finds(world):
    users, workflows = world
    own = workflows[0]
    seen = 0
    for who in users:
        for workflow in workflows:
            expected = workflows_visible_to(who).filter(pk=workflow.pk).first()
            try:
                found = get_workflow_for(who, str(workflow.pk))
            except Http404:
                found = None
            assert (found is None) == (expected is None), (who, workflow.name)
            if found is not None:
                seen += 1
                assert fields(found) == fields(expected)
                assert not found._state.adding  # saved as an update, like a fetched row
    assert seen == 4  # alice: her own; carol: her own and globex's; eve: globex's
    assert get_workflow_for(users[0], own.pk).nodes == own.nodes  # JSON decoded, not text
    for bad_id in ("not-a-uuid", uuid.uuid4()):
        with pytest.raises(Http404):
            get_workflow_for(users[0], bad_id)


def test_hooked_workflow_finds_exactly_the_alive_active_workflow_the_orm_finds(world):
    _, workflows = world
    inactive = make_workflow(workflows[0].organization, name="Off")
    Workflow.objects.filter(pk=inactive.pk).update(active=False)
    Workflow.objects.filter(pk__in=[w.pk for w in workflows]).update(active=True)
    found_any = 0
    for workflow in [*workflows, inactive]:
        expected = Workflow.objects.alive().filter(pk=workflow.pk, active=True).first()
        found = hooked_workflow(str(workflow.pk))
        assert (found is None) == (expected is None), workflow.name
        if found is not None:
            found_any += 1
            assert fields(found) == fields(expected)
            assert not found._state.adding
    assert found_any == 3  # alive and active, in any organization: the secret decides, not a membership
    assert hooked_workflow(workflows[0].pk).nodes == workflows[0].nodes  # JSON decoded, not text
    for bad_id in ("not-a-uuid", "", uuid.uuid4()):
        assert hooked_workflow(bad_id) is None


def test_tokens_with_key_reads_a_token_and_its_user_as_the_orm_does(user):
    stored, _ = create_token(user, name="ci")
    [found], _hits = tokens_with_key(stored.token_key)
    expected = ApiToken.objects.select_related("user").get(pk=stored.pk)
    assert fields(found) == fields(expected)
    assert fields(found.user) == fields(expected.user)
    assert tokens_with_key("ks_00000000") == ([], None)


def test_tokens_with_key_finds_exactly_what_knoxs_queryset_finds(user):
    # knox's authenticate_credentials reads get_token_model().objects.filter(token_key=…)
    # .select_related("user"): expired tokens and inactive users' too (it checks them after).
    stored, _ = create_token(user, name="ci")
    inactive = make_user("mallory")
    inactive.is_active = False
    inactive.save()
    # Tokens sharing the key (it is the token's first characters only), one of them expired.
    for n, (owner, expiry) in enumerate([(inactive, None), (user, timezone.now() - timedelta(days=1))]):
        ApiToken(digest=f"{n:0128x}", token_key=stored.token_key, user=owner, expiry=expiry).save(force_insert=True)
    other, _ = create_token(inactive, name="other key")

    for key in (stored.token_key, other.token_key, "ks_00000000"):
        knox = {token.pk: token for token in ApiToken.objects.filter(token_key=key).select_related("user")}
        for counting in (None, hit_params("test", key, limit=100, period=60)):
            read, _hits = tokens_with_key(key, digest=stored.digest, hit=counting)
            found = {token.pk: token for token in read}
            assert found.keys() == knox.keys(), key
            for pk, token in found.items():
                assert fields(token) == fields(knox[pk])
                assert fields(token.user) == fields(knox[pk].user)
    assert len(tokens_with_key(stored.token_key)[0]) == 3


def test_the_token_read_counts_the_rate_hit_only_for_a_live_token_of_an_active_user(user):
    stored, _ = create_token(user, name="ci")
    inactive = make_user("mallory")
    inactive.is_active = False
    inactive.save()
    expired, of_inactive = f"{0:0128x}", f"{1:0128x}"
    ApiToken(digest=expired, token_key=stored.token_key, user=user,
             expiry=timezone.now() - timedelta(days=1)).save(force_insert=True)
    ApiToken(digest=of_inactive, token_key=stored.token_key, user=inactive).save(force_insert=True)
    counting = hit_params("test", "token", limit=2, period=3600)

    def hits(digest: str) -> int | None:
        return tokens_with_key(stored.token_key, digest=digest, hit=counting)[1]

    assert [hits(expired), hits(of_inactive), hits("0" * 128)] == [None, None, None]  # not counted
    assert [hits(stored.digest), hits(stored.digest), hits(stored.digest)] == [1, 2, None]  # the third refused
