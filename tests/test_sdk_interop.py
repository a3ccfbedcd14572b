"""Interop with the official Python SDK client (a2a-sdk), over its 1.0 and 0.3 transports.

Against a real daphne server in both deployments: SQLite with the in-memory layer (agents in
the web process) and PostgreSQL with Redis (agents in two worker processes). Frames are read
with our ``parse_tool_call`` and stitched with ``ToolTimeline``. Multi-turn exchanges run against
the plain demo agent, the demo site's default agent (the LangGraph assistant: questions through
``interrupt``) and a scripted LangGraph agent that asks twice in one task.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.client.client import Client
from a2a.types import a2a_pb2 as pb
from google.protobuf.json_format import MessageToDict

from a2a_toolcall.contract import TOOL_CALL_V1_URI, ToolTimeline, parse_tool_call
from tests.live import LiveServer, live_server

CONFIGS = ["memory", "redis"]
TRANSPORTS = ["1.0", "0.3"]


@pytest.fixture(scope="module", params=CONFIGS)
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    with live_server(request.param, tmp_path_factory.mktemp(request.param)) as running:
        yield running


async def public_card(server: LiveServer, transport: str) -> pb.AgentCard:
    """The card, fetched without credentials; for 0.3 only its 0.3 interface is left (the SDK
    then talks the 0.3 dialect)."""
    async with httpx.AsyncClient() as http:
        card = await A2ACardResolver(http, server.url).get_agent_card()
    if transport == "0.3":
        legacy = [i for i in card.supported_interfaces if i.protocol_version == "0.3"]
        del card.supported_interfaces[:]
        card.supported_interfaces.extend(legacy)
    return card


@pytest.fixture(params=TRANSPORTS)
async def sdk(request: pytest.FixtureRequest, server: LiveServer) -> AsyncIterator[Client]:
    card = await public_card(server, request.param)
    # One caller throughout, with an API key (ListTasks shows a caller its own tasks only).
    async with httpx.AsyncClient(
        headers={"X-API-Key": server.api_key()}, timeout=httpx.Timeout(30, read=None)
    ) as http:
        client = ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(card)
        yield client
        await client.close()


def user(text: str, **fields: Any) -> pb.SendMessageRequest:
    return pb.SendMessageRequest(
        message=pb.Message(
            message_id=uuid.uuid4().hex, role=pb.ROLE_USER, parts=[pb.Part(text=text)], **fields
        )
    )


def frames_of(events: list[pb.StreamResponse]) -> list[Any]:
    found = []
    for event in events:
        if event.HasField("artifact_update"):
            parts = MessageToDict(event.artifact_update.artifact).get("parts", [])
            frame = parse_tool_call(parts)
            if frame is not None:
                found.append(frame)
    return found


def states(events: list[pb.StreamResponse]) -> list[int]:
    return [e.status_update.status.state for e in events if e.HasField("status_update")]


async def collect(stream: AsyncIterator[pb.StreamResponse]) -> list[pb.StreamResponse]:
    return [event async for event in stream]


async def test_streaming_send_every_started_resolves_once(sdk: Client) -> None:
    events = await asyncio.wait_for(
        collect(sdk.send_message(user("what is 7*6 and the time in Paris and fail"))), 60
    )
    assert events[0].HasField("task")
    assert states(events)[0] == pb.TASK_STATE_WORKING
    assert states(events)[-1] == pb.TASK_STATE_COMPLETED
    frames = frames_of(events)
    assert [f.phase for f in frames[:3]] == ["started"] * 3
    timeline = ToolTimeline(frames)
    assert len(timeline) == 3 and not timeline.pending and not timeline.contradictions
    assert sorted(f.phase for f in frames).count("started") == 3
    assert {c.name: c.state.value for c in timeline} == {
        "calculator": "completed",
        "clock": "completed",
        "broken": "failed",
    }


async def test_blocking_send_get_and_list(sdk: Client, server: LiveServer) -> None:
    blocking = ClientFactory(
        ClientConfig(streaming=False, httpx_client=sdk._transport.httpx_client)  # type: ignore[attr-defined]
    ).create(sdk._card)  # type: ignore[attr-defined]
    try:
        (event,) = await collect(blocking.send_message(user("what is 9-4")))
    finally:
        await blocking.close()
    task = event.task
    assert task.status.state == pb.TASK_STATE_COMPLETED
    assert [a.name for a in task.artifacts] == ["answer"]
    assert task.artifacts[0].parts[0].text == "9-4 = 5."
    got = await sdk.get_task(pb.GetTaskRequest(id=task.id))
    assert got.status.state == pb.TASK_STATE_COMPLETED and got.id == task.id
    if sdk._transport.__class__.__name__ != "CompatJsonRpcTransport":  # type: ignore[attr-defined]
        listed = await sdk.list_tasks(pb.ListTasksRequest(context_id=task.context_id))
        assert [t.id for t in listed.tasks] == [task.id]


async def test_push_notification_config_methods(sdk: Client) -> None:
    events = await asyncio.wait_for(collect(sdk.send_message(user("what is 2+3"))), 60)
    task_id = events[0].task.id
    made = await sdk.create_task_push_notification_config(
        pb.TaskPushNotificationConfig(
            task_id=task_id,
            id="sdk-hook",
            url="https://hooks.example.com/a2a",
            token="t-1",
            authentication=pb.AuthenticationInfo(scheme="Bearer", credentials="s3cret"),
        )
    )
    assert (made.task_id, made.id, made.url, made.token) == (
        task_id,
        "sdk-hook",
        "https://hooks.example.com/a2a",
        "t-1",
    )
    assert (made.authentication.scheme, made.authentication.credentials) == ("Bearer", "s3cret")
    got = await sdk.get_task_push_notification_config(
        pb.GetTaskPushNotificationConfigRequest(task_id=task_id, id="sdk-hook")
    )
    assert got.url == made.url and got.id == "sdk-hook"
    listed = await sdk.list_task_push_notification_configs(
        pb.ListTaskPushNotificationConfigsRequest(task_id=task_id)
    )
    assert [c.id for c in listed.configs] == ["sdk-hook"]
    for _ in range(2):  # idempotent
        await sdk.delete_task_push_notification_config(
            pb.DeleteTaskPushNotificationConfigRequest(task_id=task_id, id="sdk-hook")
        )
    listed = await sdk.list_task_push_notification_configs(
        pb.ListTaskPushNotificationConfigsRequest(task_id=task_id)
    )
    assert list(listed.configs) == []
    with pytest.raises(Exception, match="(?i)not found") as missing:
        await sdk.get_task_push_notification_config(
            pb.GetTaskPushNotificationConfigRequest(task_id=task_id, id="sdk-hook")
        )
    assert type(missing.value).__name__ == "TaskNotFoundError"  # -32001, spec 3.1.8


async def test_cancel_mid_stream(sdk: Client) -> None:
    events: list[pb.StreamResponse] = []
    tool_started = asyncio.Event()

    async def read() -> None:
        async for event in sdk.send_message(user("wait 60")):
            events.append(event)
            if frames_of(events):
                tool_started.set()

    reading = asyncio.ensure_future(read())
    async with asyncio.timeout(30):
        await tool_started.wait()
        canceled = await sdk.cancel_task(pb.CancelTaskRequest(id=events[0].task.id))
        await reading  # the stream ends long before the 60 s tool would
    assert canceled.status.state == pb.TASK_STATE_CANCELED
    assert [(f.phase, getattr(f, "error", None)) for f in frames_of(events)] == [
        ("started", None),
        ("failed", "cancelled"),
    ]
    assert states(events)[-1] == pb.TASK_STATE_CANCELED


async def test_resubscribe_after_a_dropped_connection(sdk: Client) -> None:
    seen: list[pb.StreamResponse] = []
    async for event in sdk.send_message(user("wait 1 and what is 2+5")):
        seen.append(event)
        if len(frames_of(seen)) == 2:
            break  # the connection drops while the slow tool runs
    task_id = seen[0].task.id
    resumed = await asyncio.wait_for(
        collect(sdk.subscribe(pb.SubscribeToTaskRequest(id=task_id))), 60
    )
    assert resumed[0].HasField("task")
    assert states(resumed)[-1] == pb.TASK_STATE_COMPLETED
    timeline = ToolTimeline(frames_of(seen) + frames_of(resumed))
    assert len(timeline) == 2 and not timeline.contradictions
    # Without Last-Event-ID the new stream starts at the task snapshot: what happened before it
    # (events the client received but never read) is in the snapshot's tool-call summary.
    snapshot = MessageToDict(resumed[0].task)
    summary = {
        c["toolCallId"]: c["state"]
        for c in snapshot.get("metadata", {}).get(TOOL_CALL_V1_URI, {}).get("toolCalls", [])
    }
    assert all(summary.get(c.tool_call_id) == "completed" for c in timeline.pending)


async def test_multi_turn_input_required(sdk: Client) -> None:
    first = await asyncio.wait_for(collect(sdk.send_message(user("ask me"))), 60)
    assert states(first)[-1] == pb.TASK_STATE_INPUT_REQUIRED
    question = first[-1].status_update.status.message.parts[0].text
    assert question == "What is your name?"
    task = first[0].task
    second = await asyncio.wait_for(
        collect(sdk.send_message(user("Grace", task_id=task.id, context_id=task.context_id))), 60
    )
    assert states(second)[-1] == pb.TASK_STATE_COMPLETED
    answers = [e.artifact_update.artifact for e in second if e.HasField("artifact_update")]
    assert answers[-1].parts[0].text == "nice to meet you, Grace."


@pytest.fixture(scope="module")
def assistant_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server(
        "memory", tmp_path_factory.mktemp("assistant"), A2A_TEST_AGENT="assistant"
    ) as running:
        yield running


async def test_the_langgraph_assistant_streams_live_to_the_sdk_client(
    assistant_server: LiveServer,
) -> None:
    import time

    async with httpx.AsyncClient() as http:
        card = await A2ACardResolver(http, assistant_server.url).get_agent_card()
    client = ClientFactory(ClientConfig(streaming=True)).create(card)
    arrivals: list[tuple[float, pb.StreamResponse]] = []
    try:
        async for event in client.send_message(user("what is 6*7 and wait 2 and fail")):
            arrivals.append((time.monotonic(), event))
    finally:
        await client.close()
    events = [e for _, e in arrivals]
    narration = [
        e.status_update.status.message.parts[0].text
        for e in events
        if e.HasField("status_update") and e.status_update.status.message.parts
    ]
    assert narration[0] == "thinking"
    assert narration[1] == "running calculator; running slow; running broken"
    first_started = next(i for i, e in enumerate(events) if frames_of([e]))
    thinking_at = next(
        i
        for i, e in enumerate(events)
        if e.HasField("status_update") and e.status_update.status.message.parts
    )
    assert thinking_at < first_started  # motion before the planner's first decision
    timed = [(t, f) for t, e in arrivals for f in frames_of([e])]
    when = {(f.phase, f.name): t for t, f in timed}
    # The slow tool's start reached the client while the tool was still sleeping (2 s).
    assert when[("completed", "slow")] - when[("started", "slow")] > 1.5
    # The fast tools resolved live, long before the slow one.
    assert when[("completed", "calculator")] < when[("completed", "slow")] - 1.0
    assert when[("failed", "broken")] < when[("completed", "slow")] - 1.0
    assert states(events)[-1] == pb.TASK_STATE_COMPLETED


# --- the default demo agent (the LangGraph assistant) asks through interrupt ------------------


@pytest.fixture(scope="module")
def assistant_on_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server(
        "redis", tmp_path_factory.mktemp("assistant-redis"), A2A_TEST_AGENT="assistant"
    ) as running:
        yield running


@pytest.fixture(params=[(c, t) for c in CONFIGS for t in TRANSPORTS], ids="-".join)
async def assistant_sdk(request: pytest.FixtureRequest) -> AsyncIterator[Client]:
    """The SDK client, against the demo site's default agent ("assistant")."""
    config, transport = request.param
    server: LiveServer = request.getfixturevalue(
        "assistant_server" if config == "memory" else "assistant_on_redis"
    )
    card = await public_card(server, transport)
    client = ClientFactory(ClientConfig(streaming=True)).create(card)
    yield client
    await client.close()


