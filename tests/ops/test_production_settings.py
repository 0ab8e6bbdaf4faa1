"""The documented production settings: `check --deploy` is clean and DJANGO_SECURE does what it says.

Settings are read once per process, so each case runs in a subprocess with its own environment.
DATABASE_URL points at a closed port: none of this needs a database connection.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.ops.serving import ROOT

PRODUCTION = {
    "DATABASE_URL": "postgresql://keeperstate@127.0.0.1:9/keeperstate",
    "DJANGO_DEBUG": "false",
    "DJANGO_SECRET_KEY": "k3-" + "x7Qp2vLm9" * 7,
    "DJANGO_ALLOWED_HOSTS": "keeperstate.example.com",
    "DJANGO_CSRF_TRUSTED_ORIGINS": "https://keeperstate.example.com",
    "DJANGO_SECURE": "true",
}
SETTINGS = [
    "DEBUG", "SECURE_SSL_REDIRECT", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "SECURE_HSTS_SECONDS",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS", "SECURE_PROXY_SSL_HEADER",
]


def run(args: list[str], **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_URL"))}
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env={**base, **env}, capture_output=True, text=True, timeout=120
    )


def settings_under(**env: str) -> dict:
    script = (
        "import json, django; from django.conf import settings; django.setup(); "
        f"print(json.dumps({{name: getattr(settings, name) for name in {SETTINGS!r}}}))"
    )
    done = run(["-c", script], DJANGO_SETTINGS_MODULE="keeperstate.settings", **env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_check_deploy_is_clean_with_the_documented_production_settings():
    done = run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], **PRODUCTION)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout


def test_django_secure_turns_on_secure_cookies_hsts_and_the_redirect_behind_a_proxy():
    secure = settings_under(**PRODUCTION)
    plain = settings_under(DATABASE_URL=PRODUCTION["DATABASE_URL"])

    assert secure["SECURE_SSL_REDIRECT"]
    assert secure["SESSION_COOKIE_SECURE"]
    assert secure["CSRF_COOKIE_SECURE"]
    assert secure["SECURE_HSTS_SECONDS"] == 31536000
    assert secure["SECURE_HSTS_INCLUDE_SUBDOMAINS"]
    assert secure["SECURE_PROXY_SSL_HEADER"] == ["HTTP_X_FORWARDED_PROTO", "https"]
    assert not plain["SECURE_SSL_REDIRECT"]
    assert not plain["SESSION_COOKIE_SECURE"]
    assert not plain["SECURE_HSTS_SECONDS"]
    assert plain["SECURE_PROXY_SSL_HEADER"] is None  # X-Forwarded-Proto is not trusted without a proxy


def test_debug_is_off_unless_django_debug_is_true():
    url = PRODUCTION["DATABASE_URL"]

    assert settings_under(DATABASE_URL=url)["DEBUG"] is False
    assert settings_under(DATABASE_URL=url, DJANGO_DEBUG="true")["DEBUG"] is True
