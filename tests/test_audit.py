"""The audit record: real tasks through the endpoint, then the rows, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncGenerator
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.core.management import call_command
from django.test import AsyncClient
from django.utils import timezone

from a2a_toolcall.hygiene import REDACTED, make_cleaner, redact
from a2a_toolcall.models import Task, TaskEvent, ToolCall
from a2a_toolcall.protocol.sse import SSEDecoder
from a2a_toolcall.runtime import AgentInput, Event, Reply
from a2a_toolcall.runtime import ToolCall as Call
from tests.conftest import BOTH_DATABASES

DATABASES = BOTH_DATABASES
pytestmark = [
    pytest.mark.django_db(transaction=True, databases=DATABASES),
    pytest.mark.usefixtures("stop_in_process_runtime"),
]


def rpc(method: str, params: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()


def ask(text: str, **extra: Any) -> dict[str, Any]:
    return {
        "message": {
            "messageId": uuid.uuid4().hex,
            "role": "ROLE_USER",
            "parts": [{"text": text}],
            **extra,
        }
    }


async def stream(
    method: str, params: dict[str, Any], *, stop_after: int | None = None, **headers: str
) -> list[dict[str, Any]]:
    response = await AsyncClient().post(
        "/a2a/",
        data=rpc(method, params),
        content_type="application/json",
        headers={"A2A-Version": "1.0", **headers},
    )
    decoder = SSEDecoder()
    results: list[dict[str, Any]] = []
    content = response.streaming_content  # type: ignore[attr-defined]
    try:
        async for chunk in content:
            for event in decoder.feed(chunk):
                results.append(event.json()["result"])
            if stop_after is not None and len(results) >= stop_after:
                break  # the client goes away
    finally:
        await content.aclose()
    return results


async def logged(task: Task) -> list[dict[str, Any]]:
    """The task's event log, as the streams sent it, in order."""
    log = TaskEvent.objects.filter(task=task).order_by("seq").values_list("data", flat=True)
    return [data async for data in log]


async def until_finished(task_id: str) -> Task:
    for _ in range(400):
        task = await Task.objects.aget(pk=task_id)
        if task.finished_at is not None:
            return task
        await asyncio.sleep(0.025)
    raise AssertionError(f"task {task_id} never finished")


async def test_one_tool_call_row_per_invocation(database: str) -> None:
    events = await stream(
        "SendStreamingMessage", ask("what is 6*7 and the time in Tokyo and wait 0.2 and fail")
    )
    task = await until_finished(events[0]["task"]["id"])
    calls = [c async for c in task.tool_calls.order_by("order")]
    assert [(c.name, c.status) for c in calls] == [
        ("calculator", "completed"),
        ("clock", "completed"),
        ("slow", "completed"),
        ("broken", "failed"),
    ]
    assert calls[0].args == {"expression": "6*7"} and calls[0].result == 42
    assert calls[3].error.startswith("RuntimeError: this tool always fails")
    assert (task.tool_call_count, task.failed_tool_count) == (4, 1)
    assert task.state == "TASK_STATE_COMPLETED" and task.request_text.startswith("what is 6*7")
    # Timestamps are the frames' emission times; durations follow from them.
    frames = [e async for e in TaskEvent.objects.filter(task=task, kind="artifact").order_by("seq")]
    emitted = {}
    for event in frames:
        data = event.data["artifactUpdate"]["artifact"]["parts"][0].get("data", {})
        if "phase" in data:
            emitted[(data["toolCallId"], data["phase"])] = event.emitted_at
    for call in calls:
        assert call.started_at == emitted[(call.tool_call_id, "started")]
        end = emitted[(call.tool_call_id, "completed" if call.status == "completed" else "failed")]
        assert call.finished_at == end
        expected = (end - call.started_at).total_seconds() * 1000
        assert call.duration_ms == pytest.approx(expected, abs=0.01)
    slow = calls[2]
    assert slow.duration_ms is not None and slow.duration_ms >= 200
    # Narration is in the log too, exactly once each, in order.
    narration = [
        e.data["statusUpdate"]["status"].get("message", {}).get("parts", [{}])[0].get("text")
        async for e in TaskEvent.objects.filter(task=task, kind="status").order_by("seq")
    ]
    assert narration[1:3] == [
        "thinking",
        "running calculator; running clock; running slow; running broken",
    ]
    seqs = [s async for s in TaskEvent.objects.filter(task=task).values_list("seq", flat=True)]
    assert sorted(seqs) == list(range(1, task.last_seq + 1))


