"""Typed client events and the run state they update (pure: no I/O, no Django).

:class:`RunState` turns each streamed A2A result (a 1.0 :class:`StreamResponse`, whichever
dialect it arrived in) into one typed event and keeps what a client shows: the task's state,
the latest narration, the tool timeline (a :class:`~a2a_toolcall.contract.ToolTimeline`), the
pending question and the answer. The HTTP client (:mod:`a2a_toolcall.client.http`) feeds it;
a test or another transport can feed it too.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from a2a_toolcall.contract import (
    TOOL_CALL_V1_URI,
    ToolCallCompleted,
    ToolCallFailed,
    ToolCallParseError,
    ToolCallStarted,
    ToolInvocation,
    ToolState,
    ToolTimeline,
    frame_from_wire,
    parse_tool_call,
)
from a2a_toolcall.protocol.models import (
    Artifact,
    Message,
    StreamResponse,
    Task,
    TaskState,
    TaskStatus,
)

__all__ = [
    "ArtifactUpdate",
    "ClientEvent",
    "DirectMessage",
    "Finished",
    "InputRequest",
    "Narration",
    "Reconnecting",
    "RunState",
    "StatusChange",
    "TaskSnapshot",
    "ToolFrame",
    "message_text",
]

Frame = ToolCallStarted | ToolCallCompleted | ToolCallFailed


def message_text(message: Message | None) -> str:
    """The text parts of ``message`` joined by newlines ("" for None or no text)."""
    if message is None:
        return ""
    return "\n".join(part.text for part in message.parts if part.text is not None)


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientEvent:
    """Base of every event: the task it belongs to, its SSE id and the result as received.

    ``raw`` is the JSON-RPC ``result`` exactly as the server sent it (0.3 servers send the 0.3
    shape); ``response`` is the same result as a 1.0 :class:`StreamResponse`. Both are None
    for events the client makes itself (:class:`Reconnecting`, and the :class:`Finished` it
    derives from a task fetched with ``GetTask``).
    """

    task_id: str | None
    context_id: str | None
    event_id: str | None = None
    raw: Any = None
    response: StreamResponse | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskSnapshot(ClientEvent):
    """The whole task: first on a new stream, first on a resubscription, or from ``GetTask``."""

    task: Task


@dataclass(frozen=True, slots=True, kw_only=True)
class StatusChange(ClientEvent):
    """A non-terminal status update that is neither narration nor a question."""

    state: TaskState
    text: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Narration(ClientEvent):
    """A WORKING status update with text: what the agent is doing, in words.

    ``step`` and ``percent`` come from the event metadata when the server sends them.
    """

    text: str
    step: int | str | None = None
    percent: float | None = None
    metadata: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolFrame(ClientEvent):
    """A tool-call-v1 frame, and the invocation it updated in the run's timeline."""

    frame: Frame
    call: ToolInvocation


@dataclass(frozen=True, slots=True, kw_only=True)
class InputRequest(ClientEvent):
    """The task waits for the user: answer with ``TaskRun.respond(text)``."""

    question: str
    request_id: str | None = None
    state: TaskState = TaskState.INPUT_REQUIRED
    meta: Any = None
    """The agent's ``InputRequest.meta`` (``metadata.meta`` on the question), e.g. choices."""

    @property
    def choices(self) -> tuple[str, ...]:
        """The answers the agent offers (``meta["choices"]``), if it offers any."""
        offered = self.meta.get("choices") if isinstance(self.meta, dict) else None
        if not isinstance(offered, list):
            return ()
        return tuple(str(choice) for choice in offered if isinstance(choice, str | int | float))


@dataclass(frozen=True, slots=True, kw_only=True)
class ArtifactUpdate(ClientEvent):
    """An artifact other than a tool-call frame (the answer, a file, structured output)."""

    artifact: Artifact
    append: bool = False
    last_chunk: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Finished(ClientEvent):
    """The terminal status: completed, failed, canceled or rejected."""

    state: TaskState
    text: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class DirectMessage(ClientEvent):
    """The agent answered with a message instead of a task; the exchange is over."""

    message: Message


@dataclass(frozen=True, slots=True, kw_only=True)
class Reconnecting(ClientEvent):
    """The connection dropped before the task stopped; the client resubscribes.

    ``attempt`` counts from 1; ``reason`` says what broke; ``last_event_id`` is what the
    resubscription resumes after (None: the server sends the task as it is, then what follows).
    """

    attempt: int
    reason: str
    last_event_id: str | None = None


