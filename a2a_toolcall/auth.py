"""Who is calling: pluggable authenticators, in the way of Django REST framework's.

``AUTHENTICATORS`` lists dotted paths to :class:`Authenticator` classes, tried in order. Each
one looks at the request and either recognises its credentials (returns a :class:`Caller`),
finds none of its kind (returns None: the next one is tried), or rejects them (raises
:class:`AuthenticationFailed`: the request is refused with HTTP 401, whatever comes next).
With no authenticator recognising the request, the caller is anonymous, which is refused
unless ``ALLOW_ANONYMOUS`` is on. Then the ``PERMISSION`` hook decides whether the caller may
use the agent (HTTP 403 when not). See docs/security.md.

Built in: :class:`SessionAuthenticator` (Django's session, CSRF enforced) here,
:class:`a2a_toolcall.apikeys.ApiKeyAuthenticator` and
:class:`a2a_toolcall.bearer.BearerAuthenticator`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, ClassVar, Final

from asgiref.sync import sync_to_async
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest
from django.middleware.csrf import CsrfViewMiddleware
from django.utils.module_loading import import_string

from a2a_toolcall.conf import get_setting
from a2a_toolcall.protocol import jsonrpc
from a2a_toolcall.protocol.models import SecurityRequirement, SecurityScheme, StringList
from a2a_toolcall.store import Owner

__all__ = [
    "AuthenticationFailed",
    "Authenticator",
    "Caller",
    "SessionAuthenticator",
    "authenticate",
    "authenticators",
    "card_security",
    "challenges",
    "client_address",
    "session_digest",
    "unauthenticated",
]


@dataclass(frozen=True, slots=True)
class Caller:
    """The party behind a request, as an authenticator recognised it."""

    user: Any
    """A user instance, or ``AnonymousUser``."""
    scheme: str
    """How it authenticated: ``session``, ``apiKey``, ``bearer``, ... or ``anonymous``."""
    credential: str = ""
    """Which credential, for the audit record (an API key's prefix and name, a token's
    subject); never a secret."""
    session: str = ""
    """An anonymous caller's session: a digest of its session key (never the key)."""
    address: str = ""
    """The client's address (``TRUSTED_PROXY_COUNT`` decides how it is read)."""

    @property
    def is_authenticated(self) -> bool:
        """True for a known user."""
        return bool(getattr(self.user, "is_authenticated", False))

    def owner(self, tenant: str | None = None) -> Owner:
        """The store's view of this caller: whose tasks it may see."""
        if self.is_authenticated:
            return Owner(user_id=self.user.pk, tenant=tenant or "", address=self.address)
        return Owner(session=self.session, tenant=tenant or "", address=self.address)

    @property
    def throttle_key(self) -> str:
        """Whose budget a request counts against: the user, else the session, else the
        client's address."""
        if self.is_authenticated:
            return f"user:{self.user.pk}"
        if self.session:
            return f"session:{self.session}"
        return f"address:{self.address}"

    @property
    def label(self) -> str:
        """Who, in words, for logs and the audit record."""
        if self.is_authenticated:
            return str(self.user.get_username())
        return "anonymous"


