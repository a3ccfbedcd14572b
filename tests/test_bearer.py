"""Bearer tokens from an identity provider: real JWTs, signed by the test provider
(tests/idp.py) whose key set is fetched over HTTP, sent to the endpoint in process."""

from __future__ import annotations

import json
import re
import sys
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest
from a2a.client.auth.credentials import InMemoryContextCredentialStore
from a2a.client.auth.interceptor import AuthInterceptor
from a2a.client.card_resolver import parse_agent_card
from a2a.client.client import ClientCallContext
from a2a.client.interceptors import BeforeArgs
from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured
from django.test import AsyncClient, override_settings

from a2a_toolcall import bearer
from a2a_toolcall.apikeys import mint_api_key
from a2a_toolcall.auth import AuthenticationFailed
from a2a_toolcall.models import Task
from tests.idp import IdentityProvider, settings_from_env

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("stop_in_process_runtime"),
]

User = get_user_model()

BEARER = "a2a_toolcall.bearer.BearerAuthenticator"
API_KEYS = "a2a_toolcall.apikeys.ApiKeyAuthenticator"
JWT_VERIFIER = "a2a_toolcall.bearer.jwt_verifier"


@pytest.fixture(scope="module")
def idp() -> Iterator[IdentityProvider]:
    with IdentityProvider() as provider:
        yield provider


def configured(
    idp: IdentityProvider,
    *,
    authenticators: tuple[str, ...] = (BEARER,),
    verifier: str | None = JWT_VERIFIER,
    oidc: bool = False,
    **jwt: Any,
) -> override_settings:
    return override_settings(
        A2A_TOOLCALL={
            **settings.A2A_TOOLCALL,
            "DEFAULT_AGENT": "echo",
            "ALLOW_ANONYMOUS": False,
            "AUTHENTICATORS": list(authenticators),
            "BEARER_VERIFIER": verifier,
            "OPENID_CONNECT_URL": idp.discovery_url if oidc else None,
            "JWT": idp.jwt_settings(**jwt),
        }
    )


def rpc(method: str, params: dict[str, Any]) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})


def send_params() -> dict[str, Any]:
    return {
        "message": {
            "messageId": uuid.uuid4().hex,
            "role": "ROLE_USER",
            "parts": [{"text": "hi"}],
        },
        "configuration": {"returnImmediately": True},
    }


