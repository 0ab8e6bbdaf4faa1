"""Django settings for KeeperState. Everything that differs between machines comes from the
environment; see README.md "Configuration"."""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

from keeperstate.database import BASE_DIR, DATA_DIR, StartupError, database_config, ensure_data_dir


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    return default if raw is None else raw.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    return int(raw) if raw else default


def _secret_key() -> str:
    """DJANGO_SECRET_KEY, or a random key kept in .data/ so sessions survive restarts."""
    if key := os.environ.get("DJANGO_SECRET_KEY"):
        return key
    path = ensure_data_dir() / "secret_key"
    if not path.exists():
        # Written aside and linked into place: processes starting together agree on one key and
        # never read a half-written file.
        draft = path.with_name(f"secret_key.{os.getpid()}")
        draft.write_text(secrets.token_urlsafe(50))
        try:
            os.link(draft, path)
        except FileExistsError:
            pass
        finally:
            draft.unlink()
    return path.read_text().strip()


try:
    SECRET_KEY = _secret_key()
    DATABASES = {"default": database_config()}
except StartupError as exc:
    # One readable line for manage.py, pytest and WSGI servers alike, not a traceback.
    sys.stderr.write(f"KeeperState cannot start: {exc}\n")
    raise SystemExit(1) from None
# --- Safe defaults (ops): DEBUG is off unless asked for; README "Production settings". ---
# Off by default, also for `manage.py serve` on the embedded database: a 500 never shows
# Django's technical page (SQL, paths, locals) unless a developer turned it on for themselves.
DEBUG = env_bool("DJANGO_DEBUG", False)
# --- end of safe defaults ---
ALLOWED_HOSTS = os.environ.get("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver").split(",")
CSRF_TRUSTED_ORIGINS = [o for o in os.environ.get("DJANGO_CSRF_TRUSTED_ORIGINS", "").split(",") if o]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "pgtrigger",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "procrastinate.contrib.django",
    "keeperstate.apps.KeeperStateConfig",
    "builder.apps.BuilderConfig",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Static files straight after the security headers and before anything that reads a
    # session or the database: a stylesheet never waits on Postgres (ops).
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "keeperstate.middleware.DropMalformedCookies",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "keeperstate.urls"
WSGI_APPLICATION = "keeperstate.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# --- Static files (ops): whitenoise serves them in every mode, no `runserver --insecure`. ---
STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# `manage.py serve` runs collectstatic here on every start; deployments run it at release.
STATIC_ROOT = Path(os.environ.get("DJANGO_STATIC_ROOT") or DATA_DIR / "staticfiles")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Compressed copies (gzip, brotli when installed) but no manifest of hashed names: the
    # manifest would make every `{% static %}` fail in tests and in runserver until
    # collectstatic ran, and the hand-written editor files change rarely.
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
# With DEBUG on (local development) whitenoise reads the source folders and picks up edits;
# otherwise it serves what collectstatic gathered.
WHITENOISE_USE_FINDERS = DEBUG
WHITENOISE_AUTOREFRESH = DEBUG
# --- end of static files ---

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/builder/"
LOGOUT_REDIRECT_URL = "login"

# Product limits of workflow state (DESIGN.md §6). Settings so operators can tune them; the
# tests pin the defaults.
KEEPERSTATE_MAX_KEY_LENGTH = 256
KEEPERSTATE_MAX_VALUE_BYTES = 8192
KEEPERSTATE_MAX_KEYS_PER_WORKFLOW = env_int("KEEPERSTATE_MAX_KEYS_PER_WORKFLOW", 100)
KEEPERSTATE_MAX_TTL_SECONDS = 365 * 24 * 3600
KEEPERSTATE_SWEEP_BATCH_SIZE = env_int("KEEPERSTATE_SWEEP_BATCH_SIZE", 1000)
# Per-organization budget over all its workflows: live keys, and bytes stored (as Postgres
# renders the values, expired rows included until swept).
KEEPERSTATE_ORG_MAX_KEYS = env_int("KEEPERSTATE_ORG_MAX_KEYS", 10_000)
KEEPERSTATE_ORG_MAX_BYTES = env_int("KEEPERSTATE_ORG_MAX_BYTES", 50 * 1024 * 1024)
# Write history kept per key; the history trigger reads it from the connection's settings.
KEEPERSTATE_HISTORY_PER_KEY = env_int("KEEPERSTATE_HISTORY_PER_KEY", 50)
_options = DATABASES["default"].setdefault("OPTIONS", {})
_history_option = f"-c keeperstate.history_per_key={KEEPERSTATE_HISTORY_PER_KEY}"
_options["options"] = f"{_options.get('options', '')} {_history_option}".strip()

