"""Django's ASGI handler, with the hooks of Django's own middleware run without a thread hop.

Django calls every hook of a ``MiddlewareMixin`` middleware from an async request through
``sync_to_async``: with startproject's ``MIDDLEWARE`` that is twelve thread hops per request
(``process_request`` and ``process_response`` of most of them, ``CsrfViewMiddleware``'s
``process_view``) before and after the view, although most of them only read headers and
settings. Each hop copies the context, hands the call to a thread and the result back to the
event loop: in a burst of 1,000 streams opened at once the hops were most of the time before
the first events (docs/benchmarks.md), and at one request at a time they are a good part of
the time to the first byte.

:class:`ASGIHandler` loads the middleware as Django does and runs a hook of one of Django's
own middleware classes on the event loop when the table :data:`INLINE_HOOKS` says that, for
this request, the hook does no I/O: it only reads the request and the settings and sets
headers or attributes. Whatever may reach the database, the cache, a file or the network (a
session that must be saved, a CSRF token checked from the session or from a form upload,
messages that were used) still goes to a thread, as in Django. Only those exact classes are
concerned: a subclass, or any other middleware, keeps Django's adapter. ``INLINE_MIDDLEWARE``
(True) turns it off.

The rules follow the hooks' code in Django 5.2 and 6.x (``django/middleware``,
``django/contrib/*/middleware.py``); ``tests/test_handler.py`` checks that every request of a
matrix gets the same response (status, headers, cookies, body, session writes) from this
handler as from Django's.

**The request signal.** Django's ASGI handler sends ``request_started`` before each request
with ``asend``, which runs the sync receivers through ``sync_to_async``: a thread hop (and two
tasks) that the request waits for before anything else, although Django's own receivers
(``django.db.reset_queries`` and ``close_old_connections``) only tidy the database connections
of the thread the request's sync code runs on. When a request runs in a
:class:`~a2a_toolcall.asgi.SharedThreads` lane and those are the only receivers, the handler
gives them to the lane without waiting (:meth:`~a2a_toolcall.asgi._Lane.detach`): they run on
that thread before any sync call the request makes afterwards (a lane runs its calls in
order), so every database access of the request finds its connections as Django would have
left them; what one raises is logged instead of failing the request. Any other receiver
connected to ``request_started``, or a request outside a lane, gets Django's ``asend`` as it
is. Django's own ``handle`` is run for this with ``signals`` in its globals pointing at
:data:`_SIGNALS` (the same code, whatever the Django version), and as it is where that is not
possible.
"""

from __future__ import annotations

import logging
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import django.db
from asgiref.sync import sync_to_async
from django.conf import settings
from django.core import signals as django_signals
from django.core.exceptions import ImproperlyConfigured, MiddlewareNotUsed
from django.core.handlers.asgi import ASGIHandler as DjangoASGIHandler
from django.core.handlers.exception import convert_exception_to_response
from django.http import HttpRequest, HttpResponseBase
from django.utils.module_loading import import_string

from a2a_toolcall.asgi import current_lane

__all__ = ["INLINE_HOOKS", "ASGIHandler", "InlineHooks"]

logger = logging.getLogger("django.request")

Rule = Callable[..., bool]
GetResponse = Callable[[HttpRequest], Any]


def _always(*args: Any) -> bool:
    return True


# --- the rules: when a hook does no I/O -----------------------------------------------------

_SESSION_ENGINES: Final = frozenset(
    {
        # Their SessionStore(key) only keeps the key (and, for the cache ones, the cache
        # handle): nothing is read before the session is.
        "django.contrib.sessions.backends.db",
        "django.contrib.sessions.backends.cache",
        "django.contrib.sessions.backends.cached_db",
        "django.contrib.sessions.backends.signed_cookies",
    }
)

_MESSAGE_STORAGES: Final = frozenset(
    {
        "django.contrib.messages.storage.fallback.FallbackStorage",
        "django.contrib.messages.storage.cookie.CookieStorage",
        "django.contrib.messages.storage.session.SessionStorage",
    }
)

_SAFE_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})


def _session_engine_known(request: HttpRequest) -> bool:
    return settings.SESSION_ENGINE in _SESSION_ENGINES


def _session_not_saved(request: HttpRequest, response: HttpResponseBase) -> bool:
    # SessionMiddleware.process_response saves (and reads the expiry from) the session only
    # when it was modified, or SESSION_SAVE_EVERY_REQUEST, and it is not empty; deleting the
    # cookie of an empty session and the Vary header are response headers only.
    session = getattr(request, "session", None)
    if session is None or settings.SESSION_ENGINE not in _SESSION_ENGINES:
        return session is None
    return not (
        (session.modified or settings.SESSION_SAVE_EVERY_REQUEST) and not session.is_empty()
    )


def _csrf_secret_in_cookie(request: HttpRequest, *args: Any) -> bool:
    # With CSRF_USE_SESSIONS the secret is read from (and written to) the session.
    return not settings.CSRF_USE_SESSIONS


