"""Reading and writing the task store (async ORM), in wire terms.

Everything here speaks A2A 1.0 models in and out; the views never touch the ORM directly.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextvars
import functools
import os
import socket
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Generic, Protocol, TypeVar

from django.conf import settings
from django.db import connections, models, router, transaction
from django.db.models import F, Model, Q
from django.db.models.constants import OnConflict
from django.utils import timezone

from a2a_toolcall import models as orm
from a2a_toolcall.conf import get_setting
from a2a_toolcall.contract import TOOL_CALL_V1_URI
from a2a_toolcall.protocol import jsonrpc
from a2a_toolcall.protocol.models import (
    ListTasksRequest,
    ListTasksResponse,
    Message,
    StreamResponse,
    Task,
    TaskState,
    TaskStatus,
    format_timestamp,
    parse_timestamp,
)

__all__ = [
    "PROCESS_ID",
    "RUNNING_STATES",
    "Expired",
    "LoggedEvent",
    "Owner",
    "Pushable",
    "StoreClaims",
    "TaskWrite",
    "add_push_waker",
    "adopt_parked",
    "check_context",
    "claim_task",
    "create_task",
    "current_snapshot",
    "enqueue_push_sync",
    "events_after",
    "expired_leases",
    "get_task",
    "lease_seconds",
    "list_tasks",
    "live_summaries",
    "load_row",
    "load_with_calls",
    "park",
    "release_for_retry",
    "renew_recorder_leases",
    "renew_runtime_leases",
    "settle_unclaimed",
    "snapshot",
    "summary_entry",
    "waiting_tasks",
    "write_batch",
    "write_batch_sync",
]

T = TypeVar("T")
_I = TypeVar("_I")
_R = TypeVar("_R")

PROCESS_ID = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
"""This process, as the recorder leases of the tasks it records name it."""

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 100


@dataclass(frozen=True, slots=True)
class Owner:
    """Whose tasks a caller may see; every read and write on a caller's behalf is scoped by it.

    A user sees the tasks it created. An anonymous caller with a session sees its session's
    tasks; one without a session reaches only tasks created without a session, and only by
    their id (it lists none). ``tenant``, when the request names one, narrows further. A task of
    someone else is never told apart from a task that does not exist.
    """

    user_id: Any = None
    session: str = ""
    """Digest of an anonymous caller's session key."""
    tenant: str = ""
    address: str = ""
    """The caller's address: recorded on the tasks it creates; it scopes nothing but the
    running-task cap of anonymous callers without a session."""

    @property
    def is_user(self) -> bool:
        """True for an authenticated user."""
        return self.user_id is not None

    def scope(self, rows: Any, *, listing: bool = False) -> Any:
        """``rows`` (a Task queryset) narrowed to this owner's tasks."""
        if self.is_user:
            rows = rows.filter(owner_kind="user", owner_id=self.user_id)
        elif self.session:
            rows = rows.filter(owner_kind="anonymous", owner_session=self.session)
        elif listing:
            return rows.none()
        else:
            rows = rows.filter(owner_kind="anonymous", owner_session="")
        if self.tenant:
            rows = rows.filter(tenant=self.tenant)
        return rows

    def running(self, rows: Any) -> Any:
        """``rows`` narrowed to the tasks that count against this owner's running-task cap:
        its own in every tenant, or, for an anonymous caller without a session, those created
        from its address."""
        rows = Owner(user_id=self.user_id, session=self.session).scope(rows)
        if not self.is_user and not self.session:
            rows = rows.filter(client_address=self.address)
        return rows

    def row_fields(self) -> dict[str, Any]:
        """The ownership fields of a task this owner creates."""
        return {
            "owner_id": self.user_id,
            "owner_kind": "user" if self.is_user else "anonymous",
            "owner_session": "" if self.is_user else self.session,
            "tenant": self.tenant,
            "client_address": self.address[:64],
        }


class LoggedEvent:
    """One stream event with its place in the task's log.

    ``json`` is the event's proto3 JSON, made once and shared by every stream that sends the
    event and by the database row that stores it. An event made from its JSON alone
    (:meth:`from_artifact_json`, the recorder's tool frames) builds its ``response`` model only
    if something asks for it (a 0.3 stream, a test).
    """

    __slots__ = ("_json", "_response", "emitted_at", "kind", "seq", "state")

    def __init__(
        self, seq: int, response: StreamResponse, emitted_at: datetime, json: bytes | None = None
    ) -> None:
        self.seq = seq
        self._response: StreamResponse | None = response
        self.emitted_at = emitted_at
        self._json = json
        self.kind = _kind(response)
        self.state = _state(response)

    @classmethod
    def from_artifact_json(cls, seq: int, json: bytes, emitted_at: datetime) -> LoggedEvent:
        """An ``artifactUpdate`` event given as its JSON, which must be exactly what
        ``StreamResponse.to_json`` makes of it."""
        event = cls.__new__(cls)
        event.seq = seq
        event._response = None
        event.emitted_at = emitted_at
        event._json = json
        event.kind = orm.TaskEvent.Kind.ARTIFACT
        event.state = None
        return event

    @property
    def response(self) -> StreamResponse:
        """The event as a model."""
        if self._response is None:
            assert self._json is not None
            self._response = StreamResponse.from_json(self._json)
        return self._response

    @property
    def json(self) -> bytes:
        """The event as compact UTF-8 JSON (a ``StreamResponse``)."""
        if self._json is None:
            assert self._response is not None
            self._json = self._response.to_json()
        return self._json

    def compact(self) -> LoggedEvent:
        """Keep the event as its JSON only (the model is rebuilt if asked for): a task's events
        stay in memory while it runs, and bytes take a fraction of the models' room."""
        if self._json is None:
            assert self._response is not None
            self._json = self._response.to_json()
        self._response = None
        return self

    @property
    def ends_stream(self) -> bool:
        """A terminal or interrupted status update (or snapshot) ends a stream (spec 9.4.2)."""
        return (
            self.kind == orm.TaskEvent.Kind.STATUS
            and self.state is not None
            and (self.state.is_terminal or self.state.is_interrupted)
        )

    def __repr__(self) -> str:
        return f"LoggedEvent(seq={self.seq}, {self.response!r})"


def _state(response: StreamResponse) -> TaskState | None:
    """The state a status update (or snapshot) moves the task to."""
    if response.status_update is not None:
        return response.status_update.status.state
    if response.task is not None:
        return response.task.status.state
    return None


def _kind(response: StreamResponse) -> str:
    if response.task is not None:
        return orm.TaskEvent.Kind.TASK
    if response.status_update is not None:
        return orm.TaskEvent.Kind.STATUS
    return orm.TaskEvent.Kind.ARTIFACT


