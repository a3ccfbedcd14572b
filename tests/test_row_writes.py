"""A recorder's write sets only the task row's columns that changed since its last committed
write, on SQLite and PostgreSQL: a running task's writes leave its indexed columns (state,
updated_at) alone, and a write that failed is made again in full by the next one."""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import Any

import pytest

from a2a_toolcall import models as orm
from a2a_toolcall import recorder as recorder_module
from a2a_toolcall import store
from a2a_toolcall.bus import TOPIC_PROGRESS, TOPIC_TOOLFRAME, Bus, Envelope, TaskStream
from a2a_toolcall.contract import ToolCallCompleted, ToolCallStarted
from a2a_toolcall.layers import InMemoryChannelLayer
from a2a_toolcall.protocol.models import Message, Part, Role, TaskState, TaskStatus, parse_timestamp
from a2a_toolcall.recorder import Recorder
from tests.conftest import BOTH_DATABASES


class Writes:
    """``store.write_batch`` as the journal calls it, recording each task's row fields (and
    failing the next ``fail`` writes before they reach the database)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.fields: list[dict[str, Any]] = []
        self.fail = 0
        real = store.write_batch

        async def write_batch(writes: Sequence[store.TaskWrite]) -> None:
            if self.fail:
                self.fail -= 1
                raise RuntimeError("the database is gone for a moment")
            await real(writes)
            self.fields.extend(dict(w.fields) for w in writes)

        monkeypatch.setattr(store, "write_batch", write_batch)

    def last(self) -> dict[str, Any]:
        return self.fields[-1]


def envelope(topic: str, cid: str, seq: int, payload: dict[str, Any]) -> Envelope:
    return Envelope(topic=topic, cid=cid, seq=seq, ts=time.time(), payload=payload)


@pytest.mark.django_db(transaction=True, databases=BOTH_DATABASES)
async def test_a_write_sets_only_the_row_columns_that_changed(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    task_id = str(uuid.uuid4())
    message = Message(message_id=uuid.uuid4().hex, role=Role.USER, parts=[Part(text="hi")])
    row = await store.create_task(
        task_id=task_id,
        context_id="ctx",
        agent="echo",
        message=message,
        metadata={},
        status=TaskStatus(state=TaskState.SUBMITTED),
    )
    writes = Writes(monkeypatch)
    bus = Bus(InMemoryChannelLayer())
    recorder = Recorder(
        bus,
        store.snapshot(row),
        agent="echo",
        stream=TaskStream(bus, task_id),
        emitted_at=row.created_at,
    )
    try:
        # The first write sets every column the recorder keeps.
        await recorder.flush()
        assert set(writes.last()) == {
            "state",
            "status",
            "pending_request_id",
            "last_seq",
            "updated_at",
            "finished_at",
            "tool_call_count",
            "failed_tool_count",
        }
        # The runtime is heard (WORKING, stored before it is streamed), with a line of
        # narration: a new status, so the status columns, and the state once.
        await recorder._on_envelope(envelope(TOPIC_PROGRESS, task_id, 1, {"text": "thinking"}))
        await recorder.flush()
        changed = {name for fields in writes.fields[1:] for name in fields}
        assert {"state", "status", "updated_at", "last_seq"} <= changed
        assert "tool_call_count" not in changed  # no call yet: still 0, as first written

        # Frames: the log grows, the status does not change.
        started = ToolCallStarted(tool_call_id="c1", name="lookup", args={"q": "x"})
        await recorder._on_envelope(
            envelope(TOPIC_TOOLFRAME, task_id, 2, {"frame": started.to_wire()})
        )
        await recorder.flush()
        assert writes.last() == {"last_seq": recorder.seq, "tool_call_count": 1}

        # A write that fails leaves the columns to the next one, which sets them.
        completed = ToolCallCompleted(tool_call_id="c1", name="lookup", result={"n": 1})
        await recorder._on_envelope(
            envelope(TOPIC_TOOLFRAME, task_id, 3, {"frame": completed.to_wire()})
        )
        writes.fail = 1
        with pytest.raises(RuntimeError):
            await recorder.flush()
        await recorder.flush()
        assert writes.last() == {"last_seq": recorder.seq}

        stored = await orm.Task.objects.aget(pk=task_id)
        assert stored.state == TaskState.WORKING.value
        assert stored.last_seq == recorder.seq
        assert stored.tool_call_count == 1
        assert stored.failed_tool_count == 0
        assert stored.finished_at is None
        assert stored.status == recorder.status.to_wire()
        assert recorder.status.timestamp is not None
        assert stored.updated_at == parse_timestamp(recorder.status.timestamp)
        assert [
            e
            async for e in orm.TaskEvent.objects.filter(task_id=task_id)
            .values_list("seq", flat=True)
            .order_by("seq")
        ] == [1, 2, 3, 4]
    finally:
        recorder.hub.close()
        recorder_module._recorders.pop(task_id, None)
        recorder_module._hubs.pop(task_id, None)
