"""What an agent receives and what it yields: the executor interface, in plain Python.

An agent is any callable that takes an :class:`AgentInput` and returns an async iterator of
events; the simplest is an async generator function::

    async def agent(task: AgentInput) -> AsyncGenerator[Event, Any]:
        yield Progress("looking it up")
        result = yield ToolCall("clock", {"zone": "Asia/Tokyo"}, run=clock)
        city = yield InputRequest("Which city next?")   # waits for the user's answer
        yield Reply(text=f"It is {result.value} there; next: {city}")

Events and what the runtime does with them:

- :class:`Progress`: a narration line (a WORKING status-update for simple clients).
- :class:`ToolCall`, or a list of them: the runtime runs the tool(s) (a list in parallel),
  publishing ``started`` and then ``completed``/``failed`` frames and a narration line for the
  turn, and sends the :class:`ToolResult` (or the list of them) back into the generator. A tool
  that raises becomes a ``failed`` frame and a failed :class:`ToolResult`, not a crashed task.
- A tool-call-v1 frame (``ToolCallStarted`` ...), or a list of frames: published as they are,
  for agents that run tools themselves (the LangGraph adapter); a list is one tool turn.
- :class:`ArtifactUpdate`: an output of the task, streamed as it is made (whole, or in chunks
  with ``append``/``last_chunk``).
- :class:`InputRequest`: the task becomes input-required; the user's :class:`UserAnswer` is sent
  back into the generator.
- :class:`Reply`: the final answer. Nothing the agent does after it is published.

An agent fails a task cleanly by raising :class:`AgentError`, or rejects it (the task was never
started: out of scope, refused) by raising :class:`AgentRejected`; any other exception also fails
the task, with the exception's type and message.

Nothing here knows about HTTP, the channel layer or the ORM.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from a2a_toolcall.contract import ToolCallCompleted, ToolCallFailed, ToolCallStarted
from a2a_toolcall.protocol.models import Message, Part

__all__ = [
    "Agent",
    "AgentError",
    "AgentInput",
    "AgentRejected",
    "ArtifactUpdate",
    "Event",
    "InputRequest",
    "Progress",
    "Reply",
    "Resume",
    "ToolCall",
    "ToolResult",
    "UserAnswer",
    "is_retry_safe",
]


@dataclass(frozen=True, slots=True)
class AgentInput:
    """The task as the agent sees it: the user's message, earlier turns, metadata."""

    task_id: str
    context_id: str | None
    message: Message
    history: tuple[Message, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)
    resume: Resume | None = None
    """Set when the task is resumed from a checkpoint (its question's answer arrived after the
    runtime that asked was gone): go on from ``resume.checkpoint`` with ``resume.answer``."""
    attempt: int = 1
    """Which run of the task this is: 2 for a retry of a retry-safe agent, or a resume."""

    @property
    def text(self) -> str:
        """The text parts of the user's message, joined by newlines."""
        return "\n".join(p.text for p in self.message.parts if p.text is not None)

    @property
    def data(self) -> list[Any]:
        """The values of the data parts of the user's message."""
        return [p.data for p in self.message.parts if p.kind == "data"]


@dataclass(frozen=True, slots=True)
class Progress:
    """A narration line; ``step``/``percent`` travel in the status-update's metadata."""

    text: str
    step: int | None = None
    percent: float | None = None
    meta: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ToolCall:
    """Ask the runtime to run a tool: ``run(**args)`` (``run(args)`` if args is not a dict).

    ``run`` may be a coroutine function or a plain function (run in a thread; a thread cannot
    be interrupted, so on cancel its result is discarded). ``id`` defaults to a fresh unique id.
    """

    name: str
    args: Any = None
    run: Callable[..., Any] | None = None
    id: str | None = None


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The outcome of a :class:`ToolCall`, sent back into the agent."""

    id: str
    name: str
    ok: bool
    value: Any = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ArtifactUpdate:
    """An artifact (or a chunk of one) to stream now, before the reply.

    ``parts`` are protocol :class:`Part` models or their 1.0 JSON. Chunks of one artifact share
    an ``artifact_id``: the first has ``append=False``, the following ``append=True``, the last
    ``last_chunk=True``. Without an id, each update is a new artifact.
    """

    parts: Sequence[Part | dict[str, Any]]
    name: str | None = None
    artifact_id: str | None = None
    description: str | None = None
    append: bool = False
    last_chunk: bool = True
    metadata: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class InputRequest:
    """Ask the user a question; the task waits (input-required) for the answer.

    ``checkpoint``: for an agent that keeps its state outside the process (a database), what it
    needs to go on from this question in another process (JSON: ids, a step, small values). With
    one, the task survives the loss of the runtime that asked: it is parked, and when the answer
    arrives any runtime calls the agent again with :attr:`AgentInput.resume` set (the agent then
    continues from the checkpoint instead of starting over). Without one, a task whose runtime
    stops while it waits is failed.
    """

    question: str
    meta: dict[str, Any] | None = None
    checkpoint: Any = None


@dataclass(frozen=True, slots=True)
class UserAnswer:
    """The user's answer to an :class:`InputRequest`; ``str(answer)`` is its text."""

    text: str
    parts: tuple[Part, ...] = ()
    message: Message | None = None
    """The whole A2A message the answer came in (its id, metadata...), when there is one."""

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, slots=True)
class Resume:
    """What a resumed agent gets (:attr:`AgentInput.resume`): the answer to the question it
    asked, and the checkpoint it gave with that question."""

    answer: UserAnswer
    checkpoint: Any
    question: str = ""


def is_retry_safe(agent: Any) -> bool:
    """Whether ``agent`` declared itself safe to run again (``agent.retry_safe = True``): a task
    lost with its runtime is then run once more on another runtime."""
    return getattr(agent, "retry_safe", False) is True


@dataclass(frozen=True, slots=True)
class Reply:
    """The final answer: text and/or data parts (any JSON values) and/or ready-made parts.

    With ``as_message=True`` the answer is a direct A2A Message rather than an artifact of the
    task: a blocking ``SendMessage`` then returns that Message (spec 3.1.1); streams, which have
    already shown the task, end with it as the completed status's message.
    """

    text: str | None = None
    data: Sequence[Any] = ()
    parts: Sequence[Part] = ()
    as_message: bool = False


class AgentError(Exception):
    """Raise to fail the task with this message (shown to the client as is)."""


class AgentRejected(Exception):
    """Raise to reject the task (state REJECTED) with this message."""


Frame: TypeAlias = ToolCallStarted | ToolCallCompleted | ToolCallFailed
Event: TypeAlias = (
    Progress
    | ToolCall
    | list[ToolCall]
    | Frame
    | list[Frame]
    | ArtifactUpdate
    | InputRequest
    | Reply
)
"""Anything an agent may yield."""

Agent: TypeAlias = Callable[[AgentInput], AsyncIterator[Event]]
"""An agent: called with the task, returns an async iterator (usually an async generator)."""