def snapshot(
    row: orm.Task,
    *,
    history_length: int | None = None,
    include_artifacts: bool = True,
    tool_calls: list[dict[str, Any]] | None = None,
    with_tool_calls: bool = True,
) -> Task:
    """The A2A Task for a row (``history_length`` per spec 3.2.4: None all, 0 none, n last n).

    ``tool_calls``: the tool-call summary to put in the metadata instead of the row's own;
    ``with_tool_calls=False`` leaves the summary out altogether.
    """
    history = row.history
    if history_length is not None:
        history = history[-history_length:] if history_length > 0 else []
    metadata = row.metadata
    if not with_tool_calls:
        metadata = {key: value for key, value in metadata.items() if key != TOOL_CALL_V1_URI}
    elif tool_calls:
        metadata = {**metadata, TOOL_CALL_V1_URI: {"toolCalls": tool_calls}}
    return Task.model_validate(
        {
            "id": row.id,
            "contextId": row.context_id,
            "status": row.status,
            **({"artifacts": row.artifacts} if include_artifacts else {}),
            **({"history": history} if history else {}),
            **({"metadata": metadata} if metadata else {}),
        }
    )


def summary_entry(call: orm.ToolCall) -> dict[str, Any]:
    """One tool call as it appears in a task's tool-call summary."""
    entry: dict[str, Any] = {
        "toolCallId": call.tool_call_id,
        "name": call.name,
        "state": call.status,
    }
    if call.args is not None:
        entry["args"] = call.args
    if call.result is not None:
        entry["result"] = call.result
    if call.error:
        entry["error"] = call.error
    if call.duration_ms is not None:
        entry["durationMs"] = call.duration_ms
    return entry


async def live_summaries(rows: Sequence[orm.Task]) -> dict[str, list[dict[str, Any]]]:
    """The tool-call summaries of the running tasks among ``rows``, from their ToolCall rows.

    A running task's row carries no up-to-date summary (rewriting it on every write would cost
    O(calls) per write); its ToolCall rows are written in the same transaction as its events
    and ``last_seq``, so a summary made from them agrees with the snapshot's place in the
    stream. A task that stopped or waits for input has its final summary in its row.
    """
    running = [r.id for r in rows if not (r.task_state.is_terminal or r.task_state.is_interrupted)]
    found: dict[str, list[dict[str, Any]]] = {}
    if not running:
        return found
    calls = orm.ToolCall.objects.filter(task_id__in=running).order_by("task_id", "order")
    async for call in calls:
        found.setdefault(call.task_id, []).append(summary_entry(call))
    return found


async def current_snapshot(
    row: orm.Task,
    *,
    history_length: int | None = None,
    include_artifacts: bool = True,
    with_tool_calls: bool = True,
) -> Task:
    """:func:`snapshot` with a running task's tool-call summary as of the row's ``last_seq``
    (none with ``with_tool_calls=False``)."""
    summaries = await live_summaries([row]) if with_tool_calls else {}
    return snapshot(
        row,
        history_length=history_length,
        include_artifacts=include_artifacts,
        tool_calls=summaries.get(row.id),
        with_tool_calls=with_tool_calls,
    )


async def create_task(
    *,
    task_id: str,
    context_id: str,
    agent: str,
    message: Message,
    metadata: dict[str, Any],
    status: TaskStatus,
    owner: Owner | None = None,
    auth_scheme: str = "",
    credential: str = "",
    recorder_id: str = "",
) -> orm.Task:
    """Insert a new task row in SUBMITTED (its first event is logged by the recorder).
    ``recorder_id``: the process recording it, which holds its recorder lease from now."""
    now = timezone.now()
    row = orm.Task(
        recorder_id=recorder_id[:128],
        recorder_expires_at=now + timedelta(seconds=lease_seconds()) if recorder_id else None,
        **(owner or Owner()).row_fields(),
        auth_scheme=auth_scheme,
        credential=credential[:200],
        id=task_id,
        context_id=context_id,
        agent=agent,
        state=status.state.value,
        created_at=now,
        updated_at=now,
        status=status.to_wire(),
        history=[message.to_wire()],
        metadata=metadata,
        request_text="\n".join(p.text for p in message.parts if p.text is not None),
    )
    # With the other tasks accepted meanwhile, in one transaction, in the thread the journal
    # writes from (whose database connection lives on), not in a request's thread.
    await _group_commit("task inserts", _insert_rows_sync).run(row)
    return row


class GroupCommit(Generic[_I, _R]):
    """Writes done together: the first one at once, and those that arrive while a write is in
    flight all in the next one (one transaction; group commit).

    A burst of tasks costs one transaction per write rather than one per task (a commit is
    the expensive part: PostgreSQL waits for its log to reach the disk), without delaying a
    lone write. ``write_sync`` does a batch in asgiref's shared thread and returns each item's
    result or exception; if the batch's transaction fails, it tries the items one by one, so
    that only an item that cannot be written fails its caller.
    """

    def __init__(self, write_sync: Callable[[list[_I]], list[_R | BaseException]]) -> None:
        self._write_sync = write_sync
        self._pending: list[tuple[_I, asyncio.Future[_R]]] = []
        self._writer: asyncio.Task[None] | None = None

    async def run(self, item: _I) -> _R:
        """Write ``item``; its result once committed (raises what its write raised)."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[_R] = loop.create_future()
        self._pending.append((item, done))
        if self._writer is None:
            # A fresh context: the writer outlives the request that started it.
            self._writer = loop.create_task(self._write(), context=contextvars.Context())
        return await done

    async def _write(self) -> None:
        batch: list[tuple[_I, asyncio.Future[_R]]] = []
        try:
            while self._pending:
                batch, self._pending = self._pending, []
                results: list[_R | BaseException]
                try:
                    results = await in_shared_thread(
                        functools.partial(self._write_sync, [item for item, _ in batch])
                    )
                except Exception as exc:
                    results = [exc] * len(batch)
                for (_, done), result in zip(batch, results, strict=True):
                    if done.done():
                        continue  # its caller went away
                    if isinstance(result, BaseException):
                        done.set_exception(result)
                    else:
                        done.set_result(result)
                batch = []
        finally:
            self._writer = None
            # Stopped (the loop is closing): the callers fail rather than hang.
            for _, done in [*batch, *self._pending]:
                if not done.done():
                    done.set_exception(RuntimeError("the write stopped before it was done"))
            self._pending = []


def _insert_rows_sync(rows: list[Model]) -> list[BaseException | None]:
    """Insert ``rows`` (of one model) in one transaction per database (one statement,
    :func:`_insert_prepared`); if that fails, one at a time. What each row's insert raised, or
    None."""
    by_alias: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        by_alias.setdefault(router.db_for_write(type(row), instance=row), []).append(i)
    results: list[BaseException | None] = [None] * len(rows)
    for using, indexes in by_alias.items():
        group = [rows[i] for i in indexes]
        try:
            with transaction.atomic(using=using):
                model = type(group[0])
                if not _insert_prepared(connections[using], model, group):
                    model._default_manager.using(using).bulk_create(group)
            continue
        except Exception as exc:
            _close_if_broken(using)
            if len(group) == 1:
                results[indexes[0]] = exc
                continue
        for i in indexes:
            try:
                with transaction.atomic(using=using):
                    rows[i].save(force_insert=True, using=using)
            except Exception as exc:
                _close_if_broken(using)
                results[i] = exc
    return results


def _close_if_broken(using: str) -> None:
    # A broken connection stays broken in this long-lived thread unless it is closed; the
    # next write opens a new one.
    connection = connections[using]
    if connection.connection is not None and not connection.is_usable():
        connection.close()


_group_commits: dict[tuple[asyncio.AbstractEventLoop, str], GroupCommit[Any, Any]] = {}


def _group_commit(name: str, write_sync: Callable[[list[Any]], list[Any]]) -> GroupCommit[Any, Any]:
    """The running event loop's group commit called ``name``."""
    loop = asyncio.get_running_loop()
    found = _group_commits.get((loop, name))
    if found is None:
        for key in [key for key in _group_commits if key[0].is_closed()]:
            del _group_commits[key]
        found = _group_commits[loop, name] = GroupCommit(write_sync)
    return found