async def call(
    method: str = "SendMessage",
    params: dict[str, Any] | None = None,
    *,
    token: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> Any:
    sent = {"A2A-Version": "1.0", **(headers or {})}
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    return await AsyncClient().post(
        "/a2a/",
        data=rpc(method, send_params() if params is None else params),
        content_type="application/json",
        headers=sent,
    )


def challenge_params(value: str) -> tuple[str, dict[str, str]]:
    """A ``WWW-Authenticate`` value's scheme and auth-params (RFC 7235 2.1)."""
    scheme, _, rest = value.partition(" ")
    params = {
        name: re.sub(r"\\(.)", r"\1", quoted)
        for name, quoted in re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', rest)
    }
    return scheme, params


def assert_refused(response: Any, reason: str) -> str:
    """A 401 for a rejected token: the JSON-RPC error and the RFC 6750 challenge agree."""
    assert response.status_code == 401
    error = response.json()["error"]
    assert error["code"] == -32041
    assert reason in error["message"]
    scheme, params = challenge_params(response["WWW-Authenticate"])
    assert scheme == "Bearer"
    assert params == {
        "realm": "a2a",
        "error": "invalid_token",
        "error_description": error["message"],
    }
    return str(error["message"])


async def make_user(name: str, *, active: bool = True) -> Any:
    return await User.objects.acreate(username=name, is_active=active)


# --- accepted tokens --------------------------------------------------------------------------


async def test_a_valid_token_creates_a_task_owned_by_its_user(idp: IdentityProvider) -> None:
    alice, bob = await make_user("alice"), await make_user("bob")
    token = idp.token("alice")
    with configured(idp):
        response = await call(token=token)
        assert response.status_code == 200
        task_id = response.json()["result"]["task"]["id"]
        row = await Task.objects.aget(pk=task_id)
        assert (row.owner_id, row.owner_kind) == (alice.pk, "user")
        assert row.auth_scheme == "bearer"
        assert row.credential == "bearer token of alice"
        # The task is alice's: bob's token does not find it, hers does.
        other = await call("GetTask", {"id": task_id}, token=idp.token("bob"))
        assert other.json()["error"]["code"] == -32001
        mine = await call("GetTask", {"id": task_id}, token=token)
        assert mine.json()["result"]["id"] == task_id
    assert bob.pk != alice.pk


async def test_a_token_without_kid_is_verified_with_the_only_key(idp: IdentityProvider) -> None:
    await make_user("alice")
    with configured(idp):
        response = await call(token=idp.token("alice", without_kid=True))
    assert response.status_code == 200


async def test_the_key_set_is_fetched_once_per_provider() -> None:
    with IdentityProvider() as fresh:
        await make_user("alice")
        with configured(fresh):
            for _ in range(3):
                assert (await call(token=fresh.token("alice"))).status_code == 200
        assert fresh.jwks_requests == 1


# --- refused tokens ---------------------------------------------------------------------------


BAD_TOKENS: list[tuple[str, Callable[[IdentityProvider], str], str]] = [
    ("expired", lambda idp: idp.token("alice", expires_in=-120), "has expired"),
    ("not yet valid", lambda idp: idp.token("alice", not_before=600), "not valid yet"),
    ("wrong audience", lambda idp: idp.token("alice", audience="other-api"), "another audience"),
    ("wrong issuer", lambda idp: idp.token("alice", issuer="https://evil.test"), "another issuer"),
    ("other key", lambda idp: idp.token("alice", key=idp.other_key), "signature does not verify"),
    ("unknown kid", lambda idp: idp.token("alice", kid="rotated-away"), "'rotated-away'"),
    ("no exp", lambda idp: idp.token("alice", expires_in=None), "no 'exp' claim"),
    ("no sub", lambda idp: idp.token(None), "no 'sub' claim"),
    ("not a JWT", lambda idp: "not-a-jwt", "malformed"),
    ("bad segments", lambda idp: "eyJhbGciOi.e30.xx", "malformed"),
]


@pytest.mark.parametrize(
    ("make_token", "reason"), [(m, r) for _, m, r in BAD_TOKENS], ids=[n for n, _, _ in BAD_TOKENS]
)
async def test_a_rejected_token_is_401_invalid_token_and_stores_nothing(
    idp: IdentityProvider, make_token: Callable[[IdentityProvider], str], reason: str
) -> None:
    await make_user("alice")
    with configured(idp):
        response = await call(token=make_token(idp))
    assert_refused(response, reason)
    assert await Task.objects.acount() == 0


async def test_an_empty_bearer_is_refused(idp: IdentityProvider) -> None:
    with configured(idp):
        response = await call(headers={"Authorization": "Bearer "})
    assert_refused(response, "carries no token")


async def test_no_credentials_get_a_bare_challenge(idp: IdentityProvider) -> None:
    # RFC 6750 3.1: no error code when the request carried no token at all.
    with configured(idp):
        response = await call()
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="a2a"'
    assert await Task.objects.acount() == 0


async def test_an_unknown_user_is_refused_unless_users_are_created(idp: IdentityProvider) -> None:
    with configured(idp):
        assert_refused(await call(token=idp.token("carol")), "names no user")
    assert not await User.objects.filter(username="carol").aexists()
    with configured(idp, CREATE_USERS=True):
        response = await call(token=idp.token("carol"))
        assert response.status_code == 200
        # Known from now on: the second request finds the same user.
        assert (await call(token=idp.token("carol"))).status_code == 200
    carol = await User.objects.aget(username="carol")
    assert not carol.has_usable_password()
    owners = {owner async for owner in Task.objects.values_list("owner_id", flat=True)}
    assert owners == {carol.pk}


async def test_a_user_name_longer_than_the_field_is_refused(idp: IdentityProvider) -> None:
    with configured(idp, CREATE_USERS=True):
        assert_refused(await call(token=idp.token("x" * 151)), "longer than 150 characters")
    assert await User.objects.acount() == 0


async def test_an_inactive_user_is_refused(idp: IdentityProvider) -> None:
    await make_user("dave", active=False)
    with configured(idp):
        assert_refused(await call(token=idp.token("dave")), "inactive")
    assert await Task.objects.acount() == 0


async def test_an_unreachable_provider_is_a_server_error_not_a_401(
    caplog: pytest.LogCaptureFixture,
) -> None:
    await make_user("alice")
    with IdentityProvider() as gone:
        token = gone.token("alice")
        jwt = gone.jwt_settings()
        oidc = gone.discovery_url
    # Stopped: its port refuses connections.
    with override_settings(
        A2A_TOOLCALL={
            **settings.A2A_TOOLCALL,
            "ALLOW_ANONYMOUS": False,
            "AUTHENTICATORS": [BEARER],
            "BEARER_VERIFIER": JWT_VERIFIER,
            "OPENID_CONNECT_URL": oidc,
            "JWT": jwt,
        }
    ):
        response = await call(token=token)
    assert response.json()["error"]["code"] == -32603
    assert "A2A request failed" in caplog.text
    assert await Task.objects.acount() == 0


# --- next to API keys -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "authenticators", [(BEARER, API_KEYS), (API_KEYS, BEARER)], ids=["bearer-first", "keys-first"]
)
async def test_an_api_key_as_bearer_goes_to_the_api_key_authenticator(
    idp: IdentityProvider, authenticators: tuple[str, ...]
) -> None:
    alice = await make_user("alice")
    _, key = await sync_to_async(mint_api_key)(alice, "tests")
    with configured(idp, authenticators=authenticators):
        response = await call(token=key)
        assert response.status_code == 200
        row = await Task.objects.aget(pk=response.json()["result"]["task"]["id"])
        assert (row.owner_id, row.auth_scheme) == (alice.pk, "apiKey")
        # A wrong key is refused as a key, not as a JWT.
        refused = await call(token="a2a_deadbeef_not-the-secret")
        assert refused.status_code == 401
        assert refused.json()["error"]["message"] == "Invalid API key"
        # And a JWT still works beside the keys.
        assert (await call(token=idp.token("alice"))).status_code == 200


