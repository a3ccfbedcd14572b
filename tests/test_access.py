"""Access control at the endpoint: who may call (401 / 403), and whose tasks each caller sees.

In process, against the real views, ORM and in-process runtime: API keys minted as a user would
(``mint_api_key``), sessions from Django's own login, tasks run by the demo agent.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import AsyncClient, override_settings
from django.utils import timezone

from a2a_toolcall.apikeys import mint_api_key
from a2a_toolcall.models import ApiKey, Task, TaskEvent

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("stop_in_process_runtime"),
]

ENDPOINT = "/a2a/"


def config(**changes: Any) -> dict[str, Any]:
    return {**settings.A2A_TOOLCALL, "ALLOW_ANONYMOUS": False, **changes}


@pytest.fixture(autouse=True)
def locked() -> Iterator[None]:
    """Anonymous callers off, as the app's default is."""
    with override_settings(A2A_TOOLCALL=config()):
        yield


def message(text: str = "what is 2+2", **fields: Any) -> dict[str, Any]:
    return {
        "messageId": uuid.uuid4().hex,
        "role": "ROLE_USER",
        "parts": [{"text": text}],
        **fields,
    }


class Caller:
    """A JSON-RPC caller with fixed credentials (headers) or a logged-in session."""

    def __init__(self, client: AsyncClient | None = None, **headers: str) -> None:
        self.client = client or AsyncClient()
        self.headers = headers
        self.ids = 0

    async def raw(self, method: str, params: dict[str, Any], **headers: str) -> Any:
        self.ids += 1
        body = {"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params}
        return await self.client.post(
            ENDPOINT,
            data=json.dumps(body),
            content_type="application/json",
            headers={"A2A-Version": "1.0", **self.headers, **headers},
        )

    async def call(self, method: str, params: dict[str, Any], **headers: str) -> dict[str, Any]:
        response = await self.raw(method, params, **headers)
        assert response.status_code == 200, response.content
        return response.json()  # type: ignore[no-any-return]

    async def result(self, method: str, params: dict[str, Any]) -> Any:
        reply = await self.call(method, params)
        assert "result" in reply, reply
        return reply["result"]

    async def send(self, text: str = "what is 2+2", **fields: Any) -> dict[str, Any]:
        """A finished task (blocking SendMessage)."""
        return (await self.result("SendMessage", {"message": message(text, **fields)}))["task"]


async def user_with_key(name: str, **extra: Any) -> tuple[Any, str]:
    users = get_user_model()
    user = await users.objects.acreate(username=name, **extra)
    _, key = await sync_to_async(mint_api_key)(user, f"{name}'s key")
    return user, key


async def counts() -> tuple[int, int]:
    return await Task.objects.acount(), await TaskEvent.objects.acount()


# --- who may call ------------------------------------------------------------------------------


async def test_no_credentials_is_401_with_a_challenge_and_stores_nothing() -> None:
    before = await counts()
    response = await Caller().raw("SendMessage", {"message": message()})
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    reply = response.json()
    assert reply["id"] == 1 and reply["error"]["code"] == -32041
    assert reply["error"]["data"][0]["reason"] == "UNAUTHENTICATED"
    assert await counts() == before


@pytest.mark.parametrize(
    "method",
    [
        "SendMessage",
        "SendStreamingMessage",
        "GetTask",
        "ListTasks",
        "CancelTask",
        "SubscribeToTask",
    ],
)
async def test_every_method_needs_credentials(method: str) -> None:
    params = {"message": message()} if "Message" in method else {"id": "x"}
    response = await Caller().raw(method, params)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == -32041


@pytest.mark.parametrize(
    "headers",
    [
        {"X-API-Key": "a2a_00000000_not-a-key"},
        {"X-API-Key": "garbage"},
        {"Authorization": "Bearer a2a_00000000_not-a-key"},
    ],
)
async def test_bad_api_keys_are_401(headers: dict[str, str]) -> None:
    await user_with_key("alice")
    before = await counts()
    response = await Caller(**headers).raw("SendMessage", {"message": message()})
    assert response.status_code == 401
    assert "WWW-Authenticate" in response
    assert response.json()["error"]["message"] == "Invalid API key"
    assert await counts() == before


async def test_api_key_in_either_header_is_accepted_and_recorded() -> None:
    alice, key = await user_with_key("alice")
    for headers in ({"X-API-Key": key}, {"Authorization": f"Bearer {key}"}):
        task = await Caller(**headers).send()
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        row = await Task.objects.aget(pk=task["id"])
        assert row.owner_id == alice.pk and row.owner_kind == "user"
        assert row.auth_scheme == "apiKey" and key.split("_")[1] in row.credential
        assert key not in row.credential
    stored = await ApiKey.objects.aget(user=alice)
    assert stored.last_used_at is not None
    assert key not in (stored.digest, stored.prefix)


async def test_revoked_expired_and_inactive_keys_are_refused() -> None:
    _, revoked = await user_with_key("revoked")
    await ApiKey.objects.filter(user__username="revoked").aupdate(revoked=True)
    _, expired = await user_with_key("expired")
    await ApiKey.objects.filter(user__username="expired").aupdate(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    _, inactive = await user_with_key("inactive", is_active=False)
    before = await counts()
    for key, why in (
        (revoked, "revoked"),
        (expired, "expired"),
        (inactive, "inactive"),
    ):
        response = await Caller(**{"X-API-Key": key}).raw("SendMessage", {"message": message()})
        assert response.status_code == 401, key
        assert why in response.json()["error"]["message"]
    assert await counts() == before


async def test_a_key_that_has_not_expired_yet_works() -> None:
    users = get_user_model()
    user = await users.objects.acreate(username="later")
    _, key = await sync_to_async(mint_api_key)(
        user, "k", expires_at=timezone.now() + timedelta(hours=1)
    )
    assert (await Caller(**{"X-API-Key": key}).send())["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_the_permission_hook_refuses_with_403_and_stores_nothing() -> None:
    _, key = await user_with_key("bob")
    before = await counts()
    with override_settings(A2A_TOOLCALL=config(PERMISSION="tests.test_access.needs_perm")):
        response = await Caller(**{"X-API-Key": key}).raw("SendMessage", {"message": message()})
        assert response.status_code == 403
        assert response.json()["error"]["code"] == -32043
        assert response.json()["error"]["data"][0]["reason"] == "PERMISSION_DENIED"
        assert await counts() == before
        # Granted the permission, the same key gets in.
        bob = await get_user_model().objects.aget(username="bob")
        permission = await Permission.objects.aget(codename="view_all_tasks")
        await sync_to_async(bob.user_permissions.add)(permission)
        task = await Caller(**{"X-API-Key": key}).send()
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"


def needs_perm(user: Any, request: Any) -> bool:
    """A PERMISSION hook: a Django permission decides (fresh from the database)."""
    fresh = type(user)._default_manager.get(pk=user.pk)
    return bool(fresh.has_perm("a2a_toolcall.view_all_tasks"))


async def async_hook(user: Any, request: Any) -> bool:
    return str(user.get_username()).startswith("ok")


async def test_an_async_permission_hook() -> None:
    _, good = await user_with_key("ok-carol")
    _, bad = await user_with_key("no-dave")
    with override_settings(A2A_TOOLCALL=config(PERMISSION="tests.test_access.async_hook")):
        assert (await Caller(**{"X-API-Key": good}).raw("ListTasks", {})).status_code == 200
        assert (await Caller(**{"X-API-Key": bad}).raw("ListTasks", {})).status_code == 403


async def test_the_card_stays_public_and_says_how_to_authenticate() -> None:
    response = await AsyncClient().get(
        "/.well-known/agent-card.json", headers={"A2A-Version": "1.0"}
    )
    assert response.status_code == 200
    card = response.json()
    assert card["securitySchemes"] == {
        "apiKey": {
            "apiKeySecurityScheme": {
                "location": "header",
                "name": "X-API-Key",
                "description": card["securitySchemes"]["apiKey"]["apiKeySecurityScheme"][
                    "description"
                ],
            }
        }
    }
    assert card["securityRequirements"] == [{"schemes": {"apiKey": {"list": []}}}]
    legacy = (await AsyncClient().get("/.well-known/agent-card.json")).json()
    assert legacy["securitySchemes"]["apiKey"]["type"] == "apiKey"
    assert legacy["securitySchemes"]["apiKey"]["in"] == "header"
    assert legacy["security"] == [{"apiKey": []}]


async def test_no_authenticators_no_schemes_on_the_card() -> None:
    with override_settings(A2A_TOOLCALL=config(AUTHENTICATORS=[], ALLOW_ANONYMOUS=True)):
        card = (
            await AsyncClient().get("/.well-known/agent-card.json", headers={"A2A-Version": "1.0"})
        ).json()
    assert "securitySchemes" not in card and "securityRequirements" not in card


# --- whose tasks -------------------------------------------------------------------------------


async def test_every_method_sees_only_the_callers_tasks() -> None:
    _, alice_key = await user_with_key("alice")
    _, bob_key = await user_with_key("bob")
    alice = Caller(**{"X-API-Key": alice_key})
    bob = Caller(**{"X-API-Key": bob_key})
    mine = await alice.send()
    asking = await alice.send("ask me")
    assert asking["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    theirs = await bob.send()

    listed = await alice.result("ListTasks", {})
    assert {t["id"] for t in listed["tasks"]} == {mine["id"], asking["id"]}
    assert listed["totalSize"] == 2
    assert [t["id"] for t in (await bob.result("ListTasks", {}))["tasks"]] == [theirs["id"]]

    unknown = str(uuid.uuid4())
    for task_id in (asking["id"], unknown):
        for method in ("GetTask", "CancelTask", "SubscribeToTask"):
            reply = await bob.call(method, {"id": task_id})
            assert reply["error"]["code"] == -32001, (method, reply)
            # Someone else's task answers exactly as an unknown id does.
            assert reply["error"]["message"] == f"Task not found: {task_id}"
        answer = await bob.call("SendMessage", {"message": message("Bob", taskId=task_id)})
        assert answer["error"]["code"] == -32001
        assert answer["error"]["message"] == f"Task not found: {task_id}"
    # Alice's task is untouched: still waiting for her answer, which she can give.
    assert (await alice.result("GetTask", {"id": asking["id"]}))["status"][
        "state"
    ] == "TASK_STATE_INPUT_REQUIRED"
    done = await alice.result("SendMessage", {"message": message("Alice", taskId=asking["id"])})
    assert done["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_a_context_of_another_owner_is_never_joined() -> None:
    _, alice_key = await user_with_key("alice")
    _, bob_key = await user_with_key("bob")
    alice = Caller(**{"X-API-Key": alice_key})
    bob = Caller(**{"X-API-Key": bob_key})
    first = await alice.send()
    before = await counts()
    reply = await bob.call("SendMessage", {"message": message(contextId=first["contextId"])})
    assert reply["error"]["code"] == -32602
    assert reply["error"]["data"][1]["fieldViolations"][0]["field"] == "params.message.contextId"
    assert await counts() == before
    # Her own context she may go on with, and a new context of his own he may name.
    again = await alice.send(contextId=first["contextId"])
    assert again["contextId"] == first["contextId"]
    fresh = f"bob-{uuid.uuid4().hex}"
    assert (await bob.send(contextId=fresh))["contextId"] == fresh
    listed = await alice.result("ListTasks", {"contextId": fresh})
    assert listed["tasks"] == [] and listed["totalSize"] == 0


async def test_the_tenant_is_recorded_and_narrows_the_scope() -> None:
    _, key = await user_with_key("alice")
    alice = Caller(**{"X-API-Key": key})
    task = (await alice.result("SendMessage", {"tenant": "acme", "message": message()}))["task"]
    row = await Task.objects.aget(pk=task["id"])
    assert row.tenant == "acme"
    assert (await alice.result("GetTask", {"id": task["id"], "tenant": "acme"}))["id"] == task["id"]
    other = await alice.call("GetTask", {"id": task["id"], "tenant": "globex"})
    assert other["error"]["code"] == -32001
    listed = await alice.result("ListTasks", {"tenant": "globex"})
    assert listed["tasks"] == []


# --- sessions ------------------------------------------------------------------------------------


async def logged_in(name: str) -> AsyncClient:
    users = get_user_model()
    await sync_to_async(users.objects.create_user)(username=name, password="pw-" + name)
    client = AsyncClient(enforce_csrf_checks=True)
    assert await client.alogin(username=name, password="pw-" + name)
    return client


async def csrf_token(client: AsyncClient) -> str:
    page = await client.get("/live/")
    assert page.status_code == 200
    return str(client.cookies["csrftoken"].value)


async def test_a_session_caller_must_send_the_csrf_token() -> None:
    client = await logged_in("erin")
    token = await csrf_token(client)
    caller = Caller(client)
    before = await counts()
    refused = await caller.raw("SendMessage", {"message": message()})
    assert refused.status_code == 401
    assert "CSRF" in refused.json()["error"]["message"]
    wrong = await caller.raw("SendMessage", {"message": message()}, **{"X-CSRFToken": "x" * 64})
    assert wrong.status_code == 401
    assert await counts() == before
    reply = await caller.call("SendMessage", {"message": message()}, **{"X-CSRFToken": token})
    row = await Task.objects.aget(pk=reply["result"]["task"]["id"])
    assert row.auth_scheme == "session" and row.owner_kind == "user"
    erin = await get_user_model().objects.aget(username="erin")
    assert row.owner_id == erin.pk


async def test_a_session_user_and_the_same_users_key_share_tasks() -> None:
    client = await logged_in("frank")
    token = await csrf_token(client)
    frank = await get_user_model().objects.aget(username="frank")
    _, key = await sync_to_async(mint_api_key)(frank, "cli")
    task = await Caller(**{"X-API-Key": key}).send()
    seen = await Caller(client).call("GetTask", {"id": task["id"]}, **{"X-CSRFToken": token})
    assert seen["result"]["id"] == task["id"]


# --- anonymous callers ---------------------------------------------------------------------------


async def test_anonymous_callers_when_allowed() -> None:
    _, key = await user_with_key("alice")
    with override_settings(A2A_TOOLCALL=config(ALLOW_ANONYMOUS=True)):
        owned = await Caller(**{"X-API-Key": key}).send()
        stranger = Caller()
        task = await stranger.send()
        row = await Task.objects.aget(pk=task["id"])
        assert row.owner_id is None and row.owner_kind == "anonymous" and row.owner_session == ""
        assert row.auth_scheme == "anonymous"
        # Without a session: a task only by its id, and no list at all.
        assert (await Caller().result("GetTask", {"id": task["id"]}))["id"] == task["id"]
        assert (await Caller().result("ListTasks", {}))["tasks"] == []
        # Never a user's task.
        reply = await Caller().call("GetTask", {"id": owned["id"]})
        assert reply["error"]["code"] == -32001
        # Bad credentials are still refused, not taken for anonymous.
        bad = await Caller(**{"X-API-Key": "a2a_00000000_nope"}).raw("ListTasks", {})
        assert bad.status_code == 401


async def test_anonymous_sessions_see_their_own_tasks_only() -> None:
    with override_settings(A2A_TOOLCALL=config(ALLOW_ANONYMOUS=True)):
        one, two = AsyncClient(enforce_csrf_checks=True), AsyncClient(enforce_csrf_checks=True)
        tokens = [await csrf_token(one), await csrf_token(two)]
        assert one.cookies["sessionid"].value != two.cookies["sessionid"].value
        first = Caller(one, **{"X-CSRFToken": tokens[0]})
        second = Caller(two, **{"X-CSRFToken": tokens[1]})
        task = await first.send()
        row = await Task.objects.aget(pk=task["id"])
        assert row.owner_kind == "anonymous" and len(row.owner_session) == 64
        assert one.cookies["sessionid"].value not in row.owner_session
        assert [t["id"] for t in (await first.result("ListTasks", {}))["tasks"]] == [task["id"]]
        assert (await second.result("ListTasks", {}))["tasks"] == []
        assert (await second.call("GetTask", {"id": task["id"]}))["error"]["code"] == -32001
        # A session caller's POST without the token is refused.
        assert (await Caller(one).raw("ListTasks", {})).status_code == 401


# --- the extended card ---------------------------------------------------------------------------


async def test_extended_card_for_authenticated_callers() -> None:
    _, key = await user_with_key("alice")
    extra = {
        "description": "For members: more skills.",
        "skills": [
            {"id": "secret", "name": "Secret", "description": "Members only.", "tags": ["x"]}
        ],
    }
    with override_settings(A2A_TOOLCALL=config(EXTENDED_CARD=extra, ALLOW_ANONYMOUS=True)):
        public = (
            await AsyncClient().get("/.well-known/agent-card.json", headers={"A2A-Version": "1.0"})
        ).json()
        assert public["capabilities"]["extendedAgentCard"] is True
        assert [s["id"] for s in public["skills"]] != ["secret"]
        card = await Caller(**{"X-API-Key": key}).result("GetExtendedAgentCard", {})
        assert card["description"] == "For members: more skills."
        assert [s["id"] for s in card["skills"]] == ["secret"]
        anonymous = await Caller().raw("GetExtendedAgentCard", {})
        assert anonymous.status_code == 401
    without = await Caller(**{"X-API-Key": key}).call("GetExtendedAgentCard", {})
    assert without["error"]["code"] == -32004


async def test_a_site_of_sessions_only_still_names_a_scheme_on_401() -> None:
    with override_settings(
        A2A_TOOLCALL=config(AUTHENTICATORS=["a2a_toolcall.auth.SessionAuthenticator"])
    ):
        response = await Caller().raw("ListTasks", {})
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Session realm="a2a"'