async def in_shared_thread(call: Callable[[], T]) -> T:
    """Run ``call`` in asgiref's shared thread (not the current request's), and return its
    result."""
    from asgiref.sync import sync_to_async

    job = sync_to_async(call, thread_sensitive=True)()
    # A fresh context: outside the request's ThreadSensitiveContext.
    return await asyncio.get_running_loop().create_task(job, context=contextvars.Context())


async def load_row(task_id: str, owner: Owner | None = None) -> orm.Task:
    """The row of ``task_id`` if ``owner`` may see it (None: unscoped, for the server's own
    use); raises TaskNotFoundError otherwise, the same for a task of someone else as for an
    unknown id."""
    rows = orm.Task.objects.all()
    if owner is not None:
        rows = owner.scope(rows)
    try:
        return await rows.aget(pk=task_id)
    except orm.Task.DoesNotExist:
        raise jsonrpc.TaskNotFoundError(
            f"Task not found: {task_id}", metadata={"taskId": task_id}
        ) from None


async def load_with_calls(task_id: str) -> tuple[orm.Task, list[orm.ToolCall]]:
    """A task's row and its ToolCall rows (unscoped: the server's own use)."""
    row = await orm.Task.objects.aget(pk=task_id)
    return row, [call async for call in row.tool_calls.all()]


async def get_task(
    task_id: str, history_length: int | None = None, owner: Owner | None = None
) -> Task:
    """GetTask."""
    return await current_snapshot(await load_row(task_id, owner), history_length=history_length)


RUNNING_STATES = (
    TaskState.SUBMITTED.value,
    TaskState.WORKING.value,
    TaskState.INPUT_REQUIRED.value,
)
"""The states of a task that has not ended (a lease may be held on it)."""

_UNCLAIMED_STATES = (TaskState.SUBMITTED.value, TaskState.WORKING.value)
# A task no runtime holds: submitted (attempt 1), or working between two attempts (a retry, or a
# resume after its answer arrived).

_ID_CHUNK = 500


def lease_seconds() -> float:
    """``TASK_LEASE``: how long a lease lasts."""
    from a2a_toolcall.conf import get_setting

    return float(get_setting("TASK_LEASE"))


def _insert_prepared(connection: Any, model: type[Model], rows: list[Model]) -> bool:
    """Insert ``rows`` in one ``executemany`` of the model's concrete fields, their values
    taken as ``bulk_create`` takes them (``pre_save``) and prepared by the fields
    (:func:`_prepared`); the rows are then saved instances, as after ``bulk_create``.

    Every new task is inserted here while its client waits for the first event, and building
    ``bulk_create``'s query cost more than the insert. False, with nothing done, where a
    value is not a plain one (an expression, a database default, a key the database makes)
    or the model has generated fields: ``bulk_create``'s to do.
    """
    fields = model._meta.concrete_fields
    if any(getattr(f, "generated", False) for f in fields):
        return False  # the database computes them: not in an INSERT
    names = tuple(f.name for f in fields)
    params = []
    for row in rows:
        values = {}
        for f in fields:
            value = f.pre_save(row, True)
            if hasattr(value, "resolve_expression") or (f.primary_key and value is None):
                return False
            values[f.name] = value
        params.append(_prepared(model, names, values, connection))
    sql, _ = _insert_sql(connection, model, names)
    with connection.cursor() as cursor:
        cursor.executemany(sql, params)
    for row in rows:
        row._state.adding = False
        row._state.db = connection.alias
    return True


def _claimed_fields(runtime_id: str) -> dict[str, Any]:
    """What a claim writes: the runtime, when, and its first lease (``TASK_LEASE``)."""
    now = timezone.now()
    return {
        "runtime_id": runtime_id[:128],
        "claimed_at": now,
        "lease_expires_at": now + timedelta(seconds=lease_seconds()),
    }


_Claim = tuple[str, str, int]
"""A runtime's claim of a task: (task id, runtime id, attempt)."""


def _working_fields(at: datetime) -> dict[str, Any]:
    """What a claim writes on a submitted task: working since ``at`` (the recorder's working
    status then goes out without a write of its own, :attr:`StoreClaims.marks_working`)."""
    status = TaskStatus(state=TaskState.WORKING, timestamp=format_timestamp(at))
    return {"state": TaskState.WORKING.value, "status": status.to_wire(), "updated_at": at}


