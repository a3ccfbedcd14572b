"""Settings for the test suite."""

import os
import tempfile
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent

SECRET_KEY = "tests-only-not-secret"
DEBUG = False
ALLOWED_HOSTS = ["*"]
USE_TZ = True

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "a2a_toolcall",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]

ROOT_URLCONF = "project.urls"
ASGI_APPLICATION = "project.asgi.application"

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
    }
]

# The test process uses SQLite; live servers started by the tests (tests/live.py) choose with
# A2A_TEST_DB=sqlite|postgres (and A2A_TEST_SQLITE / A2A_TEST_PG_NAME for the database).
if os.environ.get("A2A_TEST_DB") == "postgres":
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": os.environ.get("A2A_TEST_PG_NAME", "test"),
            "USER": "postgres",
            "HOST": "127.0.0.1",
            "PORT": "5432",
        }
    }
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": os.environ.get("A2A_TEST_SQLITE", str(BASE_DIR / "test-db.sqlite3")),
            # WAL and IMMEDIATE transactions as a deployed site runs SQLite (project/settings.py):
            # a writer waits for another (up to the timeout) instead of failing. synchronous=OFF
            # (the demo's is NORMAL): a test database need not survive a power cut.
            "OPTIONS": {
                "timeout": 20,
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF;",
                "transaction_mode": "IMMEDIATE",
            },
            # The test run's database in a file, not Django's shared-cache in-memory one: there
            # a write made while another thread's connection is writing fails at once
            # ("database table is locked": shared-cache locks ignore the timeout), so any sync
            # work still running in the background failed whichever test wrote next. One file
            # per test run (two runs on one machine never share one).
            "TEST": {
                "NAME": os.path.join(
                    tempfile.gettempdir(), f"a2a-toolcall-test-{os.getpid()}.sqlite3"
                )
            },
        }
    }

# A second database: the recording tests run on SQLite and on PostgreSQL (tests/routers.py).
DATABASES["postgres"] = {
    "ENGINE": "django.db.backends.postgresql",
    "NAME": "test",
    "USER": "postgres",
    "HOST": "127.0.0.1",
    "PORT": "5432",
    # One test database per test run: two runs on one machine (CI beside a developer) never
    # drop each other's.
    "TEST": {"NAME": f"test_a2a_toolcall_{os.getpid()}"},
}
DATABASE_ROUTERS = ["tests.routers.AuditDatabaseRouter"]

REDIS_URL = "redis://127.0.0.1:6379/0"
# redis-py 8 reads with a 5 s socket timeout, as long as channels_redis blocks: see
# a2a_toolcall.E008.
REDIS_HOST = {"address": REDIS_URL, "socket_timeout": 30}

# The default layer is in-memory (the embedded default); the Redis layers are the real
# thing, used by the bus tests and the worker-process tests. A prefix keeps test keys apart.
CHANNEL_LAYERS = {
    "default": {"BACKEND": "a2a_toolcall.layers.InMemoryChannelLayer"},
    "redis": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {
            "hosts": [REDIS_HOST],
            # Worker-process tests give each run its own prefix, so nothing left in Redis by
            # an earlier run can reach it.
            "prefix": os.environ.get("A2A_TEST_REDIS_PREFIX", "a2a-test"),
            "capacity": 10_000,
        },
    },
    "pubsub": {
        "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
        "CONFIG": {"hosts": [REDIS_HOST], "prefix": "a2a-test-pubsub"},
    },
}

# A live server's bus: the in-memory layer (the embedded default), Redis with worker
# processes, or the in-memory layer losing a fifth of its group messages.
LIVE_LAYER = os.environ.get("A2A_TEST_LAYER", "memory")
if LIVE_LAYER == "redis":
    CHANNEL_LAYERS["default"] = CHANNEL_LAYERS["redis"]
elif LIVE_LAYER == "lossy":
    CHANNEL_LAYERS["default"] = {"BACKEND": "tests.lossy.LossyInMemoryChannelLayer"}

