"""Django settings for KeeperState. Everything that differs between machines comes from the
environment, read through keeperstate.ops.env (a value it cannot read stops the start with a
message naming the variable); see README.md "Configuration". Importing this module connects to
nothing and starts no database: the embedded Postgres starts with the first connection."""

from __future__ import annotations

import base64
import os
import secrets
import sys
from collections.abc import Callable
from pathlib import Path

from keeperstate.ops.database import BASE_DIR, DATA_DIR, StartupError, database_config, ensure_data_dir
from keeperstate.ops.env import env_bool, env_float, env_int, env_list, env_str


def _generated_key(filename: str, make: Callable[[], str]) -> str:
    """A random key kept in .data/ (created on first use) so it survives restarts."""
    path = ensure_data_dir() / filename
    if not path.exists():
        # Written aside and linked into place: processes starting together agree on one key and
        # never read a half-written file.
        draft = path.with_name(f"{filename}.{os.getpid()}")
        draft.write_text(make())
        draft.chmod(0o600)
        try:
            os.link(draft, path)
        except FileExistsError:
            pass
        finally:
            draft.unlink()
    return path.read_text().strip()


def _secret_key() -> str:
    """DJANGO_SECRET_KEY, or a random key kept in .data/ so sessions survive restarts."""
    if key := env_str("DJANGO_SECRET_KEY"):
        return key
    return _generated_key("secret_key", lambda: secrets.token_urlsafe(50))


def _secrets_keys() -> list[str]:
    """Fernet keys for organization secrets: KEEPERSTATE_SECRETS_KEY (comma-separated to rotate:
    the first encrypts, all decrypt), else one generated into .data/secrets_key."""
    if keys := env_list("KEEPERSTATE_SECRETS_KEY"):
        return keys
    return [_generated_key("secrets_key", lambda: base64.urlsafe_b64encode(os.urandom(32)).decode("ascii"))]


def _rate(name: str, default: str) -> str:
    """A throttle rate: requests per second, minute, hour or day (keeperstate.api.throttles.parse_rate)."""
    return env_str(name, default, pattern=r"[0-9]+/ *[smhd][a-z]*", expected="a rate such as 1200/min or 20/s")


try:
    SECRET_KEY = _secret_key()
    KEEPERSTATE_SECRETS_KEYS = _secrets_keys()
except StartupError as exc:  # no data folder for the generated keys
    # One readable line for manage.py, pytest and WSGI servers alike, not a traceback.
    sys.stderr.write(f"KeeperState cannot start: {exc}\n")
    raise SystemExit(1) from None
# Read from the environment only: the embedded Postgres starts with the first connection.
DATABASES = {"default": database_config()}
# --- Safe defaults (ops): DEBUG is off unless asked for; README "Production settings". ---
# Off by default, also for `manage.py serve` on the embedded database: a 500 never shows
# Django's technical page (SQL, paths, locals) unless a developer turned it on for themselves.
DEBUG = env_bool("DJANGO_DEBUG", False)
# --- end of safe defaults ---
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "pgtrigger",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "procrastinate.contrib.django",
    "keeperstate.apps.KeeperStateConfig",
    "builder.apps.BuilderConfig",
]
# The demo (keeperstate.demo): its organization, user and workflows, and the block feed and alert
# sink its monitor calls. Off unless KEEPERSTATE_DEMO is on; `manage.py serve` turns it on unless
# it is given --no-demo (README "Running in production" leaves it out).
KEEPERSTATE_DEMO = env_bool("KEEPERSTATE_DEMO", False)
if KEEPERSTATE_DEMO:
    INSTALLED_APPS.append("keeperstate.demo.apps.DemoConfig")

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Static files straight after the security headers and before anything that reads a
    # session or the database: a stylesheet never waits on Postgres (ops).
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "keeperstate.web.middleware.DropMalformedCookies",
    "keeperstate.web.middleware.RefuseNulInAddress",
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
STATIC_ROOT = Path(env_str("DJANGO_STATIC_ROOT") or DATA_DIR / "staticfiles")
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
KEEPERSTATE_MAX_KEYS_PER_WORKFLOW = env_int("KEEPERSTATE_MAX_KEYS_PER_WORKFLOW", 100, unit="keys")
KEEPERSTATE_MAX_TTL_SECONDS = 365 * 24 * 3600
KEEPERSTATE_SWEEP_BATCH_SIZE = env_int("KEEPERSTATE_SWEEP_BATCH_SIZE", 1000, unit="rows", minimum=1)
# Per-organization budget over all its workflows: live keys, and bytes stored (as Postgres
# renders the values, expired rows included until swept).
KEEPERSTATE_ORG_MAX_KEYS = env_int("KEEPERSTATE_ORG_MAX_KEYS", 10_000, unit="keys")
KEEPERSTATE_ORG_MAX_BYTES = env_int("KEEPERSTATE_ORG_MAX_BYTES", 50 * 1024 * 1024, unit="bytes")
# Write history kept per key. The history trigger reads it from the keeperstate_setting table,
# written after every migrate (no connection option: those do not pass PgBouncer).
KEEPERSTATE_HISTORY_PER_KEY = env_int("KEEPERSTATE_HISTORY_PER_KEY", 50, unit="events")

