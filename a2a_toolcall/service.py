"""The A2A task operations the views call: send, continue, wait, cancel, follow a task's events.

New tasks are recorded by a :class:`~a2a_toolcall.recorder.Recorder` in this process; their
streams read from its in-process hub. Streams for tasks recorded elsewhere (another process, or
before a restart) read the database and wake up on the bus's ``agent.task.events.{cid}``
notifications, polling as a fallback, so they miss nothing even when a notification is lost.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import sys
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from a2a_toolcall import push, store
from a2a_toolcall.bus import (
    TOPIC_CANCEL,
    TOPIC_EVENTS,
    TOPIC_INPUT_RESPONSE,
    Bus,
    Subscription,
    TaskStream,
    first_seq,
)
from a2a_toolcall.conf import get_setting
from a2a_toolcall.leases import PROCESS_ID, ensure_keeper
from a2a_toolcall.lifecycle import log_transition
from a2a_toolcall.protocol import jsonrpc
from a2a_toolcall.protocol.models import (
    Message,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    format_timestamp,
)
from a2a_toolcall.recorder import (
    HubListener,
    Recorder,
    ends_stream,
    fail_orphaned_tasks,
    hub_for,
    start_in_background,
)
from a2a_toolcall.runtime import build_request, ensure_in_process_runtime
from a2a_toolcall.store import LoggedEvent

__all__ = [
    "EventFeed",
    "Started",
    "StreamBehind",
    "TaskService",
    "ends_stream",
    "sweep_orphans_once",
]

logger = logging.getLogger(__name__)

INLINE_PUSH_FIELD: Final = "params.configuration.taskPushNotificationConfig"
"""Where a message's own webhook is, for errors about it."""
POLL_INTERVAL: Final = 2.0
"""Seconds a remote feed waits for a notification before reading the database anyway."""
STORE_PAGE: Final = 50
"""Events a feed reads from the database at a time (what one reader holds at most)."""


def start_in_process_runtime() -> None:
    """Start this loop's in-process runtime, if agents run in this process, claiming tasks in
    the task store, its leases kept by this loop's keeper."""
    runtime = ensure_in_process_runtime(claims=store.StoreClaims())
    if runtime is not None:
        ensure_keeper().add_runtime(runtime)


_sweep: asyncio.Task[None] | None = None
"""The sweep of an earlier run's orphans (started by this process's first request)."""
_swept = False


async def sweep_orphans_once(*, wait: bool = True) -> None:
    """On this process's first request: when it is the site's only process (agents in the web
    process on an in-memory layer), fail the tasks an earlier run of it left running, which no
    one would ever end (docs/deployment.md).

    The sweep runs in the background, one task after another. ``wait``: until it is done (a
    request about tasks that may be among them: reading, following, cancelling or answering
    one); a message that starts a new task does not wait, so a restart that left many tasks
    behind does not hold up the first burst of new work. A sweep that fails is logged and
    tried again on a later request (meanwhile the keeper fails those tasks once their
    recorder leases expire).
    """
    global _sweep, _swept
    if _swept:
        return
    loop = asyncio.get_running_loop()
    if _sweep is None or _sweep.done() or _sweep.get_loop() is not loop:
        # (Done without success: it failed or was cancelled. On another loop: that loop may
        # be gone. Either way this loop sweeps again; failing a task is checked and done in
        # one transaction, so no task is failed twice.)
        from channels.layers import InMemoryChannelLayer

        from a2a_toolcall.runtime import runs_in_process

        if not (runs_in_process() and isinstance(Bus().layer, InMemoryChannelLayer)):
            _swept = True
            return
        _sweep = start_in_background(_sweep_orphans())
    if wait and not _swept:
        await asyncio.shield(_sweep)


async def _sweep_orphans() -> None:
    global _swept
    try:
        await fail_orphaned_tasks()
    except Exception:
        # Done without _swept: the next request starts another.
        logger.exception(
            "could not fail the tasks an earlier run of this process left running; trying "
            "again on the next request"
        )
    else:
        _swept = True


@dataclass(frozen=True, slots=True)
class Started:
    """A message accepted: the task it went to, and where its stream starts."""

    task_id: str
    after_seq: int
    snapshot: Task | None
    """The task to send first when the stream does not start at the task's creation."""
    dispatch: Callable[[], Awaitable[None]] | None = None
    """With ``send(..., dispatch=False)``: sends the work to the runtime (call it once)."""


class StreamBehind(Exception):
    """A stream's client fell more than ``STREAM_BUFFER_LIMIT`` bytes behind its task's events:
    the feed let them go, and the stream closes (the client resumes with ``Last-Event-ID``)."""

    def __init__(self, task_id: str, last: int, limit: int) -> None:
        super().__init__(
            f"task {task_id}: the stream fell more than {limit} bytes behind after event {last}"
        )
        self.task_id = task_id
        self.last = last
        self.limit = limit