# Runs that nobody clicks (DESIGN.md §11): schedules, webhooks and async API runs execute on
# Procrastinate workers (`manage.py worker`), which also run the scheduler and housekeeping.
KEEPERSTATE_MIN_INTERVAL = env_int("KEEPERSTATE_MIN_INTERVAL", 10)
# The process running an execution refreshes its heartbeat this often; an execution whose heartbeat
# is older than RUN_STALE_SECONDS was left behind by a dead process: housekeeping closes it as
# interrupted.
KEEPERSTATE_RUN_HEARTBEAT_SECONDS = float(os.environ.get("KEEPERSTATE_RUN_HEARTBEAT_SECONDS", "10"))
KEEPERSTATE_RUN_STALE_SECONDS = env_int("KEEPERSTATE_RUN_STALE_SECONDS", 60)
KEEPERSTATE_IDEMPOTENCY_HOURS = env_int("KEEPERSTATE_IDEMPOTENCY_HOURS", 24)
KEEPERSTATE_WEBHOOK_MAX_BYTES = env_int("KEEPERSTATE_WEBHOOK_MAX_BYTES", 256 * 1024)
KEEPERSTATE_WEBHOOK_MAX_WAIT = 30
# How often a worker looks for due schedule ticks and does housekeeping, and how it tells the
# others it is alive (a worker silent for WORKER_STALLED_SECONDS is dead: its jobs are retried,
# which never replays a run that had started).
KEEPERSTATE_SCHEDULER_POLL_SECONDS = float(os.environ.get("KEEPERSTATE_SCHEDULER_POLL_SECONDS", "1"))
KEEPERSTATE_HOUSEKEEPING_SECONDS = float(os.environ.get("KEEPERSTATE_HOUSEKEEPING_SECONDS", "10"))
KEEPERSTATE_WORKER_HEARTBEAT_SECONDS = float(os.environ.get("KEEPERSTATE_WORKER_HEARTBEAT_SECONDS", "10"))
KEEPERSTATE_WORKER_STALLED_SECONDS = float(os.environ.get("KEEPERSTATE_WORKER_STALLED_SECONDS", "30"))
KEEPERSTATE_WORKER_CONCURRENCY = env_int("KEEPERSTATE_WORKER_CONCURRENCY", 4)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {
        "keeperstate": {"handlers": ["console"], "level": os.environ.get("KEEPERSTATE_LOG_LEVEL", "INFO")},
        # Unhandled errors (500, and the 503 of a database outage) with their traceback on
        # stderr, where gunicorn and `serve` keep them; Django alone logs them only with DEBUG on.
        "django.request": {"handlers": ["console"], "level": "ERROR", "propagate": False},
    },
}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # DRF's TokenAuthentication, refusing keys that cannot be tokens before any query.
        "keeperstate.api.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "keeperstate.api.exceptions.exception_handler",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "KeeperState API",
    "DESCRIPTION": "Workflows with workflow-scoped key-value state.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# The only module that defines Procrastinate tasks (no autodiscovery across apps).
PROCRASTINATE_AUTODISCOVER_MODULE_NAME = ""
PROCRASTINATE_IMPORT_PATHS = ["keeperstate.executions.tasks"]

# --- Production safety (ops): HTTPS behind a proxy; README "Production settings". ---
# DJANGO_SECURE=true when the site is reached over HTTPS through a proxy that terminates TLS
# and sets X-Forwarded-Proto (and strips it from clients). Then cookies are Secure, HSTS is
# sent, and plain HTTP is redirected. `manage.py check --deploy` is clean with it.
SECURE = env_bool("DJANGO_SECURE", False)
if SECURE:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", True)
    # A load balancer probes each web process directly over HTTP.
    SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("DJANGO_HSTS_SECONDS", 365 * 24 * 3600)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("DJANGO_HSTS_PRELOAD", True)
# --- end of production safety ---
