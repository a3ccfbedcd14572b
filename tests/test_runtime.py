"""The runtime: agents run for real, what they do published on the bus, on every layer."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncGenerator, Iterator
from typing import Any

import pytest
from channels.layers import BaseChannelLayer, InMemoryChannelLayer
from django.test import override_settings

from a2a_toolcall.bus import (
    REQUEST_CHANNEL,
    TASK_TOPICS,
    TOPIC_PROGRESS,
    TOPIC_RESPONSE,
    TOPIC_TOOLFRAME,
    Bus,
)
from a2a_toolcall.contract import ToolCallCompleted, ToolCallFailed, ToolCallStarted
from a2a_toolcall.protocol import models as m
from a2a_toolcall.runtime import (
    AgentError,
    AgentInput,
    Event,
    Progress,
    Reply,
    Runtime,
    ToolCall,
    build_request,
    ensure_in_process_runtime,
    runs_in_process,
)
from a2a_toolcall.runtime.runner import CANCELLED
from a2a_toolcall.testing import TaskRecorder, run_agent, user_message
from tests import agents as test_agents


def make_runtime(bus: Bus, **kwargs: Any) -> Runtime:
    from project.agents import demo_agent

    agents = {
        "demo": demo_agent,
        "parked": test_agents.parked,
        "echo": test_agents.echo,
    }
    kwargs.setdefault("retain", 0)
    return Runtime(bus=bus, agents=agents, default_agent="demo", **kwargs)


def request(text: str, *, agent: str | None = None, **metadata: Any) -> dict[str, Any]:
    return build_request(uuid.uuid4().hex, user_message(text), agent=agent, metadata=metadata)


# --- on every layer --------------------------------------------------------------------------


async def test_a_task_publishes_in_emission_order_with_consecutive_seq(
    layer: BaseChannelLayer,
) -> None:
    bus = Bus(layer)
    runtime = make_runtime(bus)
    work = request("what is 6*7 and the time in Tokyo and fail")
    async with TaskRecorder(bus, work["cid"]) as recorder:
        await runtime.run(work)
        run = await recorder.wait(20)
    assert run.seqs == list(range(1, len(run.envelopes) + 1))
    assert [e.topic for e in run.envelopes[:5]] == [
        TOPIC_PROGRESS,
        TOPIC_PROGRESS,
        TOPIC_TOOLFRAME,
        TOPIC_TOOLFRAME,
        TOPIC_TOOLFRAME,
    ]
    assert run.narration == ["thinking", "running calculator; running clock; running broken"]
    starts = run.frames[:3]
    assert [f.phase for f in starts] == ["started"] * 3
    assert [f.name for f in starts] == ["calculator", "clock", "broken"]
    outcomes = {f.name: f for f in run.frames[3:]}
    assert isinstance(outcomes["calculator"], ToolCallCompleted)
    assert outcomes["calculator"].result == 42
    assert isinstance(outcomes["broken"], ToolCallFailed)
    assert "RuntimeError: this tool always fails" in (outcomes["broken"].error or "")
    assert run.envelopes[-1].topic == TOPIC_RESPONSE
    assert run.status == "completed"
    assert run.text is not None and run.text.startswith("6*7 = 42; it is ")
    timeline = run.timeline
    assert not timeline.pending and not timeline.contradictions
    assert len(timeline.completed) == 2 and len(timeline.failed) == 1


async def test_control_messages_need_no_waiting_task_on_the_apps_in_memory_layer(
    layer: BaseChannelLayer,
) -> None:
    # A running task's cancels, answers and resend requests are handed to it by the app's
    # in-memory layer as they come (a task fewer per running task); other layers are read by
    # a watcher task. Either way the cancel stops the agent.
    from a2a_toolcall.layers import InMemoryChannelLayer as FastInMemoryChannelLayer

    bus = Bus(layer)
    runtime = make_runtime(bus)
    work = request("park", agent="parked", seconds=60)
    async with TaskRecorder(bus, work["cid"]) as recorder:
        running = asyncio.ensure_future(runtime.run(work))
        await recorder.wait_for(TOPIC_TOOLFRAME)
        watchers = [
            t for t in asyncio.all_tasks() if "_TaskRun._watch" in t.get_coro().__qualname__
        ]
        assert len(watchers) == (0 if isinstance(layer, FastInMemoryChannelLayer) else 1)
        await recorder.cancel("stop")
        run = await recorder.wait(10)
        await asyncio.wait_for(running, 10)
        assert run.response == {"status": "canceled", "reason": "stop"}


async def test_cancel_really_stops_the_agent(layer: BaseChannelLayer) -> None:
    bus = Bus(layer)
    runtime = make_runtime(bus)
    work = request("park", agent="parked", seconds=60)
    cid = work["cid"]
    async with bus.subscribe(cid, TASK_TOPICS) as watcher, TaskRecorder(bus, cid) as recorder:
        running = asyncio.ensure_future(runtime.run(work))
        await recorder.wait_for(TOPIC_TOOLFRAME)  # the tool is parked in asyncio.sleep(60)
        await recorder.cancel("the user changed their mind")
        run = await recorder.wait(10)  # well before the tool's 60 s are up
        await asyncio.wait_for(running, 10)
        assert run.response == {"status": "canceled", "reason": "the user changed their mind"}
        started, closed = run.frames
        assert isinstance(started, ToolCallStarted)
        assert isinstance(closed, ToolCallFailed)
        assert closed.tool_call_id == started.tool_call_id
        assert closed.error == CANCELLED
        # Nothing is published after the response, and the agent's code after the await it
        # was parked on never runs.
        seen = []
        while (envelope := await watcher.get(timeout=0.5)) is not None:
            seen.append(envelope)
        assert seen[-1].topic == TOPIC_RESPONSE
        assert cid not in test_agents.WOKE_UP


async def test_overlapping_tasks_through_the_runtime(layer: BaseChannelLayer) -> None:
    bus = Bus(layer)
    runtime = make_runtime(bus, concurrency=200)
    serving = runtime.start()
    works = [request(f"what is {i}+1") for i in range(200)]
    try:
        async with asyncio.timeout(60):
            recorders = [TaskRecorder(bus, w["cid"]) for w in works]
            for recorder in recorders:
                await recorder.__aenter__()
            await asyncio.gather(*(bus.send_request(w) for w in works))
            runs = await asyncio.gather(*(r.wait(60) for r in recorders))
            for recorder in recorders:
                await recorder.__aexit__(None, None, None)
    finally:
        await runtime.shutdown()
    assert serving.done()
    for i, run in enumerate(runs):
        assert {e.cid for e in run.envelopes} == {run.cid}
        assert run.seqs == list(range(1, len(run.envelopes) + 1))
        assert run.text == f"{i}+1 = {i + 1}."


async def test_a_request_delivered_twice_runs_once(layer: BaseChannelLayer) -> None:
    bus = Bus(layer)
    runtime = make_runtime(bus)
    runtime.start()
    work = request("what is 1+1")
    try:
        async with bus.subscribe(work["cid"], TASK_TOPICS) as sub:
            await bus.send_request(work)
            await bus.send_request(work)  # as a Redis layer may redeliver it
            seen = []
            async with asyncio.timeout(20):
                while not seen or seen[-1].topic != TOPIC_RESPONSE:
                    seen.append(await sub.get())
            while (late := await sub.get(timeout=0.3)) is not None:
                seen.append(late)
    finally:
        await runtime.shutdown()
    assert [e.seq for e in seen] == [1, 2, 3, 4, 5]  # thinking, narration, 2 frames, response
    assert [e.topic for e in seen].count(TOPIC_RESPONSE) == 1


class FailingOnceLayer(InMemoryChannelLayer):
    """channels' in-memory layer whose first receive on the work channel raises, as a lost
    Redis connection does."""

    def __init__(self) -> None:
        super().__init__()
        self.failures = 0

    async def receive(self, channel: str) -> dict[str, Any]:
        if channel == REQUEST_CHANNEL and self.failures == 0:
            self.failures += 1
            raise ConnectionError("the layer's connection was lost")
        return await super().receive(channel)


async def test_a_failing_bus_is_logged_and_the_runtime_keeps_serving(
    caplog: pytest.LogCaptureFixture,
) -> None:
    layer = FailingOnceLayer()
    bus = Bus(layer)
    runtime = make_runtime(bus)
    runtime.start()
    work = request("what is 1+1")
    try:
        async with bus.subscribe(work["cid"], TASK_TOPICS) as sub:
            await bus.send_request(work)
            async with asyncio.timeout(20):
                while (envelope := await sub.get()).topic != TOPIC_RESPONSE:
                    pass
    finally:
        await runtime.shutdown()
    assert layer.failures == 1
    assert envelope.payload["status"] == "completed"
    (record,) = [r for r in caplog.records if "could not take" in r.getMessage()]
    assert record.levelname == "ERROR" and "the layer's connection was lost" in caplog.text


# --- runtime behaviour (in-memory layer) -----------------------------------------------------


async def test_tool_failures_do_not_fail_the_task() -> None:
    from project.agents import demo_agent

    run = await run_agent(demo_agent, "fail")
    assert run.status == "completed"
    assert [f.phase for f in run.frames] == ["started", "failed"]
    assert run.text == (
        "broken failed: RuntimeError: this tool always fails (it is here to show a failed frame)."
    )


async def test_agent_errors_become_failed_replies() -> None:
    async def clean(task: AgentInput) -> AsyncGenerator[Event, Any]:
        yield Progress("working")
        raise AgentError("the database is down, try again later")

    async def crashing(task: AgentInput) -> AsyncGenerator[Event, Any]:
        yield Progress("working")
        raise KeyError("missing")

    run = await run_agent(clean, "x")
    assert run.response == {"status": "failed", "error": "the database is down, try again later"}
    run = await run_agent(crashing, "x")
    assert run.response == {"status": "failed", "error": "the agent failed: KeyError: 'missing'"}


async def test_misbehaving_agents_fail_with_a_clear_message() -> None:
    async def no_reply(task: AgentInput) -> AsyncGenerator[Event, Any]:
        yield Progress("hmm")

    async def weird(task: AgentInput) -> AsyncGenerator[Event, Any]:
        yield 42  # type: ignore[misc]

    async def bad_frame(task: AgentInput) -> AsyncGenerator[Event, Any]:
        yield {"toolCallId": "c", "phase": "started"}  # type: ignore[misc]

    def not_a_generator(task: AgentInput) -> Any:
        raise ValueError("cannot start")

    assert (await run_agent(no_reply, "x")).response == {
        "status": "failed",
        "error": "the agent finished without a reply",
    }
    assert "yielded int, which is not an event" in (await run_agent(weird, "x")).response["error"]
    assert "invalid tool-call frame" in (await run_agent(bad_frame, "x")).response["error"]
    assert (await run_agent(not_a_generator, "x")).response == {
        "status": "failed",
        "error": "the agent failed: ValueError: cannot start",
    }


async def test_frames_yielded_directly_form_one_turn() -> None:
    async def relay(task: AgentInput) -> AsyncGenerator[Event, Any]:
        yield [
            ToolCallStarted(tool_call_id="a", name="web_search", args={"q": "x"}),
            ToolCallStarted(tool_call_id="b", name="web_search", args={"q": "y"}),
            ToolCallStarted(tool_call_id="c", name="delegate", args={"agent": "quinn"}),
        ]
        yield ToolCallCompleted(tool_call_id="a", name="web_search", result=["r"])
        yield {"toolCallId": "b", "name": "web_search", "phase": "failed", "error": "429"}
        yield ToolCallCompleted(tool_call_id="c", name="delegate", result="ok")
        yield Reply(text="done", data=[{"k": 1}])

    run = await run_agent(relay, "x")
    assert run.narration == ["thinking", "searching the web; routing to quinn"]
    assert [(f.tool_call_id, f.phase) for f in run.frames] == [
        ("a", "started"),
        ("b", "started"),
        ("c", "started"),
        ("a", "completed"),
        ("b", "failed"),
        ("c", "completed"),
    ]
    assert run.response == {"status": "completed", "text": "done", "parts": [{"data": {"k": 1}}]}


async def test_parallel_tool_calls_overlap() -> None:
    order: list[str] = []

    async def tool(name: str, delay: float) -> str:
        order.append(f"start {name}")
        await asyncio.sleep(delay)
        order.append(f"end {name}")
        return name

    async def parallel(task: AgentInput) -> AsyncGenerator[Event, Any]:
        results = yield [
            ToolCall("slow", {"name": "slow", "delay": 0.2}, run=tool),
            ToolCall("fast", {"name": "fast", "delay": 0.0}, run=tool),
        ]
        yield Reply(text=",".join(r.value for r in results))

    run = await run_agent(parallel, "x")
    assert order == ["start slow", "start fast", "end fast", "end slow"]
    assert run.text == "slow,fast"
    assert [f.phase for f in run.frames] == ["started", "started", "completed", "completed"]
    assert run.frames[2].name == "fast"


async def test_sync_tools_and_jsonable_results() -> None:
    import datetime

    def when(days: int) -> dict[str, Any]:
        return {"at": datetime.date(2026, 1, 1) + datetime.timedelta(days=days), "t": (1, 2)}

    async def agent(task: AgentInput) -> AsyncGenerator[Event, Any]:
        result = yield ToolCall("when", {"days": 1}, run=when)
        yield Reply(text=str(result.value["at"]))

    run = await run_agent(agent, "x")
    assert run.frames[1].result == {"at": "2026-01-02", "t": [1, 2]}  # type: ignore[union-attr]
    assert run.text == "2026-01-02"


async def test_time_budget_stops_and_fails_the_task() -> None:
    run = await run_agent(test_agents.parked, user_message("park"), time_limit=0.3)
    assert run.response == {
        "status": "failed",
        "error": "the agent exceeded its time budget of 0.3 s and was stopped",
    }
    assert run.frames[-1].error == (  # type: ignore[union-attr]
        f"{CANCELLED}: the agent exceeded its time budget of 0.3 s and was stopped"
    )


async def test_input_requests_wait_for_the_answer_outside_the_budget() -> None:
    from project.agents import demo_agent

    async def slow_answer(bus: Bus, recorder: TaskRecorder) -> None:
        question = await recorder.wait_for("agent.input.request")
        await asyncio.sleep(0.5)  # longer than the whole time budget
        await recorder.answer(question.payload["requestId"], "Ada")

    bus = Bus(InMemoryChannelLayer())
    runtime = Runtime(bus=bus, agents={"demo": demo_agent}, time_limit=0.3, retain=0)
    work = request("ask me")
    async with TaskRecorder(bus, work["cid"]) as recorder:
        answering = asyncio.ensure_future(slow_answer(bus, recorder))
        await runtime.run(work)
        run = await recorder.wait(10)
        await answering
    assert run.questions == ["What is your name?"]
    assert run.status == "completed"
    assert run.text == "nice to meet you, Ada."


async def test_nothing_is_published_after_the_reply() -> None:
    async def chatty(task: AgentInput) -> AsyncGenerator[Event, Any]:
        yield Reply(text="first")
        yield Progress("after the reply")
        yield Reply(text="second")

    bus = Bus(InMemoryChannelLayer())
    runtime = Runtime(bus=bus, agents={"chatty": chatty}, default_agent="chatty", retain=0)
    work = request("x")
    async with bus.subscribe(work["cid"], TASK_TOPICS) as sub:
        await runtime.run(work)
        seen = []
        while (envelope := await sub.get(timeout=0.2)) is not None:
            seen.append(envelope)
    assert [e.topic for e in seen] == [TOPIC_PROGRESS, TOPIC_RESPONSE]
    assert seen[-1].payload == {"status": "completed", "text": "first"}


async def test_open_tools_are_closed_when_the_agent_replies_or_fails() -> None:
    async def forgetful(task: AgentInput) -> AsyncGenerator[Event, Any]:
        yield ToolCallStarted(tool_call_id="x", name="fetch")
        yield Reply(text="done")

    run = await run_agent(forgetful, "x")
    assert run.frames[-1] == ToolCallFailed(
        tool_call_id="x",
        name="fetch",
        error="abandoned: the agent replied before this tool finished",
    )


async def test_unknown_agents_and_bad_requests() -> None:
    bus = Bus(InMemoryChannelLayer())
    runtime = Runtime(bus=bus, agents={"echo": test_agents.echo}, retain=0)
    work = request("x", agent="nobody")
    async with TaskRecorder(bus, work["cid"]) as recorder:
        await runtime.run(work)
        run = await recorder.wait(5)
    assert run.response == {
        "status": "failed",
        "error": "no agent named 'nobody' is registered (registered: echo)",
    }
    broken = {"cid": "t-1", "message": {"role": "ROLE_USER"}}
    async with TaskRecorder(bus, "t-1") as recorder:
        await runtime.run(broken)
        run = await recorder.wait(5)
    assert run.status == "failed"
    assert "the work request is invalid" in run.response["error"]  # type: ignore[index]
    assert await runtime.run({"cid": "not a valid id!"}) is None


async def test_progress_details_travel_in_the_payload() -> None:
    run = await run_agent(test_agents.echo, "hello")
    progress = run.of(TOPIC_PROGRESS)[1].payload
    assert progress == {"text": "echoing", "step": 1, "percent": 50.0}
    assert run.text == "hello"


async def test_shutdown_fails_running_tasks_with_the_reason() -> None:
    bus = Bus(InMemoryChannelLayer())
    runtime = make_runtime(bus)
    runtime.start()
    work = request("park", agent="parked", seconds=60)
    async with TaskRecorder(bus, work["cid"]) as recorder:
        await bus.send_request(work)
        await recorder.wait_for(TOPIC_TOOLFRAME)
        assert runtime.running_tasks == [work["cid"]]
        await runtime.shutdown("the worker is shutting down")
        run = await recorder.wait(5)
    assert run.response == {"status": "failed", "error": "the worker is shutting down"}
    assert run.frames[-1].error == f"{CANCELLED}: the worker is shutting down"  # type: ignore[union-attr]
    assert not runtime.is_serving


async def test_in_process_runtime_starts_once_per_loop() -> None:
    assert runs_in_process()  # the default layer in the test settings is in-memory
    runtime = ensure_in_process_runtime()
    assert runtime is not None and runtime.is_serving
    assert ensure_in_process_runtime() is runtime
    bus = Bus()
    work = request("what is 2**10")
    try:
        async with TaskRecorder(bus, work["cid"]) as recorder:
            await bus.send_request(work)
            run = await recorder.wait(10)
        assert run.text == "2**10 = 1024."
    finally:
        await runtime.shutdown()


@override_settings(A2A_TOOLCALL={"AGENTS": {"echo": "tests.agents.echo"}, "RUN_IN_PROCESS": False})
def test_run_in_process_can_be_turned_off() -> None:
    assert not runs_in_process()


@override_settings(
    A2A_TOOLCALL={
        "AGENTS": {"demo": "project.agents.demo_agent"},
        "NARRATION_RULES": [(r"^calc", "doing sums for {name}")],
    }
)
async def test_narration_rules_from_settings() -> None:
    from project.agents import demo_agent

    bus = Bus(InMemoryChannelLayer())
    runtime = Runtime(bus=bus, retain=0)  # agents and narration from the settings
    assert set(runtime.agents) == {"demo"}
    run = await run_agent(demo_agent, "what is 1+1")
    assert run.narration[1] == "doing sums for calculator"
    work = request("what is 1+1 and the time in Paris")
    async with TaskRecorder(bus, work["cid"]) as recorder:
        await runtime.run(work)
        run = await recorder.wait(5)
    assert run.narration[1] == "doing sums for calculator; running clock"


@pytest.fixture(autouse=True)
def _forget_woken() -> Iterator[None]:
    yield
    test_agents.WOKE_UP.clear()


async def test_streamed_artifacts_rejection_and_direct_replies() -> None:
    from a2a_toolcall.runtime import AgentRejected, ArtifactUpdate

    async def chunks(task: AgentInput) -> AsyncGenerator[Event, Any]:
        yield ArtifactUpdate([{"text": "a"}], artifact_id="x", name="out", last_chunk=False)
        yield ArtifactUpdate([m.Part(text="b")], artifact_id="x", append=True)
        yield Reply(text="direct", as_message=True)

    run = await run_agent(chunks, "x")
    assert run.artifacts == [
        {
            "artifact": {"artifactId": "x", "parts": [{"text": "a"}], "name": "out"},
            "append": False,
            "lastChunk": False,
        },
        {
            "artifact": {"artifactId": "x", "parts": [{"text": "b"}]},
            "append": True,
            "lastChunk": True,
        },
    ]
    assert run.response == {"status": "completed", "text": "direct", "asMessage": True}

    async def refuses(task: AgentInput) -> AsyncGenerator[Event, Any]:
        raise AgentRejected("out of scope")
        yield  # pragma: no cover

    assert (await run_agent(refuses, "x")).response == {
        "status": "rejected",
        "reason": "out of scope",
    }


async def test_answers_carry_the_whole_message() -> None:
    from a2a_toolcall.runtime import InputRequest

    seen: list[Any] = []

    async def asks(task: AgentInput) -> AsyncGenerator[Event, Any]:
        answer = yield InputRequest("name?")
        seen.append(answer)
        yield Reply(text=str(answer))

    bus = Bus(InMemoryChannelLayer())
    runtime = Runtime(bus=bus, agents={"asks": asks}, default_agent="asks", retain=0)
    work = request("x")
    async with TaskRecorder(bus, work["cid"]) as recorder:
        running = asyncio.ensure_future(runtime.run(work))
        question = await recorder.wait_for("agent.input.request")
        reply = user_message("Ada")
        await bus.publish(
            "agent.input.response",
            work["cid"],
            {
                "requestId": question.payload["requestId"],
                "text": "Ada",
                "parts": [p.to_wire() for p in reply.parts],
                "message": reply.to_wire(),
            },
            seq=1,
        )
        run = await recorder.wait(5)
        await running
    assert run.text == "Ada"
    assert seen[0].message == reply and seen[0].parts == tuple(reply.parts)
