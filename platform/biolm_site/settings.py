"""Django settings, read from the environment (see .env.example for every variable).

Defaults are the embedded ones of ``make demo``: a SQLite file and a filesystem
Celery broker under var/, so a fresh machine needs no server. Production and CI
set DATABASE_URL (PostgreSQL through psycopg 3) and CELERY_BROKER_URL (Redis).
"""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url
from csp.constants import NONCE
from django.core.exceptions import ImproperlyConfigured

from biolm import broker
from biolm.checkpoint_files import CheckpointFiles
from biolm.contract import ContractError
from biolm.intake_limits import ArchiveLimits, CheckpointLimits, LimitSettingError
from biolm.protocols import preview_overrides
from biolm.upload_parts import MIN_PART_BYTES
from biolm_site.env import env_bool, env_int, env_json_object, env_list, env_str
from biolm_site.secret_key import secret_key

BASE_DIR = Path(__file__).resolve().parents[2]
VAR_DIR = Path(env_str("BIOLM_VAR_DIR", str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env_bool("DEBUG", False)
# No key is public: without SECRET_KEY, one is generated once under var/ and kept across restarts
# (sessions survive); deployments set BIOLM_GENERATE_SECRET_KEY=0 to insist on their own.
SECRET_KEY = secret_key(
    os.environ.get("SECRET_KEY"), VAR_DIR / "secret_key", generate=env_bool("BIOLM_GENERATE_SECRET_KEY", True)
)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "registry",
    "leaderboard",
    "submissions",
    "jobs",
    "accounts",
    # Sign-up, sign-in, password change and reset, with login rate limits (django-allauth)
    "allauth",
    "allauth.account",
    "csp",
    "rest_framework",
    "drf_spectacular",
    # Swagger UI's and Redoc's files, served from /static/ for the public API's docs (no CDN)
    "drf_spectacular_sidecar",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    "csp.middleware.CSPMiddleware",
]

ROOT_URLCONF = "biolm_site.urls"
WSGI_APPLICATION = "biolm_site.wsgi.application"
ASGI_APPLICATION = "biolm_site.asgi.application"

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

DATABASE_URL = env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'biolm.sqlite3'}")
try:
    DATABASES = {"default": dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 60))}
except Exception as exc:  # dj_database_url raises several types for a bad URL
    raise ImproperlyConfigured(f"DATABASE_URL={DATABASE_URL!r} cannot be used: {exc}") from exc
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    # Writers take the lock when they begin, so concurrent commands queue instead of failing mid-way.
    DATABASES["default"].setdefault("OPTIONS", {}).update({"timeout": 60, "transaction_mode": "IMMEDIATE"})
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# One cache for every web process: Redis when BIOLM_CACHE_URL names one (login rate limits and the
# leaderboard's cached pages are then shared by all gunicorn workers), else each process's memory.
BIOLM_CACHE_URL = env_str("BIOLM_CACHE_URL", "")
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": BIOLM_CACHE_URL}
    if BIOLM_CACHE_URL
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# Accounts (django-allauth): sign up with a username, an e-mail address and a password; sign in with
# either. Failed sign-ins are rate-limited per address and per account (ACCOUNT_RATE_LIMITS' defaults).
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "allauth.account.auth_backends.AuthenticationBackend",
]
LOGIN_URL = "account_login"
LOGIN_REDIRECT_URL = "accounts:profile"
ACCOUNT_LOGOUT_REDIRECT_URL = "leaderboard:index"
ACCOUNT_LOGIN_METHODS = {"username", "email"}
ACCOUNT_SIGNUP_FIELDS = ["username*", "email*", "password1*", "password2*"]
ACCOUNT_UNIQUE_EMAIL = True
# A model's address is <username>/<name>; "papers" is the reported models' namespace, so no account may take it.
ACCOUNT_USERNAME_BLACKLIST = ["papers"]
ACCOUNT_FORMS = {"login": "accounts.forms.SignInForm"}
# Failed sign-ins are counted per account, whether its username or its e-mail address was typed.
ACCOUNT_ADAPTER = "accounts.adapter.AccountAdapter"
# "none" lets a newcomer submit at once; "mandatory" asks them to confirm their address first, and is what
# lets sign-up hide a registered address: it answers as for a new one and mails the address's owner
# (ACCOUNT_PREVENT_ENUMERATION). With "none" allauth must refuse the address to keep it unique, and says so.
ACCOUNT_EMAIL_VERIFICATION = env_str("BIOLM_EMAIL_VERIFICATION", "none")
if ACCOUNT_EMAIL_VERIFICATION not in ("none", "optional", "mandatory"):
    raise ImproperlyConfigured(
        f"BIOLM_EMAIL_VERIFICATION={ACCOUNT_EMAIL_VERIFICATION!r} is not one of none, optional, mandatory"
    )
