"""Settings for the demo site: SQLite and the in-memory channel layer, nothing else needed.

Environment overrides, for trying the same site on other infrastructure:
``DJANGO_DEBUG`` (default on), ``DJANGO_SECRET_KEY``, ``DJANGO_ALLOWED_HOSTS`` (comma-separated),
``DATABASE_PATH`` (the SQLite file), ``A2A_DEMO_AGENT`` (``assistant``, ``plain`` or ``tck``),
``A2A_DEMO_OPENAI_MODEL``/``_BASE_URL``/``_API_KEY`` (see project/langgraph_agent.py),
``A2A_CARD_V03`` (``0`` for the strict 1.0 card), ``A2A_DEMO_POSTGRES`` (a database name on the
local PostgreSQL instead of SQLite), ``A2A_DEMO_REDIS`` (a Redis URL: the channels_redis layer
instead of the in-memory one; run ``manage.py a2a_worker`` processes unless
``A2A_DEMO_IN_PROCESS=1``; task messages go over PubSub and work requests over the core layer,
or everything over the core layer with ``A2A_DEMO_REDIS_BUS=core``),
``A2A_DEMO_RECORD_EVENTS=0`` (no event log), ``A2A_DEMO_STREAM_PACING=0`` (agents not paced to
their streams; another number: ``STREAM_PACING`` in seconds).
Behind a reverse proxy (docs/deployment.md): ``DJANGO_BEHIND_PROXY=1`` trusts the proxy's
``X-Forwarded-Proto`` and ``X-Forwarded-Host``; ``DJANGO_FORCE_SCRIPT_NAME`` is the path prefix
the proxy strips (or pass the server's ``--root-path``).
``A2A_DEMO_AGENT=bench`` serves the benchmark workload (project/bench_agent.py,
docs/benchmarks.md).
"""

import os
from pathlib import Path
from typing import Any

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = os.environ.get("DJANGO_DEBUG", "1") == "1"
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "demo-only-insecure-key-change-me")
ALLOWED_HOSTS = [
    h.strip()
    for h in os.environ.get("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]").split(",")
]

# Forwarded headers are trusted only when asked: anyone can send them to a server that is
# reachable without the proxy.
if os.environ.get("DJANGO_BEHIND_PROXY") == "1":
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    USE_X_FORWARDED_HOST = True
FORCE_SCRIPT_NAME = os.environ.get("DJANGO_FORCE_SCRIPT_NAME") or None

INSTALLED_APPS = [
    # The demo's own `runserver`: daphne's, listening with a backlog for bursts of streams.
    "project",
    # daphne next: `manage.py runserver` then serves ASGI, so SSE responses stream.
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
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
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

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("DATABASE_PATH", str(BASE_DIR / "db.sqlite3")),
        # WAL: streams read the task log while the recorder writes it, and a commit does not
        # wait for a full fsync (the demo's durability needs are modest).
        "OPTIONS": {
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
        },
        # Requests' sync code runs in a2a_toolcall.asgi.SharedThreads' fixed threads
        # (project/asgi.py): each keeps its connection rather than opening one per request.
        "CONN_MAX_AGE": 60,
        "CONN_HEALTH_CHECKS": True,
    }
}

if os.environ.get("A2A_DEMO_POSTGRES"):
    DATABASES["default"] = {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": os.environ["A2A_DEMO_POSTGRES"],
        "USER": os.environ.get("A2A_DEMO_POSTGRES_USER", "postgres"),
        "HOST": os.environ.get("A2A_DEMO_POSTGRES_HOST", "127.0.0.1"),
        "PORT": "5432",
        "CONN_MAX_AGE": 60,
        "CONN_HEALTH_CHECKS": True,
    }

# The embedded default: one process, no Redis (the app's in-memory layer: channels' own, minus
# a deep copy and a sweep of every queue per message). Use channels_redis for several processes.
CHANNEL_LAYERS: dict[str, dict[str, Any]] = {
    "default": {"BACKEND": "a2a_toolcall.layers.InMemoryChannelLayer"}
}
if os.environ.get("A2A_DEMO_REDIS"):
    _redis_hosts = [{"address": os.environ["A2A_DEMO_REDIS"], "socket_timeout": 30}]
    _redis_prefix = os.environ.get("A2A_DEMO_REDIS_PREFIX", "a2a-demo")
    CHANNEL_LAYERS["work"] = {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {
            # redis-py 8 reads with a 5 s timeout by default: longer than channels_redis blocks.
            "hosts": _redis_hosts,
            "prefix": _redis_prefix,
            # One Redis list per process carries every stream's messages (check W003).
            "capacity": 10000,
        },
    }
    if os.environ.get("A2A_DEMO_REDIS_BUS", "pubsub") == "pubsub":
        # Task messages over PubSub (one PUBLISH each, pushed to the subscriber), work requests
        # point-to-point on the core layer (docs/deployment.md).
        CHANNEL_LAYERS["default"] = {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": _redis_hosts, "prefix": _redis_prefix},
        }
    else:
        CHANNEL_LAYERS["default"] = CHANNEL_LAYERS["work"]

