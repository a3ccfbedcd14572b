"""The Python client: against this project's server and the official SDK's server, both dialects.

Every server here is real (daphne serving the demo project, uvicorn serving the a2a-sdk's
Starlette routes); the demo agent's request "what is 6*7 and the time in Tokyo, wait 1 and
fail" runs four tools in parallel, one slow and one failing.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from a2a_toolcall.client import (
    A2AClient,
    A2AConnectionError,
    ArtifactUpdate,
    ClientEvent,
    Finished,
    InputRequest,
    Narration,
    NotAnA2AServerError,
    Reconnecting,
    RunState,
    StatusChange,
    TaskSnapshot,
    ToolFrame,
    ToolState,
)
from a2a_toolcall.contract import TOOL_CALL_V1_URI, emit_tool_call
from a2a_toolcall.protocol import jsonrpc
from a2a_toolcall.protocol.models import (
    Artifact,
    Message,
    Part,
    Role,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from tests import sdk_server
from tests.live import LiveServer, free_port, live_server
from tests.proxy import TCPProxy

REQUEST = "what is 6*7 and the time in Tokyo, wait 1 and fail"


# --- servers ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ours(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server("memory", tmp_path_factory.mktemp("client")) as running:
        yield running


@pytest.fixture(scope="module")
def sdk_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with sdk_server.running(tmp_path_factory.mktemp("sdk") / "sdk.log") as url:
        yield url


@pytest.fixture(params=["ours", "sdk"])
def server_url(request: pytest.FixtureRequest) -> str:
    if request.param == "ours":
        return str(request.getfixturevalue("ours").url)
    return str(request.getfixturevalue("sdk_url"))


@pytest.fixture(params=["1.0", "0.3"])
async def client(request: pytest.FixtureRequest, server_url: str) -> AsyncIterator[A2AClient]:
    async with A2AClient(server_url, protocol=request.param) as opened:
        yield opened


async def collect(run: Any) -> list[ClientEvent]:
    return [event async for event in run]


def assert_demo_timeline(state: RunState) -> None:
    calls = {call.name: call for call in state.timeline}
    assert sorted(calls) == ["broken", "calculator", "clock", "slow"]
    assert calls["calculator"].state is ToolState.COMPLETED
    assert calls["calculator"].result in (42, 42.0)  # the SDK's protobuf Value makes it a float
    assert calls["broken"].state is ToolState.FAILED
    assert "always fails" in (calls["broken"].error or "")
    assert calls["slow"].state is ToolState.COMPLETED
    assert calls["slow"].args == {"seconds": 1.0}
    assert all(call.frames == 2 for call in calls.values())
    assert not state.timeline.contradictions


# --- streaming -------------------------------------------------------------------------------


async def test_stream_gives_typed_events_and_a_complete_timeline(client: A2AClient) -> None:
    run = client.stream(REQUEST)
    events = await collect(run)
    assert client.dialect == client.protocol

    assert isinstance(events[0], TaskSnapshot)
    assert events[0].task.status.state is TaskState.SUBMITTED
    assert isinstance(events[-1], Finished) and events[-1].state is TaskState.COMPLETED
    narration = [e.text for e in events if isinstance(e, Narration)]
    assert narration[0] == "thinking"
    frames = [e for e in events if isinstance(e, ToolFrame)]
    assert len(frames) == 8
    # Every frame arrives while the task works, each start before its outcome.
    seen: set[str] = set()
    for event in frames:
        if event.frame.phase == "started":
            seen.add(event.frame.tool_call_id)
        else:
            assert event.frame.tool_call_id in seen
    # The slow tool's start reaches the client about a second before its outcome.
    slow = next(c for c in run.state.timeline if c.name == "slow")
    assert slow.duration is not None and slow.duration > 0.8
    assert_demo_timeline(run.state)
    answers = [e for e in events if isinstance(e, ArtifactUpdate)]
    assert answers and "42" in run.state.answer_text and "broken failed" in run.state.answer_text
    assert all(e.task_id == run.task_id for e in events)
    assert run.state.is_terminal


async def test_input_required_is_answered_with_respond(client: A2AClient) -> None:
    run = client.stream("what is 1+1 and ask me")
    events = await collect(run)
    assert isinstance(events[-1], InputRequest)
    assert events[-1].question == "What is your name?"
    assert run.state.state is TaskState.INPUT_REQUIRED
    answer = run.respond("Ada")
    more = await collect(answer)
    assert isinstance(more[-1], Finished) and more[-1].state is TaskState.COMPLETED
    assert "nice to meet you, Ada" in answer.state.answer_text
    assert answer.state is run.state and len(run.state.timeline) == 1


async def test_send_get_and_cancel(client: A2AClient) -> None:
    done = await client.send("what is 2+3")
    assert isinstance(done, Task) and done.status.state is TaskState.COMPLETED
    fetched = await client.get(done.id)
    assert fetched.id == done.id and fetched.status.state is TaskState.COMPLETED

    run = client.stream("wait 30")
    async with run:
        async for event in run:
            if isinstance(event, ToolFrame):
                break
    assert run.task_id is not None
    canceled = await client.cancel(run.task_id)
    if canceled.status.state is not TaskState.CANCELED:  # the SDK answers before it settles
        for _ in range(50):
            await asyncio.sleep(0.1)
            canceled = await client.get(run.task_id)
            if canceled.status.state is TaskState.CANCELED:
                break
    assert canceled.status.state is TaskState.CANCELED


async def test_json_rpc_errors_are_typed(client: A2AClient) -> None:
    with pytest.raises(jsonrpc.TaskNotFoundError):
        await client.get("no-such-task")
    done = await client.send("what is 2+2")
    assert isinstance(done, Task)
    with pytest.raises(jsonrpc.TaskNotCancelableError):
        await client.cancel(done.id)


async def test_resubscribe_resumes_after_the_last_event_seen(ours: LiveServer) -> None:
    async with A2AClient(ours.url) as client:
        run = client.stream("wait 1 and what is 3*3")
        async with run:
            async for event in run:
                if isinstance(event, ToolFrame):
                    break
        first_part = run.state.events
        resumed = client.resubscribe(
            run.task_id or "", last_event_id=run.state.last_event_id, state=run.state
        )
        events = await collect(resumed)
    ids = [int(e.event_id) for e in events if e.event_id]
    # The snapshot has no id; what follows starts right after the last id seen, no gap.
    assert isinstance(events[0], TaskSnapshot)
    assert ids == list(range(ids[0], ids[0] + len(ids)))
    assert first_part >= 3
    assert isinstance(events[-1], Finished)
    assert sum(1 for e in events if isinstance(e, ToolFrame)) == 3  # 4 frames, 1 seen before
    assert {c.state for c in run.state.timeline} == {ToolState.COMPLETED}


async def test_resubscribe_after_the_task_ended_replays_what_was_missed(ours: LiveServer) -> None:
    async with A2AClient(ours.url) as client:
        run = client.stream("wait 1 and what is 3*3")
        async with run:
            async for event in run:
                if isinstance(event, ToolFrame):
                    break
        task_id = run.task_id or ""
        for _ in range(200):
            if (await client.get(task_id)).status.state.is_terminal:
                break
            await asyncio.sleep(0.1)
        # The task ended meanwhile: the server replays the rest after the last id seen.
        resumed = client.resubscribe(
            task_id, last_event_id=run.state.last_event_id, state=run.state
        )
        events = await collect(resumed)
    assert isinstance(events[0], TaskSnapshot)
    assert sum(1 for e in events if isinstance(e, ToolFrame)) == 3  # 4 frames, 1 seen before
    assert isinstance(events[-1], Finished) and events[-1].state is TaskState.COMPLETED
    assert sum(1 for e in events if isinstance(e, Finished)) == 1
    assert {c.state for c in run.state.timeline} == {ToolState.COMPLETED}
    assert len(run.state.timeline) == 2


@pytest.fixture(params=["ours", "sdk"])
def proxied(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TCPProxy]:
    """A server behind a proxy that can cut its connections; the card names the proxy."""
    if request.param == "ours":
        server: LiveServer = request.getfixturevalue("ours")
        with TCPProxy("127.0.0.1", int(server.url.rsplit(":", 1)[1])) as proxy:
            yield proxy
        return
    port = free_port()
    with TCPProxy("127.0.0.1", port) as proxy:
        log = tmp_path_factory.mktemp("sdk-proxied") / "sdk.log"
        with sdk_server.running(log, port=port, public_url=proxy.url):
            yield proxy


async def test_a_dropped_stream_resumes_on_its_own(proxied: TCPProxy) -> None:
    async with A2AClient(proxied.url, reconnect_delay=0.05) as client:
        run = client.stream("wait 1.5 and what is 5*5")
        events: list[ClientEvent] = []
        dropped = False
        async for event in run:
            events.append(event)
            if isinstance(event, ToolFrame) and not dropped:
                dropped = True
                # Whatever the server sends next is lost with the connection.
                proxied.hold()
                assert await asyncio.to_thread(proxied.sever) >= 1
    reconnects = [e for e in events if isinstance(e, Reconnecting)]
    assert len(reconnects) == 1 and reconnects[0].task_id == run.task_id
    frames = [(e.frame.tool_call_id, e.frame.phase) for e in events if isinstance(e, ToolFrame)]
    assert len(frames) == len(set(frames))  # nothing repeated
    if any(e.event_id for e in events):
        # A server that sends SSE ids replays what the client missed: every frame arrives.
        assert len(frames) == 4
    # Without ids (the SDK server), frames sent while the client was away come in the
    # resubscription's task snapshot: the timeline is whole either way.
    assert isinstance(events[-1], Finished) and events[-1].state is TaskState.COMPLETED
    assert len(run.state.timeline) == 2
    assert {c.state for c in run.state.timeline} == {ToolState.COMPLETED}
    ids = [int(e.event_id) for e in events if e.event_id]
    assert ids == sorted(set(ids))  # SSE ids (where the server sends them) never go back


async def test_resubscribe_to_a_finished_task_falls_back_to_get(server_url: str) -> None:
    async with A2AClient(server_url) as client:
        run = client.stream(REQUEST)
        await run.wait()
        again = client.resubscribe(run.task_id or "")
        events = await collect(again)
    assert isinstance(events[0], TaskSnapshot)
    assert isinstance(events[-1], Finished) and events[-1].state is TaskState.COMPLETED
    assert_demo_timeline(again.state)


async def test_list_tasks(ours: LiveServer) -> None:
    async with A2AClient(ours.url, headers={"X-API-Key": ours.api_key()}) as client:
        done = await client.send("what is 9-1")
        assert isinstance(done, Task)
        listed = await client.list_tasks(context_id=done.context_id)
    assert [t.id for t in listed.tasks] == [done.id]


# --- what goes wrong on the way --------------------------------------------------------------


async def test_an_unreachable_server_is_a_connection_error() -> None:
    async with A2AClient(f"http://127.0.0.1:{free_port()}") as client:
        with pytest.raises(A2AConnectionError, match="cannot reach"):
            await client.card()


async def test_a_site_without_a_card_is_not_an_a2a_server(ours: LiveServer) -> None:
    async with A2AClient(ours.url + "/nothing/") as client:
        with pytest.raises(NotAnA2AServerError, match="HTTP 404"):
            await client.card()
    # The admin answers an HTML login page there (after a redirect).
    async with A2AClient(ours.url + "/admin/") as client:
        with pytest.raises(NotAnA2AServerError, match="not JSON"):
            await client.card()


async def test_a_server_that_is_not_http_is_a_connection_error() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]

        async def refuse() -> None:
            conn, _ = await asyncio.to_thread(listener.accept)
            conn.sendall(b"SSH-2.0-OpenSSH\r\n")
            conn.close()

        server = asyncio.create_task(refuse())
        async with A2AClient(f"http://127.0.0.1:{port}") as client:
            with pytest.raises(A2AConnectionError):
                await client.card()
        await server


async def test_the_interface_follows_the_card(ours: LiveServer, sdk_url: str) -> None:
    async with A2AClient(ours.url) as client:
        card = await client.card()
        assert client.dialect == "1.0"
        assert client.endpoint == ours.url + "/a2a/"
        assert TOOL_CALL_V1_URI in [e.uri for e in card.capabilities.extensions or []]
    async with A2AClient(sdk_url + "/.well-known/agent-card.json", protocol="0.3") as client:
        await client.card()
        assert client.dialect == "0.3" and client.endpoint == sdk_url + "/a2a"


# --- the run state, fed directly -------------------------------------------------------------


def _frame_event(frame: dict[str, Any]) -> StreamResponse:
    return StreamResponse(
        artifact_update=TaskArtifactUpdateEvent(
            task_id="t",
            context_id="c",
            artifact=Artifact(
                artifact_id=frame["phase"] + frame["toolCallId"],
                name="tool-call",
                parts=[emit_tool_call(frame)],
            ),
        )
    )


def _status(state: TaskState, text: str | None = None, **meta: Any) -> StreamResponse:
    message = Message(message_id="m", role=Role.AGENT, parts=[Part(text=text)]) if text else None
    return StreamResponse(
        status_update=TaskStatusUpdateEvent(
            task_id="t",
            context_id="c",
            status=TaskStatus(state=state, message=message),
            metadata=meta or None,
        )
    )


def test_run_state_ignores_replayed_frames_and_keeps_order() -> None:
    state = RunState()
    started = {"toolCallId": "a", "name": "calc", "phase": "started", "args": {"x": 1}}
    done = {"toolCallId": "a", "name": "calc", "phase": "completed", "result": 2}
    assert isinstance(state.apply(_status(TaskState.WORKING)), StatusChange)
    narration = state.apply(_status(TaskState.WORKING, "thinking", step="plan", percent=10))
    assert isinstance(narration, Narration) and narration.step == "plan"
    assert narration.percent == 10.0
    assert isinstance(state.apply(_frame_event(started), at=1.0), ToolFrame)
    assert state.apply(_frame_event(started), at=1.5) is None
    assert isinstance(state.apply(_frame_event(done), at=3.0), ToolFrame)
    assert state.apply(_frame_event(done), at=4.0) is None
    call = state.timeline["a"]
    assert call.duration == 2.0 and call.result == 2 and call.frames == 2


def test_run_state_keeps_the_latest_percentage_while_the_task_works() -> None:
    state = RunState()
    assert state.percent is None
    state.apply(_status(TaskState.WORKING, "reading", percent=25))
    state.apply(_status(TaskState.WORKING, "running search"))  # the runtime's own narration
    assert (state.narration, state.percent) == ("running search", 25.0)
    state.apply(_status(TaskState.WORKING, "writing", percent=80.5))
    assert state.percent == 80.5
    state.apply(_status(TaskState.INPUT_REQUIRED, "which one?"))
    assert state.percent is None
    state.apply(_status(TaskState.WORKING, "again", percent=True))  # not a number
    assert state.percent is None
    state.apply(_status(TaskState.WORKING, "again", percent=90))
    state.apply(_status(TaskState.CANCELED))
    assert state.percent is None


def test_a_numbered_step_reaches_the_narration() -> None:
    """The runtime sends ``Progress(step=3)`` as a number; it is not dropped."""
    state = RunState()
    narration = state.apply(_status(TaskState.WORKING, "third", step=3))
    assert isinstance(narration, Narration) and narration.step == 3
    narration = state.apply(_status(TaskState.WORKING, "flag", step=True))
    assert isinstance(narration, Narration) and narration.step is None


def test_a_question_carries_the_choices_the_agent_offers() -> None:
    state = RunState()
    message = Message(
        message_id="q",
        role=Role.AGENT,
        parts=[Part(text="approve charge_card?")],
        metadata={"requestId": "r1", "meta": {"choices": ["approve", "reject"]}},
    )
    event = state.apply(
        StreamResponse(
            status_update=TaskStatusUpdateEvent(
                task_id="t",
                context_id="c",
                status=TaskStatus(state=TaskState.INPUT_REQUIRED, message=message),
            )
        )
    )
    assert isinstance(event, InputRequest)
    assert event.request_id == "r1" and event.choices == ("approve", "reject")
    plain = state.apply(_status(TaskState.INPUT_REQUIRED, "your name?"))
    assert isinstance(plain, InputRequest) and plain.meta is None and plain.choices == ()


async def test_cancel_on_a_run_closes_its_open_rows(ours: LiveServer) -> None:
    """``TaskRun.cancel()`` takes the canceled task in: no row is left running."""
    async with A2AClient(ours.url) as client:
        run = client.stream("wait 30")
        async with run:
            async for event in run:
                if isinstance(event, ToolFrame):
                    break
            task = await run.cancel()
        assert task.status.state is TaskState.CANCELED
        assert run.state.state is TaskState.CANCELED
        (slow,) = run.state.timeline
        assert slow.state is ToolState.FAILED and slow.is_cancelled


def test_run_state_takes_missed_calls_from_a_snapshot_summary() -> None:
    state = RunState()
    state.apply(
        _frame_event({"toolCallId": "a", "name": "slow", "phase": "started", "args": {}}), at=5.0
    )
    summary = {
        "toolCalls": [
            {
                "toolCallId": "a",
                "name": "slow",
                "state": "completed",
                "args": {},
                "result": "ok",
                "durationMs": 900.0,
            },
            {
                "toolCallId": "b",
                "name": "broken",
                "state": "failed",
                "args": {},
                "error": "boom",
                "durationMs": 1.0,
            },
        ]
    }
    task = Task(
        id="t",
        context_id="c",
        status=TaskStatus(state=TaskState.COMPLETED),
        artifacts=[Artifact(artifact_id="ans", name="answer", parts=[Part(text="done")])],
        metadata={TOOL_CALL_V1_URI: summary},
    )
    event = state.apply(StreamResponse(task=task), at=10.0)
    assert isinstance(event, TaskSnapshot)
    assert state.timeline["a"].state is ToolState.COMPLETED
    assert state.timeline["a"].started_at == 5.0  # the live start is kept
    assert state.timeline["b"].state is ToolState.FAILED and state.timeline["b"].error == "boom"
    assert state.answer_text == "done"
    assert isinstance(state.finished_from_task(), Finished)


def test_run_state_joins_appended_answer_chunks() -> None:
    state = RunState()
    for text, append in (("Hello, ", False), ("world", True)):
        state.apply(
            StreamResponse(
                artifact_update=TaskArtifactUpdateEvent(
                    task_id="t",
                    context_id="c",
                    artifact=Artifact(artifact_id="ans", parts=[Part(text=text)]),
                    append=append,
                )
            )
        )
    assert state.answer_text == "Hello, \nworld"
    assert state.apply(_status(TaskState.FAILED, "it broke")) is not None
    assert state.is_terminal and state.status_text == "it broke"


def test_the_client_package_does_not_import_django() -> None:
    import subprocess
    import sys

    code = (
        "import sys, a2a_toolcall.client, a2a_toolcall.client.terminal; "
        "print('django' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert out.stdout.strip() == "False"


def test_the_documented_example_runs(ours: LiveServer, capsys: pytest.CaptureFixture[str]) -> None:
    import re

    doc = (Path(__file__).resolve().parent.parent / "docs" / "client.md").read_text()
    (example,) = re.findall(r"```python\n(.*?)```", doc, flags=re.DOTALL)
    code = example.replace("http://127.0.0.1:8000/", ours.url + "/")
    exec(compile(code, "docs/client.md", "exec"), {"__name__": "example"})
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "... thinking"
    assert "calculator completed" in out
    assert "6*7 = 42; nice to meet you, Ada." in out
    assert out[-1].startswith("calculator completed ")


async def test_an_api_key_goes_where_the_card_says(tmp_path: Path) -> None:
    import httpx

    with live_server(
        "memory", tmp_path, A2A_TEST_ANONYMOUS="0", A2A_TEST_API_KEY_HEADER="X-Agent-Key"
    ) as locked:
        key = locked.api_key()
        sent: list[httpx.Request] = []

        async def record(request: httpx.Request) -> None:
            sent.append(request)

        async with (
            httpx.AsyncClient(event_hooks={"request": [record]}) as http,
            A2AClient(locked.url, api_key=key, http=http) as client,
        ):
            done = await client.send("what is 9-1")
            assert isinstance(done, Task) and done.status.state is TaskState.COMPLETED
        posts = [r for r in sent if r.method == "POST"]
        assert posts and all(r.headers["X-Agent-Key"] == key for r in posts)
        assert all("X-API-Key" not in r.headers for r in posts)
        async with A2AClient(locked.url, token=key) as client:
            # A key is a bearer token too: "Authorization: Bearer <key>".
            assert (await client.list_tasks()).tasks[0].id == done.id
