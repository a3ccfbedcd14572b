"""API keys kept in the ORM (:class:`~a2a_toolcall.models.ApiKey`): minting and checking.

A key is ``a2a_<prefix>_<secret>``: 8 characters of prefix (stored in clear, to tell keys apart)
and 32 bytes of secret. Only the key's SHA-256 is stored: keys are random and long, so a plain
digest is as safe as a slow password hash and lets a key be found with one indexed lookup.
Clients send it as ``Authorization: Bearer <key>`` or in ``API_KEY_HEADER`` (``X-API-Key``).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
from datetime import datetime, timedelta
from typing import Any, Final

from django.http import HttpRequest
from django.utils import timezone

from a2a_toolcall import models as orm
from a2a_toolcall.auth import AuthenticationFailed, Authenticator, Caller
from a2a_toolcall.conf import get_setting
from a2a_toolcall.protocol.models import (
    APIKeySecurityScheme,
    SecurityScheme,
)

__all__ = [
    "KEY_PREFIX",
    "ApiKeyAuthenticator",
    "averify_api_key",
    "digest",
    "mint_api_key",
    "split_key",
    "verify_api_key",
]

logger = logging.getLogger(__name__)

KEY_PREFIX: Final = "a2a_"
PREFIX_LENGTH: Final = 8
LAST_USED_PRECISION: Final = timedelta(seconds=60)
"""``last_used_at`` is written at most once a minute per key (not one write per request)."""


def digest(key: str) -> str:
    """The stored form of a key."""
    return hashlib.sha256(key.encode()).hexdigest()


def split_key(key: str) -> tuple[str, str] | None:
    """(prefix, secret) of a key of ours, else None."""
    if not key.startswith(KEY_PREFIX):
        return None
    prefix, sep, secret = key[len(KEY_PREFIX) :].partition("_")
    if not sep or len(prefix) != PREFIX_LENGTH or not secret:
        return None
    return prefix, secret


def mint_api_key(
    user: Any, name: str, *, expires_at: datetime | None = None
) -> tuple[orm.ApiKey, str]:
    """Create a key for ``user``; returns the row and the key (the only time it exists)."""
    while True:
        prefix = secrets.token_hex(PREFIX_LENGTH // 2)
        if not orm.ApiKey.objects.filter(prefix=prefix).exists():
            break
    key = f"{KEY_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"
    row = orm.ApiKey.objects.create(
        user=user, name=name, prefix=prefix, digest=digest(key), expires_at=expires_at
    )
    return row, key


def _check(row: orm.ApiKey | None, key: str) -> orm.ApiKey:
    if row is None or not hmac.compare_digest(row.digest, digest(key)):
        raise AuthenticationFailed("Invalid API key", challenge=_challenge())
    if row.revoked:
        raise AuthenticationFailed("This API key has been revoked", challenge=_challenge())
    if row.is_expired:
        raise AuthenticationFailed("This API key has expired", challenge=_challenge())
    if not row.user.is_active:
        raise AuthenticationFailed("This API key's user is inactive", challenge=_challenge())
    return row


def verify_api_key(key: str) -> orm.ApiKey:
    """The usable key row for ``key``; raises AuthenticationFailed (sync)."""
    row = orm.ApiKey.objects.select_related("user").filter(digest=digest(key)).first()
    row = _check(row, key)
    if (now := _touch(row)) is not None:
        orm.ApiKey.objects.filter(pk=row.pk).update(last_used_at=now)
    return row


async def averify_api_key(key: str) -> orm.ApiKey:
    """:func:`verify_api_key`, async."""
    row = await orm.ApiKey.objects.select_related("user").filter(digest=digest(key)).afirst()
    row = _check(row, key)
    if (now := _touch(row)) is not None:
        await orm.ApiKey.objects.filter(pk=row.pk).aupdate(last_used_at=now)
    return row


def _touch(row: orm.ApiKey) -> datetime | None:
    """Set ``last_used_at`` to now if it is due (once a minute): the time to store, else None."""
    now = timezone.now()
    if row.last_used_at is not None and now - row.last_used_at < LAST_USED_PRECISION:
        return None
    row.last_used_at = now
    return now


def _challenge() -> str:
    return 'Bearer realm="a2a"'


def _presented(request: HttpRequest) -> str | None:
    header = str(get_setting("API_KEY_HEADER") or "")
    if header and (value := request.headers.get(header)):
        return value.strip()
    authorization = request.headers.get("Authorization") or ""
    scheme, _, credentials = authorization.partition(" ")
    if scheme.lower() == "bearer" and credentials.strip().startswith(KEY_PREFIX):
        return credentials.strip()
    return None


class ApiKeyAuthenticator(Authenticator):
    """API keys minted in the admin or with ``manage.py a2a_apikey``.

    Recognises ``X-API-Key: <key>`` (``API_KEY_HEADER``) and ``Authorization: Bearer a2a_...``
    (a bearer token that is not a key of ours is left to the next authenticator).
    """

    scheme = "apiKey"

    async def authenticate(self, request: HttpRequest) -> Caller | None:
        key = _presented(request)
        if key is None:
            return None
        row = await averify_api_key(key)
        return Caller(
            user=row.user,
            scheme=self.scheme,
            credential=f"API key {KEY_PREFIX}{row.prefix}_… ({row.name})",
        )

    def security_schemes(self) -> dict[str, SecurityScheme]:
        header = str(get_setting("API_KEY_HEADER") or "")
        schemes: dict[str, SecurityScheme] = {}
        if header:
            schemes["apiKey"] = SecurityScheme(
                api_key_security_scheme=APIKeySecurityScheme(
                    location="header",
                    name=header,
                    description="An API key minted in the admin or with manage.py a2a_apikey.",
                )
            )
        return schemes

    def challenge(self) -> str | None:
        return _challenge()