# HTTP Request (DESIGN.md §12): the egress exceptions (hosts, host:port, IPs or CIDRs that a
# workflow may reach although they are private) and the largest answer a run reads.
KEEPERSTATE_HTTP_ALLOW = env_list("KEEPERSTATE_HTTP_ALLOW")
KEEPERSTATE_HTTP_MAX_BYTES = env_int("KEEPERSTATE_HTTP_MAX_BYTES", 1024 * 1024, unit="bytes")
# The demo chain (/demo/rpc/, /demo/feed/) mines a block every this many seconds: faster than the
# shortest schedule (KEEPERSTATE_MIN_INTERVAL), so a monitor sees several new blocks per tick.
KEEPERSTATE_DEMO_BLOCK_SECONDS = env_int("KEEPERSTATE_DEMO_BLOCK_SECONDS", 3, unit="seconds", minimum=1)
# It reorganises too, so `serve` shows what a reorg-safe monitor does: the newest DEPTH blocks at
# every EVERY-th block are replaced once the next block is mined (EVERY 0: never). DEPTH is more
# than the blocks a 10 s tick sees, so a monitor has always alerted some of the replaced blocks.
KEEPERSTATE_DEMO_REORG_EVERY = env_int("KEEPERSTATE_DEMO_REORG_EVERY", 20, unit="blocks")
KEEPERSTATE_DEMO_REORG_DEPTH = env_int("KEEPERSTATE_DEMO_REORG_DEPTH", 4, unit="blocks", minimum=1)

# Runs that nobody clicks (DESIGN.md §11): schedules, webhooks and async API runs execute on
# Procrastinate workers (`manage.py worker`), which also run the scheduler and housekeeping.
KEEPERSTATE_MIN_INTERVAL = env_int("KEEPERSTATE_MIN_INTERVAL", 10, unit="seconds", minimum=1)
# The process running an execution refreshes its heartbeat this often; an execution whose heartbeat
# is older than RUN_STALE_SECONDS was left behind by a dead process: housekeeping closes it as
# interrupted. Short, so a monitor is blind for seconds, not a minute, after its worker died
# (closed within RUN_STALE + RECOVERY seconds, 12 s by default; a run that was only
# slow still records its real outcome afterwards, executions/lifecycle.py).
KEEPERSTATE_RUN_HEARTBEAT_SECONDS = env_float("KEEPERSTATE_RUN_HEARTBEAT_SECONDS", 2, unit="seconds")
KEEPERSTATE_RUN_STALE_SECONDS = env_int("KEEPERSTATE_RUN_STALE_SECONDS", 10, unit="seconds")
# How often each worker closes the runs of dead processes and hands back jobs of dead workers.
KEEPERSTATE_RECOVERY_SECONDS = env_float("KEEPERSTATE_RECOVERY_SECONDS", 2, unit="seconds")
KEEPERSTATE_IDEMPOTENCY_HOURS = env_int("KEEPERSTATE_IDEMPOTENCY_HOURS", 24, unit="hours")
KEEPERSTATE_WEBHOOK_MAX_BYTES = env_int("KEEPERSTATE_WEBHOOK_MAX_BYTES", 256 * 1024, unit="bytes")
KEEPERSTATE_WEBHOOK_MAX_WAIT = 30
# Threads per web process that run waited webhooks (?wait) while their request waits; when all
# are busy a waited webhook is queued for a worker (keeperstate/executions/inprocess.py).
KEEPERSTATE_WEBHOOK_WAIT_THREADS = env_int("KEEPERSTATE_WEBHOOK_WAIT_THREADS", 4, unit="threads", minimum=1)
# How often a worker looks for due schedule ticks and does housekeeping, and how it tells the
# others it is alive (a worker silent for WORKER_STALLED_SECONDS is dead: its jobs are retried,
# which never replays a run that had started).
KEEPERSTATE_SCHEDULER_POLL_SECONDS = env_float("KEEPERSTATE_SCHEDULER_POLL_SECONDS", 1, unit="seconds")
KEEPERSTATE_HOUSEKEEPING_SECONDS = env_float("KEEPERSTATE_HOUSEKEEPING_SECONDS", 10, unit="seconds")
KEEPERSTATE_WORKER_HEARTBEAT_SECONDS = env_float("KEEPERSTATE_WORKER_HEARTBEAT_SECONDS", 2, unit="seconds")
KEEPERSTATE_WORKER_STALLED_SECONDS = env_float("KEEPERSTATE_WORKER_STALLED_SECONDS", 10, unit="seconds")
KEEPERSTATE_WORKER_POLL_SECONDS = env_float("KEEPERSTATE_WORKER_POLL_SECONDS", 1, unit="seconds")
KEEPERSTATE_WORKER_CONCURRENCY = env_int("KEEPERSTATE_WORKER_CONCURRENCY", 4, unit="executions", minimum=1)

