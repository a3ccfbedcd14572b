"""The recorder: the single writer of a task's log, and the in-process hub streams read from.

For each task this process accepts, one recorder coroutine (independent of any client
connection) turns the runtime's envelopes into A2A stream events, numbers them (``seq`` from 1:
the SSE ``id``), hands each to the streams of this process at once, and leaves the writing to
the process's :mod:`~a2a_toolcall.journal`, which stores every task's new events together in
batches. State changes (input-required, terminal) are written *before* they are handed out, so
a client that sees one can read it back with GetTask from any process; other events are written
within ``FLUSH_INTERVAL``. After each write the recorder notifies streams in other processes on
the bus (``agent.task.events.{cid}``); they read the new events from the database.

A crash loses the events not yet written: at most ``FLUSH_INTERVAL`` seconds of tool frames and
narration, never a state change a client has seen.

The recorder is also where the agent's data values are cleaned (:mod:`~a2a_toolcall.hygiene`):
each one once, as its envelope is turned into the event that is both handed out and stored, so
the wire and the database cannot disagree. Which values: tool args and results (``_frame``),
narration ``meta`` (``_progress``), question ``meta`` (``_on_envelope``), streamed artifacts'
data parts and metadata (``_streamed_artifact``), the reply's data parts and part metadata
(``_response``). Free text is not cleaned.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import functools
import itertools
import logging
import time
import uuid
from collections.abc import Callable, Coroutine, Sequence
from datetime import UTC, datetime
from typing import Any, Final, NamedTuple

from pydantic_core import to_json

from a2a_toolcall import memory, store
from a2a_toolcall.aio import Alarm, Flag
from a2a_toolcall.bus import (
    PACE_WINDOW,
    PUBLISH_WINDOW,
    TOPIC_ARTIFACT,
    TOPIC_CANCEL,
    TOPIC_EVENTS,
    TOPIC_INPUT_REQUEST,
    TOPIC_INPUT_RESPONSE,
    TOPIC_PROGRESS,
    TOPIC_RESPONSE,
    TOPIC_TOOLFRAME,
    Bus,
    Envelope,
    RuntimeLost,
    TaskStream,
    first_seq,
)
from a2a_toolcall.conf import get_setting
from a2a_toolcall.contract import (
    CANCELLED_ERROR,
    JSON_MEDIA_TYPE,
    TOOL_CALL_ARTIFACT_NAME,
    TOOL_CALL_V1_MIME_TYPE,
    TOOL_CALL_V1_URI,
    ToolCallCompleted,
    ToolCallFailed,
    ToolCallParseError,
    ToolCallStarted,
    ToolInvocation,
    ToolState,
    ToolTimeline,
    frame_from_wire,
)
from a2a_toolcall.hygiene import clean_metadata, clean_part, get_cleaner
from a2a_toolcall.journal import FLUSH_INTERVAL, journal
from a2a_toolcall.lifecycle import log_transition
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
    format_timestamp,
    parse_timestamp,
)
from a2a_toolcall.runtime.events import Frame
from a2a_toolcall.store import PROCESS_ID, LoggedEvent, TaskWrite

RUNTIME_STOPPED: Final = "the worker running it stopped"
"""The error of a tool call left open by a runtime that stopped answering (killed, say)."""

RECORDER_STOPPED: Final = "the server process recording it stopped"
"""The reason given to a task whose recording process is gone (another process found out)."""

MAX_ATTEMPTS: Final = 2
"""Runs of a retry-safe agent's task: the first, and one more after its runtime was lost."""

__all__ = ["FLUSH_INTERVAL", "RUNTIME_STOPPED", "Recorder", "TaskHub", "ends_stream", "hub_for"]

logger = logging.getLogger(__name__)

ANSWER_ARTIFACT_NAME: Final = "answer"
PACE_MAX: Final = 32
"""The widest window of an agent a stream paces."""
HUB_KEEP_SECONDS: Final = 5.0
"""How long a finished task's events stay in memory for streams that open late (then: the DB)."""
SUMMARY_INTERVAL: Final = 1.0
"""With RECORD_EVENTS off: seconds between rewrites of a running task's tool-call summary."""

# The task state machine: which state may follow which (a table, not scattered ifs).
TRANSITIONS: Final[dict[TaskState, frozenset[TaskState]]] = {
    TaskState.SUBMITTED: frozenset(
        {TaskState.WORKING, TaskState.CANCELED, TaskState.FAILED, TaskState.REJECTED}
    ),
    TaskState.WORKING: frozenset(
        {
            TaskState.WORKING,
            TaskState.INPUT_REQUIRED,
            TaskState.COMPLETED,
            TaskState.FAILED,
            TaskState.CANCELED,
            TaskState.REJECTED,
        }
    ),
    TaskState.INPUT_REQUIRED: frozenset({TaskState.WORKING, TaskState.CANCELED, TaskState.FAILED}),
}


# A tool frame's artifactUpdate event around the artifact id and the frame, as
# StreamResponse.to_json writes it.
_FRAME_MIDDLE: Final = b"".join(
    (
        b'","name":',
        to_json(TOOL_CALL_ARTIFACT_NAME),
        b',"parts":[{"data":',
    )
)
_FRAME_SUFFIX: Final = b"".join(
    (
        b',"metadata":{"mimeType":',
        to_json(TOOL_CALL_V1_MIME_TYPE),
        b'},"mediaType":',
        to_json(JSON_MEDIA_TYPE),
        b'}],"extensions":[',
        to_json(TOOL_CALL_V1_URI),
        b']},"append":false,"lastChunk":false}}',
    )
)


def frame_event_prefix(task_id: str, context_id: str) -> bytes:
    """The start of every tool-frame event of a task, for :func:`frame_event_json`."""
    return b"".join(
        (
            b'{"artifactUpdate":{"taskId":',
            to_json(task_id),
            b',"contextId":',
            to_json(context_id),
            b',"artifact":{"artifactId":"',
        )
    )


def frame_event_json(prefix: bytes, artifact_id: str, frame: Frame) -> bytes:
    """The JSON of the ``artifactUpdate`` event carrying ``frame``, byte for byte what
    ``StreamResponse.to_json`` makes of it (``artifact_id`` in hex: nothing to escape).

    The hottest event of all: put together from the frame's own JSON, it skips the five models
    (Part, Artifact, update, response) it would take to build and serialise it.
    """
    return b"".join((prefix, artifact_id.encode(), _FRAME_MIDDLE, frame.to_json(), _FRAME_SUFFIX))


