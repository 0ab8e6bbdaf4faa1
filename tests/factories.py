"""Small builders for test data (plain functions: the models are simple enough)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model

from keeperstate.accounts.models import Membership, Organization
from keeperstate.workflows.models import Workflow


def make_org(slug: str) -> Organization:
    return Organization.objects.create(name=slug.title(), slug=slug)


def make_user(username: str, org: Organization | None = None, role: str = "member") -> Any:
    user = get_user_model().objects.create_user(username=username, password="pw-" + username)
    if org is not None:
        Membership.objects.create(user=user, organization=org, role=role)
    return user


def make_workflow(org: Organization, *, name: str = "Monitor", user: Any = None, nodes=None, edges=None) -> Workflow:
    return Workflow.objects.create(
        organization=org, name=name, created_by=user, nodes=nodes or [], edges=edges or []
    )