# The agent this site serves (a2a_toolcall reads everything from this one dict; see
# docs/settings.md for every key and its default).
A2A_TOOLCALL: dict[str, Any] = {
    "AGENTS": {
        # A LangGraph ReAct agent with an offline planner model (project/langgraph_agent.py).
        "assistant": "project.langgraph_agent.assistant",
        # The same tools driven by a plain async generator, no framework (project/agents.py).
        "plain": "project.agents.demo_agent",
        # The A2A conformance kit's scenario agent (docs/conformance.md).
        "tck": "project.tck_agent.tck_agent",
        # The benchmark workload (docs/benchmarks.md).
        "bench": "project.bench_agent.bench_agent",
    },
    "DEFAULT_AGENT": os.environ.get("A2A_DEMO_AGENT", "assistant"),
    # With Redis, agents run in `manage.py a2a_worker` processes unless told otherwise.
    "RUN_IN_PROCESS": (os.environ.get("A2A_DEMO_IN_PROCESS") == "1")
    if os.environ.get("A2A_DEMO_REDIS")
    else None,
    "REQUEST_CHANNEL_LAYER": "work" if os.environ.get("A2A_DEMO_REDIS") else None,
    # A2A_CARD_V03=0 serves the strict 1.0 card to every client (see docs/conformance.md).
    "CARD_V03_MEMBERS": os.environ.get("A2A_CARD_V03", "1") == "1",
    # The demo lets anyone in without a login, so its README command works as it is; each
    # anonymous visitor sees only its own session's tasks. A2A_DEMO_ANONYMOUS=0 requires a login
    # or an API key (docs/security.md), as the app does by default.
    "ALLOW_ANONYMOUS": os.environ.get("A2A_DEMO_ANONYMOUS", "1") == "1",
}
# Push notifications: webhooks on this machine or its network are refused unless allowed.
# A2A_DEMO_PUSH_ALLOWED=127.0.0.1 lets tasks notify the demo's own receiver
# (/demo/push-receiver/, which takes DEMO_PUSH_TOKEN; docs/push.md).
if os.environ.get("A2A_DEMO_PUSH_ALLOWED"):
    A2A_TOOLCALL["PUSH_ALLOWED_HOSTS"] = os.environ["A2A_DEMO_PUSH_ALLOWED"].split(",")
DEMO_PUSH_TOKEN = os.environ.get("A2A_DEMO_PUSH_TOKEN", "")
# Where the live page sends a visitor who must log in: the admin's login page.
LOGIN_URL = "admin:login"
if os.environ.get("A2A_DEMO_RECORD_EVENTS") == "0":
    A2A_TOOLCALL["RECORD_EVENTS"] = False
if os.environ.get("A2A_DEMO_STREAM_PACING") == "0":
    A2A_TOOLCALL["STREAM_PACING"] = None
elif os.environ.get("A2A_DEMO_STREAM_PACING"):
    A2A_TOOLCALL["STREAM_PACING"] = float(os.environ["A2A_DEMO_STREAM_PACING"])
if os.environ.get("A2A_DEMO_DB_THREAD_NICE"):
    # The database thread at a lower priority (bench/priority.py measures it).
    A2A_TOOLCALL["DB_THREAD_NICE"] = int(os.environ["A2A_DEMO_DB_THREAD_NICE"])
if A2A_TOOLCALL["DEFAULT_AGENT"] == "bench":
    # The benchmark streams frames only, as its peers do: no narration line per tool turn.
    A2A_TOOLCALL["HUMANIZER"] = "project.bench_agent.silent"
    # ... and holds up to 1,000 idle streams, each a running task.
    A2A_TOOLCALL["WORKER_CONCURRENCY"] = 2000

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
TIME_ZONE = "UTC"
LANGUAGE_CODE = "en-us"
# A relative STATIC_URL gets the script prefix of the first access, before any request: with a
# prefix, say it in full.
STATIC_URL = f"{FORCE_SCRIPT_NAME.rstrip('/')}/static/" if FORCE_SCRIPT_NAME else "static/"