def ends_stream(event: StreamResponse) -> bool:
    """A status update to a terminal or interrupted state ends a stream (spec 9.4.2)."""
    update = event.status_update
    return update is not None and (
        update.status.state.is_terminal or update.status.state.is_interrupted
    )


def _when(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, UTC)


class HubListener:
    """One stream's place in a :class:`TaskHub`: the events published since it joined that it
    has not taken yet, at most ``limit`` bytes of them.

    A stream whose client reads slower than events arrive stops taking them (its ``send()``
    waits for the client); past ``limit`` bytes waiting here the listener lets them all go
    and is ``behind``: the stream closes and the client resumes from the database
    (``Last-Event-ID``). A single event larger than the limit never makes it behind on its own.
    """

    __slots__ = (
        "_alarm",
        "_arrived",
        "_events",
        "_hub",
        "behind",
        "blocked",
        "ended",
        "limit",
        "queued",
        "taken",
    )

    def __init__(
        self,
        limit: int,
        hub: TaskHub | None = None,
        blocked: Callable[[], bool] | None = None,
    ) -> None:
        self.limit = limit
        self._hub = hub
        self.blocked = blocked
        """With it, the listener paces the task's agent (a stream does, see
        :meth:`Recorder._release`): True while its client holds the stream's writes back."""
        self.taken = 0
        """The seq of the last event taken."""
        self._alarm: Alarm | None = None
        # Made when the first event comes (an idle stream holds none), let go when empty.
        self._events: collections.deque[LoggedEvent] | None = None
        self._arrived = Flag()
        self.queued = 0
        """Bytes of JSON waiting in this listener."""
        self.behind = False
        """It fell more than ``limit`` bytes behind and holds nothing any longer."""
        self.ended = False
        """No more events come here (the task was parked: read on from the database)."""

    def put(self, event: LoggedEvent) -> None:
        if self.behind:
            return
        if self._events is None:
            self._events = collections.deque()
        self._events.append(event)
        self.queued += len(event.json)
        if self.queued > self.limit and len(self._events) > 1:
            self.behind = True
            self._events = None
            self.queued = 0
        self._arrived.set()

    def end(self) -> None:
        self.ended = True
        self._arrived.set()

    def take(self) -> LoggedEvent | None:
        """The oldest waiting event, or None."""
        events = self._events
        if not events:
            return None
        event = events.popleft()
        if not events:
            self._events = None
        self.queued -= len(event.json)
        self.taken = event.seq
        if self.blocked is not None and self._hub is not None:
            self._hub.moved()
        return event

    @property
    def paces(self) -> bool:
        """It paces the agent (a stream, still reading, whose client reads)."""
        return (
            self.blocked is not None and not self.behind and not self.ended and not self.blocked()
        )

    @property
    def waiting(self) -> bool:
        """It has events not yet taken."""
        return bool(self._events)

    async def wait(self, timeout: float | None = None) -> bool:
        """Until an event arrives (or the listener is behind or ended); False if ``timeout``
        seconds pass first."""
        if self._events or self.behind or self.ended:
            return True
        self._arrived.clear()
        if timeout is None:
            await self._arrived.wait()
            return True
        loop = asyncio.get_running_loop()
        if self._alarm is None:
            self._alarm = Alarm()
        self._alarm.set(loop, loop.time() + timeout, self._arrived.set)
        try:
            await self._arrived.wait()
        finally:
            self._alarm.clear()
        return bool(self._events) or self.behind or self.ended

    def close(self) -> None:
        """No more waits (the reader left)."""
        if self._alarm is not None:
            self._alarm.cancel()


KEEP_WRITTEN: Final = 16_384
"""Bytes of a task's latest written events its hub keeps for streams that join late."""


class TaskHub:
    """The events of one task recorded in this process, fanned out to its local streams.

    It holds the events the database does not have yet (all of them, when events are not
    recorded), and the latest written ones up to ``KEEP_WRITTEN`` bytes (so that a stream
    joining a task that just started, as every new task's stream does, reads no database):
    older written events are the store's to hand out, and a task's memory here stays at what
    the journal has still to write plus that, whatever the length of its timeline.
    """

    __slots__ = (
        "_written",
        "_written_bytes",
        "closed",
        "events",
        "listeners",
        "on_move",
        "stored",
        "task_id",
    )

    def __init__(self, task_id: str) -> None:
        self.task_id = task_id
        self.events: collections.deque[LoggedEvent] = collections.deque()
        self.listeners: set[HubListener] = set()
        self.closed = False
        self.stored = 0
        """Every event up to this seq was let go here: read it from the database."""
        self._written = 0
        """How many of :attr:`events` (from the left) are written."""
        self._written_bytes = 0
        self.on_move: Callable[[], None] | None = None
        """Called when a pacing listener took events or left (the recorder's pacing)."""

    def publish(self, event: LoggedEvent) -> None:
        self.events.append(event)
        memory.churned(len(event.json))
        for listener in self.listeners:
            listener.put(event)

    def written(self, last: int) -> None:
        """Every event up to ``last`` is in the database (in order, by the journal): let them
        go, but for the latest ``KEEP_WRITTEN`` bytes of them."""
        events = self.events
        count = self._written
        while count < len(events) and events[count].seq <= last:
            self._written_bytes += len(events[count].json)
            count += 1
        while count and self._written_bytes > KEEP_WRITTEN:
            event = events.popleft()
            self._written_bytes -= len(event.json)
            self.stored = event.seq
            count -= 1
        self._written = count

    def backlog(self, after_seq: int) -> list[LoggedEvent]:
        """The events after ``after_seq`` held here (those up to :attr:`stored` are not)."""
        return [e for e in self.events if e.seq > after_seq]

    def listen(self, limit: int, blocked: Callable[[], bool] | None = None) -> HubListener:
        """A listener for the events to come (``ended`` once the recording stops here: a
        parked task goes on elsewhere, read the store). With ``blocked`` (is the listener's
        client holding its writes back?) it paces the agent (:meth:`Recorder._release`)."""
        listener = HubListener(limit, self, blocked)
        self.listeners.add(listener)
        if self.closed:
            listener.end()
        elif blocked is not None:
            self.moved()  # the agent is paced from now on
        return listener

    def unlisten(self, listener: HubListener) -> None:
        listener.close()
        self.listeners.discard(listener)
        if listener.blocked is not None:
            self.moved()

    def moved(self) -> None:
        if self.on_move is not None:
            self.on_move()

    def close(self) -> None:
        """No more events here: tell the listeners."""
        self.closed = True
        for listener in self.listeners:
            listener.end()


_hubs: dict[str, TaskHub] = {}
_recorders: dict[str, Recorder] = {}


