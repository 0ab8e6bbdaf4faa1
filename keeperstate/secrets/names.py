"""What a secret may be called and hold (DESIGN.md §12)."""

from __future__ import annotations

import re
from typing import Any

from keeperstate.core.errors import Code, CodedError

SECRET_NAME_RE = re.compile(r"^[A-Za-z0-9_]{1,64}$")
MAX_SECRET_BYTES = 8192
MAX_SECRETS_PER_ORGANIZATION = 200


class SecretInvalidName(CodedError):
    error = Code.SECRET_INVALID_NAME


class SecretInvalidValue(CodedError):
    error = Code.SECRET_INVALID_VALUE


class SecretLimit(CodedError):
    error = Code.SECRET_LIMIT


class SecretNotFound(CodedError):
    error = Code.NOT_FOUND


def check_name(name: Any) -> str:
    if not isinstance(name, str) or not SECRET_NAME_RE.match(name):
        raise SecretInvalidName(
            "A secret's name is 1–64 letters, digits or _ (e.g. API_KEY); it is how fields refer to it "
            "as <<@__secrets:Secrets.API_KEY>>.",
            field="name",
        )
    return name


def check_value(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SecretInvalidValue("Give the secret a value: a non-empty text (a key, a token, a URL).", field="value")
    if "\x00" in value:
        raise SecretInvalidValue("A secret cannot contain the NUL character (U+0000).", field="value")
    if len(value.encode("utf-8")) > MAX_SECRET_BYTES:
        raise SecretInvalidValue(
            f"A secret holds at most {MAX_SECRET_BYTES} bytes; keep keys and tokens here, not documents.",
            field="value",
        )
    return value