class AuthenticationFailed(Exception):
    """Credentials an authenticator recognised as its own kind but did not accept."""

    def __init__(self, message: str, *, challenge: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.challenge = challenge


class Authenticator:
    """One way of telling who is calling. Subclass and list it in ``AUTHENTICATORS``.

    ``authenticate`` returns a :class:`Caller` for credentials it accepts, None when the
    request carries none of its kind, and raises :class:`AuthenticationFailed` for credentials
    of its kind that it rejects. ``security_schemes`` is what the agent card advertises for it
    (name to A2A ``SecurityScheme``), ``challenge`` the ``WWW-Authenticate`` value of a 401.
    """

    scheme: ClassVar[str] = ""

    async def authenticate(self, request: HttpRequest) -> Caller | None:
        raise NotImplementedError

    def security_schemes(self) -> dict[str, SecurityScheme]:
        return {}

    def challenge(self) -> str | None:
        return None


def session_digest(session_key: str) -> str:
    """What the store keeps of a session key: its SHA-256 (the key itself is a credential)."""
    return hashlib.sha256(session_key.encode()).hexdigest()


class _CsrfCheck(CsrfViewMiddleware):
    def _reject(self, request: HttpRequest, reason: str) -> Any:
        return reason


def _csrf_failure(request: HttpRequest) -> str | None:
    """Django's own CSRF check (origin, referer, token) for this request; the reason when it
    fails, else None."""
    check = _CsrfCheck(lambda r: None)  # type: ignore[arg-type]
    # The view is csrf_exempt (callers with credentials of their own need no token): the check
    # runs here, for the callers a browser's cookies identify.
    setattr(request, "csrf_processing_done", False)  # noqa: B010
    check.process_request(request)
    reason = check.process_view(request, lambda r: None, (), {})  # type: ignore[arg-type, return-value]
    return reason if isinstance(reason, str) else None


class SessionAuthenticator(Authenticator):
    """Django's session: the live page and same-site JavaScript.

    Needs ``SessionMiddleware`` (and accepts the user ``AuthenticationMiddleware`` or the
    session names). A POST from a session caller must pass Django's CSRF check: the live page
    sends the token in ``X-CSRFToken``. Not advertised on the card (a cookie is no credential an
    A2A client is given).
    """

    scheme = "session"

    async def authenticate(self, request: HttpRequest) -> Caller | None:
        if not hasattr(request, "session"):
            return None
        from django.contrib.auth import aget_user

        user = await aget_user(request)
        if not user.is_authenticated:
            return None
        if request.method == "POST" and (reason := _csrf_failure(request)) is not None:
            raise AuthenticationFailed(f"CSRF check failed for a session caller: {reason}")
        return Caller(user=user, scheme=self.scheme, credential="session")


async def _anonymous(request: HttpRequest) -> Caller:
    session = getattr(request, "session", None)
    key = None
    if session is not None and session.session_key:
        # Loaded, so that a cookie naming no session of ours (made up, or expired) counts as
        # no session rather than as a new caller of its own.
        await session.aget(SESSION_PROBE)
        key = session.session_key
    if key and request.method == "POST" and (reason := _csrf_failure(request)) is not None:
        raise AuthenticationFailed(f"CSRF check failed for a session caller: {reason}")
    return Caller(
        user=AnonymousUser(),
        scheme="anonymous",
        session=session_digest(key) if key else "",
        address=client_address(request),
    )


SESSION_PROBE: Final = "_a2a_toolcall_probe"

NO_SCHEME_CHALLENGE: Final = 'Session realm="a2a"'
"""The ``WWW-Authenticate`` of a 401 when no authenticator names a scheme of its own (a site
that accepts sessions only): RFC 9110 asks every 401 for one."""


def client_address(request: HttpRequest) -> str:
    """The client's address: ``REMOTE_ADDR``, or the entry ``TRUSTED_PROXY_COUNT`` proxies
    from the right of ``X-Forwarded-For``."""
    proxies = int(get_setting("TRUSTED_PROXY_COUNT") or 0)
    remote = str(request.META.get("REMOTE_ADDR") or "")
    if proxies <= 0:
        return remote
    forwarded = [
        part.strip()
        for part in str(request.META.get("HTTP_X_FORWARDED_FOR") or "").split(",")
        if part.strip()
    ]
    return forwarded[-proxies] if len(forwarded) >= proxies else remote


@cache
def _authenticators(paths: tuple[str, ...]) -> tuple[Authenticator, ...]:
    found = []
    for path in paths:
        try:
            cls = import_string(path)
        except ImportError as exc:
            raise ImproperlyConfigured(
                f"A2A_TOOLCALL['AUTHENTICATORS']: cannot import {path!r}: {exc}"
            ) from exc
        found.append(cls())
    return tuple(found)


def authenticators() -> tuple[Authenticator, ...]:
    """The configured authenticators, instantiated once per configuration."""
    return _authenticators(tuple(get_setting("AUTHENTICATORS") or ()))


def challenges() -> list[str]:
    """``WWW-Authenticate`` values for a 401: one per configured authenticator that has one."""
    return list(dict.fromkeys(c for a in authenticators() if (c := a.challenge()) is not None))


@cache
def _permission(path: str | None) -> Callable[..., Any] | None:
    return import_string(path) if path else None


async def _allowed(caller: Caller, request: HttpRequest) -> bool:
    hook = _permission(get_setting("PERMISSION"))
    if hook is None:
        return not caller.is_authenticated or bool(getattr(caller.user, "is_active", True))
    if inspect.iscoroutinefunction(hook):
        return bool(await hook(caller.user, request))
    return bool(await sync_to_async(hook)(caller.user, request))


async def authenticate(request: HttpRequest) -> Caller:
    """The caller of ``request``; raises the JSON-RPC refusal when it may not call.

    :class:`~a2a_toolcall.protocol.jsonrpc.UnauthenticatedError` (401) for rejected or missing
    credentials, :class:`~a2a_toolcall.protocol.jsonrpc.PermissionDeniedError` (403) for a
    caller the ``PERMISSION`` hook refuses.
    """
    caller: Caller | None = None
    try:
        for authenticator in authenticators():
            caller = await authenticator.authenticate(request)
            if caller is not None:
                break
        if caller is None and get_setting("ALLOW_ANONYMOUS"):
            caller = await _anonymous(request)
    except AuthenticationFailed as failed:
        raise unauthenticated(failed.message, failed.challenge) from None
    if caller is None:
        raise unauthenticated(
            "Authentication required: send credentials (see the agent card's securitySchemes)"
        )
    if not caller.address:
        caller = dataclasses.replace(caller, address=client_address(request))
    if not await _allowed(caller, request):
        raise jsonrpc.PermissionDeniedError(
            f"Permission denied: {caller.label} may not use this agent",
            metadata={"user": caller.label},
        )
    return caller


def unauthenticated(message: str, challenge: str | None = None) -> jsonrpc.UnauthenticatedError:
    """The 401 refusal: ``message``, and ``WWW-Authenticate`` naming ``challenge`` or every
    configured scheme."""
    error = jsonrpc.UnauthenticatedError(message)
    values = [challenge] if challenge else challenges()
    error.headers = {"WWW-Authenticate": ", ".join(values) or NO_SCHEME_CHALLENGE}
    return error


def card_security() -> tuple[dict[str, SecurityScheme] | None, list[SecurityRequirement] | None]:
    """The card's ``securitySchemes`` and ``securityRequirements`` for the configured
    authenticators: any one scheme suffices (each is a requirement of its own)."""
    schemes: dict[str, SecurityScheme] = {}
    for authenticator in authenticators():
        schemes.update(authenticator.security_schemes())
    if not schemes:
        return None, None
    requirements = [SecurityRequirement(schemes={name: StringList(values=[])}) for name in schemes]
    return schemes, requirements