def _csrf_view_not_checked(
    request: HttpRequest, callback: Any, args: Any = None, kwargs: Any = None
) -> bool:
    # process_view returns at once, or accepts, for these; the check itself reads the session
    # (CSRF_USE_SESSIONS), request.POST (a form upload is written to disk) and may render the
    # failure view.
    return (
        getattr(request, "csrf_processing_done", False)
        or getattr(callback, "csrf_exempt", False)
        or request.method in _SAFE_METHODS
        or getattr(request, "_dont_enforce_csrf_checks", False)
    )


def _message_storage_known(request: HttpRequest) -> bool:
    return settings.MESSAGE_STORAGE in _MESSAGE_STORAGES


def _messages_untouched(request: HttpRequest, response: HttpResponseBase) -> bool:
    # BaseStorage.update() stores (in a cookie, or the session) only what was used or added.
    storage = getattr(request, "_messages", None)
    if storage is None:
        return True
    if f"{type(storage).__module__}.{type(storage).__qualname__}" not in _MESSAGE_STORAGES:
        return False
    return not storage.used and not storage.added_new


@dataclass(frozen=True, slots=True)
class InlineHooks:
    """When each hook of one middleware class may run on the event loop.

    A rule gets the hook's own arguments and says True when the hook does no I/O for them;
    None: the hook always goes to a thread (or the class has none).
    """

    request: Rule | None = None
    response: Rule | None = None
    view: Rule | None = None


INLINE_HOOKS: Final[dict[str, InlineHooks]] = {
    # Redirects to HTTPS and sets security headers from the settings.
    "django.middleware.security.SecurityMiddleware": InlineHooks(_always, _always),
    # Makes a lazy session; saves it only when modified.
    "django.contrib.sessions.middleware.SessionMiddleware": InlineHooks(
        _session_engine_known, _session_not_saved
    ),
    # User agents, PREPEND_WWW and APPEND_SLASH (URL resolution, which Django's async handler
    # does on the loop too), Content-Length.
    "django.middleware.common.CommonMiddleware": InlineHooks(_always, _always),
    # The CSRF secret from the cookie; the check only where one is made.
    "django.middleware.csrf.CsrfViewMiddleware": InlineHooks(
        _csrf_secret_in_cookie, _csrf_secret_in_cookie, _csrf_view_not_checked
    ),
    # A lazy request.user.
    "django.contrib.auth.middleware.AuthenticationMiddleware": InlineHooks(_always),
    # A storage object; it writes only messages that were used or added.
    "django.contrib.messages.middleware.MessageMiddleware": InlineHooks(
        _message_storage_known, _messages_untouched
    ),
    # The X-Frame-Options header.
    "django.middleware.clickjacking.XFrameOptionsMiddleware": InlineHooks(response=_always),
}
"""The middleware classes (exact classes, by dotted path) whose hooks may run on the loop."""


def _hooks_for(instance: object) -> InlineHooks | None:
    cls = type(instance)
    return INLINE_HOOKS.get(f"{cls.__module__}.{cls.__qualname__}")


def _inline_middleware(instance: Any, hooks: InlineHooks, get_response: GetResponse) -> Any:
    """What ``MiddlewareMixin.__acall__`` does for ``instance``, with each hook called in
    place when its rule allows and through ``sync_to_async`` (thread-sensitive) otherwise."""
    process_request = getattr(instance, "process_request", None)
    process_response = getattr(instance, "process_response", None)
    request_rule = hooks.request or (lambda *args: False)
    response_rule = hooks.response or (lambda *args: False)

    async def middleware(request: HttpRequest) -> Any:
        response = None
        if process_request is not None:
            if request_rule(request):
                response = process_request(request)
            else:
                response = await sync_to_async(process_request, thread_sensitive=True)(request)
        response = response or await get_response(request)
        if process_response is not None:
            if response_rule(request, response):
                response = process_response(request, response)
            else:
                response = await sync_to_async(process_response, thread_sensitive=True)(
                    request, response
                )
        return response

    middleware.__qualname__ = f"{type(instance).__qualname__}.__acall__"
    return middleware


def _inline_view_hook(process_view: Callable[..., Any], rule: Rule) -> Any:
    hop = sync_to_async(process_view, thread_sensitive=True)

    async def view_hook(request: HttpRequest, callback: Any, args: Any, kwargs: Any) -> Any:
        if rule(request, callback, args, kwargs):
            return process_view(request, callback, args, kwargs)
        return await hop(request, callback, args, kwargs)

    return view_hook


# --- the request signal ----------------------------------------------------------------------

_DJANGO_REQUEST_STARTED: Final = frozenset(
    {django.db.reset_queries, django.db.close_old_connections}
)
"""Django's own receivers of ``request_started``: they tidy the calling thread's connections."""


def _send_sync(signal: Any, receivers: list[Any], sender: Any, named: dict[str, Any]) -> None:
    for receiver in receivers:
        receiver(signal=signal, sender=sender, **named)