class EventFeed:
    """The events of one task after a given ``seq``: from the local hub, else from the store.

    With ``limit`` (bytes), a feed whose reader falls further behind the local hub than that
    raises :class:`StreamBehind`; one that joins with more than that already waiting reads it
    from the store page by page instead of holding it.
    """

    __slots__ = (
        "_backlog",
        "_hub",
        "_listener",
        "_pages",
        "_stored_until",
        "_subscription",
        "blocked",
        "bus",
        "last",
        "limit",
        "task_id",
    )

    def __init__(
        self,
        bus: Bus,
        task_id: str,
        after_seq: int,
        limit: int | None = None,
        blocked: Callable[[], bool] | None = None,
    ) -> None:
        self.bus = bus
        self.task_id = task_id
        self.last = after_seq
        self.limit = limit
        self.blocked = blocked
        # What the hub had when the feed joined, or store rows: made when there are any.
        self._backlog: collections.deque[LoggedEvent] | None = None
        self._listener: HubListener | None = None
        self._subscription: Subscription | None = None
        self._hub = hub_for(task_id)
        self._pages: list[LoggedEvent] = []  # a page of the store, emptied from the front
        self._stored_until = 0
        """With the hub: events up to this seq are read from the database, page by page,
        before the hub's own."""

    async def __aenter__(self) -> EventFeed:
        hub = self._hub
        if hub is not None:
            backlog = hub.backlog(self.last)
            limit = sys.maxsize if self.limit is None else self.limit
            if (
                self.limit is not None
                and get_setting("RECORD_EVENTS")
                and sum(len(event.json) for event in backlog) > limit
            ):
                # Too much to hold for one reader: the store has it all (written, or about to
                # be: the feed waits for its notification).
                await self._from_store()
                return self
            self._listener = hub.listen(limit, self.blocked)
            if backlog:
                self._backlog = collections.deque(backlog)
            # What the hub already let go is in the database: read that first.
            self._stored_until = hub.stored
        else:
            await self._from_store()
        return self

    async def _from_store(self) -> None:
        # Joined before the first read: a notification sent meanwhile is not missed.
        if self._hub is not None and self._listener is not None:
            self._hub.unlisten(self._listener)
        self._listener = None
        self._subscription = await self.bus.subscribe(self.task_id, [TOPIC_EVENTS]).__aenter__()

    async def __aexit__(self, *exc: object) -> None:
        if self._hub is not None and self._listener is not None:
            self._hub.unlisten(self._listener)
        if self._subscription is not None:
            await self._subscription.aclose()

    def _taken(self) -> LoggedEvent | None:
        while self._pages:
            event = self._pages.pop(0)
            if event.seq > self.last:
                self.last = event.seq
                return event
        if self.last < self._stored_until:
            return None  # the next page is to be read first
        backlog = self._backlog
        while backlog:
            event = backlog.popleft()
            if event.seq > self.last:
                self.last = event.seq
                return event
        self._backlog = None
        listener = self._listener
        while listener is not None and (arrived := listener.take()) is not None:
            if arrived.seq > self.last:
                self.last = arrived.seq
                return arrived
        return None

    def _check_behind(self) -> None:
        if self._listener is not None and self._listener.behind:
            assert self._hub is not None
            self._hub.unlisten(self._listener)
            raise StreamBehind(self.task_id, self.last, self._listener.limit)

    def ready(self) -> LoggedEvent | None:
        """The next event if it is already here (no waiting), else None."""
        event = self._taken()
        if event is None:
            self._check_behind()
        return event

    async def next(self, timeout: float | None = None) -> LoggedEvent | None:
        """The next event, or None when ``timeout`` seconds pass without one.

        Raises :class:`StreamBehind` once the reader is too far behind (with ``limit``).
        """
        deadline: float | None = None
        loop = asyncio.get_running_loop()
        while True:
            event = self._taken()
            if event is not None:
                return event
            if self.last < self._stored_until:
                rows = await store.events_after(self.task_id, self.last, limit=STORE_PAGE)
                self._pages.extend(row for row in rows if row.seq <= self._stored_until)
                if not self._pages:
                    # Not there (not written after all): the hub's events follow on.
                    self._stored_until = 0
                continue
            listener = self._listener
            if listener is not None:
                self._check_behind()
                if listener.ended:
                    # The recording stopped here (the task was parked): read on from the store.
                    await self._from_store()
                    continue
                if not await listener.wait(timeout):
                    return None
                continue
            if deadline is None and timeout is not None:
                deadline = loop.time() + timeout
            rows = await store.events_after(self.task_id, self.last, limit=STORE_PAGE)
            if rows:
                self._backlog = collections.deque(rows)
                continue
            left = None if deadline is None else max(0.0, deadline - loop.time())
            if left is not None and left <= 0:
                return None
            assert self._subscription is not None
            await self._subscription.get(
                timeout=POLL_INTERVAL if left is None else min(left, POLL_INTERVAL)
            )


