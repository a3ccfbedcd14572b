"""Exactly-once, in-order delivery from the runtime over layers that lose messages."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import AsyncGenerator
from typing import Any

import pytest
from channels.layers import BaseChannelLayer

from a2a_toolcall.bus import (
    TOPIC_RESPONSE,
    TOPIC_TOOLFRAME,
    Bus,
    Envelope,
    RuntimeLost,
    TaskStream,
)
from a2a_toolcall.contract import ToolCallCompleted, ToolCallStarted, ToolTimeline
from a2a_toolcall.runtime import AgentInput, Event, Progress, Reply, Runtime, build_request
from a2a_toolcall.testing import user_message
from tests import agents as test_agents


class LossyLayer:
    """A channel layer that silently drops a share of group messages, as real layers can."""

    def __init__(self, inner: BaseChannelLayer, loss: float, seed: int) -> None:
        self.inner = inner
        self.loss = loss
        self.random = random.Random(seed)
        self.dropped = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        if self.random.random() < self.loss:
            self.dropped += 1
            return
        await self.inner.group_send(group, message)


async def many_frames(task: AgentInput) -> AsyncGenerator[Event, Any]:
    """A fast agent: 150 tool calls with no pause, narration in between."""
    for i in range(150):
        if i % 10 == 0:
            yield Progress(f"batch {i // 10}")
        yield ToolCallStarted(tool_call_id=f"{task.task_id}:{i}", name="t", args={"i": i})
        yield ToolCallCompleted(tool_call_id=f"{task.task_id}:{i}", name="t", result={"i": i})
    yield Reply(text="done")


async def collect(stream: TaskStream) -> list[Envelope]:
    got: list[Envelope] = []
    while True:
        envelope = await stream.get()
        assert envelope is not None
        got.append(envelope)
        if envelope.topic == TOPIC_RESPONSE:
            await stream.finish()
            return got


async def run_many_frames(layer: Any, probe_after: float) -> list[Envelope]:
    """Run the fast agent over ``layer`` and collect its task's envelopes as a consumer."""
    bus = Bus(layer)
    runtime = Runtime(bus=bus, agents={"many": many_frames}, default_agent="many", retain=30)
    work = build_request(uuid.uuid4().hex, user_message("go"))
    try:
        async with TaskStream(bus, work["cid"], probe_after=probe_after) as stream:
            running = asyncio.ensure_future(runtime.run(work))
            got = await asyncio.wait_for(collect(stream), 60)
            await running
    finally:
        await runtime.shutdown()
    return got


async def test_every_envelope_arrives_once_in_order_despite_losses(
    layer: BaseChannelLayer,
) -> None:
    lossy = LossyLayer(layer, loss=0.2, seed=7)
    got = await run_many_frames(lossy, probe_after=0.2)
    assert lossy.dropped > 50  # the test really lost messages
    assert [e.seq for e in got] == list(range(1, len(got) + 1))
    assert len([e for e in got if e.topic == TOPIC_TOOLFRAME]) == 300
    timeline = ToolTimeline(e.payload["frame"] for e in got if e.topic == TOPIC_TOOLFRAME)
    assert len(timeline) == 150
    assert not timeline.pending and not timeline.contradictions
    assert got[-1].payload == {"status": "completed", "text": "done"}


async def test_the_runtime_forgets_a_task_once_the_consumer_is_done(
    layer: BaseChannelLayer,
) -> None:
    bus = Bus(layer)
    runtime = Runtime(bus=bus, agents={"echo": test_agents.echo}, default_agent="echo", retain=60)
    work = build_request(uuid.uuid4().hex, user_message("hi"))
    try:
        async with TaskStream(bus, work["cid"]) as stream:
            await runtime.run(work)
            assert len(runtime._lingering) == 1  # kept for resend requests
            await asyncio.wait_for(collect(stream), 10)
            # The consumer said it is done: the runtime stops keeping the task long before 60 s.
            await asyncio.wait_for(asyncio.gather(*runtime._lingering), 10)
    finally:
        await runtime.shutdown()


async def test_a_quiet_runtime_is_probed_and_answers_with_sync(layer: BaseChannelLayer) -> None:
    bus = Bus(layer)
    runtime = Runtime(
        bus=bus, agents={"parked": test_agents.parked}, default_agent="parked", retain=0
    )
    work = build_request(uuid.uuid4().hex, user_message("park"), metadata={"seconds": 1.5})
    try:
        async with TaskStream(bus, work["cid"], probe_after=0.2, lost_after=1.0) as stream:
            running = asyncio.ensure_future(runtime.run(work))
            # The tool sleeps 1.5 s, longer than lost_after: only the probes' sync answers keep
            # the stream from giving up.
            got = await asyncio.wait_for(collect(stream), 10)
            await running
    finally:
        await runtime.shutdown()
    assert got[-1].payload["status"] == "completed"