_log_level = env_str("KEEPERSTATE_LOG_LEVEL", "INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"))
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # Secret values a running node has used never reach a log line (keeperstate.secrets.redaction).
    "filters": {"redact_secrets": {"()": "keeperstate.secrets.redaction.RedactSecrets"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["redact_secrets"]}},
    # Every other library's warnings and errors on stderr too. A root handler declared here also
    # keeps a library from configuring the root logger on import: the MCP SDK's server calls
    # logging.basicConfig(level=INFO) with a rich handler, which printed Procrastinate's two INFO
    # lines per job in colour: one worker ran 114 queued runs a second instead of 183 (ADR 0062).
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {
        "keeperstate": {"level": _log_level},  # through the root's handler
        # Unhandled errors (500, and the 503 of a database outage) with their traceback on
        # stderr, where gunicorn and `serve` keep them; Django alone logs them only with DEBUG on.
        "django.request": {"handlers": ["console"], "level": "ERROR", "propagate": False},
        # httpx logs every request's full URL at INFO, which may hold a secret: keep it to warnings.
        "httpx": {"level": "WARNING"},
        "httpcore": {"level": "WARNING"},
        # The worker's connection pool logs each failed attempt to reconnect, seven lines each,
        # through a failover; keeperstate.database says once that the database went and once that
        # it is back (keeperstate.ops.availability).
        "psycopg.pool": {"level": "ERROR"},
    },
}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # knox's hashed tokens under the "Token" header; keys that cannot be tokens refused first.
        "keeperstate.api.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # IsAuthenticated, counting refused anonymous requests against the anonymous rate.
    "DEFAULT_PERMISSION_CLASSES": ["keeperstate.api.throttles.AuthenticatedOrCounted"],
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
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "keeperstate.api.schema.add_common_responses",  # 429 and 414 on every operation
    ],
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
    SECURE_HSTS_SECONDS = env_int("DJANGO_HSTS_SECONDS", 365 * 24 * 3600, unit="seconds")
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("DJANGO_HSTS_PRELOAD", True)
# --- end of production safety ---

# --- Security: lockout, throttles, tokens, headers, audit ---------------------------------
# Kept in one block: ops owns DEBUG, secure cookies/HSTS switches and error pages above.
from datetime import timedelta  # noqa: E402

INSTALLED_APPS += ["axes", "knox", "csp"]
MIDDLEWARE += [
    "keeperstate.web.middleware.ActorMiddleware",  # services see who acts (audit log)
    "csp.middleware.CSPMiddleware",
    "keeperstate.web.middleware.NoStoreMiddleware",
    "axes.middleware.AxesMiddleware",  # last, as django-axes requires
]
AUTHENTICATION_BACKENDS = [
    "keeperstate.accounts.lockout.LockoutBackend",  # axes: refuses a locked-out user or address first
    "django.contrib.auth.backends.ModelBackend",
]