def question_of(events: list[pb.StreamResponse]) -> str:
    assert states(events)[-1] == pb.TASK_STATE_INPUT_REQUIRED
    return str(events[-1].status_update.status.message.parts[0].text)


async def send(client: Client, text: str, task: pb.Task | None = None) -> list[pb.StreamResponse]:
    """Stream a message (an answer to ``task`` when given) to its end, within a minute."""
    ids = {"task_id": task.id, "context_id": task.context_id} if task is not None else {}
    return await asyncio.wait_for(collect(client.send_message(user(text, **ids))), 60)


def answer_of(events: list[pb.StreamResponse]) -> str:
    assert states(events)[-1] == pb.TASK_STATE_COMPLETED
    answers = [e.artifact_update.artifact for e in events if e.HasField("artifact_update")]
    return str(answers[-1].parts[0].text)


async def test_the_default_agent_asks_your_name_across_two_requests(assistant_sdk: Client) -> None:
    first = await send(assistant_sdk, "ask me")
    assert question_of(first) == "What is your name?"
    second = await send(assistant_sdk, "Grace", first[0].task)
    assert answer_of(second) == "nice to meet you, Grace."
    # The ask_user tool started before the question and completed with the answer after it.
    assert [(f.phase, f.name) for f in frames_of(first)] == [("started", "ask_user")]
    assert [(f.phase, f.name) for f in frames_of(second)] == [("completed", "ask_user")]
    timeline = ToolTimeline(frames_of(first) + frames_of(second))
    assert not timeline.pending and not timeline.contradictions