async def test_no_runtime_at_all_is_reported() -> None:
    from channels.layers import InMemoryChannelLayer

    bus = Bus(InMemoryChannelLayer())
    async with TaskStream(bus, uuid.uuid4().hex, probe_after=0.1, first_wait=0.5) as stream:
        with pytest.raises(RuntimeLost, match="no agent runtime picked the task up"):
            await stream.get()


async def test_a_runtime_that_dies_mid_task_is_reported() -> None:
    from channels.layers import InMemoryChannelLayer

    bus = Bus(InMemoryChannelLayer())
    runtime = Runtime(
        bus=bus, agents={"parked": test_agents.parked}, default_agent="parked", retain=0
    )
    work = build_request(uuid.uuid4().hex, user_message("park"))
    async with TaskStream(bus, work["cid"], probe_after=0.1, lost_after=0.6) as stream:
        running = asyncio.ensure_future(runtime.run(work))
        while (await stream.get()).topic != TOPIC_TOOLFRAME:  # type: ignore[union-attr]
            pass
        running.cancel()  # the process running the agent vanishes: no response, no answers
        with pytest.raises(asyncio.CancelledError):
            await running
        with pytest.raises(RuntimeLost, match="no word from the agent runtime"):
            await stream.get()


async def test_acknowledged_envelopes_are_forgotten() -> None:
    from channels.layers import InMemoryChannelLayer

    bus = Bus(InMemoryChannelLayer())
    publisher = bus.publisher("t1")
    for i in range(10):
        await publisher.publish(TOPIC_TOOLFRAME, {"i": i})
    await publisher.flush()  # all ten handed to the layer (and lost: nobody listened)
    assert publisher.kept == 10
    publisher.acknowledge(6)
    assert publisher.kept == 4
    async with bus.subscribe("t1", [TOPIC_TOOLFRAME, "agent.skill.sync"]) as sub:
        assert await publisher.resend(8) == 3
        assert [(await sub.get(1)).seq for _ in range(3)] == [8, 9, 10]  # type: ignore[union-attr]
        assert await publisher.resend(11) == 0
        sync = await sub.get(1)
        assert sync is not None and sync.topic == "agent.skill.sync"
        assert sync.payload == {"lastSeq": 10}


class SlowLayer:
    """A layer whose group messages arrive ``delay`` seconds late, in order: a busy consumer."""

    def __init__(self, inner: BaseChannelLayer, delay: float) -> None:
        self.inner = inner
        self.delay = delay
        self.sent: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        self.sent.extend([group] * len(message.get("items", [None])))  # envelopes, not messages
        await asyncio.sleep(0)
        loop = asyncio.get_running_loop()
        # The in-memory group_send does not suspend: each runs whole, in the order scheduled.
        loop.call_later(self.delay, lambda: loop.create_task(self.inner.group_send(group, message)))


async def test_a_consumer_that_is_behind_costs_syncs_not_resends() -> None:
    from a2a_toolcall.layers import InMemoryChannelLayer

    # Room for the whole burst: this is about lateness, not about a full channel.
    slow = SlowLayer(InMemoryChannelLayer(capacity=10_000), delay=0.5)
    # Probes every 0.1 s while every message is 0.5 s on its way: each probe is answered by
    # one sync, which arrives after what was published before it, so nothing is resent.
    got = await run_many_frames(slow, probe_after=0.1)
    assert [e.seq for e in got] == list(range(1, len(got) + 1))
    frames = [g for g in slow.sent if g.startswith(TOPIC_TOOLFRAME)]
    assert len(frames) == 300  # each frame sent once
    assert any(g.startswith("agent.skill.sync") for g in slow.sent)  # the probes were answered


async def test_a_sync_that_shows_a_loss_gets_it_resent() -> None:
    from a2a_toolcall.layers import InMemoryChannelLayer

    bus = Bus(InMemoryChannelLayer())
    publisher = bus.publisher("t2")
    async with TaskStream(bus, "t2", probe_after=0.1) as stream:
        await publisher.publish(TOPIC_TOOLFRAME, {"i": 1})
        assert (await stream.get(1)).seq == 1  # type: ignore[union-attr]
        # seq 2 "sent" and lost on the way: only the outbox has it
        publisher.last_seq = publisher._sent_seq = 2
        publisher._outbox.append(Envelope(TOPIC_TOOLFRAME, "t2", 2, 0.0, {"i": 2}))
        publisher._seq = iter(range(3, 100))  # type: ignore[assignment]
        async with bus.subscribe("t2", ["agent.skill.resend"]) as control:
            await publisher.sync()  # the answer to a probe
            assert await stream.get(0.3) is None  # the sync shows seq 2 missing ...
            ask = await control.get(1)
            assert ask is not None and ask.payload == {"from": 2}  # ... so it is asked for
        await publisher.resend(2)
        again = await stream.get(1)
        assert again is not None and again.seq == 2 and again.payload == {"i": 2}
