"""Bearer tokens from an identity provider (OAuth 2.0, OpenID Connect): RFC 6750.

:class:`BearerAuthenticator` reads ``Authorization: Bearer <token>`` and hands the token to the
``BEARER_VERIFIER`` hook, a function ``(token) -> user | None`` (sync or async) that may raise
:class:`~a2a_toolcall.auth.AuthenticationFailed` with its reason. :func:`jwt_verifier` is a
ready one: a JWT signed by a key of the provider's JWKS, its claims checked as the ``JWT``
setting says, its ``sub`` (or ``USERNAME_CLAIM``) naming a Django user. It needs PyJWT:
``pip install "a2a-toolcall[jwt]"``.

A token starting with ``a2a_`` is one of our API keys: it is left to
:class:`~a2a_toolcall.apikeys.ApiKeyAuthenticator`, whichever order the two are listed in.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any, Final

from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest
from django.utils.module_loading import import_string

from a2a_toolcall.apikeys import KEY_PREFIX
from a2a_toolcall.auth import AuthenticationFailed, Authenticator, Caller
from a2a_toolcall.conf import DEFAULTS, get_setting
from a2a_toolcall.protocol.models import (
    HTTPAuthSecurityScheme,
    OpenIdConnectSecurityScheme,
    SecurityScheme,
)

if TYPE_CHECKING:
    import jwt

__all__ = ["REALM", "BearerAuthenticator", "invalid_token_challenge", "jwt_verifier"]

logger = logging.getLogger(__name__)

REALM: Final = "a2a"


def _challenge() -> str:
    return f'Bearer realm="{REALM}"'


def _description(text: str) -> str:
    # RFC 6750 3: error_description is limited to %x20-21 / %x23-5B / %x5D-7E, so a quote or a
    # backslash cannot even be escaped: they are replaced, as is anything outside printable ASCII.
    cleaned = text.replace('"', "'").replace("\\", "/")
    return "".join(c if " " <= c <= "~" else "?" for c in cleaned)


def invalid_token_challenge(reason: str) -> str:
    """The ``WWW-Authenticate`` value for a rejected token (RFC 6750 3.1, ``invalid_token``)."""
    return f'{_challenge()}, error="invalid_token", error_description="{_description(reason)}"'


def _rejected(reason: str) -> AuthenticationFailed:
    return AuthenticationFailed(reason, challenge=invalid_token_challenge(reason))


@cache
def _verifier(path: str) -> Callable[[str], Any]:
    try:
        hook = import_string(path)
    except ImportError as exc:
        raise ImproperlyConfigured(
            f"A2A_TOOLCALL['BEARER_VERIFIER']: cannot import {path!r}: {exc}"
        ) from exc
    if not callable(hook):
        raise ImproperlyConfigured(
            f"A2A_TOOLCALL['BEARER_VERIFIER']: {path!r} is not a function (token) -> user"
        )
    return hook  # type: ignore[no-any-return]


def _presented(request: HttpRequest) -> str | None:
    scheme, _, token = (request.headers.get("Authorization") or "").strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    return token.strip()


class BearerAuthenticator(Authenticator):
    """Bearer tokens from an identity provider, checked by the ``BEARER_VERIFIER`` hook.

    Advertised on the card as an HTTP ``Bearer`` scheme (``BEARER_FORMAT``), and as
    ``openIdConnect`` too when ``OPENID_CONNECT_URL`` names the provider's discovery document.
    """

    scheme = "bearer"

    async def authenticate(self, request: HttpRequest) -> Caller | None:
        token = _presented(request)
        if token is None or token.startswith(KEY_PREFIX):
            return None
        if not token:
            raise _rejected("The Authorization header says Bearer but carries no token")
        path = get_setting("BEARER_VERIFIER")
        if not path:
            raise ImproperlyConfigured(
                "BearerAuthenticator is in A2A_TOOLCALL['AUTHENTICATORS'] but "
                "A2A_TOOLCALL['BEARER_VERIFIER'] is not set: name a function (token) -> user, "
                "such as 'a2a_toolcall.bearer.jwt_verifier' (see docs/security.md)."
            )
        hook = _verifier(str(path))
        try:
            if inspect.iscoroutinefunction(hook):
                user = await hook(token)
            else:
                user = await sync_to_async(hook)(token)
        except AuthenticationFailed as failed:
            raise AuthenticationFailed(
                failed.message,
                challenge=failed.challenge or invalid_token_challenge(failed.message),
            ) from None
        if user is None:
            raise _rejected("Invalid bearer token: it names no user of this site")
        if not getattr(user, "is_active", True):
            raise _rejected("Invalid bearer token: its user is inactive")
        return Caller(
            user=user, scheme=self.scheme, credential=f"bearer token of {user.get_username()}"
        )

    def security_schemes(self) -> dict[str, SecurityScheme]:
        schemes: dict[str, SecurityScheme] = {}
        if url := get_setting("OPENID_CONNECT_URL"):
            schemes["openIdConnect"] = SecurityScheme(
                open_id_connect_security_scheme=OpenIdConnectSecurityScheme(
                    open_id_connect_url=str(url),
                    description="An access token from this OpenID Connect provider, sent as "
                    "Authorization: Bearer <token>.",
                )
            )
        # "Bearer" as registered with IANA (RFC 6750); the a2a-sdk client compares it
        # case-insensitively.
        schemes["bearer"] = SecurityScheme(
            http_auth_security_scheme=HTTPAuthSecurityScheme(
                scheme="Bearer",
                bearer_format=str(get_setting("BEARER_FORMAT") or "") or None,
                description="A bearer token from the identity provider, sent as "
                "Authorization: Bearer <token>.",
            )
        )
        return schemes

    def challenge(self) -> str | None:
        return _challenge()


# --- the JWT verifier ------------------------------------------------------------------------


def _jwt() -> Any:
    try:
        import jwt
    except ImportError as exc:
        raise ImproperlyConfigured(
            'a2a_toolcall.bearer.jwt_verifier needs PyJWT: pip install "a2a-toolcall[jwt]"'
        ) from exc
    return jwt


def _jwt_config() -> dict[str, Any]:
    return {**DEFAULTS["JWT"], **(get_setting("JWT") or {})}


@cache
def _jwks_client(url: str) -> jwt.PyJWKClient:
    # One client per key set: it keeps the fetched set (5 minutes) and the keys by kid, and
    # fetches again when a token names a kid it does not know (the provider rotated its keys).
    return _jwt().PyJWKClient(url, cache_keys=True)  # type: ignore[no-any-return]


def _signing_key(client: jwt.PyJWKClient, token: str) -> Any:
    jwt_module = _jwt()
    kid = jwt_module.get_unverified_header(token).get("kid")
    if kid is not None:
        try:
            return client.get_signing_key(str(kid)).key
        except jwt_module.PyJWKClientConnectionError:
            raise
        except jwt_module.PyJWKClientError:
            raise _rejected(
                f"The bearer token's key (kid {kid!r}) is not in the identity provider's key set"
            ) from None
    # No kid: usable only when the provider has exactly one signing key.
    keys = [key for key in client.get_jwk_set().keys if key.public_key_use in ("sig", None)]
    if len(keys) != 1:
        raise _rejected("The bearer token names no key (kid) and the identity provider has several")
    return keys[0].key


def _reason(exc: Exception) -> str:
    jwt_module = _jwt()
    reasons: list[tuple[type[Exception], str]] = [
        (jwt_module.ExpiredSignatureError, "The bearer token has expired"),
        (jwt_module.ImmatureSignatureError, "The bearer token is not valid yet"),
        (jwt_module.InvalidAudienceError, "The bearer token is for another audience"),
        (jwt_module.InvalidIssuerError, "The bearer token is from another issuer"),
        (jwt_module.InvalidSignatureError, "The bearer token's signature does not verify"),
        (jwt_module.InvalidAlgorithmError, "The bearer token's algorithm is not allowed"),
        (jwt_module.DecodeError, "The bearer token is malformed: not a JWT"),
    ]
    if isinstance(exc, jwt_module.MissingRequiredClaimError):
        return f"The bearer token has no {exc.claim!r} claim"
    for kind, reason in reasons:
        if isinstance(exc, kind):
            return reason
    return f"Invalid bearer token: {exc}"


def _user_for(name: str, *, create: bool) -> Any:
    user_model = get_user_model()
    field = user_model.USERNAME_FIELD
    max_length = getattr(user_model._meta.get_field(field), "max_length", None)
    if max_length is not None and len(name) > max_length:
        raise _rejected(f"The bearer token's user name is longer than {max_length} characters")
    manager = user_model._default_manager
    if not create:
        return manager.filter(**{field: name}).first()
    # get_or_create: two first requests of a new user at once make one row.
    user, created = manager.get_or_create(
        **{field: name}, defaults={"password": make_password(None)}
    )
    if created:
        logger.info("Created user %r for a bearer token", name)
    return user


def jwt_verifier(token: str) -> Any:
    """A ``BEARER_VERIFIER``: the user a JWT from the provider names, or None (sync).

    The signature must verify with a key of ``JWT['JWKS_URL']`` under one of
    ``JWT['ALGORITHMS']``; ``exp`` is required; ``nbf`` and ``iat`` are checked; ``iss`` and
    ``aud`` must match ``JWT['ISSUER']`` and ``JWT['AUDIENCE']`` when these are set; all with
    ``JWT['LEEWAY']`` seconds of clock skew. ``JWT['USERNAME_CLAIM']`` names the user by the
    user model's ``USERNAME_FIELD``; an unknown user is created (with no usable password) when
    ``JWT['CREATE_USERS']`` is on. A rejected token raises AuthenticationFailed saying why.
    """
    jwt_module = _jwt()
    config = _jwt_config()
    url = config["JWKS_URL"]
    if not url:
        raise ImproperlyConfigured(
            "a2a_toolcall.bearer.jwt_verifier: A2A_TOOLCALL['JWT']['JWKS_URL'] is not set: "
            "give the identity provider's key set URL (its discovery document's jwks_uri)."
        )
    issuer, audience, claim = config["ISSUER"], config["AUDIENCE"], config["USERNAME_CLAIM"]
    required = ["exp", *(["iss"] if issuer else []), *(["aud"] if audience else [])]
    try:
        key = _signing_key(_jwks_client(str(url)), token)
        claims = jwt_module.decode(
            token,
            key,
            algorithms=list(config["ALGORITHMS"]),
            issuer=issuer or None,
            audience=audience or None,
            leeway=float(config["LEEWAY"] or 0),
            options={"require": required, "verify_aud": bool(audience)},
        )
    except jwt_module.PyJWKClientConnectionError:
        # The provider is unreachable: not the caller's fault, so no 401 (the view logs it and
        # answers an internal error).
        raise
    except jwt_module.PyJWTError as exc:
        raise _rejected(_reason(exc)) from None
    name = claims.get(claim)
    if isinstance(name, int) and not isinstance(name, bool):
        name = str(name)
    if not isinstance(name, str) or not name:
        raise _rejected(f"The bearer token has no {claim!r} claim naming its user")
    return _user_for(name, create=bool(config["CREATE_USERS"]))