def _claim_rows_sync(claims: Sequence[_Claim], using: str) -> list[bool]:
    """Claim rows in the open transaction: one locking read of the claimable rows (in key
    order, as the lease renewals and the journal take theirs, so no deadlock with them:
    :func:`_lock_in_order`), then one UPDATE per runtime (usually one), and one more that
    marks the submitted ones among them working (:func:`_working_fields`).

    The first claim of a row in ``claims`` wins it; the others lose, as they would to a
    runtime that claimed before them. Every task a runtime starts is claimed here, so the
    statements are plain SQL (:func:`_claimable_sql`, :func:`_claim_sql`) with the values
    prepared by the model's fields: building the querysets cost more than running them.
    """
    connection = connections[using]
    wanted: dict[int, list[str]] = {}
    for task_id, _, attempt in claims:
        wanted.setdefault(attempt, []).append(task_id)
    claimable: set[tuple[str, int]] = set()
    with connection.cursor() as cursor:
        for attempt, ids in wanted.items():
            for i in range(0, len(ids), _ID_CHUNK):
                chunk = ids[i : i + _ID_CHUNK]
                cursor.execute(
                    _claimable_sql(connection, len(chunk)),
                    [*chunk, attempt, *_UNCLAIMED_STATES, ""],
                )
                claimable.update((pk, attempt) for (pk,) in cursor.fetchall())
        won = [False] * len(claims)
        by_runtime: dict[str, list[str]] = {}
        for i, (task_id, runtime_id, attempt) in enumerate(claims):
            if (task_id, attempt) in claimable:
                claimable.discard((task_id, attempt))
                won[i] = True
                by_runtime.setdefault(runtime_id, []).append(task_id)
        for runtime_id, ids in by_runtime.items():
            fields = _claimed_fields(runtime_id)
            names = tuple(fields)
            values = _prepared(orm.Task, names, fields, connection)
            for i in range(0, len(ids), _ID_CHUNK):
                chunk = ids[i : i + _ID_CHUNK]
                cursor.execute(
                    _claim_sql(connection, names, len(chunk)),
                    [*values, *chunk, *_UNCLAIMED_STATES, ""],
                )
                if cursor.rowcount != len(chunk):
                    # A row changed between the read and the write (a database without row
                    # locks, written by another process): the transaction is rolled back and
                    # the claims are made one by one.
                    raise transaction.TransactionManagementError(
                        f"claimed {cursor.rowcount} of {len(chunk)} rows read as claimable"
                    )
                working = _working_fields(fields["claimed_at"])
                cursor.execute(
                    _working_sql(connection, tuple(working), len(chunk)),
                    [
                        *_prepared(orm.Task, tuple(working), working, connection),
                        *chunk,
                        TaskState.SUBMITTED.value,
                    ],
                )
    return won


def _working_sql(connection: Any, names: tuple[str, ...], count: int) -> str:
    """``names`` set (their values the first parameters) on the rows of ``count`` keys that
    are in the state given last (submitted)."""
    quote = connection.ops.quote_name
    sets = _assignments(connection, orm.Task, names)
    pk = quote(str(orm.Task._meta.pk.column))
    (state,) = (quote(c) for c in _columns(orm.Task, ("state",)))
    table = quote(orm.Task._meta.db_table)
    where = f"{pk} IN ({_placeholders(count)}) AND {state} = %s"
    return f"UPDATE {table} SET {sets} WHERE {where}"  # noqa: S608


def _unclaimed_where(connection: Any, count: int, *, attempt: bool = False) -> str:
    """The rows of ``count`` tasks that no runtime holds: ``pk IN (%s, ...)``, ``attempt =
    %s`` if asked, ``state IN (%s, %s)``, ``runtime_id = %s``; the parameters in that order
    (the keys, the attempt, :data:`_UNCLAIMED_STATES`, ``""``)."""
    quote = connection.ops.quote_name
    pk = quote(str(orm.Task._meta.pk.column))
    columns = _columns(orm.Task, ("attempt", "state", "runtime_id"))
    of_attempt, state, runtime = (quote(c) for c in columns)
    keys, states = _placeholders(count), _placeholders(len(_UNCLAIMED_STATES))
    also = f" AND {of_attempt} = %s" if attempt else ""
    return f"{pk} IN ({keys}){also} AND {state} IN ({states}) AND {runtime} = %s"


def _claimable_sql(connection: Any, count: int) -> str:
    """The locking read of a claim (:func:`_unclaimed_where` of one attempt): the keys, in key
    order, locked where rows lock (FOR NO KEY UPDATE where there is one, as
    :func:`_lock_in_order` takes them)."""
    quote = connection.ops.quote_name
    pk = quote(str(orm.Task._meta.pk.column))
    table = quote(orm.Task._meta.db_table)
    where = _unclaimed_where(connection, count, attempt=True)
    # Names from the model's own metadata, quoted by the backend; values are parameters.
    sql = f"SELECT {pk} FROM {table} WHERE {where} ORDER BY {pk}"  # noqa: S608
    if connection.features.has_select_for_update:
        sql = f"{sql} {connection.ops.for_update_sql(no_key=_no_key_lock(connection))}"
    return sql


def _claim_sql(connection: Any, names: tuple[str, ...], count: int) -> str:
    """The write of a claim: ``names`` set (their values the first parameters) on the rows of
    :func:`_unclaimed_where` (any attempt: the read has chosen them)."""
    quote = connection.ops.quote_name
    sets = _assignments(connection, orm.Task, names)
    table = quote(orm.Task._meta.db_table)
    where = _unclaimed_where(connection, count)
    return f"UPDATE {table} SET {sets} WHERE {where}"  # noqa: S608


def _claim_one_sync(task_id: str, runtime_id: str, attempt: int, *, using: str) -> bool:
    """One claim in one conditional UPDATE, and the mark of a submitted task as working (one
    transaction)."""
    with transaction.atomic(using=using):
        rows = orm.Task.objects.using(using).filter(
            pk=task_id, state__in=_UNCLAIMED_STATES, runtime_id="", attempt=attempt
        )
        fields = _claimed_fields(runtime_id)
        if rows.update(**fields) != 1:
            return False
        working = orm.Task.objects.using(using).filter(pk=task_id, state=TaskState.SUBMITTED.value)
        working.update(**_working_fields(fields["claimed_at"]))
        return True


def _claim_batch_sync(claims: list[_Claim]) -> list[bool | BaseException]:
    """The claims made meanwhile, in one transaction (a burst of tasks is claimed in a couple
    of statements, not one each); if that fails, each in a statement of its own. Whether each
    claim won, or what it raised."""
    using = router.db_for_write(orm.Task)
    try:
        with transaction.atomic(using=using):
            return list(_claim_rows_sync(claims, using))
    except Exception:
        _close_if_broken(using)
    results: list[bool | BaseException] = []
    for claim in claims:
        try:
            results.append(_claim_one_sync(*claim, using=using))
        except Exception as exc:
            _close_if_broken(using)
            results.append(exc)
    return results


async def claim_task(task_id: str, runtime_id: str, attempt: int = 1) -> bool:
    """Claim a task for a runtime: True for exactly one runtime, and for none once the task was
    canceled (or failed) before any runtime claimed it. Atomic; it also gives the runtime its
    first lease (``TASK_LEASE``). ``attempt``: which run of the task (a retry or a resume is a
    new attempt, claimed like the first).

    Claims made while one is being written go together in the next transaction
    (:class:`GroupCommit`): a burst of tasks costs a few statements, not one each."""
    return bool(
        await _group_commit("claims", _claim_batch_sync).run((task_id, runtime_id, attempt))
    )


def _settle_sync(task_id: str, state: TaskState) -> bool:
    rows = orm.Task.objects.filter(pk=task_id, state__in=_UNCLAIMED_STATES, runtime_id="")
    return rows.update(state=state.value, updated_at=timezone.now(), lease_expires_at=None) == 1


async def settle_unclaimed(task_id: str, state: TaskState) -> bool:
    """Move a task no runtime holds to ``state`` (canceled, failed), atomically against
    :func:`claim_task`: True when it did, False when a runtime claimed the task first."""
    return await in_shared_thread(functools.partial(_settle_sync, task_id, state))


