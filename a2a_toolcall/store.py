"""Reading and writing the task store (async ORM), in wire terms.

Everything here speaks A2A 1.0 models in and out; the views never touch the ORM directly.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from a2a_toolcall import models as orm
from a2a_toolcall.protocol import jsonrpc
from a2a_toolcall.protocol.models import (
    ListTasksRequest,
    ListTasksResponse,
    Message,
    StreamResponse,
    Task,
    TaskState,
    TaskStatus,
    parse_timestamp,
)

__all__ = [
    "LoggedEvent",
    "append_events",
    "create_task",
    "events_after",
    "get_task",
    "list_tasks",
    "load_row",
    "snapshot",
]

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 100


@dataclass(frozen=True, slots=True)
class LoggedEvent:
    """One stream event with its place in the task's log."""

    seq: int
    response: StreamResponse
    emitted_at: datetime

    @property
    def state(self) -> TaskState | None:
        """The state a status update (or snapshot) moves the task to."""
        if self.response.status_update is not None:
            return self.response.status_update.status.state
        if self.response.task is not None:
            return self.response.task.status.state
        return None


def _kind(response: StreamResponse) -> str:
    if response.task is not None:
        return orm.TaskEvent.Kind.TASK
    if response.status_update is not None:
        return orm.TaskEvent.Kind.STATUS
    return orm.TaskEvent.Kind.ARTIFACT


def snapshot(
    row: orm.Task, *, history_length: int | None = None, include_artifacts: bool = True
) -> Task:
    """The A2A Task for a row (``history_length`` per spec 3.2.4: None all, 0 none, n last n)."""
    history = row.history
    if history_length is not None:
        history = history[-history_length:] if history_length > 0 else []
    return Task.model_validate(
        {
            "id": row.id,
            "contextId": row.context_id,
            "status": row.status,
            **({"artifacts": row.artifacts} if include_artifacts else {}),
            **({"history": history} if history else {}),
            **({"metadata": row.metadata} if row.metadata else {}),
        }
    )


async def create_task(
    *,
    task_id: str,
    context_id: str,
    agent: str,
    message: Message,
    metadata: dict[str, Any],
    status: TaskStatus,
) -> orm.Task:
    """Insert a new task row in SUBMITTED (its first event is logged by the recorder)."""
    now = timezone.now()
    return await orm.Task.objects.acreate(
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


async def load_row(task_id: str) -> orm.Task:
    """The row of ``task_id``; raises TaskNotFoundError."""
    try:
        return await orm.Task.objects.aget(pk=task_id)
    except orm.Task.DoesNotExist:
        raise jsonrpc.TaskNotFoundError(
            f"Task not found: {task_id}", metadata={"taskId": task_id}
        ) from None


async def get_task(task_id: str, history_length: int | None = None) -> Task:
    """GetTask."""
    return snapshot(await load_row(task_id), history_length=history_length)


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


def _append_events_sync(
    task_id: str,
    events: Sequence[LoggedEvent],
    fields: dict[str, Any],
    calls: Sequence[dict[str, Any]],
) -> None:
    with transaction.atomic():
        if calls:
            # One statement for every call that changed: insert, or update the row in place.
            orm.ToolCall.objects.bulk_create(
                [orm.ToolCall(task_id=task_id, **call) for call in calls],
                update_conflicts=True,
                unique_fields=["task", "tool_call_id"],
                update_fields=list(_CALL_FIELDS),
            )
        orm.TaskEvent.objects.bulk_create(
            orm.TaskEvent(
                task_id=task_id,
                seq=event.seq,
                kind=_kind(event.response),
                state=(event.state.value if event.state is not None else ""),
                emitted_at=event.emitted_at,
                data=event.response.to_wire(),
            )
            for event in events
        )
        if fields:
            orm.Task.objects.filter(pk=task_id).update(**fields)


async def append_events(
    task_id: str,
    events: Sequence[LoggedEvent],
    fields: dict[str, Any],
    calls: Sequence[dict[str, Any]] = (),
) -> None:
    """Append events, upsert tool calls and update the task row, in one transaction."""
    from asgiref.sync import sync_to_async

    # One transaction for the batch: the log, the calls and the row never disagree.
    await sync_to_async(_append_events_sync, thread_sensitive=True)(task_id, events, fields, calls)


async def events_after(task_id: str, seq: int, limit: int = 1000) -> list[dict[str, Any]]:
    """Logged events with a seq above ``seq``, oldest first, as ``{"seq", "data"}``."""
    rows = orm.TaskEvent.objects.filter(task_id=task_id, seq__gt=seq).order_by("seq")
    return [{"seq": r.seq, "data": r.data} async for r in rows[:limit].only("seq", "data")]


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


async def list_tasks(request: ListTasksRequest) -> ListTasksResponse:
    """ListTasks: newest status first, cursor paging, filters per spec 3.1.4."""
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
    return ListTasksResponse(
        tasks=[
            snapshot(
                r,
                history_length=request.history_length,
                include_artifacts=bool(request.include_artifacts),
            )
            for r in page
        ],
        next_page_token=_encode_token(page[-1]) if more else "",
        page_size=page_size,
        total_size=total,
    )