ACCOUNT_PREVENT_ENUMERATION = True
ACCOUNT_LOGIN_ON_PASSWORD_RESET = False
ACCOUNT_PASSWORD_RESET_BY_CODE_ENABLED = False
ACCOUNT_RATE_LIMITS = {"login_failed": env_str("BIOLM_LOGIN_RATE_LIMIT", "10/m/ip,5/5m/key")}

# E-mail (password resets, a submission's end): printed to the console unless EMAIL_HOST names an
# SMTP server.
EMAIL_HOST = env_str("EMAIL_HOST", "")
EMAIL_BACKEND = env_str("EMAIL_BACKEND", "") or (
    "django.core.mail.backends.smtp.EmailBackend" if EMAIL_HOST else "django.core.mail.backends.console.EmailBackend"
)
EMAIL_PORT = env_int("EMAIL_PORT", 587)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", True)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "biolm <noreply@localhost>")
BIOLM_SITE_URL = env_str("BIOLM_SITE_URL", "http://127.0.0.1:8000").rstrip("/")  # links in e-mails

# Uploads (the submission form's checkpoints and corpora) are streamed to disk under var/tmp, never
# held in memory, and never under a served path (STATIC_ROOT; the artefact store is not served).
FILE_UPLOAD_HANDLERS = ["django.core.files.uploadhandler.TemporaryFileUploadHandler"]
FILE_UPLOAD_TEMP_DIR = VAR_DIR / "tmp"
FILE_UPLOAD_TEMP_DIR.mkdir(parents=True, exist_ok=True)
FILE_UPLOAD_PERMISSIONS = 0o600  # uploads and the artefact store's files: the platform user's only
FILE_UPLOAD_DIRECTORY_PERMISSIONS = 0o700  # and its folders (biolm.owner_only sets umask 077 as well)
# Disk space a submission never takes (submissions.uploads): an upload, or a checkpoint from the shell, that
# would leave the upload folder's, the scratch folder's or a local artefact store's disk with less free is
# refused before it is read. 5 GiB by default: room for the database, the logs and the running jobs' files.
BIOLM_DISK_RESERVE_BYTES = env_int("BIOLM_DISK_RESERVE_BYTES", 5 << 30)
if BIOLM_DISK_RESERVE_BYTES < 0:
    raise ImproperlyConfigured(f"BIOLM_DISK_RESERVE_BYTES={BIOLM_DISK_RESERVE_BYTES} is negative; give bytes, e.g. 0")

LANGUAGE_CODE = "en"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(VAR_DIR / "staticfiles")))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
# Static files are served by WhiteNoise from what `manage.py collectstatic` wrote to STATIC_ROOT (make demo,
# the Dockerfile and the test session run it): each under a name holding a hash of its contents
# (site.3f2a9c1b7e4d.css), gzipped beside it, so WhiteNoise sends it compressed and cached for ten years
# as immutable (a changed file gets a new name). A page naming a file collectstatic never saw fails
# loudly (manifest_strict). With DEBUG on, the dev server serves the source files by their own names, and so
# does a site started before anyone collected, with a warning (biolm_site.static_storage), never a 500.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": VAR_DIR / "media"}},
    "staticfiles": {
        "BACKEND": "biolm_site.static_storage.CollectedOrSourceStaticFiles"
        if not DEBUG
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
STATIC_COLLECTED = (STATIC_ROOT / "staticfiles.json").is_file()
# Only the collected files once collected: looking in the finders too would scan every app's folder again
# in each process, for files that pages never name by their unhashed names. Before, only the finders have them.
WHITENOISE_USE_FINDERS = DEBUG or not STATIC_COLLECTED
# The default finders, and plotly.js served from the installed plotly package as vendor/plotly.min.js
# (biolm_site.static_finders): the charts load it from this site, never from a CDN that hospital
# networks block; collectstatic gives it a hashed name and compresses it like the site's own files.
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    "biolm_site.static_finders.PlotlyFinder",
]