async def test_frames_taken_in_the_agent_s_turn_are_recorded_as_any(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # On the app's in-memory layer the recorder takes a working task's tool frames inside the
    # agent's own publish (Recorder._take_now); the stream, the event log and the tool-call
    # rows are what they are when it reads them itself.
    from a2a_toolcall.recorder import Recorder

    taken: list[str] = []
    take_now = Recorder._take_now

    def counting(self: Recorder, envelope: Any) -> bool:
        took = take_now(self, envelope)
        if took:
            taken.append(envelope.payload["frame"]["phase"])
        return took

    monkeypatch.setattr(Recorder, "_take_now", counting)
    # The slow tool's result comes while the recorder waits: it is taken in the agent's turn.
    events = await stream("SendStreamingMessage", ask("what is 6*7 and wait 0.2"))
    assert "completed" in taken  # the path under test was taken
    task = await until_finished(events[0]["task"]["id"])
    streamed = [
        e["artifactUpdate"]["artifact"]["parts"][0]["data"]
        for e in events
        if "artifactUpdate" in e and "data" in e["artifactUpdate"]["artifact"]["parts"][0]
    ]
    assert [(f["name"], f["phase"]) for f in streamed] == [
        ("calculator", "started"),
        ("slow", "started"),
        ("calculator", "completed"),
        ("slow", "completed"),
    ]
    assert await logged(task) == events  # the log is the stream, event for event
    calls = [c async for c in task.tool_calls.order_by("order")]
    assert [(c.name, c.status) for c in calls] == [
        ("calculator", "completed"),
        ("slow", "completed"),
    ]
    assert calls[1].duration_ms is not None and calls[1].duration_ms >= 200
    assert (task.tool_call_count, task.state) == (2, "TASK_STATE_COMPLETED")
    seqs = [s async for s in TaskEvent.objects.filter(task=task).values_list("seq", flat=True)]
    assert sorted(seqs) == list(range(1, task.last_seq + 1))


async def test_the_working_status_needs_no_write_of_its_own(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The runtime's claim stored the task as working (StoreClaims.marks_working): the recorder
    # hands the working status out without waiting for a write; the end still waits for one.
    from a2a_toolcall.journal import Journal

    commits: list[str] = []
    commit = Journal.commit

    async def counting(self: Journal, source: Any) -> None:
        commits.append(source.state.value)
        await commit(self, source)

    monkeypatch.setattr(Journal, "commit", counting)
    events = await stream("SendStreamingMessage", ask("what is 6*7"))
    states = [e["statusUpdate"]["status"]["state"] for e in events if "statusUpdate" in e]
    assert states[0] == "TASK_STATE_WORKING" and states[-1] == "TASK_STATE_COMPLETED"
    assert commits and set(commits) == {"TASK_STATE_COMPLETED"}  # none while working
    task = await until_finished(events[0]["task"]["id"])
    assert await logged(task) == events


def test_a_runtime_says_whether_its_claims_store_the_task_as_working() -> None:
    from a2a_toolcall.runtime.runner import Runtime
    from a2a_toolcall.store import StoreClaims

    class Elsewhere:
        async def claim(self, cid: str, runtime_id: str, attempt: int) -> bool:
            return True

    assert Runtime(claims=StoreClaims()).marks_working
    assert not Runtime().marks_working  # the bus's claims store nothing
    assert not Runtime(claims=Elsewhere()).marks_working  # type: ignore[arg-type]


async def test_three_clients_record_nothing_twice(database: str) -> None:
    first = asyncio.ensure_future(stream("SendStreamingMessage", ask("wait 0.5 and what is 1+1")))
    task_id = None
    for _ in range(200):
        task_id = await Task.objects.order_by("-created_at").values_list("id", flat=True).afirst()
        if task_id:
            break
        await asyncio.sleep(0.01)
    assert task_id is not None
    others = [asyncio.ensure_future(stream("SubscribeToTask", {"id": task_id})) for _ in range(2)]
    results = await asyncio.gather(first, *others)
    task = await until_finished(task_id)
    assert all(r[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED" for r in results)
    assert await TaskEvent.objects.filter(task=task).acount() == task.last_seq
    assert await ToolCall.objects.filter(task=task).acount() == 2


async def test_a_task_abandoned_by_its_client_is_complete_afterwards(database: str) -> None:
    events = await stream("SendStreamingMessage", ask("wait 0.3 and what is 2*21"), stop_after=5)
    task = await until_finished(events[0]["task"]["id"])
    assert task.state == "TASK_STATE_COMPLETED"
    assert await ToolCall.objects.filter(task=task, status="completed").acount() == 2
    answer = task.artifacts[0]["parts"][0]["text"]
    assert answer == "slow: waited 0.3 s; 2*21 = 42."


async def test_recording_off_keeps_only_the_task_row(database: str, settings: Any) -> None:
    settings.A2A_TOOLCALL = {**settings.A2A_TOOLCALL, "RECORD_EVENTS": False}
    events = await stream("SendStreamingMessage", ask("what is 6*7 and the time in Tokyo"))
    # The stream is whole: the task, narration, four frames, the answer, COMPLETED.
    frames = [
        e["artifactUpdate"]["artifact"]["parts"][0]["data"]["phase"]
        for e in events
        if "artifactUpdate" in e and e["artifactUpdate"]["artifact"]["name"] == "tool-call"
    ]
    assert frames == ["started", "started", "completed", "completed"]
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    task = await until_finished(events[0]["task"]["id"])
    assert task.state == "TASK_STATE_COMPLETED" and task.last_seq == len(events)
    assert task.artifacts[0]["parts"][0]["text"].startswith("6*7 = 42;")
    assert task.tool_call_count == 2
    assert await TaskEvent.objects.filter(task=task).acount() == 0
    assert await ToolCall.objects.filter(task=task).acount() == 0
    # GetTask answers from the row as usual.
    response = await AsyncClient().post(
        "/a2a/",
        data=rpc("GetTask", {"id": task.id}),
        content_type="application/json",
        headers={"A2A-Version": "1.0"},
    )
    got = json.loads(response.content)["result"]
    assert got["status"]["state"] == "TASK_STATE_COMPLETED" and got["artifacts"] == task.artifacts


SECRET_ARGS = {
    "query": "weather",
    "password": "hunter2",
    "auth": {"Authorization": "Bearer abc", "tokens_used": 3, "access_token": "t0k3n"},
    "items": [{"api-key": "k1"}, {"secret_key": "s"}],
}


async def secretive(task: AgentInput) -> AsyncGenerator[Event, Any]:
    def lookup(**kwargs: Any) -> dict[str, Any]:
        return {"ok": True, "session": {"token": "server-side"}, "blob": "x" * 500}

    result = yield Call("lookup", SECRET_ARGS, run=lookup)
    yield Reply(text="done" if result.ok else "failed")


async def test_secrets_are_redacted_and_sizes_capped_before_storing(
    database: str, settings: Any
) -> None:
    from a2a_toolcall.bus import Bus
    from a2a_toolcall.runtime import Runtime
    from a2a_toolcall.service import TaskService

    settings.A2A_TOOLCALL = {
        **settings.A2A_TOOLCALL,
        "STORED_VALUE_LIMIT": 250,
        "AGENTS": {"secretive": "tests.test_audit.secretive"},
        "DEFAULT_AGENT": "secretive",
    }
    events = await stream("SendStreamingMessage", ask("look it up"))
    task = await until_finished(events[0]["task"]["id"])
    call = await ToolCall.objects.aget(task=task)
    assert call.args["password"] == REDACTED  # type: ignore[index]
    assert call.args["auth"] == {  # type: ignore[index]
        "Authorization": REDACTED,
        "tokens_used": 3,
        "access_token": REDACTED,
    }
    assert call.args["items"] == [{"api-key": REDACTED}, {"secret_key": REDACTED}]  # type: ignore[index]
    assert isinstance(call.result, str)
    assert call.result.endswith("characters in all, the first 250 shown]")
    assert "server-side" not in call.result
    # What the client saw was cleaned the same way: the stream and the record agree.
    streamed = next(e for e in events if "artifactUpdate" in e)
    assert (
        streamed["artifactUpdate"]["artifact"]["parts"][0]["data"]["args"]["password"] == REDACTED
    )
    assert Bus and Runtime and TaskService  # imported to prove the app's public names resolve


def test_redaction_rules() -> None:
    assert redact({"Password": 1, "pass": 2, "my_secret": 3, "secrets": 4}) == {
        "Password": REDACTED,
        "pass": 2,
        "my_secret": REDACTED,
        "secrets": 4,
    }
    clean = make_cleaner(["pin"], hook=lambda v: {**v, "hooked": True}, limit=None)
    assert clean({"pin": 1234, "x": 1}) == {"pin": REDACTED, "x": 1, "hooked": True}
    assert clean(None) is None


async def test_purge_is_a_dry_run_unless_told(database: str) -> None:
    old = timezone.now() - timedelta(days=120)
    for i, finished in enumerate([True, True, False]):
        task = await Task.objects.acreate(
            id=f"old-{i}",
            context_id="c",
            agent="demo",
            state="TASK_STATE_COMPLETED",
            status={"state": "TASK_STATE_COMPLETED"},
            created_at=old,
            finished_at=old if finished else None,
        )
        await ToolCall.objects.acreate(task=task, tool_call_id="c1", name="t", order=0)
        await TaskEvent.objects.acreate(task=task, seq=1, kind="task", emitted_at=old, data={})
    await Task.objects.acreate(
        id="new",
        context_id="c",
        agent="demo",
        state="TASK_STATE_COMPLETED",
        status={},
        finished_at=timezone.now(),
    )
    out = await sync_to_async(_purge)("--older-than", "90")
    assert "Would delete 2 tasks, 2 events, 2 tool calls" in out
    assert await Task.objects.acount() == 4
    out = await sync_to_async(_purge)("--older-than", "90", "--delete")
    assert "Deleted 2 tasks, 2 events, 2 tool calls" in out
    assert sorted([t async for t in Task.objects.values_list("id", flat=True)]) == ["new", "old-2"]
    out = await sync_to_async(_purge)("--older-than", "90", "--delete", "--include-running")
    assert "Deleted 1 tasks" in out
    assert await ToolCall.objects.acount() == 0


def _purge(*args: str) -> str:
    from io import StringIO

    out = StringIO()
    call_command("a2a_purge", *args, stdout=out)
    return out.getvalue()
