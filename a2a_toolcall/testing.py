"""Helpers for testing agents: run one through the real runtime and look at what it published.

::

    from a2a_toolcall.testing import run_agent

    async def test_my_agent():
        run = await run_agent(my_agent, "what is 6*7", answers=["Ada"])
        assert run.status == "completed"
        assert [f.phase for f in run.frames] == ["started", "completed"]
        assert run.narration[0] == "thinking"

By default the agent runs on a private in-memory channel layer, so tests need no Redis and do
not disturb the project's layer; pass ``bus=`` to run it over another layer.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from channels.layers import InMemoryChannelLayer

from a2a_toolcall.bus import (
    TASK_TOPICS,
    TOPIC_ARTIFACT,
    TOPIC_CANCEL,
    TOPIC_INPUT_REQUEST,
    TOPIC_INPUT_RESPONSE,
    TOPIC_PROGRESS,
    TOPIC_RESEND,
    TOPIC_RESPONSE,
    TOPIC_TOOLFRAME,
    Bus,
    Envelope,
    Subscription,
)
from a2a_toolcall.contract import (
    ToolCallCompleted,
    ToolCallFailed,
    ToolCallStarted,
    ToolTimeline,
    frame_from_wire,
)
from a2a_toolcall.protocol.models import Message, Part, Role
from a2a_toolcall.runtime.events import Agent
from a2a_toolcall.runtime.runner import Runtime, build_request

__all__ = ["AgentRun", "TaskRecorder", "run_agent", "user_message"]


def user_message(text: str, *, data: Sequence[Any] = ()) -> Message:
    """A user message with one text part (and data parts, if given)."""
    parts = [Part(text=text)] + [Part(data=value) for value in data]
    return Message(message_id=uuid.uuid4().hex, role=Role.USER, parts=parts)


@dataclass
class AgentRun:
    """Everything published for one task, in order."""

    cid: str
    envelopes: list[Envelope] = field(default_factory=list)

    def of(self, topic: str) -> list[Envelope]:
        """The envelopes of one topic."""
        return [e for e in self.envelopes if e.topic == topic]

    @property
    def narration(self) -> list[str]:
        """The narration lines, ``thinking`` first."""
        return [e.payload["text"] for e in self.of(TOPIC_PROGRESS)]

    @property
    def frames(self) -> list[ToolCallStarted | ToolCallCompleted | ToolCallFailed]:
        """The tool-call frames, in publication order."""
        return [frame_from_wire(e.payload["frame"]) for e in self.of(TOPIC_TOOLFRAME)]

    @property
    def artifacts(self) -> list[dict[str, Any]]:
        """The artifact updates the agent streamed (``{artifact, append, lastChunk}``)."""
        return [e.payload for e in self.of(TOPIC_ARTIFACT)]

    @property
    def questions(self) -> list[str]:
        """The questions the agent asked."""
        return [e.payload["question"] for e in self.of(TOPIC_INPUT_REQUEST)]

    @property
    def response(self) -> dict[str, Any] | None:
        """The response payload (``status``, ``text``, ``parts``, ``error``, ``reason``)."""
        responses = self.of(TOPIC_RESPONSE)
        return responses[-1].payload if responses else None

    @property
    def status(self) -> str | None:
        """``completed``, ``failed`` or ``canceled`` (None before the response)."""
        return self.response["status"] if self.response else None

    @property
    def text(self) -> str | None:
        """The reply text, if any."""
        return self.response.get("text") if self.response else None

    @property
    def timeline(self) -> ToolTimeline:
        """The frames reduced into invocations, timed by their emission timestamps."""
        timeline = ToolTimeline()
        for envelope in self.of(TOPIC_TOOLFRAME):
            timeline.feed(envelope.payload["frame"], at=envelope.ts)
        return timeline

    @property
    def seqs(self) -> list[int]:
        """The ``seq`` of every envelope, in arrival order."""
        return [e.seq for e in self.envelopes]


class TaskRecorder:
    """Subscribe to a task's topics and record its envelopes until its response arrives.

    Use as ``async with TaskRecorder(bus, cid) as recorder: ...; run = await recorder.wait()``.
    Questions are answered from ``answers`` in order.
    """

    def __init__(self, bus: Bus, cid: str, *, answers: Iterable[str] = ()) -> None:
        self.bus = bus
        self.run = AgentRun(cid)
        self._answers = list(answers)
        self._subscription: Subscription | None = None
        self._task: asyncio.Task[AgentRun] | None = None
        self._seq = 0

    async def __aenter__(self) -> TaskRecorder:
        self._subscription = await self.bus.subscribe(self.run.cid, TASK_TOPICS).__aenter__()
        self._task = asyncio.ensure_future(self._record(self._subscription))
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._subscription is not None:
            await self._subscription.aclose()
        if self.run.response is not None:
            # Tell the runtime it may forget the task (it keeps it for resend requests).
            await self._control(TOPIC_RESEND, {"done": True})

    async def _record(self, subscription: Subscription) -> AgentRun:
        async for envelope in subscription:
            self.run.envelopes.append(envelope)
            if envelope.topic == TOPIC_INPUT_REQUEST and self._answers:
                await self.answer(envelope.payload["requestId"], self._answers.pop(0))
            if envelope.topic == TOPIC_RESPONSE:
                return self.run
        raise AssertionError("unreachable")  # pragma: no cover

    async def wait(self, timeout: float = 30.0) -> AgentRun:
        """Wait for the response (or fail after ``timeout`` seconds)."""
        assert self._task is not None, "use the recorder in an async with block"
        async with asyncio.timeout(timeout):
            return await asyncio.shield(self._task)

    async def wait_for(self, topic: str, count: int = 1, timeout: float = 30.0) -> Envelope:
        """Wait until ``count`` envelopes of ``topic`` arrived; returns the last of them."""
        async with asyncio.timeout(timeout):
            while len(self.run.of(topic)) < count:
                if self._task is not None and self._task.done():
                    raise AssertionError(f"the task ended before {count} x {topic} arrived")
                await asyncio.sleep(0.005)
        return self.run.of(topic)[count - 1]

    async def _control(self, topic: str, payload: dict[str, Any]) -> None:
        self._seq += 1
        await self.bus.publish(topic, self.run.cid, payload, seq=self._seq)

    async def answer(self, request_id: str, text: str) -> None:
        """Answer a question of the agent."""
        await self._control(TOPIC_INPUT_RESPONSE, {"requestId": request_id, "text": text})

    async def cancel(self, reason: str = "canceled by the test") -> None:
        """Ask the runtime to cancel the task."""
        await self._control(TOPIC_CANCEL, {"reason": reason})


async def run_agent(
    agent: Agent,
    message: str | Message,
    *,
    answers: Iterable[str] = (),
    bus: Bus | None = None,
    time_limit: float = 60.0,
    context_id: str | None = None,
    history: Sequence[Message] = (),
    metadata: Mapping[str, Any] | None = None,
    timeout: float = 60.0,
) -> AgentRun:
    """Run ``agent`` on one message through the real runtime; return what it published."""
    bus = bus or Bus(InMemoryChannelLayer())
    runtime = Runtime(
        bus=bus, agents={"agent": agent}, default_agent="agent", time_limit=time_limit
    )
    if isinstance(message, str):
        message = user_message(message)
    cid = uuid.uuid4().hex
    request = build_request(cid, message, context_id=context_id, history=history, metadata=metadata)
    try:
        async with TaskRecorder(bus, cid, answers=answers) as recorder:
            runner = asyncio.ensure_future(runtime.run(request))
            try:
                run = await recorder.wait(timeout)
            finally:
                if not runner.done():
                    runner.cancel()
                await asyncio.gather(runner, return_exceptions=True)
    finally:
        await runtime.shutdown()
    return run