async def test_the_default_agent_asks_twice_in_one_task_before_a_charge(
    assistant_sdk: Client,
) -> None:
    first = await send(assistant_sdk, "charge 5 to my card and ask me")
    assert question_of(first) == "approve charge_card(amount=5)? Answer approve or reject."
    second = await send(assistant_sdk, "approve", first[0].task)
    assert question_of(second) == "What is your name?"
    third = await send(assistant_sdk, "Grace", first[0].task)
    text = answer_of(third)
    assert text.startswith("charged 5 EUR (receipt demo-")
    assert text.endswith("; nice to meet you, Grace.")
    timeline = ToolTimeline(frames_of(first) + frames_of(second) + frames_of(third))
    assert {c.name: c.state.value for c in timeline} == {
        "charge_card": "completed",
        "ask_user": "completed",
    }
    assert not timeline.pending and not timeline.contradictions


async def test_the_default_agent_declines_a_rejected_charge(assistant_sdk: Client) -> None:
    first = await send(assistant_sdk, "charge 9 to my card")
    assert question_of(first).startswith("approve charge_card(amount=9)?")
    second = await send(assistant_sdk, "reject", first[0].task)
    assert answer_of(second) == (
        "charge_card was not run: rejected by the user (answered 'reject'); nothing was done."
    )
    (failed,) = frames_of(second)
    assert failed.phase == "failed" and failed.error.startswith("rejected by the user")