def hub_for(task_id: str) -> TaskHub | None:
    """The hub of a task recorded in this process, if any."""
    return _hubs.get(task_id)


def _drop_hub(task_id: str, hub: TaskHub) -> None:
    if _hubs.get(task_id) is hub:
        del _hubs[task_id]
    memory.released()


def recorder_for(task_id: str) -> Recorder | None:
    """The recorder of a running task recorded in this process, if any."""
    return _recorders.get(task_id)


def live_recorders() -> int:
    """How many tasks this process is recording now."""
    return len(_recorders)


def start_in_background(coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
    """Run ``coro`` as a task of its own, outside the request that started it.

    A fresh context: the task must not inherit the request's thread-sensitive context, whose
    executor ends with the request, and must outlive the client's connection.
    """
    return asyncio.get_running_loop().create_task(coro, context=contextvars.Context())


_ROW_SCALARS: Final = (
    "state",
    "pending_request_id",
    "last_seq",
    "tool_call_count",
    "failed_tool_count",
)
"""The task row's columns a recorder writes when they change, besides the status's."""


class Recorder:
    """Records one task from its creation to its terminal state."""

    __slots__ = (
        "_dirty",
        "_end_fields",
        "_end_level",
        "_frame_prefix",
        "_held",
        "_id_base",
        "_id_numbers",
        "_lease_lost",
        "_pacing",
        "_resized_at",
        "_row_taken",
        "_row_written",
        "_summary_due",
        "_summary_scheduled",
        "_window",
        "agent",
        "artifacts",
        "attempt",
        "bus",
        "cancel_requested",
        "changed_calls",
        "checkpoint",
        "clean",
        "context_id",
        "created_at",
        "failed_calls",
        "history",
        "hub",
        "journal",
        "metadata",
        "pacing",
        "parked",
        "pending_request_id",
        "ready",
        "record_events",
        "reply_message",
        "runtime",
        "runtime_seen",
        "seq",
        "state",
        "status",
        "stream",
        "task_id",
        "timeline",
        "unwritten",
        "work",
    )

    def __init__(
        self,
        bus: Bus,
        task: Task,
        *,
        agent: str,
        stream: TaskStream,
        emitted_at: datetime,
        resumed_from: Any = None,
    ) -> None:
        self.bus = bus
        self.task_id = task.id
        self.context_id = task.context_id or ""
        self.agent = agent
        self.stream = stream
        self.hub = TaskHub(task.id)
        self.state = task.status.state
        self.status = task.status
        self.history: list[dict[str, Any]] = [m.to_wire() for m in task.history or ()]
        self.artifacts: list[dict[str, Any]] = []
        self.metadata: dict[str, Any] = dict(task.metadata or {})
        self.pending_request_id = ""
        self.reply_message: dict[str, Any] | None = None
        self.timeline = ToolTimeline()
        self.changed_calls: set[str] = set()
        self.failed_calls = 0
        self.clean = get_cleaner()
        self.record_events = bool(get_setting("RECORD_EVENTS"))
        self.seq = 0
        self.unwritten: list[LoggedEvent] = []
        self.journal = journal()
        # What changed since the last write (the row is updated column by column).
        self._dirty: set[str] = set()
        # The status and the row's scalar columns as the last committed write left them, and as
        # the write in flight takes them: a write sets only the columns that differ, so a running
        # task's write leaves its indexed columns (state, updated_at) and their indexes alone.
        self._row_written: tuple[TaskStatus | None, tuple[Any, ...]] = (None, ())
        self._row_taken: tuple[TaskStatus | None, tuple[Any, ...]] = (None, ())
        self._summary_due = 0.0
        self._summary_scheduled = False
        # Artifact and message ids: unique, without a random draw for each.
        self._id_base = uuid.uuid4().hex[:24]
        self._id_numbers = itertools.count(1)
        self._frame_prefix = frame_event_prefix(self.task_id, self.context_id)
        self.cancel_requested: str | None = None
        self.runtime_seen = False
        self.ready = Flag()
        self.created_at = emitted_at
        self.attempt = 1
        self.work: dict[str, Any] | None = None
        """The work request (set by the service): sent again for a retry."""
        self.runtime: dict[str, Any] = {}
        """What the runtime running it said of itself: id, attempt, retrySafe."""
        self.checkpoint: Any = None
        self.parked = False
        self._lease_lost = False
        self._end_level = logging.INFO
        self._end_fields: dict[str, Any] = {}
        # Envelopes handled, not yet acknowledged: (the last event seq then, envelope seq),
        # held while a stream has not taken that event (pacing; TaskStream.acknowledge).
        # (the last event seq then, envelope seq, when the agent made it).
        self._held: list[tuple[int, int, float]] = []
        self._window = PUBLISH_WINDOW
        """The agent's window now (pacing: :meth:`_release`)."""
        self._resized_at = 0.0
        self._pacing = False
        self.pacing = float(get_setting("STREAM_PACING") or 0.0)
        """``STREAM_PACING``: the seconds an event may wait for the streams pacing the agent."""
        self.hub.on_move = self._release
        stream.on_stall = self._release
        stream.take_now = self._take_now
        _hubs[task.id] = self.hub
        _recorders[task.id] = self
        if resumed_from is None:
            self._emit(StreamResponse(task=task), emitted_at)
        else:
            self._resume_from(resumed_from)

    @classmethod
    def resumed(cls, bus: Bus, row: Any, calls: Sequence[Any], *, stream: TaskStream) -> Recorder:
        """A recorder taking a parked task's recording up again (its answer arrived here), from
        its row and its ToolCall rows: the log goes on from ``row.last_seq``."""
        return cls(
            bus,
            store.snapshot(row),
            agent=row.agent,
            stream=stream,
            emitted_at=row.created_at,
            resumed_from=(row, calls),
        )

    def _resume_from(self, resumed_from: tuple[Any, Sequence[Any]]) -> None:
        row, calls = resumed_from
        self.seq = row.last_seq
        self.attempt = row.attempt
        self.artifacts = list(row.artifacts or [])
        self.history = list(row.history or [])
        self.metadata = {k: v for k, v in (row.metadata or {}).items() if k != TOOL_CALL_V1_URI}
        self.pending_request_id = row.pending_request_id
        self.checkpoint = row.checkpoint
        self.failed_calls = row.failed_tool_count
        self.runtime_seen = True
        for call in sorted(calls, key=lambda c: c.order):
            started = call.started_at.timestamp() if call.started_at else None
            self.timeline.feed(
                ToolCallStarted(tool_call_id=call.tool_call_id, name=call.name, args=call.args),
                at=started,
            )
            end = call.finished_at.timestamp() if call.finished_at else None
            if call.status == ToolState.COMPLETED.value:
                self.timeline.feed(
                    ToolCallCompleted(
                        tool_call_id=call.tool_call_id, name=call.name, result=call.result
                    ),
                    at=end,
                )
            elif call.status == ToolState.FAILED.value:
                self.timeline.feed(
                    ToolCallFailed(
                        tool_call_id=call.tool_call_id, name=call.name, error=call.error or "failed"
                    ),
                    at=end,
                )

    async def lease_expired(self) -> None:
        """The lease of the runtime running this task expired (the keeper found it): the task is
        parked, run again or failed, as :meth:`_runtime_lost` decides."""
        if self.state.is_terminal or self._lease_lost:
            return
        self._lease_lost = True
        await self.stream.expire("its lease expired")

    # --- events ----------------------------------------------------------------------------

    def _emit(self, response: StreamResponse, emitted_at: datetime) -> LoggedEvent:
        self.seq += 1
        event = LoggedEvent(self.seq, response, emitted_at).compact()
        self.unwritten.append(event)
        return event

    def _emit_frame(self, frame: Frame, at: datetime) -> LoggedEvent:
        self.seq += 1
        json = frame_event_json(self._frame_prefix, self._new_id(), frame)
        event = LoggedEvent.from_artifact_json(self.seq, json, at)
        self.unwritten.append(event)
        return event

    def _new_id(self) -> str:
        """An id no other artifact or message has: the task's random base and a counter."""
        return f"{self._id_base}{next(self._id_numbers):08x}"

    async def _hand_out(self, event: LoggedEvent, *, write_first: bool) -> None:
        if write_first:
            await self.flush()
            self.hub.publish(event)
        else:
            self._hand_out_now(event)

    def _hand_out_now(self, event: LoggedEvent) -> None:
        """To the streams now, to the database with the journal's next write."""
        self.journal.add(self)
        self.hub.publish(event)

    async def _status(
        self,
        state: TaskState,
        emitted_at: datetime,
        *,
        text: str | None = None,
        message_metadata: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        message: Message | None = None,
        stored: bool = False,
    ) -> None:
        """Move to ``state`` and hand the status update out; a change of state is written
        first (GetTask then agrees with the stream) unless ``stored`` (already in the row)."""
        allowed = TRANSITIONS.get(self.state, frozenset())
        if state not in allowed:
            logger.warning(
                "task %s: ignoring %s after %s", self.task_id, state.name, self.state.name
            )
            return
        if message is None and text is not None:
            message = Message(
                message_id=self._new_id(),
                role=Role.AGENT,
                parts=[Part(text=text)],
                task_id=self.task_id,
                context_id=self.context_id,
                metadata=message_metadata,
            )
        changed = state is not self.state
        before = self.state
        self.state = state
        self.status = TaskStatus(
            state=state, message=message, timestamp=format_timestamp(emitted_at)
        )
        if message is not None and (state.is_interrupted or state.is_terminal):
            self.history.append(message.to_wire())
            self._dirty.add("history")
        event = self._emit(
            StreamResponse(
                status_update=TaskStatusUpdateEvent(
                    task_id=self.task_id,
                    context_id=self.context_id,
                    status=self.status,
                    metadata=metadata,
                )
            ),
            emitted_at,
        )
        # A state change is stored before anyone sees it: GetTask then agrees with the stream.
        await self._hand_out(event, write_first=changed and not stored)
        if changed:
            self._log_change(before, state, message)

    def _log_change(self, before: TaskState, state: TaskState, message: Message | None) -> None:
        name = state.name.lower().replace("_", "-")
        if state.is_terminal:
            text = "\n".join(p.text for p in message.parts if p.text) if message else ""
            log_transition(
                self.task_id,
                name,
                level=self._end_level,
                reason=text[:500] or None,
                duration=(datetime.now(UTC) - self.created_at).total_seconds(),
                attempt=self.attempt if self.attempt != 1 else None,
                **self._end_fields,
            )
        elif state is TaskState.WORKING:
            if before is TaskState.INPUT_REQUIRED:
                log_transition(
                    self.task_id, "resumed", attempt=self.attempt if self.attempt != 1 else None
                )
            else:
                log_transition(self.task_id, "working", runtime_id=self.runtime.get("id"))
        elif state is TaskState.INPUT_REQUIRED:
            log_transition(self.task_id, "input-required", resumable=self.checkpoint is not None)

    async def _artifact(
        self,
        artifact: Artifact,
        emitted_at: datetime,
        *,
        last_chunk: bool,
        write_first: bool,
        append: bool = False,
    ) -> None:
        event = self._emit(
            StreamResponse(
                artifact_update=TaskArtifactUpdateEvent(
                    task_id=self.task_id,
                    context_id=self.context_id,
                    artifact=artifact,
                    append=append,
                    last_chunk=last_chunk,
                )
            ),
            emitted_at,
        )
        await self._hand_out(event, write_first=write_first)

    # --- writing ---------------------------------------------------------------------------

    def _row_fields(self) -> dict[str, Any]:
        """The row's columns that changed since the last committed write (all of them the
        first time)."""
        fields: dict[str, Any] = {}
        status = self.status
        written_status, written = self._row_written
        if status is not written_status:
            at = _when(self._status_ts())
            fields["status"] = status.to_wire()
            fields["updated_at"] = at
            fields["finished_at"] = at if self.state.is_terminal else None
        scalars = (
            self.state.value,
            self.pending_request_id,
            self.seq,
            len(self.timeline),
            self.failed_calls,
        )
        if written:
            for name, value, before in zip(_ROW_SCALARS, scalars, written, strict=True):
                if value != before:
                    fields[name] = value
        else:
            fields.update(zip(_ROW_SCALARS, scalars, strict=True))
        self._row_taken = (status, scalars)
        dirty, self._dirty = self._dirty, set()
        if "history" in dirty:
            fields["history"] = self.history
        if "artifacts" in dirty:
            fields["artifacts"] = self.artifacts
        if "checkpoint" in dirty:
            fields["checkpoint"] = self.checkpoint
        if "reply_message" in dirty:
            fields["reply_message"] = self.reply_message
        # The tool-call summary grows with the task: it is written when the task stops or
        # waits for input. Until then readers build it from the ToolCall rows
        # (store.live_summaries); without those (RECORD_EVENTS off) it is rewritten at most
        # once per SUMMARY_INTERVAL.
        settled = self.state.is_terminal or self.state.is_interrupted
        if "metadata" in dirty:
            now = asyncio.get_running_loop().time()
            if settled or (not self.record_events and now >= self._summary_due):
                metadata = dict(self.metadata)
                if len(self.timeline):
                    metadata[TOOL_CALL_V1_URI] = {"toolCalls": self._timeline_summary()}
                fields["metadata"] = metadata
                self._summary_due = now + SUMMARY_INTERVAL
            else:
                self._dirty.add("metadata")
                if not self.record_events and not self._summary_scheduled:
                    # Written then even if no other event comes meanwhile.
                    self._summary_scheduled = True
                    asyncio.get_running_loop().call_at(self._summary_due, self._write_summary)
        return fields

    def _write_summary(self) -> None:
        self._summary_scheduled = False
        if "metadata" in self._dirty:
            self.journal.add(self)

    def _status_ts(self) -> float:
        if self.status.timestamp:
            return parse_timestamp(self.status.timestamp).timestamp()
        return datetime.now(UTC).timestamp()

    @staticmethod
    def _call_row(call: ToolInvocation) -> dict[str, Any]:
        return {
            "tool_call_id": call.tool_call_id,
            "name": call.name,
            "order": call.order,
            "status": call.state.value,
            "args": call.args,
            "result": call.result,
            "error": call.error or "",
            "started_at": _when(call.started_at) if call.started_at is not None else None,
            "finished_at": _when(call.finished_at) if call.finished_at is not None else None,
            "duration_ms": None if call.duration is None else round(call.duration * 1000, 3),
        }

    def _timeline_summary(self) -> list[dict[str, Any]]:
        summary = []
        for call in self.timeline:
            row: dict[str, Any] = {
                "toolCallId": call.tool_call_id,
                "name": call.name,
                "state": call.state.value,
            }
            if call.args is not None:
                row["args"] = call.args
            if call.result is not None:
                row["result"] = call.result
            if call.error is not None:
                row["error"] = call.error
            if call.duration is not None:
                row["durationMs"] = round(call.duration * 1000, 3)
            summary.append(row)
        return summary

    def take_write(self) -> TaskWrite:
        """For the journal: the events, calls and row columns not yet written."""
        events, self.unwritten = self.unwritten, []
        changed, self.changed_calls = self.changed_calls, set()
        if not self.record_events:
            return TaskWrite(self.task_id, (), self._row_fields(), pushed=events)
        calls = [self._call_row(self.timeline[call_id]) for call_id in changed]
        return TaskWrite(self.task_id, events, self._row_fields(), calls)

    async def written(self, write: TaskWrite) -> None:
        """For the journal: the hub lets the written events go; tell streams in other
        processes about them."""
        self._row_written = self._row_taken
        if write.events:
            self.hub.written(write.events[-1].seq)
            await self.bus.publish(
                TOPIC_EVENTS,
                self.task_id,
                {"lastSeq": write.events[-1].seq, "state": self.state.value},
                seq=0,
            )

    async def flush(self) -> None:
        """Write everything not yet written, now; return once it is stored."""
        await self.journal.commit(self)

    # --- the loop --------------------------------------------------------------------------

    async def run(self) -> None:
        """Record until the task ends (or its runtime is lost), then clean up."""
        try:
            async with self.stream:
                self.ready.set()
                # The SUBMITTED row is already stored: the snapshot goes out at once (written
                # with the next batch). The task stays submitted until its runtime is heard.
                if self.unwritten:
                    await self._hand_out(self.unwritten[-1], write_first=False)
                await self._record()
                await self.stream.finish()
        except Exception:
            logger.exception("task %s: the recorder failed", self.task_id)
            with contextlib.suppress(Exception):
                await self._status(
                    TaskState.FAILED, datetime.now(UTC), text="the server failed to record the task"
                )
        finally:
            self.ready.set()
            with contextlib.suppress(Exception):
                await self.flush()
            # The hub outlives the recording (HUB_KEEP_SECONDS) for late readers: it must not
            # keep the recorder (and its timeline) alive that long.
            self.hub.on_move = None
            self.stream.on_stall = None
            self.stream.take_now = None
            self._held.clear()
            self.hub.close()
            if _recorders.get(self.task_id) is self:
                del _recorders[self.task_id]
            await asyncio.sleep(0)
            if self.parked:
                # Not ended: whoever resumes it records it; streams read the database meanwhile.
                if _hubs.get(self.task_id) is self.hub:
                    del _hubs[self.task_id]
            else:
                asyncio.get_running_loop().call_later(
                    HUB_KEEP_SECONDS, _drop_hub, self.task_id, self.hub
                )

    async def begin(self) -> asyncio.Task[None]:
        """Start recording in the background; returns once subscribed, so the caller may now
        send the work request."""
        task = start_in_background(self.run())
        await self.ready.wait()
        return task

    async def _record(self) -> None:
        while not self.state.is_terminal and not self.parked:
            try:
                envelope = await self.stream.get()
            except RuntimeLost as exc:
                if await self._runtime_lost(str(exc)):
                    continue
                return
            if envelope is not None:
                await self._on_envelope(envelope)
                if envelope.seq > 0 and envelope.topic not in self.stream.also:
                    self._held.append((self.seq, envelope.seq, envelope.ts))
                    self._release()

    def _take_now(self, envelope: Envelope) -> bool:
        """The stream's :attr:`~a2a_toolcall.bus.TaskStream.take_now`: a tool frame of a
        working task is recorded and handed to the streams in the agent's own turn (while
        this recorder waits for its next envelope), as :meth:`_record` would in its next
        turn; anything else (a state change may wait for the database) is left to it."""
        if (
            envelope.topic != TOPIC_TOOLFRAME
            or envelope.seq <= 0
            or not self.runtime_seen
            or self.state is not TaskState.WORKING
            or self.parked
        ):
            return False
        self._frame(envelope.payload, _when(envelope.ts))
        self._held.append((self.seq, envelope.seq, envelope.ts))
        self._release()
        return True

    def _release(self) -> None:
        """Acknowledge the envelopes whose events every stream pacing the agent has taken
        (all of them when none is), and size the agent's window to what the streams carry.

        While a stream paces the agent (:meth:`TaskHub.paced`), the window grows by a quarter
        each time the streams have taken everything they were given, and halves (at most
        once per ``STREAM_PACING``) when an event waits for them longer than that since the
        agent made it, down to :data:`~a2a_toolcall.bus.PACE_WINDOW`: a lone fast agent runs
        with a wide window and large writes, many on a busy process each a couple of
        envelopes ahead of their streams, whose frames then reach the client about as soon
        as the agent makes them (docs/benchmarks.md, "Pacing"). No stream pacing it: the agent
        runs :data:`~a2a_toolcall.bus.PUBLISH_WINDOW` ahead of this recorder.
        """
        held = self._held
        # One pass over the task's streams (there is usually one): does any pace the agent,
        # and how far has every one holding events back taken them?
        paced = False
        floor: int | None = None
        for listener in self.hub.listeners:
            if listener.paces:
                paced = True
                if listener.waiting and (floor is None or listener.taken < floor):
                    floor = listener.taken
        if not paced:
            if held:
                self.stream.acknowledge(held[-1][1])
                held.clear()
            if self._pacing:
                self._pacing = False
                self._set_window(PUBLISH_WINDOW)
            return
        if not self._pacing:
            self._pacing = True
            self._set_window(PACE_WINDOW)
        if not held:
            return
        now = time.time()
        waited = 0.0  # the longest an event taken now waited, since the agent made it
        taken = 0
        while taken < len(held) and (floor is None or held[taken][0] <= floor):
            waited = max(waited, now - held[taken][2])
            taken += 1
        if taken:
            acknowledged = held[taken - 1][1]
            del held[:taken]
            self.stream.acknowledge(acknowledged)
        if held:
            waited = max(waited, now - held[0][2])
        target = self.pacing
        if now - self._resized_at < target:
            return
        if waited > target:
            self._resized_at = now
            self._set_window(self._window // 2)
        elif taken and not held:
            self._resized_at = now
            self._set_window(self._window + 1)

    def _set_window(self, window: int) -> None:
        ceiling = PACE_MAX if self._pacing else PUBLISH_WINDOW
        window = max(PACE_WINDOW, min(ceiling, window))
        if window != self._window:
            self._window = window
            self.stream.set_window(window)

    async def _runtime_lost(self, why: str) -> bool:
        """The runtime is gone (its lease expired, or it stopped answering): cancel, park, run
        again or fail the task. True when recording goes on (a new run, or a late claim)."""
        now = datetime.now(UTC)
        lease_lost, self._lease_lost = self._lease_lost, False
        if not self.runtime_seen and not lease_lost:
            state = TaskState.CANCELED if self.cancel_requested is not None else TaskState.FAILED
            if not await store.settle_unclaimed(self.task_id, state):
                # Claimed at the last moment: its runtime has not spoken yet, give it the time
                # any running task gets (its lease says when it is gone).
                self.stream.restart(self.stream.expected, self.stream.lost_after)
                return True
        if self.cancel_requested is not None:
            await self._close_open_calls(CANCELLED_ERROR, now)
            await self._status(TaskState.CANCELED, now, text=self.cancel_requested)
            return False
        if (
            self.state is TaskState.INPUT_REQUIRED
            and self.checkpoint is not None
            and await store.park(self.task_id, PROCESS_ID)
        ):
            # The agent resumes from its checkpoint wherever the answer arrives.
            self.parked = True
            log_transition(self.task_id, "parked", reason=f"{RUNTIME_STOPPED} ({why})")
            return False
        if await self._retry(now, why):
            return True
        self._end_level = logging.WARNING
        self._end_fields = {"closed_calls": await self._close_open_calls(RUNTIME_STOPPED, now)}
        if self.runtime_seen or lease_lost:
            text = f"{RUNTIME_STOPPED} ({why})"
        else:
            text = f"the agent runtime was lost: {why}"
        await self._status(TaskState.FAILED, now, text=text)
        return False

    async def _retry(self, now: datetime, why: str) -> bool:
        """Run the task again on another runtime, once, if its agent declared that safe."""
        if (
            self.work is None
            or self.attempt >= MAX_ATTEMPTS
            or self.state is not TaskState.WORKING
            or self.runtime.get("retrySafe") is not True
        ):
            return False
        attempt = await store.release_for_retry(self.task_id, PROCESS_ID)
        if attempt is None:
            return False
        closed = await self._close_open_calls(RUNTIME_STOPPED, now)
        self.attempt = attempt
        await self._status(
            TaskState.WORKING,
            now,
            text=f"{RUNTIME_STOPPED}; running it again (attempt {attempt} of {MAX_ATTEMPTS})",
            metadata={"attempt": attempt},
        )
        log_transition(
            self.task_id,
            "retried",
            level=logging.WARNING,
            reason=f"{RUNTIME_STOPPED} ({why})",
            attempt=attempt,
            closed_calls=closed,
        )
        self.runtime_seen = False
        self.runtime = {}
        self.stream.restart(first_seq(attempt), float(get_setting("RUNTIME_PICKUP_TIMEOUT")))
        await self.bus.send_request({**self.work, "attempt": attempt})
        return True

    async def answer(self, payload: dict[str, Any]) -> None:
        """Record the answer that resumes a parked task (before its work goes out)."""
        await self._answered(payload, datetime.now(UTC))

    async def _close_open_calls(self, error: str, at: datetime) -> int:
        """A ``failed`` frame with ``error`` for every invocation still open (its runtime is gone
        and will never end it): on the streams, in the ToolCall rows and in the counts."""
        open_calls = [call for call in self.timeline if call.state is ToolState.PENDING]
        for call in open_calls:
            frame = ToolCallFailed(tool_call_id=call.tool_call_id, name=call.name, error=error)
            self.timeline.feed(frame, at=at.timestamp())
            self.failed_calls += 1
            self.changed_calls.add(call.tool_call_id)
            self._dirty.add("metadata")
            await self._hand_out(self._emit_frame(frame, at), write_first=False)
        return len(open_calls)

    async def _on_envelope(self, envelope: Envelope) -> None:
        at = _when(envelope.ts)
        payload = envelope.payload
        if envelope.topic == TOPIC_CANCEL:
            reason = payload.get("reason")
            self.cancel_requested = (
                reason if isinstance(reason, str) and reason else ("canceled by the client")
            )
            if not self.runtime_seen and await store.settle_unclaimed(
                self.task_id, TaskState.CANCELED
            ):
                # No runtime has claimed it: canceled now, and none ever will start it.
                await self._status(TaskState.CANCELED, at, text=self.cancel_requested)
            return
        if envelope.topic == TOPIC_INPUT_RESPONSE:
            await self._answered(payload, at)
            return
        if not self.runtime_seen:
            self.runtime_seen = True
            info = payload.get("runtime") if envelope.topic == TOPIC_PROGRESS else None
            if isinstance(info, dict):
                self.runtime = info
            if self.state is TaskState.SUBMITTED:
                # A runtime claimed the task and started it. The task store's claim has
                # stored it as working already: nothing to write before the status goes out.
                stored = isinstance(info, dict) and info.get("workingStored") is True
                await self._status(TaskState.WORKING, at, stored=stored)
            if self.cancel_requested is not None:
                # The cancel went out before the runtime had joined the task's groups.
                await self.bus.publish(
                    TOPIC_CANCEL, self.task_id, {"reason": self.cancel_requested}, seq=0
                )
        if envelope.topic == TOPIC_PROGRESS:
            await self._progress(payload, at)
        elif envelope.topic == TOPIC_TOOLFRAME:
            self._frame(payload, at)
        elif envelope.topic == TOPIC_ARTIFACT:
            await self._streamed_artifact(payload, at)
        elif envelope.topic == TOPIC_INPUT_REQUEST:
            self.pending_request_id = str(payload.get("requestId") or "")
            self.checkpoint = payload.get("checkpoint")
            self._dirty.add("checkpoint")
            message_metadata: dict[str, Any] = {"requestId": self.pending_request_id}
            if "meta" in payload:
                message_metadata["meta"] = self.clean(payload["meta"])
            await self._status(
                TaskState.INPUT_REQUIRED,
                at,
                text=str(payload.get("question") or ""),
                message_metadata=message_metadata,
            )
        elif envelope.topic == TOPIC_RESPONSE:
            await self._response(payload, at)

    async def _progress(self, payload: dict[str, Any], at: datetime) -> None:
        metadata: dict[str, Any] = {k: payload[k] for k in ("step", "percent") if k in payload}
        if "meta" in payload:
            metadata["meta"] = self.clean(payload["meta"])
        await self._status(
            TaskState.WORKING, at, text=str(payload.get("text") or ""), metadata=metadata or None
        )

    def _frame(self, payload: dict[str, Any], at: datetime) -> None:
        try:
            frame = frame_from_wire(payload.get("frame"))
        except ToolCallParseError as exc:
            logger.warning("task %s: dropping an invalid frame: %s", self.task_id, exc)
            return
        # Secrets redacted and sizes capped before the frame is streamed or stored.
        if isinstance(frame, ToolCallStarted) and frame.args is not None:
            frame = frame.model_copy(update={"args": self.clean(frame.args)})
        elif isinstance(frame, ToolCallCompleted) and frame.result is not None:
            frame = frame.model_copy(update={"result": self.clean(frame.result)})
        before = self.timeline.get(frame.tool_call_id)
        was_failed = before is not None and before.state is ToolState.FAILED
        now_failed = self.timeline.feed(frame, at=at.timestamp()).state is ToolState.FAILED
        self.failed_calls += now_failed - was_failed
        self.changed_calls.add(frame.tool_call_id)
        self._dirty.add("metadata")
        self._hand_out_now(self._emit_frame(frame, at))

    async def _streamed_artifact(self, payload: dict[str, Any], at: datetime) -> None:
        raw = payload.get("artifact")
        if isinstance(raw, dict):
            raw = dict(raw)
            if isinstance(raw.get("parts"), list):
                raw["parts"] = [
                    clean_part(self.clean, p) if isinstance(p, dict) else p for p in raw["parts"]
                ]
            if "metadata" in raw:
                raw["metadata"] = clean_metadata(self.clean, raw["metadata"])
        try:
            artifact = Artifact.model_validate(raw)
        except ValueError as exc:
            logger.warning("task %s: dropping an invalid artifact: %s", self.task_id, exc)
            return
        append = bool(payload.get("append"))
        self._keep_artifact(artifact, append=append)
        await self._artifact(
            artifact,
            at,
            last_chunk=bool(payload.get("lastChunk", True)),
            write_first=False,
            append=append,
        )

    def _keep_artifact(self, artifact: Artifact, *, append: bool) -> None:
        self._dirty.add("artifacts")
        wire = artifact.to_wire()
        for i, kept in enumerate(self.artifacts):
            if kept["artifactId"] == artifact.artifact_id:
                if append:
                    kept["parts"] = [*kept.get("parts", []), *wire.get("parts", [])]
                else:
                    self.artifacts[i] = wire
                return
        self.artifacts.append(wire)

    async def _answered(self, payload: dict[str, Any], at: datetime) -> None:
        if self.state is not TaskState.INPUT_REQUIRED:
            return
        message = payload.get("message")
        if isinstance(message, dict):
            self.history.append(message)
            self._dirty.add("history")
        self.pending_request_id = ""
        if self.checkpoint is not None:
            self.checkpoint = None
            self._dirty.add("checkpoint")
        await self._status(TaskState.WORKING, at)

    async def _response(self, payload: dict[str, Any], at: datetime) -> None:
        status = payload.get("status")
        if status == "completed":
            parts: list[dict[str, Any]] = []
            text = payload.get("text")
            if isinstance(text, str):
                parts.append({"text": text})
            parts += [
                clean_part(self.clean, p) for p in payload.get("parts") or () if isinstance(p, dict)
            ]
            if payload.get("asMessage"):
                # A direct reply: no answer artifact; the message is the answer (and the
                # completed status's message), stored before anyone sees the status.
                reply = Message.model_validate(
                    {
                        "messageId": self._new_id(),
                        "role": Role.AGENT.value,
                        "contextId": self.context_id,
                        "parts": parts or [{"text": ""}],
                    }
                )
                self.reply_message = reply.to_wire()
                self._dirty.add("reply_message")
                await self._status(TaskState.COMPLETED, at, message=reply)
                return
            if parts:
                artifact = Artifact.model_validate(
                    {"artifactId": self._new_id(), "name": ANSWER_ARTIFACT_NAME, "parts": parts}
                )
                self._keep_artifact(artifact, append=False)
                await self._artifact(artifact, at, last_chunk=True, write_first=False)
            await self._status(
                TaskState.COMPLETED, at, text=text if isinstance(text, str) else None
            )
        elif status == "canceled":
            await self._status(
                TaskState.CANCELED, at, text=str(payload.get("reason") or "canceled")
            )
        elif status == "rejected":
            await self._status(
                TaskState.REJECTED, at, text=str(payload.get("reason") or "rejected")
            )
        elif (
            status == "parked"
            and self.state is TaskState.INPUT_REQUIRED
            and self.checkpoint is not None
            and await store.park(self.task_id, PROCESS_ID)
        ):
            # Its runtime stopped (a warm shutdown) while it waits for an answer: whoever gets
            # the answer resumes it from the checkpoint.
            self.parked = True
            log_transition(
                self.task_id, "parked", reason=str(payload.get("reason") or RUNTIME_STOPPED)
            )
        else:
            error = payload.get("error") or payload.get("reason") or "failed"
            await self._status(TaskState.FAILED, at, text=str(error))


# --- tasks a previous run of this process left running ----------------------------------------

PROCESS_STARTED: Final = datetime.now(UTC)
"""When this process loaded the recorder: tasks created before it were recorded by an earlier
process."""

SERVER_RESTARTED: Final = "the server restarted while the task ran"
"""The reason given to tasks an in-process runtime was running when its process stopped."""


class _Queued(NamedTuple):
    seq: int
    json: str


def _fail_orphan_sync(task_id: str, reason: str, abandoned: bool = False) -> bool:
    """Fail a running task no recorder records any more, in its log and its row (the open tool
    calls closed first). ``abandoned``: only if its recorder lease is still expired (the check
    and the write in one transaction, against a recorder that came back)."""
    from django.db import connections, router, transaction

    from a2a_toolcall import models as orm

    using = router.db_for_write(orm.Task)
    now = datetime.now(UTC)
    with transaction.atomic(using=using):
        rows = orm.Task.objects.select_for_update().filter(
            pk=task_id, state__in=_RUNNING_STATE_VALUES
        )
        if abandoned:
            rows = rows.filter(recorder_expires_at__lt=now)
        row = rows.first()
        if row is None:
            return False
        prefix = frame_event_prefix(row.id, row.context_id)
        seq = row.last_seq
        events = []
        open_calls = list(row.tool_calls.filter(status=orm.ToolCall.Status.PENDING))
        for call in open_calls:
            frame = ToolCallFailed(tool_call_id=call.tool_call_id, name=call.name, error=reason)
            seq += 1
            json = frame_event_json(prefix, uuid.uuid4().hex, frame)
            events.append(
                orm.TaskEvent(
                    task=row,
                    seq=seq,
                    kind=orm.TaskEvent.Kind.ARTIFACT,
                    emitted_at=now,
                    data=orm.RawJSON(json),
                )
            )
            call.status = orm.ToolCall.Status.FAILED
            call.error = reason
            call.finished_at = now
            call.save(update_fields=["status", "error", "finished_at"])
        message = Message(
            message_id=uuid.uuid4().hex,
            role=Role.AGENT,
            parts=[Part(text=reason)],
            task_id=row.id,
            context_id=row.context_id,
        )
        status = TaskStatus(
            state=TaskState.FAILED, message=message, timestamp=format_timestamp(now)
        )
        update = StreamResponse(
            status_update=TaskStatusUpdateEvent(
                task_id=row.id, context_id=row.context_id, status=status
            )
        )
        seq += 1
        events.append(
            orm.TaskEvent(
                task=row,
                seq=seq,
                kind=orm.TaskEvent.Kind.STATUS,
                state=TaskState.FAILED.value,
                emitted_at=now,
                data=orm.RawJSON(update.to_json()),
            )
        )
        orm.TaskEvent.objects.bulk_create(events)
        store.enqueue_push_sync(
            connections[using],
            [(row.id, [_Queued(e.seq, e.data.text) for e in events])],
        )
        calls = [store.summary_entry(c) for c in row.tool_calls.order_by("order")]
        metadata = dict(row.metadata)
        if calls:
            metadata[TOOL_CALL_V1_URI] = {"toolCalls": calls}
        row.state = TaskState.FAILED.value
        row.status = status.to_wire()
        row.history = [*row.history, message.to_wire()]
        row.metadata = metadata
        row.pending_request_id = ""
        row.last_seq = seq
        row.updated_at = now
        row.finished_at = now
        row.failed_tool_count += len(open_calls)
        row.lease_expires_at = None
        row.recorder_expires_at = None
        row.save()
    log_transition(
        task_id,
        "failed",
        level=logging.WARNING,
        reason=reason,
        duration=(now - row.created_at).total_seconds(),
        closed_calls=len(open_calls),
    )
    return True


async def settle_abandoned(expired: store.Expired) -> bool:
    """Take over a running task whose recording process is gone (its recorder lease expired,
    found by this process's keeper): park it if it waits for input with a checkpoint, else fail
    it with its open calls closed; a runtime still running it is told to stop, and streams
    following it from other processes are told to read on. True if this process acted."""
    if expired.resumable and await store.park(expired.task_id, None):
        log_transition(expired.task_id, "parked", reason=RECORDER_STOPPED)
        return True
    if expired.runtime_id and expired.runtime_expired:
        reason = RUNTIME_STOPPED
    elif expired.runtime_id:
        reason = RECORDER_STOPPED
    else:
        reason = f"{RECORDER_STOPPED} before any runtime picked the task up"
    if not await store.in_shared_thread(
        functools.partial(_fail_orphan_sync, expired.task_id, reason, True)
    ):
        return False
    bus = Bus()
    with contextlib.suppress(Exception):
        if expired.runtime_id and not expired.runtime_expired:
            await bus.publish(TOPIC_CANCEL, expired.task_id, {"reason": reason}, seq=0)
        await bus.publish(TOPIC_EVENTS, expired.task_id, {"state": TaskState.FAILED.value}, seq=0)
    return True


_RUNNING_STATE_VALUES: Final = (
    TaskState.SUBMITTED.value,
    TaskState.WORKING.value,
    TaskState.INPUT_REQUIRED.value,
)


async def fail_orphaned_tasks(reason: str = SERVER_RESTARTED) -> int:
    """Fail the tasks an earlier run of this process left running (their recorder and, with the
    in-process runtime, their agent went with it): each open tool call gets a ``failed`` frame,
    then the task a FAILED status with ``reason``, in its log and its row. Returns how many.
    A task waiting for input with a checkpoint is parked instead (its answer resumes it).

    Only for a site whose agents run in the web process on an in-memory layer (one process):
    there every running task created before this process started is an orphan.
    """
    from a2a_toolcall import models as orm

    rows = [
        row
        async for row in orm.Task.objects.filter(
            state__in=_RUNNING_STATE_VALUES, created_at__lt=PROCESS_STARTED
        ).values_list("pk", "state", "recorder_id", "checkpoint")
    ]
    failed = 0
    for task_id, state, recorder_id, checkpoint in rows:
        if hub_for(task_id) is not None:
            continue
        if state == TaskState.INPUT_REQUIRED.value and checkpoint is not None:
            # Resumable: it waits for its answer, which resumes it from its checkpoint.
            if recorder_id and await store.park(task_id, None, orphan=True):
                log_transition(task_id, "parked", reason=reason)
            continue
        if await store.in_shared_thread(functools.partial(_fail_orphan_sync, task_id, reason)):
            failed += 1
    return failed
