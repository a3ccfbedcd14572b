"""The sweep of an earlier run's orphans (the embedded default: one process, agents in it) does
not hold up new work: a restart that left many tasks running meets the first burst of new
messages at once, while requests about existing tasks still see the orphans failed.

The sweep is held back by a gate in front of the real one (as a restart that left hundreds of
tasks behind holds it for seconds), on SQLite and PostgreSQL, through the endpoint.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.test import AsyncClient

from a2a_toolcall import service, store
from a2a_toolcall.models import Task
from a2a_toolcall.protocol.models import Message, Part, Role, TaskState, TaskStatus
from a2a_toolcall.recorder import PROCESS_STARTED, SERVER_RESTARTED
from a2a_toolcall.views import _starts_new_task
from tests.conftest import BOTH_DATABASES

pytestmark = [
    pytest.mark.django_db(transaction=True, databases=BOTH_DATABASES),
    pytest.mark.usefixtures("stop_in_process_runtime"),
]


async def orphan() -> str:
    """A task an earlier run of this process left working."""
    task_id = str(uuid.uuid4())
    message = Message(message_id=uuid.uuid4().hex, role=Role.USER, parts=[Part(text="hi")])
    await store.create_task(
        task_id=task_id,
        context_id=str(uuid.uuid4()),
        agent="demo",
        message=message,
        metadata={},
        status=TaskStatus(state=TaskState.WORKING),
        recorder_id="web:1:earlier",
    )
    await Task.objects.filter(pk=task_id).aupdate(
        state=TaskState.WORKING.value, created_at=PROCESS_STARTED - timedelta(minutes=1)
    )
    return task_id


async def post(method: str, params: dict[str, Any]) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    response = await AsyncClient().post(
        "/a2a/",
        data=json.dumps(body),
        content_type="application/json",
        headers={"A2A-Version": "1.0"},
    )
    result: dict[str, Any] = response.json()
    return result


def text(value: str, **fields: Any) -> dict[str, Any]:
    return {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": value}]} | fields


async def test_new_work_goes_on_while_the_orphans_are_swept_and_reads_wait_for_them(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    left = await orphan()
    gate = asyncio.Event()
    sweeps = 0
    real = service.fail_orphaned_tasks

    async def held_back(reason: str = SERVER_RESTARTED) -> int:
        nonlocal sweeps
        sweeps += 1
        await gate.wait()
        return await real(reason)

    monkeypatch.setattr(service, "fail_orphaned_tasks", held_back)
    monkeypatch.setattr(service, "_sweep", None)  # this process has served nothing yet
    monkeypatch.setattr(service, "_swept", False)

    # The first request starts a new task: it is answered while the sweep is held back.
    reply = await asyncio.wait_for(post("SendMessage", {"message": text("2+2")}), 15)
    assert reply["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", reply
    assert sweeps == 1 and not service._swept

    # Reading the orphan, and answering it, wait for the sweep; then tell it failed.
    read = asyncio.ensure_future(post("GetTask", {"id": left}))
    answer = asyncio.ensure_future(post("SendMessage", {"message": text("go on", taskId=left)}))
    await asyncio.sleep(0.3)
    assert not read.done() and not answer.done()
    gate.set()
    task = (await asyncio.wait_for(read, 30))["result"]
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    assert task["status"]["message"]["parts"][0]["text"] == SERVER_RESTARTED
    refused = await asyncio.wait_for(answer, 30)
    assert "error" in refused, refused  # a failed task takes no more messages
    assert service._swept and sweeps == 1

    # Once swept, no request sweeps again.
    await post("GetTask", {"id": left})
    assert sweeps == 1


async def test_a_sweep_that_fails_is_tried_again_by_a_later_request(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    left = await orphan()
    real = service.fail_orphaned_tasks
    attempts = 0

    async def flaky(reason: str = SERVER_RESTARTED) -> int:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            raise ConnectionError("the database went away")
        return await real(reason)

    monkeypatch.setattr(service, "fail_orphaned_tasks", flaky)
    monkeypatch.setattr(service, "_sweep", None)
    monkeypatch.setattr(service, "_swept", False)
    # The first read is answered (the orphan still working: the sweep could not run) ...
    first = await post("GetTask", {"id": left})
    assert first["result"]["status"]["state"] == "TASK_STATE_WORKING"
    assert attempts == 1 and not service._swept
    # ... and the next request sweeps again.
    second = await post("GetTask", {"id": left})
    assert second["result"]["status"]["state"] == "TASK_STATE_FAILED"
    assert attempts == 2 and service._swept


def test_which_calls_start_a_new_task() -> None:
    message = text("hi")
    assert _starts_new_task("SendMessage", {"message": message})
    assert _starts_new_task("SendStreamingMessage", {"message": message})
    assert _starts_new_task("SendMessage", {"message": message | {"taskId": ""}})  # as send()
    # A message to an existing task, any other method, or params the call will refuse anyway.
    assert not _starts_new_task("SendMessage", {"message": message | {"taskId": "t"}})
    assert not _starts_new_task("GetTask", {"id": "t"})
    assert not _starts_new_task("SendMessage", {"message": "hi"})
    assert not _starts_new_task("SendMessage", [])