# Our proxies in front that append to X-Forwarded-For (0: the peer address is the client).
KEEPERSTATE_PROXY_COUNT = env_int("KEEPERSTATE_PROXY_COUNT", 0, unit="proxies")

# Login lockout (django-axes), on /accounts/login/ and /admin/login/ alike: after
# KEEPERSTATE_LOGIN_FAILURE_LIMIT failures for one username, or from one address, further
# attempts are refused (429) until the cool-off ends or an admin unlocks (admin "Access
# attempts", or `manage.py axes_reset_username <name>` / `axes_reset_ip <address>`).
AXES_FAILURE_LIMIT = env_int("KEEPERSTATE_LOGIN_FAILURE_LIMIT", 10, unit="failed logins", minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("KEEPERSTATE_LOGIN_COOLOFF_MINUTES", 15, unit="minutes"))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]  # either one alone locks
AXES_RESET_ON_SUCCESS = True
AXES_CLIENT_IP_CALLABLE = "keeperstate.core.clients.axes_client_ip"
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_HTTP_RESPONSE_CODE = 429
AXES_VERBOSE = False
AXES_USERNAME_CALLABLE = "keeperstate.accounts.lockout.lockout_username"  # cut to what axes' columns hold
AXES_LOCKOUT_CALLABLE = "keeperstate.accounts.lockout.lockout_response"  # minutes and Retry-After
AXES_ENABLE_ADMIN = False  # keeperstate/admin/lockout.py registers axes' pages for superusers only

# API throttles (429 THROTTLED with Retry-After), counted in Postgres (keeperstate.ratelimits).
# Generous defaults: a person in the editor or a test suite never meets them.
REST_FRAMEWORK["DEFAULT_THROTTLE_CLASSES"] = [
    "keeperstate.api.throttles.ClientThrottle",
    "keeperstate.api.throttles.AnonymousThrottle",
]
REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] = {
    "api_user": _rate("KEEPERSTATE_API_RATE", "1200/min"),  # per token, or per user for a session
    "api_anon": _rate("KEEPERSTATE_API_ANON_RATE", "120/min"),  # per address
    "auth_failure": _rate("KEEPERSTATE_AUTH_FAILURE_RATE", "30/min"),  # bad tokens per address
    "webhook": _rate("KEEPERSTATE_WEBHOOK_RATE", "1200/min"),  # webhook calls per sending address
}
# Runs started per organization per minute, whatever starts them (editor, API, webhook, schedule).
KEEPERSTATE_ORG_RUNS_PER_MINUTE = env_int("KEEPERSTATE_ORG_RUNS_PER_MINUTE", 600, unit="runs")

# API tokens: hashed at rest by django-rest-knox (SHA-512), "ks_" + 64 hex characters.
KNOX_TOKEN_MODEL = "keeperstate.ApiToken"
# knox's own AuthToken is swapped out for ApiToken, but knox's first migration predates its
# swappable option and would create an unused knox_authtoken table (referencing auth_user, which
# breaks TRUNCATE-based test flushes). Without knox migrations nothing of it is created.
MIGRATION_MODULES = {"knox": None}
KEEPERSTATE_TOKEN_TTL_DAYS = env_int("KEEPERSTATE_TOKEN_TTL_DAYS", 90, unit="days")  # default expiry; 0 = none
REST_KNOX = {
    "TOKEN_TTL": timedelta(days=KEEPERSTATE_TOKEN_TTL_DAYS) if KEEPERSTATE_TOKEN_TTL_DAYS > 0 else None,
    "AUTH_HEADER_PREFIX": "Token",  # existing clients keep "Authorization: Token <token>"
    "TOKEN_PREFIX": "ks_",  # recognisable by secret scanners
}

# Content-Security-Policy (django-csp 4): scripts and styles only from our own origin, no inline
# script or handler anywhere; the Swagger UI page loads a static init script (api/docs).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        # style="…" attributes (Django admin's widgets use a few) cannot run code or read the
        # page; <style> elements and foreign stylesheets stay refused.
        "style-src-attr": ["'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
