"""A task is started only by a runtime that claims it in the database: a cancel before pickup
wins for good, and a task no runtime has picked up is told as submitted.

Redis + PostgreSQL with no worker at first (the work waits on the Redis channel), then a worker
started as an operator would; the agent's tool counts its calls in Redis.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.agents import COUNTER_KEY
from tests.live import LiveServer, call, live_server, stream


@pytest.fixture(scope="module")
def idle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A site whose work goes to worker processes, none of them running yet."""
    with live_server(
        "redis", tmp_path_factory.mktemp("claims"), workers=0, A2A_TEST_AGENT="charging"
    ) as running:
        yield running


def submit(server: LiveServer) -> str:
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": "pay"}]}
    result = call(
        server, "SendMessage", {"message": message, "configuration": {"returnImmediately": True}}
    )
    return str(result["task"]["id"])


def charges(task_id: str) -> int:
    with redis.Redis(host="127.0.0.1", port=6379) as client:
        return int(client.get(COUNTER_KEY.format(task_id=task_id)) or 0)


def test_a_cancel_before_pickup_wins_and_no_worker_ever_starts_the_task(
    idle: LiveServer,
) -> None:
    canceled, waiting = submit(idle), submit(idle)
    # No runtime has claimed either: both are submitted, to every client.
    for task_id in (canceled, waiting):
        assert call(idle, "GetTask", {"id": task_id})["status"]["state"] == "TASK_STATE_SUBMITTED"
    started = time.monotonic()
    result = call(idle, "CancelTask", {"id": canceled})
    took = time.monotonic() - started
    assert result["status"]["state"] == "TASK_STATE_CANCELED"
    assert took < 2.0, f"the cancel took {took:.2f} s"

    # A worker that starts now takes both work requests off the channel: it runs the one that
    # is still submitted and never starts the canceled one.
    idle.start_worker()
    deadline = time.monotonic() + 30
    while call(idle, "GetTask", {"id": waiting})["status"]["state"] != "TASK_STATE_COMPLETED":
        assert time.monotonic() < deadline, "the waiting task did not complete"
        time.sleep(0.2)
    assert charges(waiting) == 1
    assert charges(canceled) == 0
    task = call(idle, "GetTask", {"id": canceled, "historyLength": 10})
    assert task["status"]["state"] == "TASK_STATE_CANCELED"
    assert not task.get("artifacts")
    # It never was WORKING: its log has the snapshot and the cancel, nothing from a runtime.
    events = idle.manage(
        "shell",
        "-c",
        "from a2a_toolcall.models import TaskEvent;"
        f"print([e.state for e in TaskEvent.objects.filter(task_id='{canceled}')])",
    )
    assert events.strip().splitlines()[-1] == "['TASK_STATE_SUBMITTED', 'TASK_STATE_CANCELED']"


def stream_events(server: LiveServer, text: str, metadata: dict[str, Any]) -> Iterator[Any]:
    """The results of a SendStreamingMessage of ``text``, as they arrive."""
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}]}
    return stream(server, {"message": message, "metadata": metadata})


@pytest.fixture(scope="module")
def quick_to_notice(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """One worker; a 3 s lease (the silence of a runtime counts after the default 30 s)."""
    with live_server(
        "redis",
        tmp_path_factory.mktemp("killed"),
        workers=1,
        A2A_TEST_AGENT="parked",
        A2A_TEST_LEASE="3",
    ) as running:
        yield running


def test_a_killed_worker_leaves_no_call_open(quick_to_notice: LiveServer) -> None:
    server = quick_to_notice
    worker = server.processes[1]
    results = []
    started = None
    for result in stream_events(server, "park", {"seconds": 60}):
        results.append(result)
        frame = result.get("artifactUpdate", {}).get("artifact", {}).get("parts", [{}])[0]
        if frame.get("data", {}).get("phase") == "started" and started is None:
            started = time.monotonic()
            worker.kill()  # SIGKILL: no goodbye
    assert started is not None
    took = time.monotonic() - started
    # The lease runs out within 3 s of the kill; the web process's keeper checks every 0.75 s.
    assert took < 3 + 2, f"the stream ended {took:.1f} s after the kill"
    frames = [
        r["artifactUpdate"]["artifact"]["parts"][0]["data"]
        for r in results
        if "artifactUpdate" in r and r["artifactUpdate"]["artifact"]["name"] == "tool-call"
    ]
    assert [(f["name"], f["phase"]) for f in frames] == [("park", "started"), ("park", "failed")]
    assert frames[1]["error"] == "the worker running it stopped"
    final = results[-1]["statusUpdate"]["status"]
    assert final["state"] == "TASK_STATE_FAILED"
    task_id = results[0]["task"]["id"]
    task = call(server, "GetTask", {"id": task_id})
    (summary,) = task["metadata"]["https://proto-labs.ai/a2a/ext/tool-call-v1"]["toolCalls"]
    assert (summary["state"], summary["error"]) == ("failed", "the worker running it stopped")
    rows = server.manage(
        "shell",
        "-c",
        "from a2a_toolcall.models import Task;"
        f"t = Task.objects.get(pk='{task_id}');"
        "print([(c.status, c.error) for c in t.tool_calls.all()], t.failed_tool_count)",
    )
    assert rows.strip().splitlines()[-1] == "[('failed', 'the worker running it stopped')] 1"
    log = server.log_files[0].read_text()
    assert "WARNING" in log and f"task {task_id}: failed" in log


@pytest.fixture
def embedded(tmp_path: Path) -> Iterator[LiveServer]:
    """The embedded default: one process, agents in it, the in-memory layer, SQLite."""
    with live_server("memory", tmp_path) as running:
        yield running


def test_a_restart_of_the_web_process_fails_what_it_was_running(embedded: LiveServer) -> None:
    server = embedded
    task_id = None
    for result in stream_events(server, "what is 6*7 and wait 30", {}):
        if "task" in result:
            task_id = result["task"]["id"]
        frame = result.get("artifactUpdate", {}).get("artifact", {}).get("parts", [{}])[0]
        if frame.get("data", {}).get("name") == "slow":
            break
    assert task_id is not None
    time.sleep(1)  # the recorder writes in batches: let the started call reach the database
    server.kill_and_restart_web()
    task = call(server, "GetTask", {"id": task_id})
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    reason = "the server restarted while the task ran"
    assert task["status"]["message"]["parts"][0]["text"] == reason
    calls = task["metadata"]["https://proto-labs.ai/a2a/ext/tool-call-v1"]["toolCalls"]
    assert [(c["name"], c["state"]) for c in calls] == [
        ("calculator", "completed"),
        ("slow", "failed"),
    ]
    assert calls[1]["error"] == reason
    # The log tells it too: a failed frame for the open call, then the terminal status.
    events = server.manage(
        "shell",
        "-c",
        "from a2a_toolcall.models import TaskEvent;"
        f"print([e.kind + ':' + e.state for e in TaskEvent.objects.filter(task_id='{task_id}')]"
        "[-2:])",
    )
    assert events.strip().splitlines()[-1] == "['artifact:', 'status:TASK_STATE_FAILED']"
    log = server.log_files[0].read_text()
    assert f"task {task_id}: failed in " in log
    assert "the server restarted while the task ran (1 open tool call closed as failed)" in log