async def test_an_api_key_is_left_alone_without_the_api_key_authenticator(
    idp: IdentityProvider,
) -> None:
    with configured(idp):
        response = await call(token="a2a_deadbeef_secret")
    assert response.status_code == 401
    assert response.json()["error"]["message"].startswith("Authentication required")
    assert response["WWW-Authenticate"] == 'Bearer realm="a2a"'


# --- custom verifiers -------------------------------------------------------------------------


async def async_verifier(token: str) -> Any:
    """An async BEARER_VERIFIER: 'user:<name>' names a user, 'deny' is refused with a reason."""
    if token == "deny":
        raise AuthenticationFailed('Token "deny" is revoked \\ by policy')
    name = token.removeprefix("user:")
    return await User.objects.filter(username=name).afirst() if name != token else None


def sync_verifier(token: str) -> Any:
    """A sync BEARER_VERIFIER using the ORM: it must be run in a thread."""
    if token == "deny":
        raise AuthenticationFailed('Token "deny" is revoked \\ by policy')
    name = token.removeprefix("user:")
    return User.objects.filter(username=name).first() if name != token else None


@pytest.mark.parametrize(
    "verifier", ["tests.test_bearer.async_verifier", "tests.test_bearer.sync_verifier"]
)
async def test_a_custom_verifier(idp: IdentityProvider, verifier: str) -> None:
    erin = await make_user("erin")
    with configured(idp, verifier=verifier):
        response = await call(token="user:erin")
        assert response.status_code == 200
        row = await Task.objects.aget(pk=response.json()["result"]["task"]["id"])
        assert (row.owner_id, row.auth_scheme) == (erin.pk, "bearer")
        assert_refused(await call(token="user:nobody"), "names no user")
        assert_refused(await call(token="whatever"), "names no user")
        # The verifier's reason reaches the client; the challenge carries it without the
        # characters RFC 6750 forbids in error_description.
        denied = await call(token="deny")
        assert denied.status_code == 401
        assert denied.json()["error"]["message"] == 'Token "deny" is revoked \\ by policy'
        _, params = challenge_params(denied["WWW-Authenticate"])
        assert params["error"] == "invalid_token"
        assert params["error_description"] == "Token 'deny' is revoked / by policy"
    assert await Task.objects.acount() == 1