# Celery: an embedded filesystem broker by default, so `make demo` needs no server.
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", broker.DEFAULT_URL)
# With Redis, a transport with which a worker outlives a Redis restart while it runs a job (biolm.redis_transport).
CELERY_BROKER_TRANSPORT = broker.transport(CELERY_BROKER_URL)
# rediss://: the server's certificate must verify, against BIOLM_BROKER_CA_FILE when set (a private CA).
CELERY_BROKER_USE_SSL = broker.use_ssl(CELERY_BROKER_URL, env_str("BIOLM_BROKER_CA_FILE", ""))
# Longer than the longest job, so a running task is not redelivered (Read the Docs).
CELERY_BROKER_TRANSPORT_OPTIONS = broker.transport_options(
    CELERY_BROKER_URL, VAR_DIR, env_int("CELERY_VISIBILITY_TIMEOUT", broker.DEFAULT_VISIBILITY_TIMEOUT_S)
)
CELERY_RESULT_BACKEND = None
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "cpu"
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_ROUTES = {"biolm.worker.*": {"queue": "gpu"}, "biolm.jobs.*": {"queue": "cpu"}}
BIOLM_TICK_S = env_int("BIOLM_TICK_S", 5)
CELERY_BEAT_SCHEDULE = {
    "recompute-stale-scores": {"task": "biolm.leaderboard.recompute_stale_scores", "schedule": 600.0},
    "export-results": {"task": "biolm.leaderboard.export_results", "schedule": 24 * 3600.0},
    "jobs-tick": {"task": "biolm.jobs.tick", "schedule": float(BIOLM_TICK_S), "options": {"expires": 30}},
}
# A CPU worker whose own tick is older than this ticks in-process (jobs.watchdog): the beat went quiet.
BIOLM_TICK_WATCHDOG_S = env_int("BIOLM_TICK_WATCHDOG_S", 3 * BIOLM_TICK_S)

BIOLM_VAR_DIR = VAR_DIR
BIOLM_DATA_DIR = Path(env_str("BIOLM_DATA_DIR", str(BASE_DIR.parent / "shared" / "data")))
BIOLM_LOAD_ENTRYPOINT_PLUGINS = env_bool("BIOLM_LOAD_ENTRYPOINT_PLUGINS", True)

# What a submitted checkpoint may be (biolm.intake_limits): the archive's size, files and expansion,
# and the model its config describes. Each limit has its variable (see docs/operators.md#security).
try:
    BIOLM_ARCHIVE_LIMITS = ArchiveLimits.from_env(os.environ)
    BIOLM_CHECKPOINT_LIMITS = CheckpointLimits.from_env(os.environ)
    # The files a checkpoint may hold, by kind, each kind capped (biolm.checkpoint_files; BIOLM_CHECKPOINT_EXTRA_FILES).
    BIOLM_CHECKPOINT_FILES = CheckpointFiles.from_env(os.environ)
except LimitSettingError as exc:
    raise ImproperlyConfigured(str(exc)) from None