def _lock_in_order(rows: Any) -> list[Any]:
    """Lock ``rows`` in primary-key order, in the open transaction; their keys.

    FOR NO KEY UPDATE where there is one: the lock an UPDATE itself takes, which does not
    block the foreign-key checks of events being inserted for the same tasks. Backends
    without row locks (SQLite locks the database) only read the keys.
    """
    locking = rows.select_for_update(no_key=_no_key_lock(connections[rows.db])).order_by("pk")
    return list(locking.values_list("pk", flat=True))


def _no_key_lock(connection: Any) -> bool:
    """Whether row locks are taken FOR NO KEY UPDATE (the lock an UPDATE itself takes, which
    does not block the foreign-key checks of rows being inserted) on ``connection``."""
    return bool(connection.features.has_select_for_no_key_update)


def _update_in_order(rows: Any, **values: Any) -> int:
    """``rows.update(**values)``, taking the rows' locks in primary-key order.

    Several processes update many task rows at once (the recorders' lease renewals, the
    runtimes', the journal's batch): an ``UPDATE ... WHERE`` locks rows in whatever order its
    scan meets them, so two of them can each hold a row the other waits for (PostgreSQL
    reports a deadlock and fails one). Taking every lock in key order first makes such a
    cycle impossible. Backends without row locks (SQLite locks the database) update as is.
    """
    connection = connections[rows.db]
    if not connection.features.has_select_for_update:
        return int(rows.update(**values))
    with transaction.atomic(using=rows.db):
        locked = _lock_in_order(rows)
        if not locked:
            return 0
        return int(
            rows.model._default_manager.using(rows.db).filter(pk__in=locked).update(**values)
        )


def _renew_runtime_sync(runtime_id: str, ids: list[str]) -> set[str]:
    until = timezone.now() + timedelta(seconds=lease_seconds())
    held: set[str] = set()
    ids = sorted(ids)
    for i in range(0, len(ids), _ID_CHUNK):
        chunk = ids[i : i + _ID_CHUNK]
        rows = orm.Task.objects.filter(
            pk__in=chunk, runtime_id=runtime_id, state__in=RUNNING_STATES
        )
        if _update_in_order(rows, lease_expires_at=until) == len(chunk):
            held.update(chunk)
        else:
            held.update(rows.values_list("pk", flat=True))
    return held


async def renew_runtime_leases(runtime_id: str, ids: Sequence[str]) -> set[str]:
    """Renew the leases of the tasks ``runtime_id`` runs; the ids it still holds (a task it
    no longer holds was ended or taken over elsewhere: the runtime stops it)."""
    if not ids:
        return set()
    return await in_shared_thread(functools.partial(_renew_runtime_sync, runtime_id, list(ids)))


def _renew_recorder_sync(recorder_id: str) -> int:
    until = timezone.now() + timedelta(seconds=lease_seconds())
    rows = orm.Task.objects.filter(recorder_id=recorder_id, state__in=RUNNING_STATES)
    return _update_in_order(rows, recorder_expires_at=until)


async def renew_recorder_leases(recorder_id: str) -> int:
    """Renew the recorder leases of every running task process ``recorder_id`` records."""
    return await in_shared_thread(functools.partial(_renew_recorder_sync, recorder_id))


@dataclass(frozen=True, slots=True)
class Expired:
    """A running task with a lease that ran out (see :func:`expired_leases`)."""

    task_id: str
    state: TaskState
    runtime_id: str
    runtime_expired: bool
    recorder_id: str
    recorder_expired: bool
    resumable: bool
    """Waiting for input with a checkpoint: the task can be parked rather than failed."""


def _expired_sync() -> list[Expired]:
    now = timezone.now()
    rows = orm.Task.objects.filter(state__in=RUNNING_STATES).filter(
        Q(runtime_id__gt="", lease_expires_at__lt=now) | Q(recorder_expires_at__lt=now)
    )
    return [
        Expired(
            task_id=row["id"],
            state=TaskState(row["state"]),
            runtime_id=row["runtime_id"],
            runtime_expired=bool(
                row["runtime_id"]
                and row["lease_expires_at"] is not None
                and row["lease_expires_at"] < now
            ),
            recorder_id=row["recorder_id"],
            recorder_expired=row["recorder_expires_at"] is not None
            and row["recorder_expires_at"] < now,
            resumable=row["state"] == TaskState.INPUT_REQUIRED.value
            and row["checkpoint"] is not None,
        )
        for row in rows.values(
            "id",
            "state",
            "runtime_id",
            "lease_expires_at",
            "recorder_id",
            "recorder_expires_at",
            "checkpoint",
        )[:1000]
    ]


async def expired_leases() -> list[Expired]:
    """Running tasks whose runtime's lease or recorder's lease has expired."""
    return await in_shared_thread(_expired_sync)


def _release_sync(task_id: str, recorder_id: str) -> int | None:
    with transaction.atomic(using=router.db_for_write(orm.Task)):
        rows = orm.Task.objects.filter(
            pk=task_id,
            recorder_id=recorder_id,
            state__in=_UNCLAIMED_STATES,
        ).exclude(runtime_id="")
        if not rows.update(runtime_id="", lease_expires_at=None, attempt=F("attempt") + 1):
            return None
        return int(orm.Task.objects.values_list("attempt", flat=True).get(pk=task_id))


async def release_for_retry(task_id: str, recorder_id: str) -> int | None:
    """Take a task from the runtime that lost it, to be claimed again as the next attempt; the
    new attempt's number, or None if the task is no longer a running one of this recorder's."""
    return await in_shared_thread(functools.partial(_release_sync, task_id, recorder_id))


def _park_sync(task_id: str, recorder_id: str | None, orphan: bool) -> bool:
    rows = orm.Task.objects.filter(
        pk=task_id, state=TaskState.INPUT_REQUIRED.value, checkpoint__isnull=False
    )
    if recorder_id is not None:
        rows = rows.filter(recorder_id=recorder_id)
    elif not orphan:
        rows = rows.filter(recorder_expires_at__lt=timezone.now())
    return (
        rows.update(runtime_id="", lease_expires_at=None, recorder_id="", recorder_expires_at=None)
        == 1
    )


async def park(task_id: str, recorder_id: str | None, *, orphan: bool = False) -> bool:
    """Park a resumable task waiting for input: no runtime and no recorder hold it until its
    answer arrives (then any process resumes it, see :func:`adopt_parked`). ``recorder_id``: the
    recorder parking it; None: a process taking over from a recorder whose lease expired, or
    (``orphan``) a restarted single process parking what its earlier run left."""
    return await in_shared_thread(functools.partial(_park_sync, task_id, recorder_id, orphan))


