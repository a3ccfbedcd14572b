"""Leases in the task store, on SQLite and PostgreSQL: claims, renewals that fence a runtime out,
the keeper's takeover of a task whose recording process is gone, parking and adopting, and the
lifecycle log of a task run through the endpoint."""

from __future__ import annotations

import json
import logging
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.test import AsyncClient
from django.utils import timezone

from a2a_toolcall import store
from a2a_toolcall.leases import PROCESS_ID, Keeper
from a2a_toolcall.lifecycle import LOGGER_NAME
from a2a_toolcall.models import Task, TaskEvent, ToolCall
from a2a_toolcall.protocol.models import Message, Part, Role, TaskState, TaskStatus
from a2a_toolcall.recorder import RECORDER_STOPPED, RUNTIME_STOPPED
from tests.conftest import BOTH_DATABASES

pytestmark = [
    pytest.mark.django_db(transaction=True, databases=BOTH_DATABASES),
    pytest.mark.usefixtures("stop_in_process_runtime"),
]


async def new_task(recorder_id: str = "elsewhere:1:abc") -> str:
    task_id = str(uuid.uuid4())
    message = Message(message_id=uuid.uuid4().hex, role=Role.USER, parts=[Part(text="hi")])
    await store.create_task(
        task_id=task_id,
        context_id="ctx",
        agent="echo",
        message=message,
        metadata={},
        status=TaskStatus(state=TaskState.SUBMITTED),
        recorder_id=recorder_id,
    )
    return task_id


async def expire(task_id: str, *, runtime: bool = False, recorder: bool = False) -> None:
    past = timezone.now() - timedelta(seconds=1)
    fields: dict[str, Any] = {}
    if runtime:
        fields["lease_expires_at"] = past
    if recorder:
        fields["recorder_expires_at"] = past
    await Task.objects.filter(pk=task_id).aupdate(**fields)


async def test_a_claim_takes_a_lease_and_only_one_runtime_gets_it(database: str) -> None:
    task_id = await new_task()
    assert await store.claim_task(task_id, "runtime-a")
    assert not await store.claim_task(task_id, "runtime-b")
    row = await Task.objects.aget(pk=task_id)
    assert row.runtime_id == "runtime-a"
    assert row.lease_expires_at is not None and row.lease_expires_at > timezone.now()
    # Attempt 2 is claimable only once the task was released for it.
    assert not await store.claim_task(task_id, "runtime-b", attempt=2)


async def test_a_renewal_fences_out_a_runtime_whose_task_ended_elsewhere(database: str) -> None:
    kept, ended = await new_task(), await new_task()
    for task_id in (kept, ended):
        assert await store.claim_task(task_id, "runtime-a")
    await Task.objects.filter(pk=ended).aupdate(state=TaskState.FAILED.value)
    before = (await Task.objects.aget(pk=kept)).lease_expires_at
    assert await store.renew_runtime_leases("runtime-a", [kept, ended]) == {kept}
    after = (await Task.objects.aget(pk=kept)).lease_expires_at
    assert before is not None and after is not None and after >= before
    # Another runtime renews nothing it does not hold.
    assert await store.renew_runtime_leases("runtime-b", [kept]) == set()


async def test_the_keeper_fails_a_task_whose_recording_process_is_gone(database: str) -> None:
    task_id = await new_task()
    assert await store.claim_task(task_id, "runtime-a")
    await Task.objects.filter(pk=task_id).aupdate(state=TaskState.WORKING.value, last_seq=2)
    await ToolCall.objects.acreate(
        task_id=task_id, tool_call_id="c1", name="park", order=0, status="pending"
    )
    await expire(task_id, runtime=True, recorder=True)
    assert await Keeper().reap() == 1
    row = await Task.objects.aget(pk=task_id)
    assert row.state == TaskState.FAILED.value
    assert row.status["message"]["parts"][0]["text"] == RUNTIME_STOPPED
    call = await ToolCall.objects.aget(task_id=task_id)
    assert (call.status, call.error) == ("failed", RUNTIME_STOPPED)
    assert row.failed_tool_count == 1 and row.last_seq == 4
    kinds = [e.kind async for e in TaskEvent.objects.filter(task_id=task_id).order_by("seq")]
    assert kinds == ["artifact", "status"]
    # Done once: a second round finds nothing to do.
    assert await Keeper().reap() == 0


async def test_a_live_runtime_without_its_recorder_is_stopped_with_a_reason(database: str) -> None:
    task_id = await new_task()
    assert await store.claim_task(task_id, "runtime-a")
    await expire(task_id, recorder=True)
    assert await Keeper().reap() == 1
    row = await Task.objects.aget(pk=task_id)
    assert row.state == TaskState.FAILED.value
    assert row.status["message"]["parts"][0]["text"] == RECORDER_STOPPED


async def test_a_task_recorded_by_a_live_process_is_left_to_it(database: str) -> None:
    task_id = await new_task()
    assert await store.claim_task(task_id, "runtime-a")
    await expire(task_id, runtime=True)  # its recorder's lease is fine: that process acts
    before = await Task.objects.aget(pk=task_id)
    assert await Keeper().reap() == 0
    after = await Task.objects.aget(pk=task_id)
    assert (after.state, after.status) == (before.state, before.status)
    assert after.state == TaskState.WORKING.value  # as its claim left it


async def test_a_resumable_task_is_parked_and_adopted_once(database: str) -> None:
    task_id = await new_task()
    assert await store.claim_task(task_id, "runtime-a")
    await Task.objects.filter(pk=task_id).aupdate(
        state=TaskState.INPUT_REQUIRED.value, checkpoint={"step": 2}, pending_request_id="q1"
    )
    await expire(task_id, runtime=True, recorder=True)
    assert await Keeper().reap() == 1
    row = await Task.objects.aget(pk=task_id)
    assert (row.state, row.runtime_id, row.recorder_id) == (TaskState.INPUT_REQUIRED.value, "", "")
    assert row.checkpoint == {"step": 2}
    # Two answers racing: one process takes the recording, as attempt 2.
    assert await store.adopt_parked(task_id, PROCESS_ID) == 2
    assert await store.adopt_parked(task_id, "another:2:def") is None
    assert await Keeper().reap() == 0


async def test_lifecycle_records_carry_the_task_id(
    database: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER_NAME)
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {
            "message": {
                "messageId": uuid.uuid4().hex,
                "role": "ROLE_USER",
                "parts": [{"text": "2+2"}],
            }
        },
    }
    response = await AsyncClient().post(
        "/a2a/",
        data=json.dumps(body),
        content_type="application/json",
        headers={"A2A-Version": "1.0"},
    )
    task_id = response.json()["result"]["task"]["id"]
    records = [r for r in caplog.records if r.name == LOGGER_NAME and r.task_id == task_id]
    events = [r.task_event for r in records]
    assert events == ["accepted", "claimed", "working", "completed"], events
    claimed = records[1]
    assert claimed.runtime_id and claimed.attempt == 1
    done = records[-1]
    assert done.levelno == logging.INFO and done.duration_ms >= 0
    assert f"task {task_id}: completed in " in done.getMessage()
