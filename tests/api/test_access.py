"""The reads on every request's path that are written once as SQL (keeperstate.core.rows) find what
their querysets find: the workflow a user may see, and a token with its user."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser
from django.http import Http404

from keeperstate.accounts.access import get_workflow_for, workflows_visible_to
from keeperstate.accounts.models import ApiToken, Membership
from keeperstate.accounts.tokens import create_token
from keeperstate.api.authentication import tokens_with_key
from tests.factories import make_user, make_workflow

pytestmark = pytest.mark.django_db


def fields(instance: Any) -> dict[str, Any]:
    return {field.attname: getattr(instance, field.attname) for field in type(instance)._meta.concrete_fields}


def test_get_workflow_for_finds_exactly_what_workflows_visible_to_finds(org, other_org, user):
    own = make_workflow(org, user=user, nodes=[{"id": "trigger", "data": {"label": "Trigger"}}])
    deleted = make_workflow(org, name="Gone")
    deleted.soft_delete()
    foreign = make_workflow(other_org, name="Theirs")
    in_both = make_user("carol", org)
    Membership.objects.create(user=in_both, organization=other_org)
    seen = 0
    for who in (user, in_both, make_user("dave"), AnonymousUser()):
        for workflow in (own, deleted, foreign):
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
    assert seen == 3  # alice: her own; carol: her own and globex's
    assert get_workflow_for(user, own.pk).nodes == own.nodes  # JSON decoded, not text
    for bad_id in ("not-a-uuid", uuid.uuid4()):
        with pytest.raises(Http404):
            get_workflow_for(user, bad_id)


def test_tokens_with_key_reads_a_token_and_its_user_as_the_orm_does(user):
    stored, _ = create_token(user, name="ci")
    [found] = tokens_with_key(stored.token_key)
    expected = ApiToken.objects.select_related("user").get(pk=stored.pk)
    assert fields(found) == fields(expected)
    assert fields(found.user) == fields(expected.user)
    assert tokens_with_key("ks_00000000") == []
