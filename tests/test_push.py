"""Push notifications (a2a_toolcall.push): the config methods, the outbox and its sender.

In process against the real views, ORM, runtime and sender (the methods, the URL rules at the
edge and at delivery, the admin), and end to end against real servers with a real HTTP receiver
started by the tests (delivery in order through failures, giving up, a restart between
attempts), on SQLite with the in-memory layer and on PostgreSQL with Redis and workers.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
import uuid
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth import get_user_model
from django.test import AsyncClient, override_settings

from a2a_toolcall import push
from a2a_toolcall.checks import check_push_sender, check_settings
from a2a_toolcall.models import PushConfig, PushDelivery, PushSender, Task, TaskEvent
from tests.live import live_server, stream
from tests.receiver import receiving

ENDPOINT = "/a2a/"


def config(**changes: Any) -> dict[str, Any]:
    return {**settings.A2A_TOOLCALL, **changes}


def message(text: str = "what is 2+2", **fields: Any) -> dict[str, Any]:
    return {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}], **fields}


async def rpc(method: str, params: Any, *, version: str = "1.0", **headers: str) -> dict[str, Any]:
    response = await AsyncClient().post(
        ENDPOINT,
        data=json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
        content_type="application/json",
        headers={"A2A-Version": version, **headers},
    )
    return response.json()  # type: ignore[no-any-return]


async def new_task(**configuration: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"message": message()}
    if configuration:
        params["configuration"] = configuration
    reply = await rpc("SendMessage", params)
    assert "result" in reply, reply
    return reply["result"]["task"]  # type: ignore[no-any-return]


def hook(url: str, **fields: Any) -> dict[str, Any]:
    return {"url": url, **fields}


in_process = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("stop_in_process_runtime"),
]


# --- the methods ------------------------------------------------------------------------------


@pytest.mark.parametrize("marks", [0])
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("stop_in_process_runtime")
async def test_create_get_list_delete(marks: int) -> None:
    task = await new_task()
    created = await rpc(
        "CreateTaskPushNotificationConfig",
        {
            "taskId": task["id"],
            "id": "c1",
            "url": "https://hooks.example.com/a2a",
            "token": "tok",
            "authentication": {"scheme": "Bearer", "credentials": "s3cret"},
        },
    )
    assert created["result"] == {
        "id": "c1",
        "taskId": task["id"],
        "url": "https://hooks.example.com/a2a",
        "token": "tok",
        "authentication": {"scheme": "Bearer", "credentials": "s3cret"},
    }
    # Without an id: the task's own (as the official SDK does); snake_case params too (the TCK).
    second = await rpc(
        "CreateTaskPushNotificationConfig", {"task_id": task["id"], "url": "https://h.example.com"}
    )
    assert second["result"]["id"] == task["id"]
    got = await rpc("GetTaskPushNotificationConfig", {"taskId": task["id"], "id": "c1"})
    assert got["result"] == created["result"]
    listed = await rpc("ListTaskPushNotificationConfigs", {"taskId": task["id"], "pageSize": 1})
    assert [c["id"] for c in listed["result"]["configs"]] == ["c1"]
    rest = await rpc(
        "ListTaskPushNotificationConfigs",
        {"taskId": task["id"], "pageToken": listed["result"]["nextPageToken"]},
    )
    assert [c["id"] for c in rest["result"]["configs"]] == [task["id"]]
    assert "nextPageToken" not in rest["result"]
    # Replacing keeps one config per id.
    await rpc(
        "CreateTaskPushNotificationConfig",
        {"taskId": task["id"], "id": "c1", "url": "https://other.example.com/"},
    )
    assert await PushConfig.objects.filter(task_id=task["id"]).acount() == 2
    for _ in range(2):  # idempotent
        deleted = await rpc("DeleteTaskPushNotificationConfig", {"taskId": task["id"], "id": "c1"})
        assert deleted == {"jsonrpc": "2.0", "id": 1, "result": None}
    gone = await rpc("GetTaskPushNotificationConfig", {"taskId": task["id"], "id": "c1"})
    assert gone["error"]["code"] == -32001


@pytest.mark.parametrize(
    ("params", "code", "field"),
    [
        ({"url": "https://h.example.com"}, -32602, "params.taskId"),
        ({"taskId": "missing", "url": "https://h.example.com"}, -32001, None),
        ({"taskId": "{task}"}, -32602, "params.url"),
        ({"taskId": "{task}", "url": "ftp://h.example.com"}, -32602, "params.url"),
        ({"taskId": "{task}", "url": "http://10.0.0.1/"}, -32602, "params.url"),
        ({"taskId": "{task}", "url": "http://169.254.169.254/"}, -32602, "params.url"),
        ({"taskId": "{task}", "url": "http://localhost:9/"}, -32602, "params.url"),
        (
            {"taskId": "{task}", "url": "https://h.example.com", "token": "a\nb"},
            -32602,
            "params.token",
        ),
        (
            {
                "taskId": "{task}",
                "url": "https://h.example.com",
                "authentication": {"scheme": "Bearer x"},
            },
            -32602,
            "params.authentication.scheme",
        ),
        (
            {
                "taskId": "{task}",
                "url": "https://h.example.com",
                "authentication": {"scheme": "Bearer", "credentials": "x\r\nSet-Cookie: a=b"},
            },
            -32602,
            "params.authentication.credentials",
        ),
        ({"taskId": "{task}", "url": "https://h.example.com", "id": " "}, -32602, "params.id"),
    ],
)
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("stop_in_process_runtime")
async def test_bad_configs_are_refused_naming_the_field(
    params: dict[str, Any], code: int, field: str | None
) -> None:
    task = await new_task()
    params = {k: (task["id"] if v == "{task}" else v) for k, v in params.items()}
    with override_settings(A2A_TOOLCALL=config(PUSH_ALLOWED_HOSTS=[])):
        reply = await rpc("CreateTaskPushNotificationConfig", params)
    assert reply["error"]["code"] == code, reply
    if field is not None:
        fields = [v["field"] for d in reply["error"]["data"] for v in d.get("fieldViolations", [])]
        assert field in fields, reply
        assert field in reply["error"]["message"]
    assert await PushConfig.objects.acount() == 0


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("stop_in_process_runtime")
async def test_a_refused_inline_config_creates_no_task() -> None:
    with override_settings(A2A_TOOLCALL=config(PUSH_ALLOWED_HOSTS=[])):
        reply = await rpc(
            "SendMessage",
            {
                "message": message(),
                "configuration": {"taskPushNotificationConfig": hook("http://127.0.0.1:1/")},
            },
        )
    assert reply["error"]["code"] == -32602
    assert "params.configuration.taskPushNotificationConfig.url" in reply["error"]["message"]
    assert await Task.objects.acount() == 0


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("stop_in_process_runtime")
async def test_the_0_3_methods() -> None:
    task = await new_task()
    v03 = {"version": "0.3"}
    made = await rpc(
        "tasks/pushNotificationConfig/set",
        {
            "taskId": task["id"],
            "pushNotificationConfig": {
                "id": "p",
                "url": "https://h.example.com/",
                "authentication": {"schemes": ["Bearer"], "credentials": "c"},
            },
        },
        **v03,
    )
    expected = {
        "taskId": task["id"],
        "pushNotificationConfig": {
            "id": "p",
            "url": "https://h.example.com/",
            "authentication": {"schemes": ["Bearer"], "credentials": "c"},
        },
    }
    assert made["result"] == expected
    got = await rpc(
        "tasks/pushNotificationConfig/get",
        {"id": task["id"], "pushNotificationConfigId": "p"},
        **v03,
    )
    assert got["result"] == expected
    listed = await rpc("tasks/pushNotificationConfig/list", {"id": task["id"]}, **v03)
    assert listed["result"] == [expected]
    deleted = await rpc(
        "tasks/pushNotificationConfig/delete",
        {"id": task["id"], "pushNotificationConfigId": "p"},
        **v03,
    )
    assert deleted["result"] is None
    assert (await rpc("tasks/pushNotificationConfig/list", {"id": task["id"]}, **v03))[
        "result"
    ] == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("stop_in_process_runtime")
async def test_push_off_answers_32003_and_the_card_says_so() -> None:
    task = await new_task()
    with override_settings(A2A_TOOLCALL=config(PUSH_NOTIFICATIONS=False)):
        for method, params in [
            (
                "CreateTaskPushNotificationConfig",
                {"taskId": task["id"], "url": "https://h.example.com"},
            ),
            ("GetTaskPushNotificationConfig", {"taskId": task["id"], "id": "x"}),
            ("ListTaskPushNotificationConfigs", {"taskId": task["id"]}),
            ("DeleteTaskPushNotificationConfig", {"taskId": task["id"], "id": "x"}),
            (
                "SendMessage",
                {
                    "message": message(),
                    "configuration": {"taskPushNotificationConfig": hook("https://h.example.com")},
                },
            ),
        ]:
            assert (await rpc(method, params))["error"]["code"] == -32003, method
        card = (await AsyncClient().get("/.well-known/agent-card.json")).json()
        assert card["capabilities"].get("pushNotifications") is False
    card = (await AsyncClient().get("/.well-known/agent-card.json")).json()
    assert card["capabilities"]["pushNotifications"] is True


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("stop_in_process_runtime")
async def test_configs_belong_to_the_tasks_owner() -> None:
    from a2a_toolcall.apikeys import mint_api_key

    users = get_user_model().objects
    alice = await users.acreate(username=f"alice-{uuid.uuid4().hex[:6]}")
    bob = await users.acreate(username=f"bob-{uuid.uuid4().hex[:6]}")
    alice_key = (await sync_to_async(mint_api_key)(alice, "t"))[1]
    bob_key = (await sync_to_async(mint_api_key)(bob, "t"))[1]
    made = await rpc("SendMessage", {"message": message()}, **{"X-API-Key": alice_key})
    task_id = made["result"]["task"]["id"]
    mine = await rpc(
        "CreateTaskPushNotificationConfig",
        {"taskId": task_id, "id": "a", "url": "https://h.example.com"},
        **{"X-API-Key": alice_key},
    )
    assert "result" in mine
    for method, params in [
        (
            "CreateTaskPushNotificationConfig",
            {"taskId": task_id, "url": "https://evil.example.com"},
        ),
        ("GetTaskPushNotificationConfig", {"taskId": task_id, "id": "a"}),
        ("ListTaskPushNotificationConfigs", {"taskId": task_id}),
        ("DeleteTaskPushNotificationConfig", {"taskId": task_id, "id": "a"}),
    ]:
        reply = await rpc(method, params, **{"X-API-Key": bob_key})
        assert reply["error"]["code"] == -32001, (method, reply)
    assert await PushConfig.objects.filter(task_id=task_id).acount() == 1


# --- delivery, in process ---------------------------------------------------------------------


async def wait_for(condition: Any, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not await condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


async def deliveries(task_id: str) -> list[PushDelivery]:
    return [d async for d in PushDelivery.objects.filter(task_id=task_id).order_by("id")]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("stop_in_process_runtime")
@pytest.mark.parametrize("record", [True, False])
async def test_every_event_goes_out_once_in_order(record: bool) -> None:
    with receiving() as receiver, override_settings(A2A_TOOLCALL=config(RECORD_EVENTS=record)):
        task = await new_task(
            taskPushNotificationConfig=hook(receiver.url, token="tok-9"), returnImmediately=False
        )

        async def all_out() -> bool:
            rows = await deliveries(task["id"])
            return bool(rows) and all(d.status == PushDelivery.Status.DELIVERED for d in rows)

        await wait_for(all_out)
        rows = await deliveries(task["id"])
    bodies = [r.json() for r in receiver.received]
    assert bodies == [d.body for d in rows]
    assert [d.seq for d in rows] == list(range(1, len(rows) + 1))
    assert (
        "task" in bodies[0]
        and bodies[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    )
    if record:
        logged = [
            e.data async for e in TaskEvent.objects.filter(task_id=task["id"]).order_by("seq")
        ]
        assert bodies == logged
    for got in receiver.received:
        assert got.headers["content-type"] == "application/a2a+json"
        assert got.headers["x-a2a-notification-token"] == "tok-9"
        assert "authorization" not in got.headers


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("stop_in_process_runtime")
async def test_dns_that_turns_private_after_creation_is_refused_at_delivery(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answers = iter(["93.184.215.14"] + ["10.0.0.7"] * 100)

    async def resolver(host: str, port: Any, **kwargs: Any) -> list[Any]:
        assert host == "hooks.example.test"
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (next(answers), port))]

    monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", resolver)
    with override_settings(A2A_TOOLCALL=config(PUSH_ALLOWED_HOSTS=[], PUSH_MAX_ATTEMPTS=2)):
        task = await new_task(taskPushNotificationConfig=hook("http://hooks.example.test/h"))

        async def given_up() -> bool:
            rows = await deliveries(task["id"])
            return bool(rows) and all(d.status == PushDelivery.Status.FAILED for d in rows)

        await wait_for(given_up)
    for row in await deliveries(task["id"]):
        assert row.attempts == 2 and row.response_code is None
        assert "resolves to 10.0.0.7" in row.last_error and "gave up after 2" in row.last_error


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("stop_in_process_runtime")
async def test_a_redirect_is_a_failed_attempt_and_is_not_followed() -> None:
    with receiving() as elsewhere, receiving(lambda n: ("redirect", elsewhere.url)) as hook_:
        with override_settings(A2A_TOOLCALL=config(PUSH_MAX_ATTEMPTS=2)):
            task = await new_task(taskPushNotificationConfig=hook(hook_.url))

            async def given_up() -> bool:
                rows = await deliveries(task["id"])
                return bool(rows) and all(d.status == PushDelivery.Status.FAILED for d in rows)

            await wait_for(given_up)
        assert elsewhere.received == []
    row = (await deliveries(task["id"]))[0]
    assert row.response_code == 302 and "redirects are not followed" in row.last_error


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("stop_in_process_runtime")
async def test_a_webhook_that_never_answers_is_given_up_and_the_admin_says_so() -> None:
    with (
        receiving(lambda n: "hang") as receiver,
        override_settings(
            A2A_TOOLCALL=config(PUSH_TIMEOUT=0.3, PUSH_MAX_ATTEMPTS=3, PUSH_RETRY_DELAY=0.05)
        ),
    ):
        task = await new_task(taskPushNotificationConfig=hook(receiver.url))

        async def first_given_up() -> bool:
            rows = await deliveries(task["id"])
            return bool(rows) and rows[0].status == PushDelivery.Status.FAILED

        await wait_for(first_given_up)
        # In order: the first event's three attempts came before anything else was tried.
        assert [r.json() for r in receiver.received[:3]] == [
            (await deliveries(task["id"]))[0].body
        ] * 3
    first = (await deliveries(task["id"]))[0]
    assert first.attempts == 3
    assert first.last_error == "gave up after 3 attempts: no answer within 0.3 s"

    admin = await get_user_model().objects.acreate(
        username=f"admin-{uuid.uuid4().hex[:6]}", is_staff=True, is_superuser=True
    )
    client = AsyncClient()
    await sync_to_async(client.force_login)(admin)
    listing = await client.get("/admin/a2a_toolcall/pushdelivery/")
    assert listing.status_code == 200
    page = listing.content.decode()
    assert "given up" in page and "no answer within 0.3 s" in page
    task_page = await client.get(f"/admin/a2a_toolcall/task/{task['id']}/change/")
    assert "gave up after 3 attempts" in task_page.content.decode()
    # "Retry now": pending again, its attempts counted from zero, due at once.
    retried = await client.post(
        "/admin/a2a_toolcall/pushdelivery/",
        {"action": "retry_now", "_selected_action": [str(first.pk)]},
    )
    assert retried.status_code == 302
    again = await PushDelivery.objects.aget(pk=first.pk)
    assert again.status == PushDelivery.Status.PENDING and again.attempts == 0


@pytest.mark.django_db(transaction=True)
async def test_the_system_check_says_when_no_sender_runs() -> None:
    from datetime import timedelta

    from django.utils import timezone

    task = await Task.objects.acreate(
        id="t-check", context_id="c", agent="demo", state="TASK_STATE_COMPLETED", status={}
    )
    old = timezone.now() - timedelta(minutes=5)
    await PushDelivery.objects.acreate(
        task=task, seq=1, url="https://h.example.com", body={}, next_attempt_at=old
    )
    found = await sync_to_async(check_push_sender)(databases=["default"])
    assert [m.id for m in found] == ["a2a_toolcall.W016"]
    await PushSender.objects.acreate(id="somewhere", seen_at=timezone.now())
    assert await sync_to_async(check_push_sender)(databases=["default"]) == []
    assert await sync_to_async(check_push_sender)(databases=None) == []


def test_the_settings_are_checked() -> None:
    with override_settings(
        A2A_TOOLCALL=config(PUSH_ALLOWED_HOSTS="127.0.0.1", PUSH_MAX_ATTEMPTS=0, PUSH_SENDER="yes")
    ):
        ids = {m.id for m in check_settings()}
    assert {"a2a_toolcall.E018", "a2a_toolcall.E005", "a2a_toolcall.E011"} <= ids


def test_backoff_doubles_with_jitter_up_to_the_ceiling() -> None:
    import random

    rng = random.Random(7)
    with override_settings(A2A_TOOLCALL=config(PUSH_RETRY_DELAY=1.0, PUSH_RETRY_MAX_DELAY=30.0)):
        for attempts, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (5, 16.0), (6, 30.0), (40, 30.0)]:
            delays = [push.backoff(attempts, rng) for _ in range(50)]
            assert all(ceiling / 2 <= d <= ceiling for d in delays), (attempts, delays)
            assert len(set(delays)) > 1


# --- end to end ---------------------------------------------------------------------------------


def fail_twice(n: int) -> int:
    return 500 if n < 2 else 200


@pytest.mark.parametrize("deployment", ["memory", "redis"])
def test_a_webhook_failing_twice_gets_every_event_in_order_with_its_headers(
    deployment: str, tmp_path: Any
) -> None:
    with receiving(fail_twice) as receiver, live_server(deployment, tmp_path) as server:
        params = {
            "message": message(),
            "configuration": {
                "taskPushNotificationConfig": hook(
                    receiver.url,
                    id="w1",
                    token="tok-1",
                    authentication={"scheme": "Bearer", "credentials": "s3cret"},
                )
            },
        }
        events = list(stream(server, params))
        receiver.wait_for(lambda r: len(r.delivered()) == len(events))
        time.sleep(0.5)  # nothing more comes
    received = receiver.received
    assert [r.answered for r in received] == [500, 500] + [200] * len(events)
    assert [r.json() for r in received[:3]] == [events[0]] * 3  # the first, three times
    assert [r.json() for r in receiver.delivered()] == events  # then every event, in order
    for got in received:
        assert got.path == "/hook"
        assert got.headers["content-type"] == "application/a2a+json"
        assert got.headers["authorization"] == "Bearer s3cret"
        assert got.headers["x-a2a-notification-token"] == "tok-1"


def test_a_restart_between_attempts_loses_nothing(tmp_path: Any) -> None:
    first_fails = lambda n: 500 if n == 0 else 200  # noqa: E731
    with (
        receiving(first_fails) as receiver,
        live_server("memory", tmp_path, A2A_TEST_PUSH_RETRY_DELAY="4") as server,
    ):
        params = {
            "message": message(),
            "configuration": {"taskPushNotificationConfig": hook(receiver.url)},
        }
        events = list(stream(server, params))
        receiver.wait_for(lambda r: len(r.received) >= 1)
        # The first attempt failed; its retry is seconds away. The server goes down hard.
        server.kill_and_restart_web()
        assert receiver.delivered() == []
        receiver.wait_for(lambda r: len(r.delivered()) == len(events), timeout=40)
    assert [r.json() for r in receiver.delivered()] == events


def test_a2a_push_sends_when_the_servers_do_not(tmp_path: Any) -> None:
    with (
        receiving() as receiver,
        live_server("memory", tmp_path, A2A_TEST_PUSH_SENDER="0") as server,
    ):
        params = {
            "message": message(),
            "configuration": {"taskPushNotificationConfig": hook(receiver.url)},
        }
        events = list(stream(server, params))
        time.sleep(1.0)
        assert receiver.received == []  # no sender in the server
        out = server.manage("a2a_push", "--once")
        assert f"{len(events)} delivered" in out
    assert [r.json() for r in receiver.delivered()] == events


def test_the_demo_receiver_gets_a_task_s_events(tmp_path: Any) -> None:
    # docs/push.md's receiver, on the same site: the server notifies itself.
    import httpx

    with live_server("memory", tmp_path) as server:
        webhook = server.url + "/demo/push-receiver/"
        assert httpx.post(webhook, json={"task": {}}).status_code == 401  # no token
        params = {
            "message": message(),
            "configuration": {"taskPushNotificationConfig": hook(webhook, token="receiver-token")},
        }
        events = list(stream(server, params))
        deadline = time.monotonic() + 20
        while True:
            got = httpx.get(webhook, headers={"X-A2A-Notification-Token": "receiver-token"})
            if got.json()["received"] == events or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    assert got.json()["received"] == events


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("stop_in_process_runtime")
async def test_a_dead_sender_s_claim_lapses_and_another_sender_delivers() -> None:
    from datetime import timedelta

    from django.utils import timezone

    with receiving() as receiver, override_settings(A2A_TOOLCALL=config(PUSH_SENDER=False)):
        task = await new_task(taskPushNotificationConfig=hook(receiver.url))
        # A sender that claimed the webhook and died mid-delivery: its claim has lapsed.
        await PushConfig.objects.filter(task_id=task["id"]).aupdate(
            sender_id="gone:1:dead", sender_until=timezone.now() - timedelta(seconds=1)
        )
        sender = push.Sender("another:2:alive")
        while await sender.tick():
            await sender.idle()
        await sender.idle()
    rows = await deliveries(task["id"])
    assert rows and all(d.status == PushDelivery.Status.DELIVERED for d in rows)
    assert [r.json() for r in receiver.received] == [d.body for d in rows]
    config_row = await PushConfig.objects.aget(task_id=task["id"])
    assert config_row.sender_id == "" and config_row.sender_until is None  # released


class _Event:
    """A :class:`a2a_toolcall.store.Pushable`: an event's seq and JSON."""

    def __init__(self, seq: int) -> None:
        self.seq = seq
        self.json = json.dumps({"statusUpdate": {"seq": seq}})