class TaskService:
    """The operations behind the JSON-RPC methods."""

    def __init__(self, bus: Bus | None = None) -> None:
        self.bus = bus or Bus()

    # --- sending -----------------------------------------------------------------------------

    async def send(
        self,
        request: SendMessageRequest,
        *,
        agent: str,
        dispatch: bool = True,
        owner: store.Owner | None = None,
        auth_scheme: str = "",
        credential: str = "",
        push_config: TaskPushNotificationConfig | None = None,
    ) -> Started:
        """Start a task for a new message, or deliver the answer to a task waiting for input.

        ``dispatch=False``: the new task is stored and recorded, but its work goes to the
        runtime only when the caller calls ``Started.dispatch`` (a stream does once its first
        event is out, so the agent's own work does not delay it).

        ``owner``: the caller the task belongs to (None: unscoped, the server's own use); a
        follow-up reaches only the owner's tasks and a new task joins only the owner's context.
        ``auth_scheme`` and ``credential`` go to the audit record. ``push_config`` (checked
        by :func:`a2a_toolcall.push.check_config`) is stored for the task before its first
        event, so its webhook gets every one.
        """
        message = request.message
        if message.task_id:
            return await self._continue(message, owner, push_config)
        if message.context_id and owner is not None:
            await store.check_context(message.context_id, owner)
        task_id = str(uuid.uuid4())
        context_id = message.context_id or str(uuid.uuid4())
        message = message.model_copy(update={"task_id": task_id, "context_id": context_id})
        now = datetime.now(UTC)
        status = TaskStatus(state=TaskState.SUBMITTED, timestamp=format_timestamp(now))
        row = await store.create_task(
            task_id=task_id,
            context_id=context_id,
            agent=agent,
            message=message,
            metadata=dict(request.metadata or {}),
            status=status,
            owner=owner,
            auth_scheme=auth_scheme,
            credential=credential,
            recorder_id=PROCESS_ID,
        )
        if push_config is not None:
            await push.save_config(row, push_config, INLINE_PUSH_FIELD)
        log_transition(task_id, "accepted", agent=agent, context_id=context_id)
        ensure_keeper()  # renews this process's recorder leases, reaps expired ones
        recorder = Recorder(
            self.bus, store.snapshot(row), agent=agent, stream=self._stream(task_id), emitted_at=now
        )
        await recorder.begin()  # subscribed to the task's groups before the work goes out
        work = build_request(
            task_id, message, agent=agent, context_id=context_id, metadata=request.metadata
        )
        recorder.work = work

        async def send_work() -> None:
            start_in_process_runtime()
            await self.bus.send_request(work)

        if dispatch:
            await send_work()
            return Started(task_id=task_id, after_seq=0, snapshot=None)
        return Started(task_id=task_id, after_seq=0, snapshot=None, dispatch=send_work)

    def _stream(self, task_id: str, first_seq: int = 1) -> TaskStream:
        stream = TaskStream(
            self.bus,
            task_id,
            also=(TOPIC_CANCEL, TOPIC_INPUT_RESPONSE),
            first_wait=float(get_setting("RUNTIME_PICKUP_TIMEOUT")),
            lost_after=float(get_setting("RUNTIME_LOST_AFTER")),
            paced=True,  # the recorder acknowledges what the task's streams have taken
        )
        stream.expected = first_seq
        return stream

    async def _continue(
        self,
        message: Message,
        owner: store.Owner | None,
        push_config: TaskPushNotificationConfig | None = None,
    ) -> Started:
        assert message.task_id is not None
        row = await store.load_row(message.task_id, owner)
        state = row.task_state
        meta = {"taskId": row.id, "state": state.value}
        if state.is_terminal:
            raise jsonrpc.UnsupportedOperationError(
                f"Task {row.id} is {state.name.lower()}: a task in a terminal state accepts no "
                "more messages; send a new message without taskId (same contextId to continue "
                "the conversation)",
                metadata=meta,
            )
        if state is not TaskState.INPUT_REQUIRED or not row.pending_request_id:
            raise jsonrpc.UnsupportedOperationError(
                f"Task {row.id} is {state.name.lower()} and is not waiting for input",
                metadata=meta,
            )
        if message.context_id and message.context_id != row.context_id:
            raise jsonrpc.InvalidParamsError(
                f"Invalid parameters: message.contextId {message.context_id!r} is not the "
                f"context of task {row.id} ({row.context_id!r})",
                violations=[jsonrpc.FieldViolation("params.message.contextId", "wrong context")],
            )
        message = message.model_copy(update={"context_id": row.context_id})
        if push_config is not None:
            await push.save_config(row, push_config, INLINE_PUSH_FIELD)
        text = "\n".join(p.text for p in message.parts if p.text is not None)
        answer = {
            "requestId": row.pending_request_id,
            "text": text,
            "parts": [p.to_wire() for p in message.parts],
            "message": message.to_wire(),
        }
        snapshot = await store.current_snapshot(row)
        if not row.runtime_id and not row.recorder_id and row.checkpoint is not None:
            # Parked: the runtime that asked is gone; the agent resumes from its checkpoint.
            await self._resume(row, answer)
        else:
            await self.bus.publish(TOPIC_INPUT_RESPONSE, row.id, answer, seq=0)
        return Started(task_id=row.id, after_seq=row.last_seq, snapshot=snapshot)

    async def _resume(self, row: Any, answer: dict[str, Any]) -> None:
        """Record a parked task here from now on, with its answer, and send its work out as a
        resume: any runtime claims it and calls the agent with the checkpoint."""
        attempt = await store.adopt_parked(row.id, PROCESS_ID)
        if attempt is None:
            raise jsonrpc.UnsupportedOperationError(
                f"Task {row.id} is already being resumed with another answer",
                metadata={"taskId": row.id, "state": row.state},
            )
        row, calls = await store.load_with_calls(row.id)
        ensure_keeper()
        recorder = Recorder.resumed(
            self.bus, row, calls, stream=self._stream(row.id, first_seq(attempt))
        )
        await recorder.begin()
        await recorder.answer(answer)
        history = [Message.model_validate(m) for m in row.history]
        first = next((m for m in history if m.role is Role.USER), None) or history[0]
        question = ""
        if row.status.get("message"):
            question = "\n".join(
                str(p.get("text")) for p in row.status["message"].get("parts", []) if "text" in p
            )
        work = build_request(
            row.id,
            first,
            agent=row.agent,
            context_id=row.context_id,
            metadata=row.metadata,
            attempt=attempt,
            resume={**answer, "checkpoint": row.checkpoint, "question": question},
        )
        recorder.work = None  # a resume is not run again from the start
        start_in_process_runtime()
        await self.bus.send_request(work)

    # --- waiting -----------------------------------------------------------------------------

    def feed(
        self,
        task_id: str,
        after_seq: int,
        limit: int | None = None,
        blocked: Callable[[], bool] | None = None,
    ) -> EventFeed:
        """The task's events after ``after_seq``: ``async with service.feed(...) as feed``
        (at most ``limit`` bytes of them held for a reader that falls behind). With
        ``blocked`` (is the reader's client holding its writes back?), a task recorded here is
        paced to what the feed takes while its client reads."""
        return EventFeed(self.bus, task_id, after_seq, limit, blocked)

    async def wait(
        self,
        task_id: str,
        after_seq: int,
        until: Callable[[StreamResponse], bool] = ends_stream,
        timeout: float | None = None,
    ) -> bool:
        """Wait for an event after ``after_seq`` that satisfies ``until``; False on timeout."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        async with self.feed(task_id, after_seq) as feed:
            while True:
                left = None if deadline is None else deadline - loop.time()
                if left is not None and left <= 0:
                    return False
                event = await feed.next(timeout=left)
                if event is not None and (
                    event.ends_stream if until is ends_stream else until(event.response)
                ):
                    return True

    # --- cancel ------------------------------------------------------------------------------

    async def cancel(
        self,
        task_id: str,
        reason: str = "canceled by the client",
        owner: store.Owner | None = None,
    ) -> Task:
        """Cancel through the bus (the runtime stops the agent) and return the task (only
        ``owner``'s, when given)."""
        row = await store.load_row(task_id, owner)
        if row.task_state.is_terminal:
            raise jsonrpc.TaskNotCancelableError(
                f"Task {task_id} is already {row.task_state.name.lower()}",
                metadata={"taskId": task_id, "state": row.state},
            )
        await self.bus.publish(TOPIC_CANCEL, task_id, {"reason": reason}, seq=0)
        with contextlib.suppress(TimeoutError):
            await self.wait(
                task_id,
                row.last_seq,
                until=lambda e: (
                    e.status_update is not None and e.status_update.status.state.is_terminal
                ),
                timeout=float(get_setting("CANCEL_WAIT")),
            )
        return await store.get_task(task_id)