async def test_a_missing_verifier_is_a_configuration_error(
    idp: IdentityProvider, caplog: pytest.LogCaptureFixture
) -> None:
    with configured(idp, verifier=None):
        response = await call(token=idp.token("alice"))
    assert response.json()["error"]["code"] == -32603
    assert "A2A_TOOLCALL['BEARER_VERIFIER'] is not set" in caplog.text


async def test_a_verifier_that_cannot_be_imported_is_a_configuration_error(
    idp: IdentityProvider, caplog: pytest.LogCaptureFixture
) -> None:
    with configured(idp, verifier="tests.test_bearer.no_such_verifier"):
        response = await call(token=idp.token("alice"))
    assert response.json()["error"]["code"] == -32603
    assert "cannot import 'tests.test_bearer.no_such_verifier'" in caplog.text


def test_the_jwt_verifier_needs_a_key_set(idp: IdentityProvider) -> None:
    with (
        configured(idp, JWKS_URL=None),
        pytest.raises(ImproperlyConfigured, match=r"\['JWT'\]\['JWKS_URL'\] is not set"),
    ):
        bearer.jwt_verifier(idp.token("alice"))


def test_the_jwt_verifier_needs_pyjwt(
    idp: IdentityProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "jwt", None)  # what an uninstalled package looks like
    with configured(idp), pytest.raises(ImproperlyConfigured, match=r"a2a-toolcall\[jwt\]"):
        bearer.jwt_verifier("anything")


# --- the card ---------------------------------------------------------------------------------


async def card() -> dict[str, Any]:
    response = await AsyncClient().get(
        "/.well-known/agent-card.json", headers={"A2A-Version": "1.0"}
    )
    assert response.status_code == 200
    return response.json()  # type: ignore[no-any-return]


async def test_the_card_advertises_bearer(idp: IdentityProvider) -> None:
    with configured(idp):
        served = await card()
    assert served["securitySchemes"] == {
        "bearer": {
            "httpAuthSecurityScheme": {
                "scheme": "Bearer",
                "bearerFormat": "JWT",
                "description": "A bearer token from the identity provider, sent as "
                "Authorization: Bearer <token>.",
            }
        }
    }
    assert [set(r["schemes"]) for r in served["securityRequirements"]] == [{"bearer"}]


async def test_the_card_advertises_openid_connect_when_configured(idp: IdentityProvider) -> None:
    with configured(idp, oidc=True, authenticators=(BEARER, API_KEYS)):
        served = await card()
    schemes = served["securitySchemes"]
    assert set(schemes) == {"openIdConnect", "bearer", "apiKey"}
    assert schemes["openIdConnect"]["openIdConnectSecurityScheme"]["openIdConnectUrl"] == (
        idp.discovery_url
    )
    requirements = [set(r["schemes"]) for r in served["securityRequirements"]]
    assert sorted(map(sorted, requirements)) == [["apiKey"], ["bearer"], ["openIdConnect"]]


@pytest.mark.parametrize("scheme", ["bearer", "openIdConnect"])
async def test_the_sdk_client_sends_the_token_the_card_asks_for(
    idp: IdentityProvider, scheme: str
) -> None:
    # The official a2a-sdk client reads our card and puts its credential for the scheme in
    # the Authorization header; the server takes it.
    await make_user("alice")
    with configured(idp, oidc=True):
        agent_card = parse_agent_card(await card())
        credentials = InMemoryContextCredentialStore()
        await credentials.set_credentials("session-1", scheme, idp.token("alice"))
        args = BeforeArgs(
            input=None,
            method="SendMessage",
            agent_card=agent_card,
            context=ClientCallContext(state={"sessionId": "session-1"}),
        )
        await AuthInterceptor(credentials).before(args)
        assert args.context is not None and args.context.service_parameters is not None
        response = await call(headers=args.context.service_parameters)
    assert response.status_code == 200


def test_settings_travel_to_another_process_through_the_environment(
    idp: IdentityProvider,
) -> None:
    assert settings_from_env({}) == {}
    carried = settings_from_env(idp.env(create_users=True))
    assert carried == idp.a2a_settings(CREATE_USERS=True)
