"""A test identity provider: an RSA key, its JWKS and OpenID discovery document over real HTTP,
and access tokens signed with it.

    with IdentityProvider() as idp:
        settings = {**idp.a2a_settings(), "AUTHENTICATORS": [...]}
        token = idp.token("alice")

The key set is served by ``http.server`` on 127.0.0.1 (a free port), so a server in another
process verifies tokens against it as it would against a real provider: hand it the settings
through the environment (:meth:`IdentityProvider.env`, read back by :func:`settings_from_env`).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Final

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

AUDIENCE: Final = "a2a-tests"
KID: Final = "test-key-1"
JWKS_PATH: Final = "/jwks.json"
DISCOVERY_PATH: Final = "/.well-known/openid-configuration"


def new_key() -> rsa.RSAPrivateKey:
    """A fresh 2048-bit RSA key (the smallest PyJWT accepts without a warning)."""
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        provider = self.server.provider
        if self.path == JWKS_PATH:
            provider.jwks_requests += 1
            self._json(provider.jwks())
        elif self.path == DISCOVERY_PATH:
            self._json(provider.discovery())
        else:
            self.send_error(404)

    def _json(self, value: Any) -> None:
        body = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read no access log."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    provider: IdentityProvider


class IdentityProvider:
    """An OpenID provider for tests: serves its key set while entered (or between ``start``
    and ``stop``) and signs tokens for any subject."""

    def __init__(self, *, audience: str = AUDIENCE, kid: str = KID) -> None:
        self.key = new_key()
        self.other_key = new_key()
        """A key the provider does not publish: tokens it signs fail verification."""
        self.audience = audience
        self.kid = kid
        self.jwks_requests = 0
        """How many times the key set was fetched."""
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # --- the HTTP side ---

    def start(self) -> None:
        """Serve the key set and discovery document on a free port of 127.0.0.1."""
        server = _Server(("127.0.0.1", 0), _Handler)
        server.provider = self
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, name="test-idp", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and release the port."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self) -> IdentityProvider:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The provider's base URL, which is also its issuer."""
        if self._server is None:
            raise RuntimeError("the identity provider is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def issuer(self) -> str:
        return self.url

    @property
    def jwks_url(self) -> str:
        return self.url + JWKS_PATH

    @property
    def discovery_url(self) -> str:
        return self.url + DISCOVERY_PATH

    def jwks(self) -> dict[str, Any]:
        """The published key set: the public half of :attr:`key`."""
        public = json.loads(RSAAlgorithm.to_jwk(self.key.public_key()))
        return {"keys": [{**public, "kid": self.kid, "use": "sig", "alg": "RS256"}]}

    def discovery(self) -> dict[str, Any]:
        """The OpenID Connect discovery document (the members a client of tokens reads)."""
        return {
            "issuer": self.issuer,
            "jwks_uri": self.jwks_url,
            "authorization_endpoint": self.url + "/authorize",
            "token_endpoint": self.url + "/token",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
        }

    # --- tokens ---

    def token(
        self,
        sub: str | None = "alice",
        *,
        audience: str | list[str] | None = None,
        issuer: str | None = None,
        expires_in: float | None = 300,
        not_before: float | None = None,
        kid: str | None = None,
        without_kid: bool = False,
        key: rsa.RSAPrivateKey | None = None,
        **claims: Any,
    ) -> str:
        """A signed access token. ``audience`` and ``issuer`` default to the provider's;
        ``expires_in`` (seconds, negative: already expired; None: no ``exp``), ``not_before``
        (seconds from now), ``kid`` (default: the provider's), ``without_kid`` and ``key`` (e.g.
        :attr:`other_key`) make bad ones; ``claims`` are added as they are."""
        now = int(time.time())
        payload: dict[str, Any] = {
            "iss": issuer if issuer is not None else self.issuer,
            "aud": audience if audience is not None else self.audience,
            "iat": now,
            "jti": uuid.uuid4().hex,
            **claims,
        }
        if sub is not None:
            payload["sub"] = sub
        if expires_in is not None:
            payload["exp"] = now + int(expires_in)
        if not_before is not None:
            payload["nbf"] = now + int(not_before)
        headers = None if without_kid else {"kid": kid or self.kid}
        return jwt.encode(payload, key or self.key, algorithm="RS256", headers=headers)

    # --- settings for the server under test ---

    def jwt_settings(self, **overrides: Any) -> dict[str, Any]:
        """``A2A_TOOLCALL['JWT']`` for this provider."""
        return {
            "JWKS_URL": self.jwks_url,
            "ISSUER": self.issuer,
            "AUDIENCE": self.audience,
            "ALGORITHMS": ["RS256"],
            "USERNAME_CLAIM": "sub",
            "CREATE_USERS": False,
            "LEEWAY": 0,
            **overrides,
        }

    def a2a_settings(self, **jwt_overrides: Any) -> dict[str, Any]:
        """The ``A2A_TOOLCALL`` members that make a site accept this provider's tokens (merge
        them over the site's own, with ``AUTHENTICATORS`` listing the bearer authenticator)."""
        return {
            "BEARER_VERIFIER": "a2a_toolcall.bearer.jwt_verifier",
            "OPENID_CONNECT_URL": self.discovery_url,
            "JWT": self.jwt_settings(**jwt_overrides),
        }

    def env(self, *, create_users: bool = False) -> dict[str, str]:
        """Environment variables carrying :meth:`a2a_settings` to a server in another process
        (its settings call :func:`settings_from_env`)."""
        return {
            "A2A_TEST_JWKS_URL": self.jwks_url,
            "A2A_TEST_JWT_ISSUER": self.issuer,
            "A2A_TEST_JWT_AUDIENCE": self.audience,
            "A2A_TEST_OIDC_URL": self.discovery_url,
            "A2A_TEST_JWT_CREATE_USERS": "1" if create_users else "0",
        }


def settings_from_env(environ: Mapping[str, str]) -> dict[str, Any]:
    """The ``A2A_TOOLCALL`` members :meth:`IdentityProvider.env` describes (empty when it
    describes none), for a test site's settings module."""
    url = environ.get("A2A_TEST_JWKS_URL")
    if not url:
        return {}
    return {
        "BEARER_VERIFIER": "a2a_toolcall.bearer.jwt_verifier",
        "OPENID_CONNECT_URL": environ.get("A2A_TEST_OIDC_URL") or None,
        "JWT": {
            "JWKS_URL": url,
            "ISSUER": environ.get("A2A_TEST_JWT_ISSUER") or None,
            "AUDIENCE": environ.get("A2A_TEST_JWT_AUDIENCE") or None,
            "ALGORITHMS": ["RS256"],
            "USERNAME_CLAIM": "sub",
            "CREATE_USERS": environ.get("A2A_TEST_JWT_CREATE_USERS") == "1",
            "LEEWAY": 0,
        },
    }
