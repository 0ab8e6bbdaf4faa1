"""Django's user admin, scoped for tenant staff (DESIGN.md §13, ADR 0074; issue 39, item 1: a staff
user who owned one organization listed every organization's users, set another organization's
user's password and logged in as them, and made itself superuser).

Ada is staff, admin of acme only, with every permission on users and on KeeperState's models."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.test import Client

from keeperstate.accounts.models import Membership
from tests.factories import make_user

pytestmark = pytest.mark.django_db

User = get_user_model()
NEW_PASSWORD = "a-new-Passw0rd-for-takeover"


@pytest.fixture
def ada(org):
    user = make_user("ada", org, role="admin")
    user.is_staff = True
    user.save()
    user.user_permissions.set(Permission.objects.filter(content_type__app_label__in=["keeperstate", "auth"]))
    return user


@pytest.fixture
def people(org, other_org, ada):
    """alice of acme; bob of globex; carol of both; root, a superuser member of acme; sam, another
    staff member of acme."""
    alice = make_user("alice", org)
    bob = make_user("bob", other_org)
    carol = make_user("carol", org)
    Membership.objects.create(user=carol, organization=other_org, role="member")
    root = make_user("root", org)
    root.is_superuser = root.is_staff = True
    root.save()
    sam = make_user("sam", org)
    sam.is_staff = True
    sam.save()
    return {"alice": alice, "bob": bob, "carol": carol, "root": root, "sam": sam}


@pytest.fixture
def as_ada(ada) -> Client:
    client = Client()
    client.force_login(ada)
    return client


def password_post(client, user):
    return client.post(f"/admin/auth/user/{user.pk}/password/", {
        "password1": NEW_PASSWORD, "password2": NEW_PASSWORD, "usable_password": "true"})


def logs_in(user) -> bool:
    return Client().login(username=user.username, password=NEW_PASSWORD)


def test_the_user_list_shows_only_users_of_the_administered_organization(as_ada, people):
    page = as_ada.get("/admin/auth/user/")

    assert page.status_code == 200
    shown = set(page.context["cl"].result_list.values_list("username", flat=True))
    assert shown == {"ada", "alice", "carol", "sam"}  # not bob (globex), not root (a superuser)


@pytest.mark.parametrize("who", ["bob", "carol", "root", "sam"])
def test_staff_cannot_set_the_password_of_a_user_it_does_not_manage(as_ada, people, who):
    # bob is of another organization, carol also belongs to one, root is a superuser, sam is staff
    target = people[who]

    response = password_post(as_ada, target)

    assert response.status_code in (403, 404)
    assert not logs_in(target)


@pytest.mark.parametrize("who", ["bob", "carol", "root", "sam"])
def test_staff_cannot_change_or_delete_a_user_it_does_not_manage(as_ada, people, who):
    target = people[who]

    changed = as_ada.post(f"/admin/auth/user/{target.pk}/change/", {"username": "renamed", "is_active": ""})
    deleted = as_ada.post(f"/admin/auth/user/{target.pk}/delete/", {"post": "yes"})

    # out of view: Django's "does not exist" (a redirect to the index); in view but not managed: 403
    for response in (changed, deleted):
        assert response.status_code == 403 or (response.status_code, response.url) == (302, "/admin/")
    target.refresh_from_db()
    assert (target.username, target.is_active) == (who, True)


def test_staff_sets_the_password_of_a_user_only_of_its_organization(as_ada, people):
    response = password_post(as_ada, people["alice"])

    assert response.status_code == 302
    assert logs_in(people["alice"])


def change_form(user, **fields):
    return {"username": user.username, "first_name": "", "last_name": "", "email": "", "is_active": "on",
            "last_login_0": "", "last_login_1": "", "date_joined_0": "2026-01-01", "date_joined_1": "00:00:00",
            **fields}


@pytest.mark.parametrize("who", ["ada", "alice"])
def test_staff_never_grants_superuser_staff_groups_or_permissions(as_ada, ada, people, who):
    group = Group.objects.create(name="everything")
    group.permissions.set(Permission.objects.all())
    target = ada if who == "ada" else people["alice"]
    was_staff = target.is_staff

    response = as_ada.post(f"/admin/auth/user/{target.pk}/change/", change_form(
        target, first_name="Changed", is_superuser="on", is_staff="on", groups=[group.pk],
        user_permissions=list(Permission.objects.values_list("pk", flat=True)[:5])))

    assert response.status_code == 302
    target.refresh_from_db()
    assert target.first_name == "Changed"  # the change itself is kept
    assert (target.is_superuser, target.is_staff) == (False, was_staff)
    assert not target.groups.exists()
    assert target.user_permissions.count() == (target.user_permissions.count() if who == "ada" else 0)


def test_groups_are_for_superusers_only(as_ada, people):
    root = Client()
    root.force_login(people["root"])

    assert as_ada.get("/admin/auth/group/").status_code == 403
    assert as_ada.post("/admin/auth/group/add/", {"name": "mine"}).status_code == 403
    assert root.get("/admin/auth/group/").status_code == 200
    assert not Group.objects.exists()


def add_form(username, **fields):
    return {"username": username, "usable_password": "true", "password1": NEW_PASSWORD,
            "password2": NEW_PASSWORD, "role": "member", **fields}


def test_staff_adds_a_user_into_its_organization(as_ada, org):
    response = as_ada.post("/admin/auth/user/add/", add_form("dave", organization=org.pk))

    assert response.status_code == 302
    dave = User.objects.get(username="dave")
    assert list(dave.memberships.values_list("organization__slug", "role")) == [("acme", "member")]
    assert (dave.is_staff, dave.is_superuser) == (False, False)


@pytest.mark.parametrize("organization", ["none", "other"])
def test_staff_cannot_add_a_user_outside_its_organizations(as_ada, other_org, organization):
    fields = {"organization": other_org.pk} if organization == "other" else {}

    response = as_ada.post("/admin/auth/user/add/", add_form("eve", **fields))

    assert response.status_code == 200  # the form again, with its error
    assert "organization" in response.context["adminform"].form.errors
    assert not User.objects.filter(username="eve").exists()


def test_a_membership_cannot_bring_in_a_user_outside_the_staffs_view(as_ada, org, people):
    response = as_ada.post("/admin/keeperstate/membership/add/", {
        "user": people["bob"].pk, "organization": org.pk, "role": "member"})

    assert response.status_code == 200
    assert "user" in response.context["adminform"].form.errors
    assert not Membership.objects.filter(user=people["bob"], organization=org).exists()


def test_a_superuser_sees_and_changes_every_user(people):
    root = Client()
    root.force_login(people["root"])

    listed = root.get("/admin/auth/user/")
    changed = password_post(root, people["bob"])

    assert {"ada", "alice", "bob", "carol", "root", "sam"} <= set(
        listed.context["cl"].result_list.values_list("username", flat=True))
    assert changed.status_code == 302
    assert logs_in(people["bob"])
