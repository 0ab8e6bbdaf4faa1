"""Create an API token for a user and print it: ``manage.py create_api_token <username>``.

Only the token is printed, so a script can capture it: ``TOKEN=$(manage.py create_api_token demo)``.
Tokens are stored hashed, so this is the only time the token is shown; each run creates a new
one (``--regenerate`` first revokes the user's tokens of the same name).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from keeperstate.accounts.tokens import create_token, revoke_token, tokens_of
from keeperstate.core.errors import CodedError
from keeperstate.ops.schema import require_migrated


class Command(BaseCommand):
    help = "Create and print an API token of a user. Send it as 'Authorization: Token <token>'."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument(
            "--name", default="command line", help="a name to tell the token apart (default: 'command line')"
        )
        expiry = parser.add_mutually_exclusive_group()
        expiry.add_argument("--days", type=int, help="days until it expires (default: KEEPERSTATE_TOKEN_TTL_DAYS)")
        expiry.add_argument("--no-expiry", action="store_true", help="a token that never expires")
        parser.add_argument(
            "--regenerate", action="store_true", help="revoke the user's tokens of this name first; they stop working"
        )

    def handle(self, *args: Any, username: str, name: str, days: int | None, no_expiry: bool, regenerate: bool,
               **options: Any) -> None:
        require_migrated()
        user_model = get_user_model()
        try:
            user = user_model.objects.get(**{user_model.USERNAME_FIELD: username})
        except user_model.DoesNotExist as exc:
            raise CommandError(f"No user '{username}'. Create one first (manage.py createsuperuser).") from exc
        if not user.is_active:
            raise CommandError(f"User '{username}' is inactive; a token would not authenticate.")
        if regenerate:
            for prefix in tokens_of(user).filter(name=name).values_list("token_key", flat=True):
                revoke_token(user, prefix)
        expiry: dict[str, Any] = {}
        if no_expiry:
            expiry["expires_in_days"] = None
        elif days is not None:
            expiry["expires_in_days"] = days
        try:
            _, token = create_token(user, name=name, **expiry)
        except CodedError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(token)
