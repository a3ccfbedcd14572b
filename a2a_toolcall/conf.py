"""Settings: one ``A2A_TOOLCALL`` dict in the Django settings, merged over these defaults.

Read through :func:`get_config` (cached; the cache is reset when a test overrides
``A2A_TOOLCALL``), never at import time. Every key is documented in docs/settings.md.
"""

from __future__ import annotations

from functools import cache
from typing import Any, Final

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

__all__ = ["DEFAULTS", "gc_threshold", "get_config", "get_setting"]

DEFAULTS: Final[dict[str, Any]] = {
    # Agents by name: {"name": "dotted.path.to.agent"}. The first is the default unless
    # DEFAULT_AGENT names another.
    "AGENTS": {},
    "DEFAULT_AGENT": None,
    # The Channels layer alias the bus uses, and the one work requests travel on (point-to-point:
    # it must not be RedisPubSubChannelLayer when several workers share the work).
    "CHANNEL_LAYER": "default",
    "REQUEST_CHANNEL_LAYER": None,  # None: same as CHANNEL_LAYER
    # Run the agent runtime inside the web process. None: only when the layer is in-memory.
    "RUN_IN_PROCESS": None,
    # Seconds an agent may work on one task (time spent waiting for the user's input excluded).
    "TASK_TIME_LIMIT": 300.0,
    # Tasks one runtime (one worker process) runs at once.
    "WORKER_CONCURRENCY": 64,
    # Seconds a2a_worker lets its running tasks finish after SIGTERM (it takes no new work
    # meanwhile) before it fails the rest; a second signal stops it at once. Celery's warm
    # shutdown, in effect.
    "WORKER_SHUTDOWN_GRACE": 30.0,
    # Seconds the runtime keeps a finished task's messages for a consumer that has not yet
    # confirmed it received them all (the bus is lossy; consumers ask for what they missed).
    "RETAIN_AFTER_RESPONSE": 30.0,
    # Narration: extra rules tried before the built-in ones, as (regex on the tool name,
    # phrase template with {name}, {agent} and {args}), and/or a dotted path to a function
    # replacing the humanizer altogether: (calls: Sequence[tuple[str, Any]]) -> str.
    # Tool args and results longer than this (characters of JSON) are cut, with a marker
    # stating the full size, before they go on the wire.
    "FRAME_VALUE_LIMIT": 32_768,
    # Narration lines, questions, answer text and error messages longer than this (characters)
    # are cut with the same marker.
    "TEXT_VALUE_LIMIT": 65_536,
    # LangGraph agents: the graph's recursion limit (steps per run).
    "LANGGRAPH_RECURSION_LIMIT": 25,
    "NARRATION_RULES": [],
    "HUMANIZER": None,
    # --- the A2A server ---
    # The agent card: name, description, version, provider {organization, url}, skills
    # [{id, name, description, tags, examples}], documentationUrl, iconUrl, url (the endpoint's
    # absolute URL; default: built from the request). Missing keys come from the agent.
    "CARD": {},
    # Add the A2A 0.3 members (url, preferredTransport, protocolVersion) to the card so 0.3
    # clients find the endpoint; clients sending A2A-Version: 1.0 always get the strict card.
    "CARD_V03_MEMBERS": True,
    # Seconds of silence on a stream before a keepalive comment goes out.
    "KEEPALIVE_INTERVAL": 15.0,
    # Bytes of events one stream may have waiting for its client (one that reads slower than
    # they arrive) before the stream closes; the client resumes with Last-Event-ID. Needs
    # a2a_toolcall.asgi.FlowControl under daphne (docs/server.md, "Slow readers").
    "STREAM_BUFFER_LIMIT": 1024 * 1024,
    # Seconds a tool frame may wait for a stream, since the agent made it, before the agent is
    # held back: while a stream's client reads, its task's agent runs only as far ahead of it
    # as keeps the frames' wait near this (docs/server.md, "Pacing"). None: agents run as fast
    # as they can and frames queue behind a busy stream.
    "STREAM_PACING": 0.005,
    # Threads that run the sync code (the ORM, sync middleware) of all requests, with
    # a2a_toolcall.asgi.SharedThreads: a burst of requests queues for them rather than starting
    # a thread each. Each keeps its own database connections.
    "SYNC_THREADS": 8,
    # Run the hooks of Django's own middleware (SecurityMiddleware, SessionMiddleware,
    # CsrfViewMiddleware, ...) on the event loop when they do no I/O for the request at hand,
    # instead of a thread hop each, with a2a_toolcall.asgi.get_asgi_application()'s handler
    # (a2a_toolcall.handler; docs/deployment.md, "Bursts").
    "INLINE_MIDDLEWARE": True,
    # Allocations between two runs of the cyclic garbage collector's youngest generation, set
    # by a2a_toolcall.asgi.wrap() (get_asgi_application()) and a2a_worker when the interpreter's is
    # lower (CPython's is 700); None leaves the collector as it is (docs/deployment.md,
    # "Bursts").
    "GC_GEN0_THRESHOLD": 10_000,
    # Raise the nice value of the thread that does the app's batched database work (asgiref's
    # shared thread: the journal, task inserts, claims) by this much when
    # a2a_toolcall.asgi.wrap() makes the ASGI application; Linux only. None leaves it alone.
    # For one server process per core: less CPU per frame; with several busy processes on a
    # core their tails grow (a2a_toolcall.priority; docs/deployment.md, "One process per core").
    "DB_THREAD_NICE": None,
    # Raise the process's soft limit of open files (one per stream) to its hard limit when
    # a2a_toolcall.asgi.wrap() (get_asgi_application()) makes the ASGI application: 1,024, a
    # common soft limit, refuses a burst of more streams (a2a_toolcall.limits).
    "RAISE_OPEN_FILES_LIMIT": True,
    # Largest JSON-RPC request body accepted, in bytes (checked before parsing).
    "MAX_REQUEST_BYTES": 1024 * 1024,
    # Seconds CancelTask waits for the runtime to confirm before returning the task as it is.
    "CANCEL_WAIT": 10.0,
    # Seconds a new task may wait for a runtime to pick it up, and seconds a runtime may stay
    # silent (not answering probes) before the task fails as lost.
    "RUNTIME_PICKUP_TIMEOUT": 120.0,
    "RUNTIME_LOST_AFTER": 30.0,
    # Seconds a lease on a running task lasts (docs/deployment.md, "Leases"). The runtime
    # running a task renews it, and the process recording it renews its own, every third of
    # this; a process that finds one expired ends the task with a reason within about this long
    # after the process holding it stopped (or runs it again, or parks it for a resume).
    "TASK_LEASE": 10.0,
    # --- the audit record ---
    # Keys whose values are replaced by "[redacted]" (any depth, case-insensitive; a key also
    # matches as a prefix or suffix: access_token, api_key_id), and an optional dotted path to a
    # function(value) -> value applied after them, before tool values are streamed or stored.
    "REDACT_KEYS": ["password", "token", "api_key", "authorization", "secret"],
    "REDACT_HOOK": None,
    # Stored tool args/results longer than this (characters of JSON) are cut with a marker.
    "STORED_VALUE_LIMIT": 65_536,
    # Days a2a_purge keeps when --older-than is not given.
    "RETENTION_DAYS": 90,
    # Write every streamed event and tool call (the audit record). False keeps only the task
    # rows: no admin timeline, no replay from another process. For measuring what recording
    # costs, or sites that must not keep tool payloads.
    "RECORD_EVENTS": True,
    # --- push notifications (docs/push.md) ---
    # Serve the push-notification methods and POST every event of a task with a webhook to it
    # (the card says capabilities.pushNotifications). False: the methods answer -32003.
    "PUSH_NOTIFICATIONS": True,
    # Send the deliveries from every server process and a2a_worker (each takes its share of the
    # outbox). False: only `manage.py a2a_push` sends them.
    "PUSH_SENDER": True,
    # Hosts a webhook may be on although they resolve to loopback, private or link-local
    # addresses: names ("hooks.internal"), addresses or networks ("10.1.0.0/16").
    "PUSH_ALLOWED_HOSTS": [],
    # Seconds one delivery may take (connect, send, the response's status line).
    "PUSH_TIMEOUT": 10.0,
    # Attempts per delivery before it is given up (the first included), and the backoff between
    # them: RETRY_DELAY seconds doubled per attempt up to RETRY_MAX_DELAY, each drawn at random
    # from its upper half (jitter).
    "PUSH_MAX_ATTEMPTS": 8,
    "PUSH_RETRY_DELAY": 1.0,
    "PUSH_RETRY_MAX_DELAY": 600.0,
    # Webhooks one process sends to at once (each one delivery at a time, in order).
    "PUSH_CONCURRENCY": 32,
    # Webhooks one task may have.
    "PUSH_MAX_CONFIGS_PER_TASK": 10,
    # Seconds between two looks at the outbox for deliveries other processes queued or that
    # are due for another attempt (this process's own new ones go out at once).
    "PUSH_POLL_INTERVAL": 1.0,
    # --- access control (docs/security.md) ---
    # Authenticators tried in order (dotted paths); the first that recognises the request's
    # credentials decides who the caller is.
    "AUTHENTICATORS": [
        "a2a_toolcall.auth.SessionAuthenticator",
        "a2a_toolcall.apikeys.ApiKeyAuthenticator",
    ],
    # Callers with no credentials at all. Off: they get HTTP 401. On: each anonymous caller sees
    # only the tasks of its own session, or a task whose id it holds.
    "ALLOW_ANONYMOUS": False,
    # Dotted path to a function (user, request) -> bool deciding whether an authenticated user
    # may use the agent (HTTP 403 when not). None: every authenticated, active user may.
    "PERMISSION": None,
    # API keys: the extra header they may come in (besides "Authorization: Bearer <key>").
    "API_KEY_HEADER": "X-API-Key",
    # Bearer tokens from an identity provider: dotted path to a function (token) -> user or None
    # (a2a_toolcall.bearer.jwt_verifier verifies JWTs against a JWKS; see docs/security.md).
    "BEARER_VERIFIER": None,
    "BEARER_FORMAT": "JWT",
    # The provider's discovery document: the card then advertises openIdConnect for bearer tokens.
    "OPENID_CONNECT_URL": None,
    # PyJWT + JWKS verifier (a2a_toolcall.bearer.jwt_verifier): the key set, issuer, audience,
    # algorithms, the claim naming the user, and whether unknown users are created.
    "JWT": {
        "JWKS_URL": None,
        "ISSUER": None,
        "AUDIENCE": None,
        "ALGORITHMS": ["RS256", "ES256"],
        "USERNAME_CLAIM": "sub",
        "CREATE_USERS": False,
        "LEEWAY": 30,
    },
    # CARD members (merged over CARD) served by GetExtendedAgentCard to authenticated callers.
    # None: no extended card.
    "EXTENDED_CARD": None,
    # Limits per owner (user, or client address for anonymous callers): requests per period
    # ("120/min", "10/s", "1000/hour"; None: no limit) counted in the Django cache THROTTLE_CACHE,
    # and tasks running at once (None: no limit). Both answered HTTP 429 with Retry-After.
    "RATE_LIMIT": None,
    "MAX_RUNNING_TASKS_PER_OWNER": None,
    "THROTTLE_CACHE": "default",
    # Proxies in front of the site that append to X-Forwarded-For (0: use the peer address).
    "TRUSTED_PROXY_COUNT": 0,
}


@cache
def get_config() -> dict[str, Any]:
    """The effective settings: ``settings.A2A_TOOLCALL`` merged over :data:`DEFAULTS`."""
    user = getattr(settings, "A2A_TOOLCALL", {}) or {}
    return {**DEFAULTS, **user}


def get_setting(name: str) -> Any:
    """One effective setting by name."""
    return get_config()[name]


def _positive_int(name: str) -> int | None:
    """Setting ``name`` when it is a positive int, else None (a wrong value is
    a2a_toolcall.E005's to report)."""
    value = get_setting(name)
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return None


def gc_threshold() -> int | None:
    """``GC_GEN0_THRESHOLD``, or None: leave the collector alone."""
    return _positive_int("GC_GEN0_THRESHOLD")


def db_thread_nice() -> int | None:
    """``DB_THREAD_NICE``, or None: leave the database thread's priority alone."""
    return _positive_int("DB_THREAD_NICE")


@receiver(setting_changed)
def _reset(*, setting: str, **kwargs: Any) -> None:
    if setting == "A2A_TOOLCALL":
        get_config.cache_clear()
