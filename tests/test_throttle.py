"""Limits per caller: the request rate and the running-task cap, refused with HTTP 429."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import caches
from django.test import AsyncClient, override_settings

from a2a_toolcall.apikeys import mint_api_key
from a2a_toolcall.models import Task
from a2a_toolcall.throttle import parse_rate

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("stop_in_process_runtime"),
]


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    caches["default"].clear()
    yield
    caches["default"].clear()


def config(**changes: Any) -> dict[str, Any]:
    return {**settings.A2A_TOOLCALL, "ALLOW_ANONYMOUS": False, **changes}


async def key_for(name: str) -> str:
    user = await get_user_model().objects.acreate(username=name)
    return (await sync_to_async(mint_api_key)(user, "k"))[1]


async def post(method: str, params: dict[str, Any], **headers: str) -> Any:
    body = {"jsonrpc": "2.0", "id": 9, "method": method, "params": params}
    return await AsyncClient().post(
        "/a2a/",
        data=json.dumps(body),
        content_type="application/json",
        headers={"A2A-Version": "1.0", **headers},
    )


def parked(seconds: float = 30) -> dict[str, Any]:
    return {
        "message": {
            "messageId": uuid.uuid4().hex,
            "role": "ROLE_USER",
            "parts": [{"text": f"wait {seconds:g}"}],
        },
        "configuration": {"returnImmediately": True},
    }


@pytest.mark.parametrize(
    ("rate", "parsed"),
    [("120/min", (120, 60)), ("10/s", (10, 1)), ("1000/hour", (1000, 3600)), ("5/10s", (5, 10))],
)
def test_rates_parse(rate: str, parsed: tuple[int, int]) -> None:
    assert parse_rate(rate) == parsed


@pytest.mark.parametrize("rate", ["", "10", "ten/min", "10/fortnight", "0/s", "-1/s"])
def test_bad_rates_are_refused(rate: str) -> None:
    with pytest.raises(ValueError, match="is not a rate"):
        parse_rate(rate)


async def test_the_rate_limit_is_per_caller_with_retry_after() -> None:
    alice, bob = await key_for("alice"), await key_for("bob")
    with override_settings(A2A_TOOLCALL=config(RATE_LIMIT="3/hour")):
        for _ in range(3):
            assert (await post("ListTasks", {}, **{"X-API-Key": alice})).status_code == 200
        refused = await post("ListTasks", {}, **{"X-API-Key": alice})
        assert refused.status_code == 429
        assert 1 <= int(refused["Retry-After"]) <= 3600
        error = refused.json()["error"]
        assert error["code"] == -32029 and refused.json()["id"] == 9
        assert error["data"][0]["reason"] == "RESOURCE_EXHAUSTED"
        assert error["data"][0]["metadata"]["retryAfter"] == refused["Retry-After"]
        before = await Task.objects.acount()
        assert (await post("SendMessage", parked(), **{"X-API-Key": alice})).status_code == 429
        assert await Task.objects.acount() == before
        # Bob has a budget of his own.
        assert (await post("ListTasks", {}, **{"X-API-Key": bob})).status_code == 200


async def test_anonymous_callers_are_counted_by_address() -> None:
    with override_settings(A2A_TOOLCALL=config(RATE_LIMIT="2/hour", ALLOW_ANONYMOUS=True)):
        for _ in range(2):
            assert (await post("ListTasks", {})).status_code == 200
        assert (await post("ListTasks", {})).status_code == 429
        # An API key's user has a budget of its own.
        key = await key_for("carol")
        assert (await post("ListTasks", {}, **{"X-API-Key": key})).status_code == 200


async def test_forwarded_addresses_count_only_behind_trusted_proxies() -> None:
    def via(address: str) -> dict[str, str]:
        return {"X-Forwarded-For": f"{address}, 10.0.0.1"}

    with override_settings(
        A2A_TOOLCALL=config(RATE_LIMIT="1/hour", ALLOW_ANONYMOUS=True, TRUSTED_PROXY_COUNT=2)
    ):
        assert (await post("ListTasks", {}, **via("203.0.113.5"))).status_code == 200
        assert (await post("ListTasks", {}, **via("203.0.113.5"))).status_code == 429
        assert (await post("ListTasks", {}, **via("203.0.113.6"))).status_code == 200
    caches["default"].clear()
    with override_settings(A2A_TOOLCALL=config(RATE_LIMIT="1/hour", ALLOW_ANONYMOUS=True)):
        # Not trusted: the header is ignored and every request is the peer's.
        assert (await post("ListTasks", {}, **via("203.0.113.7"))).status_code == 200
        assert (await post("ListTasks", {}, **via("203.0.113.8"))).status_code == 429


async def test_running_tasks_are_capped_per_owner() -> None:
    alice, bob = await key_for("alice"), await key_for("bob")
    with override_settings(A2A_TOOLCALL=config(MAX_RUNNING_TASKS_PER_OWNER=2)):
        for _ in range(2):
            reply = await post("SendMessage", parked(), **{"X-API-Key": alice})
            assert reply.status_code == 200 and "result" in reply.json(), reply.content
        before = await Task.objects.acount()
        refused = await post("SendMessage", parked(), **{"X-API-Key": alice})
        assert refused.status_code == 429 and refused["Retry-After"] == "5"
        assert refused.json()["error"]["code"] == -32029
        assert await Task.objects.acount() == before
        # Reading is not capped, and another owner is not affected.
        assert (await post("ListTasks", {}, **{"X-API-Key": alice})).status_code == 200
        assert (await post("SendMessage", parked(), **{"X-API-Key": bob})).status_code == 200
        # When one of hers ends, she may start another.
        running = (await post("ListTasks", {}, **{"X-API-Key": alice})).json()["result"]["tasks"]
        cancel = await post("CancelTask", {"id": running[0]["id"]}, **{"X-API-Key": alice})
        assert cancel.json()["result"]["status"]["state"] == "TASK_STATE_CANCELED"
        assert (await post("SendMessage", parked(), **{"X-API-Key": alice})).status_code == 200


async def test_the_cap_counts_every_tenant_of_the_owner() -> None:
    alice = await key_for("alice")
    with override_settings(A2A_TOOLCALL=config(MAX_RUNNING_TASKS_PER_OWNER=1)):
        first = await post("SendMessage", {**parked(), "tenant": "t1"}, **{"X-API-Key": alice})
        assert first.status_code == 200
        for tenant in ("t2", "t1", ""):
            params = {**parked(), **({"tenant": tenant} if tenant else {})}
            refused = await post("SendMessage", params, **{"X-API-Key": alice})
            assert refused.status_code == 429, tenant


async def test_anonymous_callers_without_a_session_are_capped_by_address() -> None:
    def via(address: str) -> dict[str, str]:
        return {"X-Forwarded-For": address}

    with override_settings(
        A2A_TOOLCALL=config(
            MAX_RUNNING_TASKS_PER_OWNER=1, ALLOW_ANONYMOUS=True, TRUSTED_PROXY_COUNT=1
        )
    ):
        assert (await post("SendMessage", parked(), **via("198.51.100.1"))).status_code == 200
        assert (await post("SendMessage", parked(), **via("198.51.100.1"))).status_code == 429
        # Another client is not held back by the first one's tasks.
        assert (await post("SendMessage", parked(), **via("198.51.100.2"))).status_code == 200
        # A made-up session cookie is no session: the same client, the same cap.
        client = AsyncClient()
        client.cookies["sessionid"] = "x" * 32
        forged = await client.post(
            "/a2a/",
            data=json.dumps(
                {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": parked()}
            ),
            content_type="application/json",
            headers={"A2A-Version": "1.0", **via("198.51.100.1")},
        )
        assert forged.status_code == 429
    addresses = {r.client_address async for r in Task.objects.all()}
    assert addresses == {"198.51.100.1", "198.51.100.2"}
