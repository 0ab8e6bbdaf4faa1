"""Encryption of secret values at rest: Fernet (AES-128-CBC + HMAC-SHA256) from cryptography.

The keys come from settings (``KEEPERSTATE_SECRETS_KEY``: one key, or several separated by
commas to rotate: the first encrypts, any decrypts). Without it a key is generated into the data
directory, like Django's secret key, so the embedded setup needs nothing.
"""

from __future__ import annotations

from functools import cache

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings

from keeperstate.core.errors import Code, CodedError


class SecretUndecryptable(CodedError):
    error = Code.SECRET_UNDECRYPTABLE


@cache
def _fernet(keys: tuple[str, ...]) -> MultiFernet:
    return MultiFernet([Fernet(key.encode("ascii")) for key in keys])


def fernet() -> MultiFernet:
    return _fernet(tuple(settings.KEEPERSTATE_SECRETS_KEYS))


def encrypt(value: str) -> str:
    return fernet().encrypt(value.encode("utf-8")).decode("ascii")


def decrypt(ciphertext: str, *, name: str) -> str:
    try:
        return fernet().decrypt(ciphertext.encode("ascii")).decode("utf-8")
    except InvalidToken as exc:
        # The key changed without the old one kept for rotation: say so, never guess.
        raise SecretUndecryptable(
            f"The secret {name} cannot be decrypted with the configured KEEPERSTATE_SECRETS_KEY (was the key "
            "replaced?). Save the secret again, or restore the old key as the second of the list.",
            details={"name": name},
        ) from exc
