"""Print a user's API token, creating it if needed: ``manage.py create_api_token <username>``.

Only the token is printed, so a script can capture it: ``TOKEN=$(manage.py create_api_token demo)``.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from rest_framework.authtoken.models import Token


class Command(BaseCommand):
    help = "Print the API token of a user (created on first use). Send it as 'Authorization: Token <token>'."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument(
            "--regenerate", action="store_true", help="Replace the user's token; the old one stops working."
        )

    def handle(self, *args: Any, username: str, regenerate: bool, **options: Any) -> None:
        user_model = get_user_model()
        try:
            user = user_model.objects.get(**{user_model.USERNAME_FIELD: username})
        except user_model.DoesNotExist as exc:
            raise CommandError(f"No user '{username}'. Create one first (manage.py createsuperuser).") from exc
        if not user.is_active:
            raise CommandError(f"User '{username}' is inactive; a token would not authenticate.")
        if regenerate:
            Token.objects.filter(user=user).delete()
        token, _ = Token.objects.get_or_create(user=user)
        self.stdout.write(token.key)