# Jobs (see jobs.lifecycle): a running job whose worker is silent this long is requeued; a job that
# waits this long for a worker fails (refunded); a submitter may make this many submissions a day.
BIOLM_HEARTBEAT_STALE_S = env_int("BIOLM_HEARTBEAT_STALE_S", 30)
BIOLM_QUEUE_LIMIT_S = env_int("BIOLM_QUEUE_LIMIT_S", 7 * 24 * 3600)
# A pretraining job's delivered model waits at most this long for the CPU worker's check (jobs.tasks.check_outputs)
# to start and heartbeat, behind other CPU work, before the job is retried as lost.
BIOLM_INTAKE_WAIT_S = env_int("BIOLM_INTAKE_WAIT_S", 3600)
BIOLM_SUBMISSIONS_PER_DAY = env_int("BIOLM_SUBMISSIONS_PER_DAY", 20)
# Submissions by Hugging Face Hub id (registry.hub): the Hub's address, passed to every call explicitly (the
# library reads HF_ENDPOINT once, at import), and how long a submit waits for it to resolve a revision.
BIOLM_HUB_ENDPOINT = (
    env_str("BIOLM_HUB_ENDPOINT", "") or os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
).rstrip("/")
BIOLM_HUB_TIMEOUT_S = env_int("BIOLM_HUB_TIMEOUT_S", 10)
# The key a gated repository's token is encrypted under until its fetch job ends (jobs.hub_tokens: Fernet, from
# the cryptography library): a Fernet key (base64 of 32 bytes), or, unset, one derived from SECRET_KEY by HKDF.
BIOLM_HUB_TOKEN_KEY = env_str("BIOLM_HUB_TOKEN_KEY", "")
# A score job's engine process (python -m workers.engine score) is stopped after this many seconds: the
# platform's failure, retried. Scoring a BLURB dataset's predictions with 1,000 resamples takes seconds.
BIOLM_SCORE_TIMEOUT_S = env_int("BIOLM_SCORE_TIMEOUT_S", 1800)
# A protocol of more than one training is cut into slice jobs (grid points, the selection, further seeds or
# folds, the gather) that run on as many GPU workers as are free (jobs/graph.py); 0 queues one job per dataset.
BIOLM_SLICE_PROTOCOLS = env_bool("BIOLM_SLICE_PROTOCOLS", True)
# What a quick preview adds to its one grid point and one seed (biolm.protocols.preview_overrides): JSON of
# overrides of the protocol's settings, e.g. {"epochs": 2, "max_train_examples": 240} on a CPU demo. Empty by
# default. BIOLM_QUICK_PROTOCOL, its name before the job contract, is read when it is not set (deprecated).
BIOLM_PREVIEW_OVERRIDES = env_json_object("BIOLM_PREVIEW_OVERRIDES", env_json_object("BIOLM_QUICK_PROTOCOL", {}))
try:
    preview_overrides(BIOLM_PREVIEW_OVERRIDES)
except ContractError as exc:
    raise ImproperlyConfigured(f"BIOLM_PREVIEW_OVERRIDES: {exc}") from None
# A dispatched job no worker claimed within this many seconds is sent again (a lost message).
BIOLM_REDISPATCH_AFTER_S = env_int("BIOLM_REDISPATCH_AFTER_S", 120)
# Where submitted checkpoints and corpora, pretrained models and predictions are kept: a storage
# alias of STORAGES ("default": var/media).
# An S3-compatible artefact store (MinIO in docker-compose) through django-storages when a bucket
# is named (jobs.s3_store): workers then download inputs and upload outputs with pre-signed URLs, and
# no web request carries their files. The platform talks to BIOLM_S3_ENDPOINT_URL; URLs are signed
# for BIOLM_S3_PUBLIC_ENDPOINT_URL (the address GPU hosts reach; the same when unset). An output larger
# than BIOLM_S3_MULTIPART_BYTES goes up in parts of that size, each sent again alone if it drops.
BIOLM_S3_BUCKET = env_str("BIOLM_S3_BUCKET", "")
BIOLM_S3_MULTIPART_BYTES = env_int("BIOLM_S3_MULTIPART_BYTES", 64 << 20)
if BIOLM_S3_MULTIPART_BYTES < MIN_PART_BYTES:
    raise ImproperlyConfigured(
        f"BIOLM_S3_MULTIPART_BYTES={BIOLM_S3_MULTIPART_BYTES}: S3 parts are at least {MIN_PART_BYTES} bytes (5 MiB)"
    )
if BIOLM_S3_BUCKET:
    STORAGES["artefacts"] = {
        "BACKEND": "jobs.s3_store.ArtefactS3Storage",
        "OPTIONS": {
            "bucket_name": BIOLM_S3_BUCKET,
            "endpoint_url": env_str("BIOLM_S3_ENDPOINT_URL", "") or None,
            "public_endpoint_url": env_str("BIOLM_S3_PUBLIC_ENDPOINT_URL", "") or None,
            "access_key": env_str("BIOLM_S3_ACCESS_KEY", ""),
            "secret_key": env_str("BIOLM_S3_SECRET_KEY", ""),
            "region_name": env_str("BIOLM_S3_REGION", "us-east-1"),
            "addressing_style": "path",
            "signature_version": "s3v4",
            "querystring_auth": True,
            "querystring_expire": env_int("BIOLM_S3_URL_EXPIRE_S", 6 * 3600),
            "file_overwrite": True,
        },
    }