def _adopt_sync(task_id: str, recorder_id: str) -> int | None:
    with transaction.atomic(using=router.db_for_write(orm.Task)):
        rows = orm.Task.objects.filter(
            pk=task_id,
            state=TaskState.INPUT_REQUIRED.value,
            runtime_id="",
            recorder_id="",
            checkpoint__isnull=False,
        )
        updated = rows.update(
            recorder_id=recorder_id[:128],
            recorder_expires_at=timezone.now() + timedelta(seconds=lease_seconds()),
            attempt=F("attempt") + 1,
        )
        if not updated:
            return None
        return int(orm.Task.objects.values_list("attempt", flat=True).get(pk=task_id))


async def adopt_parked(task_id: str, recorder_id: str) -> int | None:
    """Take the recording of a parked task (its answer arrived here); the attempt its resume
    runs as, or None if another process took it first."""
    return await in_shared_thread(functools.partial(_adopt_sync, task_id, recorder_id))


def _waiting_sync(limit: int, since: datetime) -> list[orm.Task]:
    now = timezone.now()
    rows = orm.Task.objects.filter(
        state=TaskState.SUBMITTED.value,
        runtime_id="",
        attempt=1,
        created_at__gte=since,
        recorder_expires_at__gt=now,
    ).order_by("created_at")
    return list(rows[:limit])


async def waiting_tasks(limit: int, since: datetime) -> list[orm.Task]:
    """Up to ``limit`` submitted tasks no runtime has claimed, created after ``since`` and still
    recorded by a live process, oldest first (for a runtime with free slots)."""
    if limit <= 0:
        return []
    return await in_shared_thread(functools.partial(_waiting_sync, limit, since))


class StoreClaims:
    """The task store as a runtime's :class:`~a2a_toolcall.runtime.runner.Claims`: atomic
    claims with leases, their renewal, and the tasks waiting for a runtime."""

    marks_working = True
    """A claim stores a submitted task as working, in the same transaction."""

    async def claim(self, cid: str, runtime_id: str, attempt: int) -> bool:
        return await claim_task(cid, runtime_id, attempt)

    async def renew(self, runtime_id: str, ids: Sequence[str]) -> set[str]:
        return await renew_runtime_leases(runtime_id, ids)

    async def waiting(self, limit: int) -> list[dict[str, Any]]:
        from a2a_toolcall.conf import get_setting
        from a2a_toolcall.runtime.runner import build_request

        pickup = float(get_setting("RUNTIME_PICKUP_TIMEOUT"))
        since = timezone.now() - timedelta(seconds=pickup)
        requests = []
        for row in await waiting_tasks(limit, since):
            if not row.history:
                continue
            message = Message.model_validate(row.history[0])
            requests.append(
                build_request(
                    row.pk,
                    message,
                    agent=row.agent,
                    context_id=row.context_id,
                    metadata=row.metadata,
                )
            )
        return requests


async def check_context(context_id: str, owner: Owner) -> None:
    """Refuse a new message naming a context that tasks of another owner use (a context is
    never shared between owners); a context no one uses yet is the caller's to start."""
    others = orm.Task.objects.filter(context_id=context_id).exclude(
        pk__in=owner.scope(orm.Task.objects.filter(context_id=context_id)).values("pk")
    )
    if await others.aexists():
        raise jsonrpc.InvalidParamsError(
            "Invalid parameters: params.message.contextId cannot be used by this caller; "
            "send the message without contextId (or with a new one) to start a conversation",
            violations=[
                jsonrpc.FieldViolation("params.message.contextId", "not a context of this caller")
            ],
        )


_CALL_FIELDS = (
    "name",
    "order",
    "status",
    "args",
    "result",
    "error",
    "started_at",
    "finished_at",
    "duration_ms",
)


@dataclass(slots=True)
class TaskWrite:
    """What one task adds to the database in a write: events, changed calls, row fields."""

    task_id: str
    events: Sequence[LoggedEvent] = ()
    fields: dict[str, Any] = field(default_factory=dict)
    calls: Sequence[dict[str, Any]] = ()
    pushed: Sequence[LoggedEvent] = ()
    """Events not logged (``RECORD_EVENTS`` off) that still go to the task's webhooks."""


def write_batch_sync(writes: Sequence[TaskWrite]) -> int:
    """Write several tasks' events, tool calls and rows in one transaction (sync).

    This is the hottest write of the app, so it is three prepared statements rather than ORM
    querysets (whose SQL compilation per value costs more than the writes): one ``executemany``
    upsert of the changed calls, one ``executemany`` insert of the events, and the task rows'
    ``UPDATE`` (one ``executemany`` for each run of rows changing the same columns, in key
    order). Values are prepared by the models' own fields, so they are stored exactly as the
    ORM would store them. The push deliveries of the events go into the outbox in the same
    transaction (:func:`enqueue_push_sync`); returns how many.
    """
    using = router.db_for_write(orm.TaskEvent)
    connection = connections[using]
    try:
        with transaction.atomic(using=using), connection.cursor() as cursor:
            calls = [(w.task_id, call) for w in writes for call in w.calls]
            if calls:
                sql, names = _call_upsert_sql(connection)
                cursor.executemany(
                    sql,
                    [
                        _prepared(orm.ToolCall, names, {**call, "task": task_id}, connection)
                        for task_id, call in calls
                    ],
                )
            events = [
                {
                    "task": w.task_id,
                    "seq": event.seq,
                    "kind": event.kind,
                    "state": event.state.value if event.state is not None else "",
                    "emitted_at": event.emitted_at,
                    # The JSON the streams sent, stored as it is: no second serialisation.
                    "data": orm.RawJSON(event.json),
                }
                for w in writes
                for event in w.events
            ]
            if events:
                sql, names = _insert_sql(connection, orm.TaskEvent, _EVENT_FIELDS)
                cursor.executemany(
                    sql, [_prepared(orm.TaskEvent, names, e, connection) for e in events]
                )
            queued = enqueue_push_sync(
                connection, [(w.task_id, w.events or w.pushed) for w in writes]
            )
            # In key order, as every write of several task rows takes their locks (see
            # _update_in_order): no two of them can wait for each other. Consecutive rows
            # changing the same columns (usually all of them) go in one executemany.
            run: list[list[Any]] = []
            run_names: tuple[str, ...] = ()
            for w in sorted(writes, key=lambda w: w.task_id):
                if not w.fields:
                    continue
                names = tuple(w.fields)
                if run and names != run_names:
                    cursor.executemany(_update_sql(connection, orm.Task, run_names), run)
                    run = []
                run_names = names
                run.append([*_prepared(orm.Task, names, w.fields, connection), w.task_id])
            if run:
                cursor.executemany(_update_sql(connection, orm.Task, run_names), run)
    except Exception:
        # A broken connection stays broken in this long-lived thread unless it is closed;
        # the next write opens a new one.
        connection.close()
        raise
    return queued


_DELIVERY_FIELDS = (
    "config",
    "task",
    "seq",
    "url",
    "body",
    "status",
    "attempts",
    "created_at",
    "next_attempt_at",
    "last_error",
)
_IN_CHUNK = 500
"""Task ids per ``IN (...)`` list (well under every backend's limit of parameters)."""


