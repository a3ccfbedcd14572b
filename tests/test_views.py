"""View details that need no live server: internal errors, card settings, version parsing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import AsyncClient, RequestFactory, override_settings

from a2a_toolcall import store, views
from a2a_toolcall.protocol import jsonrpc

RPC = {"jsonrpc": "2.0", "id": 7, "method": "GetTask", "params": {"id": "t"}}


async def post(body: Any, **headers: str) -> dict[str, Any]:
    response = await AsyncClient().post(
        "/a2a/",
        data=json.dumps(body),
        content_type="application/json",
        headers={"A2A-Version": "1.0", **headers},
    )
    assert response.status_code == 200
    return response.json()  # type: ignore[no-any-return]


async def test_a_failure_in_our_code_is_an_internal_error_without_traceback(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the database went away: secret-connection-string")

    monkeypatch.setattr(store, "get_task", broken)
    reply = await post(RPC)
    assert reply["id"] == 7
    assert reply["error"]["code"] == -32603
    assert reply["error"]["message"] == "Internal error"
    assert "secret" not in json.dumps(reply)
    assert "the database went away" in caplog.text  # logged server-side


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("version", "dialect_error"),
    [
        ("1.0", -32001),
        ("1.0.2", -32001),
        ("0.3", -32601),
        ("0.3.0", -32601),
        ("1.1", -32009),
        ("abc", -32009),
    ],
)
async def test_version_header(version: str, dialect_error: int) -> None:
    # GetTask is a 1.0 method: under 0.3 it is unknown (-32601); unknown versions are -32009.
    reply = await post(RPC, **{"A2A-Version": version})
    assert reply["error"]["code"] == dialect_error


@pytest.mark.django_db(transaction=True)
async def test_version_as_query_parameter() -> None:
    response = await AsyncClient().post(
        "/a2a/?A2A-Version=1.0", data=json.dumps(RPC), content_type="application/json"
    )
    assert response.json()["error"]["code"] == -32001


@pytest.mark.django_db
@override_settings(
    A2A_TOOLCALL={
        "AGENTS": {"demo": "project.agents.demo_agent"},
        "CARD": {
            "name": "Helper",
            "description": "Answers questions.",
            "version": "2.1.0",
            "provider": {"organization": "Example Org", "url": "https://example.org"},
            "skills": [
                {
                    "id": "math",
                    "name": "Math",
                    "description": "Sums.",
                    "tags": ["math"],
                    "examples": ["what is 1+1"],
                }
            ],
            "url": "https://agents.example.org/a2a/",
        },
    }
)
async def test_card_from_settings() -> None:
    card = (await AsyncClient().get("/.well-known/agent-card.json")).json()
    assert card["name"] == "Helper" and card["version"] == "2.1.0"
    assert card["provider"] == {"organization": "Example Org", "url": "https://example.org"}
    assert card["skills"][0]["examples"] == ["what is 1+1"]
    assert card["supportedInterfaces"][0]["url"] == "https://agents.example.org/a2a/"
    assert card["url"] == "https://agents.example.org/a2a/"


def test_declared_oversized_body_is_rejected_before_reading() -> None:
    request = RequestFactory().post("/a2a/", data=b"{}", content_type="application/json")
    request.META["CONTENT_LENGTH"] = str(50 * 1024 * 1024)  # the body is never read
    with pytest.raises(jsonrpc.InvalidRequestError, match="the limit is 1048576"):
        views._body(request)


BAD_REQUESTS = [
    (b"{not json", "application/json", {}, -32700),
    (b"[]", "application/json", {}, -32600),
    (b'{"jsonrpc":"2.0","id":1,"method":"Nope"}', "application/json", {}, -32601),
    (
        b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"role":"X"}}}',
        "application/json",
        {},
        -32602,
    ),
    (b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}', "text/plain", {}, -32005),
    (
        b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}',
        "application/json",
        {"A2A-Version": "9.9"},
        -32009,
    ),
    (
        b'{"jsonrpc":"2.0","id":1,"method":"CancelTask","params":{"id":"done"}}',
        "application/json",
        {},
        -32002,
    ),
    (
        b'{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m",'
        b'"role":"ROLE_USER","taskId":"done","parts":[{"text":"x"}]}}}',
        "application/json",
        {},
        -32004,
    ),
    (
        b'{"jsonrpc":"2.0","id":1,"method":"SubscribeToTask","params":{"id":"done"}}',
        "application/json",
        {},
        -32004,
    ),
    (
        b'{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"missing"}}',
        "application/json",
        {},
        -32001,
    ),
]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("body", "content_type", "headers", "code"), BAD_REQUESTS)
async def test_errors_store_and_publish_nothing(
    monkeypatch: pytest.MonkeyPatch,
    body: bytes,
    content_type: str,
    headers: dict[str, str],
    code: int,
) -> None:
    from a2a_toolcall.layers import InMemoryChannelLayer
    from a2a_toolcall.models import Task

    await Task.objects.acreate(
        id="done",
        context_id="c",
        agent="demo",
        state="TASK_STATE_COMPLETED",
        status={"state": "TASK_STATE_COMPLETED"},
    )
    sent: list[Any] = []

    async def spy(self: Any, *args: Any) -> None:
        sent.append(args)

    monkeypatch.setattr(InMemoryChannelLayer, "send", spy)
    monkeypatch.setattr(InMemoryChannelLayer, "group_send", spy)
    response = await AsyncClient().post(
        "/a2a/", data=body, content_type=content_type, headers={"A2A-Version": "1.0", **headers}
    )
    assert response.json()["error"]["code"] == code
    assert sent == []  # nothing published on the bus
    assert await Task.objects.acount() == 1  # nothing stored
    row = await Task.objects.aget(pk="done")
    assert row.state == "TASK_STATE_COMPLETED" and row.last_seq == 0