class _RequestStarted:
    """``request_started`` as Django's ``handle`` sends it, without waiting for Django's own
    receivers when the request runs in a lane (the module's docstring)."""

    async def asend(self, sender: Any, **named: Any) -> list[tuple[Any, Any]]:
        signal = django_signals.request_started
        lane = current_lane()
        if lane is not None:
            try:
                sync_receivers, async_receivers = signal._live_receivers(sender)
                ours = not async_receivers and set(sync_receivers) <= _DJANGO_REQUEST_STARTED
            except Exception:  # another Django's insides: send it as Django does
                ours = False
            if ours:
                lane.detach(_send_sync, signal, list(sync_receivers), sender, named)
                return [(receiver, None) for receiver in sync_receivers]
        return await signal.asend(sender=sender, **named)


class _Signals(types.ModuleType):
    """``django.core.signals`` for Django's ``handle``, with :class:`_RequestStarted`."""

    request_started = _RequestStarted()

    def __getattr__(self, name: str) -> Any:
        return getattr(django_signals, name)


_SIGNALS: Final = _Signals("a2a_toolcall.handler.signals")


def _handle_with_our_signals() -> Any:
    """Django's ``ASGIHandler.handle`` with ``signals`` in its globals being :data:`_SIGNALS`;
    None where its code cannot be run that way (then Django's runs as it is)."""
    handle = DjangoASGIHandler.handle
    code = getattr(handle, "__code__", None)
    module_globals = getattr(handle, "__globals__", {})
    if (
        code is None
        or code.co_freevars
        or "signals" not in code.co_names
        or module_globals.get("signals") is not django_signals
    ):
        return None
    ours = types.FunctionType(
        code, {**module_globals, "signals": _SIGNALS}, handle.__name__, handle.__defaults__
    )
    ours.__kwdefaults__ = handle.__kwdefaults__
    ours.__qualname__ = handle.__qualname__
    ours.__doc__ = handle.__doc__
    return ours


_HANDLE: Final = _handle_with_our_signals()


class ASGIHandler(DjangoASGIHandler):
    """Django's ASGI handler; the hooks of Django's own middleware run on the event loop
    when they do no I/O (:data:`INLINE_HOOKS`), and a request in a lane does not wait for
    Django's own ``request_started`` receivers (the module's docstring); setting
    ``INLINE_MIDDLEWARE``."""

    def __init__(self) -> None:
        from a2a_toolcall.conf import get_setting

        # Read once, before Django's __init__ loads the middleware with it.
        self._inline = bool(get_setting("INLINE_MIDDLEWARE"))
        super().__init__()

    async def handle(self, scope: Any, receive: Any, send: Any) -> None:
        if self._inline and _HANDLE is not None:
            await _HANDLE(self, scope, receive, send)
        else:
            await super().handle(scope, receive, send)

    def load_middleware(self, is_async: bool = False) -> None:
        if not is_async or not self._inline:
            super().load_middleware(is_async)
            return
        self._load_async_middleware()

    def _load_async_middleware(self) -> None:
        # Django's BaseHandler.load_middleware(is_async=True), step for step, but for the
        # adapter an INLINE_HOOKS class gets.
        self._view_middleware: list[Any] = []
        self._template_response_middleware: list[Any] = []
        self._exception_middleware: list[Any] = []
        handler: Any = convert_exception_to_response(
            self._get_response_async  # type: ignore[attr-defined]
        )
        handler_is_async = True
        for path in reversed(settings.MIDDLEWARE):
            factory = import_string(path)
            can_sync = getattr(factory, "sync_capable", True)
            can_async = getattr(factory, "async_capable", False)
            if not can_sync and not can_async:
                raise RuntimeError(
                    f"Middleware {path} must have at least one of sync_capable/async_capable "
                    "set to True."
                )
            is_async = can_async if handler_is_async or not can_sync else False
            try:
                adapted = self.adapt_method_mode(
                    is_async,
                    handler,
                    handler_is_async,
                    debug=settings.DEBUG,
                    name=f"middleware {path}",
                )
                instance = factory(adapted)
            except MiddlewareNotUsed as exc:
                if settings.DEBUG:
                    logger.debug("MiddlewareNotUsed(%r): %s", path, exc)
                continue
            handler = adapted
            if instance is None:
                raise ImproperlyConfigured(f"Middleware factory {path} returned None.")
            hooks = _hooks_for(instance) if is_async else None
            if hasattr(instance, "process_view"):
                view_hook = (
                    _inline_view_hook(instance.process_view, hooks.view)
                    if hooks is not None and hooks.view is not None
                    else self.adapt_method_mode(True, instance.process_view)
                )
                self._view_middleware.insert(0, view_hook)
            if hasattr(instance, "process_template_response"):
                self._template_response_middleware.append(
                    self.adapt_method_mode(True, instance.process_template_response)
                )
            if hasattr(instance, "process_exception"):
                # Django's exception middleware stack is synchronous.
                self._exception_middleware.append(
                    self.adapt_method_mode(False, instance.process_exception)
                )
            called = instance if hooks is None else _inline_middleware(instance, hooks, adapted)
            handler = convert_exception_to_response(called)
            handler_is_async = is_async
        self._middleware_chain = self.adapt_method_mode(True, handler, handler_is_async)