class Pushable(Protocol):
    """An event as the outbox takes it: its seq and its StreamResponse JSON."""

    @property
    def seq(self) -> int: ...

    @property
    def json(self) -> bytes | str: ...


def enqueue_push_sync(connection: Any, writes: Sequence[tuple[str, Sequence[Pushable]]]) -> int:
    """Queue a push delivery of each event for each webhook of its task, in the caller's
    transaction on ``connection``; returns how many (docs/push.md, "Delivery").

    One query of the batch's configs (by task, indexed); nothing more for tasks without. It
    runs on every write of the app, so it is plain SQL (:func:`_push_configs_sql`): building
    the queryset cost several times what the indexed lookup itself costs.
    """
    if not get_setting("PUSH_NOTIFICATIONS"):
        return 0
    events = {task_id: found for task_id, found in writes if found}
    if not events:
        return 0
    ids = sorted(events)
    found: list[tuple[Any, str, str]] = []
    with connection.cursor() as cursor:
        for start in range(0, len(ids), _IN_CHUNK):
            chunk = ids[start : start + _IN_CHUNK]
            cursor.execute(_push_configs_sql(connection, len(chunk)), chunk)
            found.extend(cursor.fetchall())
    if not found:
        return 0
    now = timezone.now()
    rows = [
        {
            "config": config_id,
            "task": task_id,
            "seq": event.seq,
            "url": url,
            "body": orm.RawJSON(event.json),
            "status": orm.PushDelivery.Status.PENDING,
            "attempts": 0,
            "created_at": now,
            "next_attempt_at": now,
            "last_error": "",
        }
        for config_id, task_id, url in found
        for event in events[task_id]
    ]
    sql, names = _insert_sql(connection, orm.PushDelivery, _DELIVERY_FIELDS)
    with connection.cursor() as cursor:
        cursor.executemany(sql, [_prepared(orm.PushDelivery, names, r, connection) for r in rows])
    return len(rows)


_push_wakers: list[Callable[[], None]] = []


def add_push_waker(wake: Callable[[], None]) -> None:
    """Call ``wake`` (in the event loop) after this process queued push deliveries."""
    if wake not in _push_wakers:
        _push_wakers.append(wake)


_EVENT_FIELDS = ("task", "seq", "kind", "state", "emitted_at", "data")


def _prepared(
    model: type[Model], names: tuple[str, ...], values: dict[str, Any], connection: Any
) -> list[Any]:
    """The values of ``names`` as the model's fields give them to the database
    (``get_db_prep_save``), through :func:`_converters`."""
    return [
        convert(values[name], connection)
        for name, convert in zip(names, _converters(model, names, connection), strict=True)
    ]


_Convert = Callable[[Any, Any], Any]
"""``(value, connection) -> the value for the database``."""
_converter_cache: dict[tuple[Any, ...], tuple[_Convert, ...]] = {}


def _converters(
    model: type[Model], names: tuple[str, ...], connection: Any
) -> tuple[_Convert, ...]:
    """For each field of ``names``, a function giving a value as ``get_db_prep_save`` does.

    The journal prepares a few values per event, thousands of events a second, in the thread
    whose Python time holds the event loop back. On SQLite and PostgreSQL the common cases go
    straight to what the field's layers come to: a ``str`` for a ``CharField``, ``TextField``
    or a foreign key to a ``CharField`` key as it is, an ``int`` or ``float`` for a number
    field as it is (where the backend takes it so: psycopg takes ints wrapped by size), an
    aware ``datetime`` through the backend's adapter (on SQLite, its naive time in the
    connection's zone), None as None, and on SQLite a ``RawJSON``, dict or list for a
    JSONField with ``WireJSONEncoder`` through that encoder; every other value, field class
    and backend goes through the field itself. Only these exact classes (not subclasses, which
    may prepare values their own way). A property test holds both ways equal on SQLite and
    PostgreSQL.
    """
    key = (model, names, connection.alias, connection.vendor)
    found = _converter_cache.get(key)
    if found is None:
        found = tuple(_converter(field, connection) for field in _fields(model, names))
        _converter_cache[key] = found
    return found


_FAST_VENDORS = frozenset({"sqlite", "postgresql"})
_TEXT_FIELDS = frozenset({models.CharField, models.TextField})
_INTEGER_FIELDS = frozenset(
    {
        models.IntegerField,
        models.SmallIntegerField,
        models.BigIntegerField,
        models.PositiveIntegerField,
        models.PositiveSmallIntegerField,
        models.PositiveBigIntegerField,
    }
)
_WIRE_ENCODER = orm.WireJSONEncoder()


def _converter(field: Any, connection: Any) -> _Convert:
    """A function giving values of ``field`` as ``field.get_db_prep_save`` does (see
    :func:`_converters`). It is checked on a few values against the field when it is made,
    and the field's own way is used if they differ (a Django release that changed how a
    backend stores a value)."""
    slow: _Convert = field.get_db_prep_save
    fast, probes = _fast_converter(field, connection, slow)
    if fast is None:
        return slow
    try:
        agrees = all(_same(fast(probe, connection), slow(probe, connection)) for probe in probes)
    except Exception:
        agrees = False
    return fast if agrees else slow


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _fast_converter(
    field: Any, connection: Any, slow: _Convert
) -> tuple[_Convert | None, tuple[Any, ...]]:
    if connection.vendor not in _FAST_VENDORS:
        return None, ()
    sqlite = connection.vendor == "sqlite"
    kind = type(field)
    if kind in _TEXT_FIELDS or (
        kind is models.ForeignKey and type(field.target_field) is models.CharField
    ):
        # "" goes through the field: a foreign key's "" is NULL.
        def text(value: Any, connection: Any) -> Any:
            return value if type(value) is str and value else slow(value, connection)

        return text, ("x", "é ✓", None)
    if kind in _INTEGER_FIELDS:

        def integer(value: Any, connection: Any) -> Any:
            return value if type(value) is int or value is None else slow(value, connection)

        return integer, (0, 7, 2**31 - 1, None)
    if kind is models.FloatField:

        def number(value: Any, connection: Any) -> Any:
            return value if type(value) is float or value is None else slow(value, connection)

        return number, (0.0, 1.5, None)
    if kind is models.DateTimeField:

        def moment(value: Any, connection: Any) -> Any:
            if value is None:
                return None
            if type(value) is datetime and value.tzinfo is not None:
                if not sqlite:
                    return connection.ops.adapt_datetimefield_value(value)
                if settings.USE_TZ:  # SQLite stores the naive time in the connection's zone
                    return str(value.astimezone(connection.timezone).replace(tzinfo=None))
            # Naive (the field warns), a date, a string, an expression: the field's own way.
            return slow(value, connection)

        now = timezone.now()
        return moment, (now, now.replace(microsecond=0), None)
    if kind is models.JSONField and sqlite and field.encoder is orm.WireJSONEncoder:
        # SQLite's JSON is json.dumps(value, cls=field.encoder), whose encode() this is.
        def wire_json(value: Any, connection: Any) -> Any:
            kind = type(value)
            if kind is orm.RawJSON:
                return value.text
            if kind is dict or kind is list:
                return _WIRE_ENCODER.encode(value)
            return slow(value, connection)

        return wire_json, (orm.RawJSON('{"a": 1}'), {"a": [1, "é", None, 2.5]}, [], None)
    return None, ()


