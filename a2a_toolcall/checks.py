"""System checks (``manage.py check``), documented in docs/settings.md."""

from __future__ import annotations

import re
from typing import Any, Final

from django.conf import settings
from django.core.checks import CheckMessage, Error, Tags, Warning, register
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from a2a_toolcall.conf import get_config

PUBSUB = "channels_redis.pubsub.RedisPubSubChannelLayer"
CORE = "channels_redis.core.RedisChannelLayer"
IN_MEMORY = "channels.layers.InMemoryChannelLayer"


def _in_memory(backend: object) -> bool:
    """Whether a layer BACKEND is an in-memory layer (channels' own, ours, or a subclass)."""
    if backend in (IN_MEMORY, "a2a_toolcall.layers.InMemoryChannelLayer"):
        return True
    if not isinstance(backend, str):
        return False
    from channels.layers import InMemoryChannelLayer

    try:
        found = import_string(backend)
    except ImportError:
        return False
    return isinstance(found, type) and issubclass(found, InMemoryChannelLayer)


@register()
def check_settings(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """Validate ``A2A_TOOLCALL`` and the channel layers it names."""
    config = get_config()
    errors: list[CheckMessage] = []
    errors += _check_agents(config)
    errors += _check_layers(config)
    errors += _check_numbers(config)
    errors += _check_narration(config)
    errors += _check_keys()
    errors += _check_hygiene(config)
    errors += _check_deployment(config)
    errors += _check_access(config)
    errors += _check_push(config)
    return errors


def _check_push(config: dict[str, Any]) -> list[CheckMessage]:
    hosts = config["PUSH_ALLOWED_HOSTS"]
    if not isinstance(hosts, list | tuple) or not all(isinstance(h, str) for h in hosts):
        return [
            Error(
                f"A2A_TOOLCALL['PUSH_ALLOWED_HOSTS'] must be a list of host names, addresses or "
                f"networks, not {hosts!r}.",
                hint='For example ["hooks.internal", "10.1.0.0/16"] (docs/push.md).',
                id="a2a_toolcall.E018",
            )
        ]
    return []


SENDER_SILENT_AFTER: Final = 60.0
"""Seconds without a push sender's heartbeat (every 15 s) after which none is taken to run."""


@register(Tags.database)
def check_push_sender(
    app_configs: Any = None, databases: Any = None, **kwargs: Any
) -> list[CheckMessage]:
    """``manage.py check --database default``: push notifications are queued for more than a
    minute and no sender has been seen for as long (docs/push.md, "Senders")."""
    if not databases or not get_config()["PUSH_NOTIFICATIONS"]:
        return []
    from datetime import timedelta

    from django.db import DatabaseError
    from django.utils import timezone

    from a2a_toolcall.models import PushDelivery, PushSender

    since = timezone.now() - timedelta(seconds=SENDER_SILENT_AFTER)
    try:
        waiting = PushDelivery.objects.filter(
            status=PushDelivery.Status.PENDING, next_attempt_at__lt=since
        ).count()
        if not waiting or PushSender.objects.filter(seen_at__gte=since).exists():
            return []
    except DatabaseError:
        return []  # not migrated yet: migrate's own checks say so
    where = (
        "the server processes and a2a_worker send them (PUSH_SENDER is True): is any running?"
        if get_config()["PUSH_SENDER"]
        else "PUSH_SENDER is False, so only `manage.py a2a_push` sends them: run it."
    )
    return [
        Warning(
            f"{waiting} push notification deliveries have been due for more than "
            f"{SENDER_SILENT_AFTER:g} s and no push sender has been seen for as long.",
            hint=where,
            id="a2a_toolcall.W016",
        )
    ]


def _import(path: object) -> tuple[Any, str | None]:
    """(the object, None) or (None, why it cannot be imported)."""
    if not isinstance(path, str) or not path:
        return None, f"{path!r} is not a dotted path"
    try:
        return import_string(path), None
    except ImportError as exc:
        return None, str(exc)


def _check_access(config: dict[str, Any]) -> list[CheckMessage]:
    """Access control: authenticators, the permission hook, bearer tokens, limits."""
    from a2a_toolcall.auth import Authenticator

    messages: list[CheckMessage] = []
    classes = []
    for path in config["AUTHENTICATORS"] or []:
        found, why = _import(path)
        if found is None or not (isinstance(found, type) and issubclass(found, Authenticator)):
            messages.append(
                Error(
                    f"A2A_TOOLCALL['AUTHENTICATORS'] names {path!r}, which is not an "
                    f"Authenticator class{f' ({why})' if why else ''}.",
                    hint="List dotted paths to subclasses of a2a_toolcall.auth.Authenticator "
                    "(docs/security.md).",
                    id="a2a_toolcall.E013",
                )
            )
        else:
            classes.append(found)
    if not config["AUTHENTICATORS"] and not config["ALLOW_ANONYMOUS"]:
        messages.append(
            Error(
                "A2A_TOOLCALL['AUTHENTICATORS'] is empty and ALLOW_ANONYMOUS is off: every "
                "request to the A2A endpoint is refused.",
                hint="List authenticators (the defaults: session and API keys), or allow "
                "anonymous callers.",
                id="a2a_toolcall.E013",
            )
        )
    if config["PERMISSION"] is not None:
        found, why = _import(config["PERMISSION"])
        if not callable(found):
            messages.append(
                Error(
                    f"A2A_TOOLCALL['PERMISSION'] = {config['PERMISSION']!r} is not a function "
                    f"(user, request) -> bool{f' ({why})' if why else ''}.",
                    id="a2a_toolcall.E014",
                )
            )
    messages += _check_bearer(config, classes)
    messages += _check_limits(config)
    if config["ALLOW_ANONYMOUS"] and not settings.DEBUG:
        messages.append(
            Warning(
                "A2A_TOOLCALL['ALLOW_ANONYMOUS'] is on with DEBUG = False: anyone who can reach "
                "the site may run the agent (each anonymous caller sees only its own tasks).",
                hint="Turn ALLOW_ANONYMOUS off and give callers API keys or tokens "
                "(docs/security.md), or silence a2a_toolcall.W010 if the agent is meant to be "
                "public.",
                id="a2a_toolcall.W010",
            )
        )
    from a2a_toolcall.auth import SessionAuthenticator

    sessions = "django.contrib.sessions.middleware.SessionMiddleware" in (
        getattr(settings, "MIDDLEWARE", None) or []
    )
    if any(issubclass(c, SessionAuthenticator) for c in classes) and not sessions:
        messages.append(
            Warning(
                "SessionAuthenticator is listed but SessionMiddleware is not installed: "
                "logged-in users of the live page are not recognised.",
                hint="Add django.contrib.sessions.middleware.SessionMiddleware to MIDDLEWARE, "
                "or drop the authenticator.",
                id="a2a_toolcall.W011",
            )
        )
    return messages


def _check_bearer(config: dict[str, Any], classes: list[type]) -> list[CheckMessage]:
    try:
        from a2a_toolcall.bearer import BearerAuthenticator
    except ImportError:  # pragma: no cover - the module is part of the app
        return []
    if not any(issubclass(c, BearerAuthenticator) for c in classes):
        return []
    verifier = config["BEARER_VERIFIER"]
    found, why = _import(verifier) if verifier else (None, "it is not set")
    if not callable(found):
        return [
            Error(
                f"BearerAuthenticator is listed but A2A_TOOLCALL['BEARER_VERIFIER'] is not a "
                f"function (token) -> user ({why or repr(verifier)}).",
                hint="Set it, e.g. to 'a2a_toolcall.bearer.jwt_verifier' with the JWT settings "
                "(docs/security.md).",
                id="a2a_toolcall.E015",
            )
        ]
    if verifier == "a2a_toolcall.bearer.jwt_verifier":
        jwt_config = config["JWT"] or {}
        problems = []
        if not jwt_config.get("JWKS_URL"):
            problems.append("JWT['JWKS_URL'] is not set")
        try:
            import jwt  # noqa: F401
        except ImportError:
            problems.append('PyJWT is not installed (pip install "a2a-toolcall[jwt]")')
        if problems:
            return [
                Error(
                    "jwt_verifier cannot verify tokens: " + "; ".join(problems) + ".",
                    hint="See docs/security.md, 'Bearer tokens'.",
                    id="a2a_toolcall.E015",
                )
            ]
        unchecked = [name for name in ("AUDIENCE", "ISSUER") if not jwt_config.get(name)]
        if unchecked:
            return [
                Warning(
                    f"jwt_verifier does not check {' or '.join(unchecked)}: any token the "
                    "provider's keys signed is accepted, including tokens issued for other "
                    "services.",
                    hint="Set JWT['AUDIENCE'] (this agent's client id or API identifier) and "
                    "JWT['ISSUER'].",
                    id="a2a_toolcall.W013",
                )
            ]
    return []


def _check_limits(config: dict[str, Any]) -> list[CheckMessage]:
    from a2a_toolcall.throttle import parse_rate

    messages: list[CheckMessage] = []
    rate = config["RATE_LIMIT"]
    if rate is not None:
        try:
            parse_rate(str(rate))
        except ValueError as exc:
            messages.append(Error(f"A2A_TOOLCALL['RATE_LIMIT']: {exc}.", id="a2a_toolcall.E016"))
    cap = config["MAX_RUNNING_TASKS_PER_OWNER"]
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
        messages.append(
            Error(
                f"A2A_TOOLCALL['MAX_RUNNING_TASKS_PER_OWNER'] must be a positive integer or "
                f"None, not {cap!r}.",
                id="a2a_toolcall.E016",
            )
        )
    proxies = config["TRUSTED_PROXY_COUNT"]
    if isinstance(proxies, bool) or not isinstance(proxies, int) or proxies < 0:
        messages.append(
            Error(
                f"A2A_TOOLCALL['TRUSTED_PROXY_COUNT'] must be an integer >= 0, not {proxies!r}.",
                id="a2a_toolcall.E016",
            )
        )
    if rate is not None:
        alias = str(config["THROTTLE_CACHE"])
        caches = getattr(settings, "CACHES", None) or {"default": {}}
        if alias not in caches:
            messages.append(
                Error(
                    f"A2A_TOOLCALL['THROTTLE_CACHE'] names the cache {alias!r}, which is not in "
                    "CACHES.",
                    id="a2a_toolcall.E017",
                )
            )
        elif not settings.DEBUG and "locmem" in str(
            caches[alias].get("BACKEND", "django.core.cache.backends.locmem.LocMemCache")
        ):
            messages.append(
                Warning(
                    f"RATE_LIMIT is counted in the local-memory cache {alias!r}: each process "
                    "counts on its own, so a site served by N processes allows N times the rate.",
                    hint="Point THROTTLE_CACHE at a cache every process shares (Redis, "
                    "Memcached, the database), or silence a2a_toolcall.W012 with one process.",
                    id="a2a_toolcall.W012",
                )
            )
    return messages


def _check_keys() -> list[CheckMessage]:
    from a2a_toolcall.conf import DEFAULTS

    user = getattr(settings, "A2A_TOOLCALL", {}) or {}
    unknown = sorted(set(user) - set(DEFAULTS))
    if not unknown:
        return []
    return [
        Warning(
            f"A2A_TOOLCALL has unknown keys: {', '.join(unknown)}; they are ignored.",
            hint="Check the spelling against docs/settings.md.",
            id="a2a_toolcall.W004",
        )
    ]


def _check_hygiene(config: dict[str, Any]) -> list[CheckMessage]:
    errors: list[CheckMessage] = []
    keys = config["REDACT_KEYS"]
    if not isinstance(keys, list | tuple) or not all(isinstance(k, str) for k in keys):
        errors.append(
            Error(
                f"A2A_TOOLCALL['REDACT_KEYS'] must be a list of key names, not {keys!r}.",
                hint='e.g. ["password", "token", "api_key", "authorization", "secret"]',
                id="a2a_toolcall.E010",
            )
        )
    if config["REDACT_HOOK"]:
        try:
            import_string(config["REDACT_HOOK"])
        except ImportError as exc:
            errors.append(
                Error(
                    f"A2A_TOOLCALL['REDACT_HOOK'] = {config['REDACT_HOOK']!r} cannot be "
                    f"imported: {exc}.",
                    id="a2a_toolcall.E009",
                )
            )
    for switch in (
        "RECORD_EVENTS",
        "PUSH_NOTIFICATIONS",
        "PUSH_SENDER",
        "INLINE_MIDDLEWARE",
        "RAISE_OPEN_FILES_LIMIT",
    ):
        if isinstance(config[switch], bool):
            continue
        errors.append(
            Error(
                f"A2A_TOOLCALL['{switch}'] must be True or False, not {config[switch]!r}.",
                id="a2a_toolcall.E011",
            )
        )
    return errors


def _check_deployment(config: dict[str, Any]) -> list[CheckMessage]:
    messages: list[CheckMessage] = []
    layers = getattr(settings, "CHANNEL_LAYERS", {}) or {}
    layer = layers.get(config["CHANNEL_LAYER"], {})
    if not settings.DEBUG and _in_memory(layer.get("BACKEND")):
        messages.append(
            Warning(
                "The bus is an InMemoryChannelLayer on a site with DEBUG = False: it cannot span "
                "processes, so it only works with one ASGI process, and streams, cancels and "
                "answers never reach tasks running in another.",
                hint="Serve with one process, or use channels_redis (docs/deployment.md).",
                id="a2a_toolcall.W005",
            )
        )
    if not getattr(settings, "ASGI_APPLICATION", None):
        messages.append(
            Warning(
                "ASGI_APPLICATION is not set: the A2A streams need an ASGI server (daphne, "
                "uvicorn); under WSGI an SSE response is read to its end before anything is sent.",
                hint='Set ASGI_APPLICATION = "yourproject.asgi.application" and serve with daphne '
                "or uvicorn.",
                id="a2a_toolcall.W006",
            )
        )
    if settings.DEBUG and "daphne" not in settings.INSTALLED_APPS:
        messages.append(
            Warning(
                "'daphne' is not in INSTALLED_APPS: `manage.py runserver` then serves WSGI and "
                "the A2A streams do not stream.",
                hint="Put 'daphne' first in INSTALLED_APPS for development (it is the daphne "
                "extra: pip install 'a2a-toolcall[daphne]').",
                id="a2a_toolcall.W007",
            )
        )
    if "django.contrib.staticfiles" not in settings.INSTALLED_APPS:
        messages.append(
            Warning(
                "'django.contrib.staticfiles' is not in INSTALLED_APPS: the live timeline page "
                "(a2a_toolcall:live) cannot load its scripts and styles.",
                hint="Add 'django.contrib.staticfiles' to INSTALLED_APPS (docs/browser.md).",
                id="a2a_toolcall.W008",
            )
        )
    return messages


def _check_agents(config: dict[str, Any]) -> list[CheckMessage]:
    from a2a_toolcall.runtime.registry import load_agent

    agents = config["AGENTS"]
    if not isinstance(agents, dict) or not agents:
        return [
            Error(
                "No agent is registered.",
                hint='Name one in settings: A2A_TOOLCALL = {"AGENTS": {"assistant": '
                '"myproject.agents.assistant"}} (a dotted path to an async generator function '
                "taking an AgentInput).",
                id="a2a_toolcall.E001",
            )
        ]
    errors: list[CheckMessage] = []
    for name, path in agents.items():
        try:
            load_agent(name, path)
        except ImproperlyConfigured as exc:
            errors.append(Error(str(exc), id="a2a_toolcall.E002"))
    default = config["DEFAULT_AGENT"]
    if default is not None and default not in agents:
        errors.append(
            Error(
                f"A2A_TOOLCALL['DEFAULT_AGENT'] = {default!r} is not in AGENTS.",
                hint=f"Use one of: {', '.join(sorted(agents))}, or None for the first.",
                id="a2a_toolcall.E003",
            )
        )
    return errors


def _check_layers(config: dict[str, Any]) -> list[CheckMessage]:
    layers = getattr(settings, "CHANNEL_LAYERS", {}) or {}
    errors: list[CheckMessage] = []
    aliases = {"CHANNEL_LAYER": config["CHANNEL_LAYER"]}
    if config["REQUEST_CHANNEL_LAYER"] is not None:
        aliases["REQUEST_CHANNEL_LAYER"] = config["REQUEST_CHANNEL_LAYER"]
    for key, alias in aliases.items():
        if alias not in layers:
            errors.append(
                Error(
                    f"A2A_TOOLCALL['{key}'] = {alias!r} is not in CHANNEL_LAYERS.",
                    hint='Add it, e.g. CHANNEL_LAYERS = {"default": {"BACKEND": '
                    '"a2a_toolcall.layers.InMemoryChannelLayer"}} for one process, or '
                    "channels_redis for several.",
                    id="a2a_toolcall.E004",
                )
            )
    if errors:
        return errors
    for alias in dict.fromkeys(aliases.values()):
        errors += _check_backend_imports(alias, layers[alias])
    if errors:
        return errors
    request_alias = aliases.get("REQUEST_CHANNEL_LAYER", aliases["CHANNEL_LAYER"])
    backend = layers[request_alias].get("BACKEND")
    if backend == PUBSUB:
        errors.append(
            Warning(
                f"Work requests travel on channel layer {request_alias!r}, a "
                "RedisPubSubChannelLayer, which delivers every message to every listener: "
                "with several workers (or web processes running agents) each task would run "
                "several times, and requests sent while no runtime listens are lost.",
                hint="Set A2A_TOOLCALL['REQUEST_CHANNEL_LAYER'] to the alias of a "
                "channels_redis.core.RedisChannelLayer (the bus itself may stay on PubSub).",
                id="a2a_toolcall.W001",
            )
        )
    bus_layer = layers[aliases["CHANNEL_LAYER"]]
    capacity = (bus_layer.get("CONFIG") or {}).get("capacity", 100)
    if bus_layer.get("BACKEND") == CORE and isinstance(capacity, int) and capacity < 1000:
        errors.append(
            Warning(
                f"Channel layer {aliases['CHANNEL_LAYER']!r} is a RedisChannelLayer with "
                f"capacity {capacity}. All the streams of one process share one Redis list, "
                "so a few busy streams fill it and further frames are dropped silently.",
                hint="Set CONFIG['capacity'] to 10000 or more (memory is only used while "
                "messages wait), or use channels_redis.pubsub.RedisPubSubChannelLayer for the bus.",
                id="a2a_toolcall.W003",
            )
        )
    for alias in dict.fromkeys(aliases.values()):
        errors += _check_redis_socket_timeout(alias, layers[alias])
    if _in_memory(backend) and config["RUN_IN_PROCESS"] is False:
        errors.append(
            Warning(
                "RUN_IN_PROCESS is False but work requests travel on an InMemoryChannelLayer, "
                "which no worker process can read: no task would ever run.",
                hint="Use channels_redis for workers, or set RUN_IN_PROCESS to None or True.",
                id="a2a_toolcall.W002",
            )
        )
    return errors


def _check_backend_imports(alias: str, layer: dict[str, Any]) -> list[CheckMessage]:
    # channels_redis and daphne are extras: a site may name a backend it has not installed.
    backend = layer.get("BACKEND")
    if not isinstance(backend, str):
        return []
    try:
        import_string(backend)
    except ImportError as exc:
        hint = (
            "Install the Redis layer: pip install 'a2a-toolcall[redis]'."
            if backend.startswith("channels_redis.")
            else "Check the dotted path, and that the package providing it is installed."
        )
        return [
            Error(
                f"CHANNEL_LAYERS[{alias!r}]['BACKEND'] = {backend!r} cannot be imported: {exc}.",
                hint=hint,
                id="a2a_toolcall.E012",
            )
        ]
    return []


def _redis_py_major() -> int:
    try:
        from importlib.metadata import version

        return int(version("redis").split(".")[0])
    except (ImportError, ValueError, LookupError):
        return 0


def _check_redis_socket_timeout(alias: str, layer: dict[str, Any]) -> list[CheckMessage]:
    # redis-py 8 reads with a 5 s socket timeout by default, and channels_redis waits on Redis
    # with BZPOPMIN for up to 5 s (RedisChannelLayer.brpop_timeout): whenever a process gets no
    # message for 5 s the read times out and receive() raises instead of returning.
    if layer.get("BACKEND") != CORE or _redis_py_major() < 8:
        return []
    hosts = (layer.get("CONFIG") or {}).get("hosts") or ["redis://localhost:6379"]
    short = [
        host
        for host in hosts
        if not (
            isinstance(host, dict)
            and "socket_timeout" in host
            and (host["socket_timeout"] is None or host["socket_timeout"] > 5)
        )
    ]
    if not short:
        return []
    return [
        Error(
            f"Channel layer {alias!r} (RedisChannelLayer) reads from Redis with redis-py's "
            "default 5 s socket timeout, the same 5 s channels_redis blocks waiting for a "
            "message: any stream idle for 5 s fails with 'Timeout reading from ...'.",
            hint='Give each host a longer socket timeout, e.g. "hosts": [{"address": '
            '"redis://127.0.0.1:6379/0", "socket_timeout": 30}].',
            id="a2a_toolcall.E008",
        )
    ]


@register(deploy=True)
def check_flow_control(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """``manage.py check --deploy``: the ASGI application has FlowControl and SharedThreads
    around Django, and Django's handler is a2a_toolcall.handler's."""
    from a2a_toolcall.asgi import FlowControl, SharedThreads
    from a2a_toolcall.handler import ASGIHandler as InliningHandler

    path = getattr(settings, "ASGI_APPLICATION", None)
    if not path:
        return []
    try:
        application = import_string(path)
    except ImportError:
        return []  # the server reports it, with its own traceback
    messages: list[CheckMessage] = []
    if _asgi_chain_has(application, FlowControl) is False:
        messages.append(
            Warning(
                f"ASGI_APPLICATION ({path}) serves Django without a2a_toolcall.asgi.FlowControl: "
                "under daphne a client that reads a stream slowly makes the process buffer all "
                "it has not read, and STREAM_BUFFER_LIMIT cannot apply.",
                hint="In asgi.py: from a2a_toolcall.asgi import get_asgi_application; "
                'application = get_asgi_application() (docs/server.md, "Slow readers"). '
                "Silence a2a_toolcall.W014 if the site runs only under uvicorn, whose send() "
                "waits by itself.",
                id="a2a_toolcall.W014",
            )
        )
    if _asgi_chain_has(application, SharedThreads) is False:
        messages.append(
            Warning(
                f"ASGI_APPLICATION ({path}) serves Django without "
                "a2a_toolcall.asgi.SharedThreads: every request then starts a thread of its "
                "own for its sync code (the ORM, sync middleware), and a burst of streams "
                "opened at once starts as many threads and database connections.",
                hint="In asgi.py: from a2a_toolcall.asgi import get_asgi_application; "
                "application = get_asgi_application(), or a2a_toolcall.asgi.wrap(your_app) "
                '(docs/deployment.md, "Bursts").',
                id="a2a_toolcall.W015",
            )
        )
    handler = _asgi_handler(application)
    if (
        handler is not None
        and get_config()["INLINE_MIDDLEWARE"]
        and not isinstance(handler, InliningHandler)
    ):
        messages.append(
            Warning(
                f"ASGI_APPLICATION ({path}) serves Django with {type(handler).__name__}: every "
                "hook of a sync middleware (startproject's MIDDLEWARE has twelve) is a thread "
                "hop per request, which a burst of streams pays before its first events.",
                hint="In asgi.py: from a2a_toolcall.asgi import get_asgi_application; "
                "application = get_asgi_application(), or build yours around "
                'a2a_toolcall.asgi.django_handler() (docs/deployment.md, "Bursts").',
                id="a2a_toolcall.W017",
            )
        )
    return messages


def _asgi_handler(application: Any, depth: int = 0) -> Any | None:
    """Django's handler at the end of an ASGI chain (through ASGIStaticFilesHandler,
    ProtocolTypeRouter and middlewares), or None if the chain cannot be followed."""
    from django.core.handlers.asgi import ASGIHandler

    if depth > 8:
        return None
    if isinstance(application, ASGIHandler) and not hasattr(application, "application"):
        return application
    mapping = getattr(application, "application_mapping", None)
    if isinstance(mapping, dict) and "http" in mapping:
        return _asgi_handler(mapping["http"], depth + 1)
    for attribute in ("application", "app", "inner"):
        inner = getattr(application, attribute, None)
        if inner is not None and inner is not application:
            return _asgi_handler(inner, depth + 1)
    return None


def _asgi_chain_has(application: Any, kind: type, depth: int = 0) -> bool | None:
    """True when a ``kind`` middleware wraps Django's handler, False when the handler is
    reached without one, None when the chain cannot be followed (an application this check
    does not know)."""
    from django.core.handlers.asgi import ASGIHandler

    if isinstance(application, kind):
        return True
    if depth > 8:
        return None
    if isinstance(application, ASGIHandler) and not hasattr(application, "application"):
        return False  # Django itself (ASGIStaticFilesHandler is one too, wrapping another)
    mapping = getattr(application, "application_mapping", None)  # channels' ProtocolTypeRouter
    if isinstance(mapping, dict) and "http" in mapping:
        return _asgi_chain_has(mapping["http"], kind, depth + 1)
    for attribute in ("application", "app", "inner"):
        inner = getattr(application, attribute, None)
        if inner is not None and inner is not application:
            return _asgi_chain_has(inner, kind, depth + 1)
    return None


_NULLABLE_NUMBERS: Final = frozenset({"GC_GEN0_THRESHOLD", "STREAM_PACING", "DB_THREAD_NICE"})


def _check_numbers(config: dict[str, Any]) -> list[CheckMessage]:
    errors: list[CheckMessage] = []
    for key, kind, zero_ok in (
        ("TASK_TIME_LIMIT", (int, float), False),
        ("WORKER_CONCURRENCY", (int,), False),
        ("RETAIN_AFTER_RESPONSE", (int, float), True),
        ("KEEPALIVE_INTERVAL", (int, float), False),
        ("STREAM_PACING", (int, float), False),
        ("STREAM_BUFFER_LIMIT", (int,), False),
        ("SYNC_THREADS", (int,), False),
        ("GC_GEN0_THRESHOLD", (int,), False),
        ("DB_THREAD_NICE", (int,), False),
        ("FRAME_VALUE_LIMIT", (int,), False),
        ("TEXT_VALUE_LIMIT", (int,), False),
        ("LANGGRAPH_RECURSION_LIMIT", (int,), False),
        ("MAX_REQUEST_BYTES", (int,), False),
        ("CANCEL_WAIT", (int, float), True),
        ("RUNTIME_PICKUP_TIMEOUT", (int, float), False),
        ("RUNTIME_LOST_AFTER", (int, float), False),
        ("TASK_LEASE", (int, float), False),
        ("WORKER_SHUTDOWN_GRACE", (int, float), True),
        ("PUSH_TIMEOUT", (int, float), False),
        ("PUSH_MAX_ATTEMPTS", (int,), False),
        ("PUSH_RETRY_DELAY", (int, float), True),
        ("PUSH_RETRY_MAX_DELAY", (int, float), True),
        ("PUSH_CONCURRENCY", (int,), False),
        ("PUSH_MAX_CONFIGS_PER_TASK", (int,), False),
        ("PUSH_POLL_INTERVAL", (int, float), False),
    ):
        value = config[key]
        nullable = key in _NULLABLE_NUMBERS
        if value is None and nullable:
            continue  # the setting's "leave it as it is"
        if (
            isinstance(value, bool)
            or not isinstance(value, kind)
            or value < 0
            or (value == 0 and not zero_ok)
        ):
            what = "a number >= 0" if zero_ok else "a positive number"
            if nullable:
                what += " or None"
            errors.append(
                Error(
                    f"A2A_TOOLCALL['{key}'] must be {what}, not {value!r}.", id="a2a_toolcall.E005"
                )
            )
    return errors


def _check_narration(config: dict[str, Any]) -> list[CheckMessage]:
    errors: list[CheckMessage] = []
    rules = config["NARRATION_RULES"]
    if not isinstance(rules, list | tuple):
        rules = [rules]
    for rule in rules:
        try:
            pattern, phrase = rule
            re.compile(pattern)
            if not isinstance(phrase, str):
                raise TypeError("the phrase must be a string")
        except (TypeError, ValueError, re.error) as exc:
            errors.append(
                Error(
                    f"A2A_TOOLCALL['NARRATION_RULES'] has an invalid rule {rule!r}: {exc}.",
                    hint="Each rule is (regex on the tool name, phrase), e.g. "
                    '(r"^sql_", "querying the database").',
                    id="a2a_toolcall.E006",
                )
            )
    if config["HUMANIZER"]:
        try:
            import_string(config["HUMANIZER"])
        except ImportError as exc:
            errors.append(
                Error(
                    f"A2A_TOOLCALL['HUMANIZER'] = {config['HUMANIZER']!r} cannot be imported: "
                    f"{exc}.",
                    id="a2a_toolcall.E007",
                )
            )
    return errors