BIOLM_ARTEFACT_STORAGE = env_str("BIOLM_ARTEFACT_STORAGE", "artefacts" if BIOLM_S3_BUCKET else "default")
if BIOLM_ARTEFACT_STORAGE not in STORAGES:
    raise ImproperlyConfigured(
        f"BIOLM_ARTEFACT_STORAGE={BIOLM_ARTEFACT_STORAGE!r} names no storage; known: {', '.join(STORAGES)}"
    )
# Workers present this secret to register their heartbeats (jobs.api); generated under var/ like
# SECRET_KEY when unset, which is what `manage.py worker` passes to the workers it starts.
BIOLM_WORKER_SECRET = secret_key(
    os.environ.get("BIOLM_WORKER_SECRET"), VAR_DIR / "worker_secret",
    generate=env_bool("BIOLM_GENERATE_SECRET_KEY", True), name="BIOLM_WORKER_SECRET",
)  # fmt: skip
# The internal API that GPU workers call (jobs.api): authenticated by each job's token, never by a
# session, and described at /internal/schema/. The public read-only API (leaderboard.api, under
# /api/v1/) names its own authentication (the site's session) and renderers, so these defaults stay
# the workers'.
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
# Two schemas from one drf-spectacular: these settings describe the workers' API at /internal/schema/
# (the hook keeps the public API out of it); the public one at /api/schema/ is generated from
# leaderboard.api_urls alone with its own title (biolm_site.api_docs.PublicSchemaView), so no internal
# path can appear in it. The docs page at /api/docs/ loads Swagger UI from drf_spectacular_sidecar.
SPECTACULAR_SETTINGS = {
    "TITLE": "biolm worker API",
    "DESCRIPTION": "What a GPU worker calls: claim a job, heartbeat, upload its outputs, finish or fail it.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "PREPROCESSING_HOOKS": ["biolm_site.api_schemas.internal_endpoints_only"],
    "SWAGGER_UI_DIST": "SIDECAR",
    # No deep links: Swagger UI puts each operation's link inside the button that opens it, a control
    # within a control that screen readers and keyboards cannot use (axe-core's nested-interactive).
    "SWAGGER_UI_SETTINGS": {"deepLinking": False},
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {
        "biolm": {"handlers": ["console"], "level": env_str("BIOLM_LOG_LEVEL", "INFO"), "propagate": False},
        # A 500's traceback in the server's log: Django's default sends it only to mail_admins (none here).
        "django.request": {"handlers": ["console"], "level": "ERROR", "propagate": False},
    },
}

# HTTPS: off for the demo on 127.0.0.1, on in docker-compose (a TLS-terminating proxy in front).
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", False)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", False)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
# Reached over the deployment's private network, not through the TLS proxy: the workers' internal
# API (http://web:8000/internal/) and the health check must not be redirected to https.
SECURE_REDIRECT_EXEMPT = [r"^internal/", r"^healthz$"]
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
# The Content-Security-Policy (django-csp): scripts only from this site (plotly.js included, served
# from /static/), no inline script without the response's nonce, no plugin objects, no framing.
# Inline styles stay allowed: plotly draws its charts with them.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'", NONCE],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:", "blob:"],
        "font-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
if env_bool("BIOLM_BEHIND_TLS_PROXY", False):
    # Trust the proxy's X-Forwarded-Proto only when one is really in front (it strips the client's own).
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# The sign-in limit per address needs the client's address, not the proxy's (every client would share one
# count): behind a proxy, the last X-Forwarded-For entry, the one the proxy appended, is the client.
ALLAUTH_TRUSTED_PROXY_COUNT = env_int("BIOLM_TRUSTED_PROXY_COUNT", int(env_bool("BIOLM_BEHIND_TLS_PROXY", False)))