@dataclass(slots=True)
class RunState:
    """What one task looks like to a client, updated event by event.

    ``apply`` takes each result in arrival order and returns the typed event to hand on, or
    None for a duplicate (a tool frame a resubscription replayed, which changes nothing).
    ``percent`` is the latest percentage a narration carried (``Progress(percent=...)``), kept
    across narration without one, cleared when the task asks for input or ends.
    """

    task_id: str | None = None
    context_id: str | None = None
    state: TaskState | None = None
    narration: str = ""
    percent: float | None = None
    status_text: str = ""
    question: InputRequest | None = None
    message: Message | None = None
    timeline: ToolTimeline = field(default_factory=ToolTimeline)
    artifacts: dict[str, Artifact] = field(default_factory=dict)
    last_event_id: str | None = None
    events: int = 0

    @property
    def is_terminal(self) -> bool:
        """True once the task reached completed, failed, canceled or rejected."""
        return self.state is not None and self.state.is_terminal

    @property
    def is_interrupted(self) -> bool:
        """True while the task waits for input (or auth)."""
        return self.state is not None and self.state.is_interrupted

    @property
    def is_over(self) -> bool:
        """True when this stream has nothing more to say: terminal, interrupted or a message."""
        return self.is_terminal or self.is_interrupted or self.message is not None

    @property
    def answer_text(self) -> str:
        """The answer: text of the answer artifacts, else the final status or direct message."""
        texts = [
            part.text
            for artifact in self.artifacts.values()
            for part in artifact.parts
            if part.text is not None
        ]
        if texts:
            return "\n".join(texts)
        if self.message is not None:
            return message_text(self.message)
        return self.status_text if self.is_terminal else ""

    @property
    def answer_data(self) -> list[Any]:
        """The data parts of the answer artifacts (structured output), in order."""
        return [
            part.data
            for artifact in self.artifacts.values()
            for part in artifact.parts
            if part.kind == "data"
        ]

    def apply(
        self,
        response: StreamResponse,
        *,
        raw: Any = None,
        event_id: str | None = None,
        at: float | None = None,
    ) -> ClientEvent | None:
        """Update the state with one streamed result and return its typed event."""
        now = time.time() if at is None else at
        self.events += 1
        if event_id:
            self.last_event_id = event_id
        common: dict[str, Any] = {"event_id": event_id, "raw": raw, "response": response}
        if response.task is not None:
            return self.absorb_task(response.task, at=now, **common)
        if response.message is not None:
            self.message = response.message
            self._ids(response.message.task_id, response.message.context_id)
            return DirectMessage(
                task_id=self.task_id, context_id=self.context_id, message=response.message, **common
            )
        if response.artifact_update is not None:
            update = response.artifact_update
            self._ids(update.task_id, update.context_id)
            frame = _frame_of(update.artifact)
            if frame is not None:
                return self._frame(frame, now, common)
            self._keep_artifact(update.artifact, append=bool(update.append))
            return ArtifactUpdate(
                task_id=self.task_id,
                context_id=self.context_id,
                artifact=update.artifact,
                append=bool(update.append),
                last_chunk=bool(update.last_chunk),
                **common,
            )
        status_update = response.status_update
        assert status_update is not None  # StreamResponse holds exactly one payload
        self._ids(status_update.task_id, status_update.context_id)
        return self._status(status_update.status, status_update.metadata, common)

    def absorb_task(self, task: Task, *, at: float | None = None, **common: Any) -> TaskSnapshot:
        """Take a whole task (first event, resubscription, ``GetTask``) into the state.

        Its artifacts and the tool-call-v1 summary in its metadata fill the timeline: rows seen
        already are left alone (duplicates are ignored), rows the client missed appear with
        their outcome.
        """
        now = time.time() if at is None else at
        self._ids(task.id, task.context_id)
        self.state = task.status.state
        text = message_text(task.status.message)
        self.status_text = text
        if task.status.state is TaskState.WORKING and text:
            self.narration = text
        if task.status.state.is_terminal or task.status.state.is_interrupted:
            self.percent = None
        for artifact in task.artifacts or []:
            frame = _frame_of(artifact)
            if frame is not None:
                self._feed(frame, now)
            else:
                self._keep_artifact(artifact, append=False)
        self._absorb_summary(task.metadata, now)
        if task.status.state.is_interrupted:
            self.question = InputRequest(
                task_id=self.task_id,
                context_id=self.context_id,
                question=text,
                request_id=_request_id(task.status.message),
                state=task.status.state,
                meta=_question_meta(task.status.message),
            )
        return TaskSnapshot(task_id=self.task_id, context_id=self.context_id, task=task, **common)

    def finished_from_task(self) -> Finished | InputRequest | None:
        """The event a snapshot implies when it shows the task already stopped, else None."""
        if self.is_terminal:
            assert self.state is not None
            return Finished(
                task_id=self.task_id,
                context_id=self.context_id,
                state=self.state,
                text=self.status_text,
            )
        if self.is_interrupted:
            return self.question
        return None

    # --- internals -------------------------------------------------------------------------

    def _ids(self, task_id: str | None, context_id: str | None) -> None:
        if task_id and not self.task_id:
            self.task_id = task_id
        if context_id and not self.context_id:
            self.context_id = context_id

    def _status(
        self, status: TaskStatus, metadata: dict[str, Any] | None, common: dict[str, Any]
    ) -> ClientEvent:
        self.state = status.state
        text = message_text(status.message)
        ids: dict[str, Any] = {"task_id": self.task_id, "context_id": self.context_id}
        if status.state.is_terminal:
            self.status_text = text
            self.question = None
            self.percent = None
            return Finished(state=status.state, text=text, **ids, **common)
        if status.state.is_interrupted:
            self.status_text = text
            self.percent = None
            self.question = InputRequest(
                question=text,
                request_id=_request_id(status.message),
                state=status.state,
                meta=_question_meta(status.message),
                **ids,
                **common,
            )
            return self.question
        self.question = None
        if status.state is TaskState.WORKING and text:
            self.narration = text
            meta = metadata or {}
            step, percent = meta.get("step"), meta.get("percent")
            narration = Narration(
                text=text,
                step=step if isinstance(step, str | int) and not isinstance(step, bool) else None,
                percent=float(percent)
                if isinstance(percent, int | float) and not isinstance(percent, bool)
                else None,
                metadata=metadata,
                **ids,
                **common,
            )
            if narration.percent is not None:
                self.percent = narration.percent
            return narration
        return StatusChange(state=status.state, text=text, **ids, **common)

    def _frame(self, frame: Frame, at: float, common: dict[str, Any]) -> ToolFrame | None:
        call = self._feed(frame, at)
        if call is None:
            return None
        return ToolFrame(
            task_id=self.task_id, context_id=self.context_id, frame=frame, call=call, **common
        )

    def _feed(self, frame: Frame, at: float) -> ToolInvocation | None:
        known = self.timeline.get(frame.tool_call_id)
        if known is not None:
            if isinstance(frame, ToolCallStarted) and known.has_started:
                return None
            if not isinstance(frame, ToolCallStarted) and known.is_finished:
                return None
        return self.timeline.feed(frame, at=at)

    def _absorb_summary(self, metadata: dict[str, Any] | None, at: float) -> None:
        summary = (metadata or {}).get(TOOL_CALL_V1_URI)
        calls = summary.get("toolCalls") if isinstance(summary, dict) else None
        if not isinstance(calls, list):
            return
        for row in calls:
            if not isinstance(row, dict):
                continue
            for frame in _frames_of_summary(row):
                duration = row.get("durationMs")
                started = (
                    at - float(duration) / 1000
                    if isinstance(duration, int | float) and not isinstance(duration, bool)
                    else at
                )
                self._feed(frame, started if isinstance(frame, ToolCallStarted) else at)

    def _keep_artifact(self, artifact: Artifact, *, append: bool) -> None:
        kept = self.artifacts.get(artifact.artifact_id)
        if append and kept is not None:
            artifact = kept.model_copy(update={"parts": [*kept.parts, *artifact.parts]})
        self.artifacts[artifact.artifact_id] = artifact


def _frame_of(artifact: Artifact) -> Frame | None:
    # Recognised by the part's MIME type, whatever the artifact's name or extensions say.
    return parse_tool_call(artifact.parts)


def _frames_of_summary(row: dict[str, Any]) -> list[Frame]:
    """The frames one row of the tool-call-v1 task summary stands for."""
    base = {"toolCallId": row.get("toolCallId"), "name": row.get("name")}
    wire: list[dict[str, Any]] = [
        {**base, "phase": "started", **({"args": row["args"]} if "args" in row else {})}
    ]
    state = row.get("state")
    if state == ToolState.COMPLETED.value:
        wire.append(
            {**base, "phase": "completed", **({"result": row["result"]} if "result" in row else {})}
        )
    elif state == ToolState.FAILED.value:
        wire.append(
            {**base, "phase": "failed", **({"error": row["error"]} if "error" in row else {})}
        )
    try:
        return [frame_from_wire(item) for item in wire]
    except ToolCallParseError:
        return []


def _question_meta(message: Message | None) -> Any:
    return (message.metadata or {}).get("meta") if message is not None else None


def _request_id(message: Message | None) -> str | None:
    value = (message.metadata or {}).get("requestId") if message is not None else None
    return value if isinstance(value, str) and value else None