@functools.cache
def _fields(model: type[Model], names: tuple[str, ...]) -> tuple[Any, ...]:
    return tuple(model._meta.get_field(name) for name in names)


def _columns(model: type[Model], names: tuple[str, ...]) -> list[str]:
    return [str(field.column) for field in _fields(model, names)]


def _insert_sql(
    connection: Any, model: type[Model], names: tuple[str, ...]
) -> tuple[str, tuple[str, ...]]:
    quote = connection.ops.quote_name
    columns = ", ".join(quote(c) for c in _columns(model, names))
    placeholders = _placeholders(len(names))
    # Names from the model's own metadata, quoted by the backend; values are parameters.
    table = quote(model._meta.db_table)
    return f"INSERT INTO {table} ({columns}) VALUES ({placeholders})", names  # noqa: S608


def _assignments(connection: Any, model: type[Model], names: tuple[str, ...]) -> str:
    """``"col" = %s, ...``: the SET list of an UPDATE of ``names`` (their values parameters)."""
    quote = connection.ops.quote_name
    return ", ".join(f"{quote(c)} = %s" for c in _columns(model, names))


def _placeholders(count: int) -> str:
    """``%s, %s, ...``: ``count`` parameters of a statement."""
    return ", ".join(["%s"] * count)


def _push_configs_sql(connection: Any, count: int) -> str:
    """``SELECT pk, task_id, url`` of the push configs of ``count`` tasks (``%s`` each), in key
    order: what ``PushConfig.objects.filter(task_id__in=...).order_by("pk")`` selects."""
    quote = connection.ops.quote_name
    model = orm.PushConfig
    pk = quote(str(model._meta.pk.column))
    task, url = (quote(c) for c in _columns(model, ("task", "url")))
    placeholders = _placeholders(count)
    table = quote(model._meta.db_table)
    # Names from the model's own metadata, quoted by the backend; values are parameters.
    return (
        f"SELECT {pk}, {task}, {url} FROM {table} "  # noqa: S608
        f"WHERE {task} IN ({placeholders}) ORDER BY {pk}"
    )


def _call_upsert_sql(connection: Any) -> tuple[str, tuple[str, ...]]:
    names = ("task", "tool_call_id", *_CALL_FIELDS)
    sql, _ = _insert_sql(connection, orm.ToolCall, names)
    suffix = connection.ops.on_conflict_suffix_sql(
        list(_fields(orm.ToolCall, names)),
        OnConflict.UPDATE,
        _columns(orm.ToolCall, _CALL_FIELDS),
        _columns(orm.ToolCall, ("task", "tool_call_id")),
    )
    return f"{sql} {suffix}", names


def _update_sql(connection: Any, model: type[Model], names: tuple[str, ...]) -> str:
    quote = connection.ops.quote_name
    sets = _assignments(connection, model, names)
    pk = quote(str(model._meta.pk.column))
    return f"UPDATE {quote(model._meta.db_table)} SET {sets} WHERE {pk} = %s"  # noqa: S608


async def write_batch(writes: Sequence[TaskWrite]) -> None:
    """Write several tasks' events, tool calls and rows in one transaction."""
    if await in_shared_thread(functools.partial(write_batch_sync, writes)):
        for wake in list(_push_wakers):
            wake()


async def events_after(task_id: str, seq: int, limit: int = 1000) -> list[LoggedEvent]:
    """Logged events with a seq above ``seq``, oldest first."""
    rows = orm.TaskEvent.objects.filter(task_id=task_id, seq__gt=seq).order_by("seq")
    return [
        LoggedEvent(r.seq, StreamResponse.model_validate(r.data), r.emitted_at)
        async for r in rows[:limit].only("seq", "data", "emitted_at")
    ]


def _encode_token(row: orm.Task) -> str:
    raw = f"{row.updated_at.isoformat()}|{row.id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_token(token: str) -> tuple[datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        stamp, _, task_id = raw.partition("|")
        return datetime.fromisoformat(stamp), task_id
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise jsonrpc.InvalidParamsError(
            "Invalid parameters: pageToken is not a token this server issued",
            violations=[jsonrpc.FieldViolation("params.pageToken", "unknown page token")],
        ) from None


async def list_tasks(request: ListTasksRequest, owner: Owner | None = None) -> ListTasksResponse:
    """ListTasks: newest status first, cursor paging, filters per spec 3.1.4; only ``owner``'s
    tasks (None: every task)."""
    page_size = request.page_size or DEFAULT_PAGE_SIZE
    if not 1 <= page_size <= MAX_PAGE_SIZE:
        raise jsonrpc.InvalidParamsError(
            f"Invalid parameters: pageSize must be between 1 and {MAX_PAGE_SIZE}",
            violations=[jsonrpc.FieldViolation("params.pageSize", f"1..{MAX_PAGE_SIZE}")],
        )
    if request.history_length is not None and request.history_length < 0:
        raise jsonrpc.InvalidParamsError(
            "Invalid parameters: historyLength must not be negative",
            violations=[jsonrpc.FieldViolation("params.historyLength", "must be >= 0")],
        )
    rows = orm.Task.objects.all()
    if owner is not None:
        rows = owner.scope(rows, listing=True)
    if request.context_id:
        rows = rows.filter(context_id=request.context_id)
    if request.status is not None and request.status is not TaskState.UNSPECIFIED:
        rows = rows.filter(state=request.status.value)
    if request.status_timestamp_after:
        rows = rows.filter(updated_at__gt=parse_timestamp(request.status_timestamp_after))
    total = await rows.acount()
    if request.page_token:
        stamp, last_id = _decode_token(request.page_token)
        rows = rows.filter(Q(updated_at__lt=stamp) | Q(updated_at=stamp, id__lt=last_id))
    page = [r async for r in rows.order_by("-updated_at", "-id")[: page_size + 1]]
    more = len(page) > page_size
    page = page[:page_size]
    summaries = await live_summaries(page)
    return ListTasksResponse(
        tasks=[
            snapshot(
                r,
                history_length=request.history_length,
                include_artifacts=bool(request.include_artifacts),
                tool_calls=summaries.get(r.id),
            )
            for r in page
        ],
        next_page_token=_encode_token(page[-1]) if more else "",
        page_size=page_size,
        total_size=total,
    )