@pytest.fixture(scope="module")
def asks_twice_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server(
        "memory",
        tmp_path_factory.mktemp("asks-twice"),
        DJANGO_SETTINGS_MODULE="tests.hitl_settings",
    ) as running:
        yield running


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_langgraph_agent_resumes_twice_in_one_task_across_requests(
    asks_twice_server: LiveServer, transport: str
) -> None:
    async with httpx.AsyncClient() as http:
        card = await A2ACardResolver(http, asks_twice_server.url).get_agent_card()
    if transport == "0.3":
        legacy = [i for i in card.supported_interfaces if i.protocol_version == "0.3"]
        del card.supported_interfaces[:]
        card.supported_interfaces.extend(legacy)
    client = ClientFactory(ClientConfig(streaming=True)).create(card)
    try:
        first = await send(client, "ship")
        assert question_of(first) == "Ship it?"
        second = await send(client, "yes", first[0].task)
        assert question_of(second) == "Really?"
        third = await send(client, "sure", first[0].task)
    finally:
        await client.close()
    assert answer_of(third) == "shipped: the user said yes, the user said sure"
    # Each confirm call started before its question and completed in the next request.
    assert [[(f.phase, f.tool_call_id) for f in frames_of(r)] for r in (first, second, third)] == [
        [("started", "confirm-1")],
        [("completed", "confirm-1"), ("started", "confirm-2")],
        [("completed", "confirm-2")],
    ]