A2A_TOOLCALL = {
    "AGENTS": {
        "demo": "project.agents.demo_agent",
        "echo": "tests.agents.echo",
        "parked": "tests.agents.parked",
        "whoami": "tests.agents.whoami",
        "tck": "project.tck_agent.tck_agent",
        "assistant": "project.langgraph_agent.assistant",
        # Percent progress and very long names, args and results, for the live page's tests.
        "report": "tests.agents.report",
        # A tool with a side effect outside the app (a Redis counter), for the claim tests.
        "charging": "tests.agents.charging",
        # Task lifecycle (tests/test_lifecycle.py): run again when lost, resumed from checkpoints.
        "retrying": "tests.agents.retrying",
        "resumable": "tests.agents.resumable",
        "durable_graph": "tests.durable_graph.durable_graph",
        # Values JSON cannot carry and oversized text (tests/test_hostile_output.py).
        "unsafe": "tests.agents.unsafe",
        "firehose": "tests.agents.firehose",
        "hostile_render": "tests.agents_render.hostile_render",
        # One started frame, a sleep, the completed frame (tests/test_burst.py).
        "bench": "project.bench_agent.bench_agent",
    },
    "DEFAULT_AGENT": os.environ.get("A2A_TEST_AGENT", "demo"),
    "KEEPALIVE_INTERVAL": float(os.environ.get("A2A_TEST_KEEPALIVE", "15")),
    "STREAM_BUFFER_LIMIT": int(os.environ.get("A2A_TEST_STREAM_BUFFER", str(1024 * 1024))),
    "STREAM_PACING": None if os.environ.get("A2A_TEST_STREAM_PACING") == "off" else 0.005,
    "RECORD_EVENTS": os.environ.get("A2A_TEST_RECORD_EVENTS", "1") == "1",
    "TASK_TIME_LIMIT": float(os.environ.get("A2A_TEST_TIME_LIMIT", "300")),
    "RUNTIME_LOST_AFTER": float(os.environ.get("A2A_TEST_LOST_AFTER", "30")),
    "TASK_LEASE": float(os.environ.get("A2A_TEST_LEASE", "10")),
    "API_KEY_HEADER": os.environ.get("A2A_TEST_API_KEY_HEADER", "X-API-Key"),
    "SYNC_THREADS": int(os.environ.get("A2A_TEST_SYNC_THREADS", "8")),
    "WORKER_CONCURRENCY": int(os.environ.get("A2A_TEST_WORKER_CONCURRENCY", "64")),
    "RUN_IN_PROCESS": False if LIVE_LAYER == "redis" else None,
    # Most tests call as anonymous clients (as the demo site allows); the access-control tests
    # turn it off (A2A_TEST_ANONYMOUS=0 for live servers, override_settings in process).
    "ALLOW_ANONYMOUS": os.environ.get("A2A_TEST_ANONYMOUS", "1") == "1",
    # Push notifications (tests/test_push.py): the receivers the tests start listen on
    # 127.0.0.1, which the URL rules refuse unless it is allowed; retries come quickly.
    "PUSH_ALLOWED_HOSTS": [
        h for h in os.environ.get("A2A_TEST_PUSH_ALLOWED", "127.0.0.1").split(",") if h
    ],
    "PUSH_TIMEOUT": float(os.environ.get("A2A_TEST_PUSH_TIMEOUT", "5")),
    "PUSH_MAX_ATTEMPTS": int(os.environ.get("A2A_TEST_PUSH_ATTEMPTS", "4")),
    "PUSH_RETRY_DELAY": float(os.environ.get("A2A_TEST_PUSH_RETRY_DELAY", "0.1")),
    "PUSH_POLL_INTERVAL": float(os.environ.get("A2A_TEST_PUSH_POLL", "0.2")),
    "PUSH_SENDER": os.environ.get("A2A_TEST_PUSH_SENDER", "1") == "1",
    "RAISE_OPEN_FILES_LIMIT": os.environ.get("A2A_TEST_RAISE_OPEN_FILES", "1") == "1",
    # tests/test_priority.py: the database thread at a lower priority (live servers only).
    "DB_THREAD_NICE": int(os.environ["A2A_TEST_DB_THREAD_NICE"])
    if os.environ.get("A2A_TEST_DB_THREAD_NICE")
    else None,
}

# The demo's push receiver (project/push_receiver.py) takes this token.
DEMO_PUSH_TOKEN = "receiver-token"

STATIC_URL = "static/"

# The test process runs with DEBUG = False on the in-memory layer, on purpose (one process).
# It also lets anonymous callers in with DEBUG = False (most tests call anonymously).
SILENCED_SYSTEM_CHECKS = ["a2a_toolcall.W005", "a2a_toolcall.W010"]

# --- Bearer tokens, for live servers (tests/test_auth_interop.py) ------------------------------
# A server started with tests.idp.IdentityProvider.env() in its environment also accepts that
# provider's JWTs: the bearer authenticator after the default ones, the provider's settings.
if os.environ.get("A2A_TEST_JWKS_URL"):
    from tests.idp import settings_from_env

    A2A_TOOLCALL.update(settings_from_env(os.environ))
    A2A_TOOLCALL["AUTHENTICATORS"] = [
        "a2a_toolcall.auth.SessionAuthenticator",
        "a2a_toolcall.apikeys.ApiKeyAuthenticator",
        "a2a_toolcall.bearer.BearerAuthenticator",
    ]
