"""What a stream holds for a reader that falls behind: a hub listener lets its events go past
``STREAM_BUFFER_LIMIT`` and the feed says so (the stream then closes); a hub holds only the
events the database does not have yet, and a feed reads the rest from the store; a stream
resumed with ``Last-Event-ID`` replays what a task did up to its end, even once it ended; check
``a2a_toolcall.W014`` finds an ASGI application without FlowControl.

The end-to-end behaviour, with real servers and clients that stop reading, is in
tests/test_slow_readers.py.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime

import pytest
from django.test import AsyncClient, override_settings

from a2a_toolcall import recorder, store
from a2a_toolcall.bus import Bus
from a2a_toolcall.checks import check_flow_control
from a2a_toolcall.contract import TOOL_CALL_V1_URI
from a2a_toolcall.protocol.models import (
    Message,
    Part,
    Role,
    StreamResponse,
    TaskState,
    TaskStatus,
)
from a2a_toolcall.protocol.sse import SSEDecoder
from a2a_toolcall.recorder import HubListener, TaskHub, _hubs
from a2a_toolcall.service import EventFeed, StreamBehind
from a2a_toolcall.store import LoggedEvent, TaskWrite
from tests.conftest import BOTH_DATABASES

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def status_event(task_id: str, seq: int, text: str = "") -> LoggedEvent:
    response = StreamResponse.model_validate(
        {
            "statusUpdate": {
                "taskId": task_id,
                "contextId": "ctx",
                "status": {
                    "state": "TASK_STATE_WORKING",
                    "message": {
                        "messageId": f"m{seq}",
                        "role": "ROLE_AGENT",
                        "parts": [{"text": text or f"step {seq}"}],
                    },
                },
            }
        }
    )
    return LoggedEvent(seq, response, NOW)


def test_a_listener_lets_its_events_go_past_its_limit() -> None:
    events = [status_event("t", seq, "x" * 200) for seq in range(1, 5)]
    size = len(events[0].json)
    listener = HubListener(limit=2 * size + 10)
    listener.put(events[0])
    listener.put(events[1])
    assert not listener.behind and listener.queued == 2 * size
    assert listener.take() is events[0]
    listener.put(events[2])
    listener.put(events[3])  # three waiting: past the limit
    assert listener.behind and listener.queued == 0 and listener.take() is None
    listener.put(events[0])  # a listener that is behind takes nothing more
    assert listener.take() is None


def test_one_event_larger_than_the_limit_does_not_make_a_listener_behind() -> None:
    big = status_event("t", 1, "y" * 5000)
    listener = HubListener(limit=100)
    listener.put(big)
    assert not listener.behind and listener.take() is big


async def test_a_feed_whose_reader_falls_behind_raises_stream_behind() -> None:
    task_id = str(uuid.uuid4())
    hub = _hubs[task_id] = TaskHub(task_id)
    try:
        first = status_event(task_id, 1)
        limit = 3 * len(first.json)
        async with EventFeed(Bus(), task_id, 0, limit) as feed:
            hub.publish(first)
            assert await feed.next(timeout=1) is first
            for seq in range(2, 8):  # six waiting, the reader busy elsewhere
                hub.publish(status_event(task_id, seq))
            with pytest.raises(StreamBehind) as behind:
                await feed.next(timeout=1)
            assert behind.value.last == 1 and behind.value.limit == limit
            assert not hub.listeners  # the hub no longer holds anything for it
    finally:
        del _hubs[task_id]


@pytest.mark.django_db(transaction=True, databases=BOTH_DATABASES)
async def test_a_hub_lets_written_events_go_and_a_feed_reads_them_from_the_store(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(recorder, "KEEP_WRITTEN", 0)  # none of the written events kept
    task_id = str(uuid.uuid4())
    message = Message(message_id=uuid.uuid4().hex, role=Role.USER, parts=[Part(text="hi")])
    await store.create_task(
        task_id=task_id,
        context_id="ctx",
        agent="echo",
        message=message,
        metadata={},
        status=TaskStatus(state=TaskState.WORKING),
    )
    events = [status_event(task_id, seq) for seq in range(1, 131)]
    hub = _hubs[task_id] = TaskHub(task_id)
    try:
        for event in events:
            hub.publish(event)
        await store.write_batch([TaskWrite(task_id, events[:120])])
        hub.written(120)
        assert [e.seq for e in hub.events] == list(range(121, 131)) and hub.stored == 120
        # A reader from the start gets the 120 the hub let go from the database (in pages),
        # then the hub's own, then what comes next: in order, none twice.
        async with EventFeed(Bus(), task_id, 0, 1 << 20) as feed:
            hub.publish(status_event(task_id, 131))
            seqs = []
            while len(seqs) < 131:
                event = await feed.next(timeout=5)
                assert event is not None
                seqs.append(event.seq)
        assert seqs == list(range(1, 132))
    finally:
        del _hubs[task_id]


def test_a_hub_keeps_its_latest_written_events_up_to_keep_written() -> None:
    task_id = str(uuid.uuid4())
    hub = TaskHub(task_id)
    events = [status_event(task_id, seq) for seq in range(1, 301)]
    for event in events:
        hub.publish(event)
    hub.written(250)
    kept = [e for e in hub.events if e.seq <= 250]
    assert kept and sum(len(e.json) for e in kept) <= recorder.KEEP_WRITTEN
    assert sum(len(e.json) for e in events[: 250 - len(kept)][-1:] + kept) > recorder.KEEP_WRITTEN
    assert [e.seq for e in hub.events] == list(range(hub.stored + 1, 301))
    assert [e.seq for e in hub.backlog(0)] == list(range(hub.stored + 1, 301))
    # A task that just started: everything written is still here for a stream that joins.
    young = TaskHub(str(uuid.uuid4()))
    young.publish(status_event(young.task_id, 1))
    young.written(1)
    assert [e.seq for e in young.events] == [1] and young.stored == 0


@pytest.mark.django_db(transaction=True, databases=BOTH_DATABASES)
@pytest.mark.usefixtures("stop_in_process_runtime")
async def test_a_stream_resumed_after_the_task_ended_replays_the_rest(database: str) -> None:
    client = AsyncClient()
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendStreamingMessage",
        "params": {
            "message": {
                "messageId": uuid.uuid4().hex,
                "role": "ROLE_USER",
                "parts": [{"text": "what is 6*7"}],
            }
        },
    }
    reply = await client.post(
        "/a2a/",
        json.dumps(request),
        content_type="application/json",
        headers={"A2A-Version": "1.0"},
    )
    assert reply.streaming, reply.content
    body = b"".join([chunk async for chunk in reply.streaming_content])  # type: ignore[union-attr]
    events = SSEDecoder().feed(body)
    task_id = events[0].json()["result"]["task"]["id"]
    ids = [int(e.id) for e in events if e.id]
    assert len(ids) > 4

    def subscribe(last_event_id: str | None) -> dict[str, object]:
        headers = {"A2A-Version": "1.0"}
        if last_event_id:
            headers["Last-Event-ID"] = last_event_id
        return {
            "headers": headers,
            "path": "/a2a/",
            "data": json.dumps(
                {"jsonrpc": "2.0", "id": 2, "method": "SubscribeToTask", "params": {"id": task_id}}
            ),
            "content_type": "application/json",
        }

    # Nothing after the end: the task has no more updates.
    for last in (None, str(ids[-1])):
        done = await client.post(**subscribe(last))  # type: ignore[arg-type]
        assert json.loads(done.content)["error"]["code"] == -32004
    # From the middle: the task (without its tool-call summary), then the rest, to the end.
    resumed = await client.post(**subscribe(str(ids[2])))  # type: ignore[arg-type]
    body = b"".join([chunk async for chunk in resumed.streaming_content])  # type: ignore[union-attr]
    replay = SSEDecoder().feed(body)
    snapshot = replay[0].json()["result"]["task"]
    assert TOOL_CALL_V1_URI not in snapshot.get("metadata", {})
    assert [int(e.id) for e in replay[1:] if e.id] == ids[3:]
    assert replay[-1].json()["result"]["statusUpdate"]["status"]["state"] == (
        "TASK_STATE_COMPLETED"
    )


ALL = ["a2a_toolcall.W014", "a2a_toolcall.W015", "a2a_toolcall.W017"]


@pytest.mark.parametrize(
    ("path", "warned"),
    [
        ("tests.asgi_apps.plain", ALL),
        ("tests.asgi_apps.routed_plain", ALL),
        ("tests.asgi_apps.flow_only", ["a2a_toolcall.W015", "a2a_toolcall.W017"]),
        ("tests.asgi_apps.wrapped", ["a2a_toolcall.W017"]),
        ("tests.asgi_apps.routed_wrapped", ["a2a_toolcall.W017"]),
        ("tests.asgi_apps.ours", []),
        ("tests.asgi_apps.routed_ours", []),
        ("project.asgi.application", []),
    ],
)
def test_checks_w014_w015_w017_find_an_asgi_application_without_the_middlewares(
    path: str, warned: list[str]
) -> None:
    with override_settings(ASGI_APPLICATION=path):
        found = [message.id for message in check_flow_control()]
    assert found == warned


def test_check_w017_is_quiet_with_inline_middleware_off() -> None:
    with override_settings(
        ASGI_APPLICATION="tests.asgi_apps.wrapped", A2A_TOOLCALL={"INLINE_MIDDLEWARE": False}
    ):
        assert [message.id for message in check_flow_control()] == []