@pytest.mark.django_db(transaction=True)
def test_the_outbox_queues_each_event_for_each_webhook_of_its_task_and_no_other(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from django.db import connection, transaction

    from a2a_toolcall import store

    monkeypatch.setattr(store, "_IN_CHUNK", 2)  # the lookup goes over several chunks
    ids = [f"outbox-{i}" for i in range(5)]
    for task_id in ids:
        Task.objects.create(id=task_id, context_id="c", agent="demo", status={})
    hooks = {
        "outbox-0": ["https://a.example/0", "https://b.example/0"],
        "outbox-2": ["https://a.example/2"],
        "outbox-4": ["https://a.example/4", "https://b.example/4", "https://c.example/4"],
    }
    for task_id, urls in hooks.items():
        for n, url in enumerate(urls):
            PushConfig.objects.create(task_id=task_id, config_id=f"c{n}", url=url)
    writes = [(task_id, [_Event(1), _Event(2)]) for task_id in reversed(ids)]
    writes.append(("outbox-3", []))  # a task with nothing to push
    with override_settings(A2A_TOOLCALL=config(PUSH_NOTIFICATIONS=True)), transaction.atomic():
        queued = store.enqueue_push_sync(connection, writes)
    expected = sorted(
        (c.pk, c.task_id, c.url, seq)
        for c in PushConfig.objects.filter(task_id__in=ids)
        for seq in (1, 2)
    )
    rows = PushDelivery.objects.order_by("config_id", "seq")
    assert queued == len(expected) == 12
    assert [(d.config_id, d.task_id, d.url, d.seq) for d in rows] == expected
    assert all(d.body == {"statusUpdate": {"seq": d.seq}} for d in rows)
    assert all(d.status == PushDelivery.Status.PENDING and d.attempts == 0 for d in rows)
