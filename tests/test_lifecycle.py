"""A task's life across processes: leases, retries, resumes from checkpoints, lifecycle logs.

Real servers (daphne, Redis, PostgreSQL, ``a2a_worker`` processes) killed and stopped as an
operator's deploy or a crash would; the agents are in tests/agents.py and
tests/durable_graph.py (a LangGraph graph checkpointed in PostgreSQL).
"""

from __future__ import annotations

import ast
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.live import LiveServer, call, live_server, stream

TOOL_CALLS = "https://proto-labs.ai/a2a/ext/tool-call-v1"
LEASE = 2.0
"""The lease of these servers (A2A_TEST_LEASE): a lost runtime is noticed within about this."""


def message(text: str, **fields: Any) -> dict[str, Any]:
    return {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}], **fields}


def frame(result: dict[str, Any]) -> dict[str, Any] | None:
    update = result.get("artifactUpdate")
    if update is None or update["artifact"].get("name") != "tool-call":
        return None
    return update["artifact"]["parts"][0]["data"]  # type: ignore[no-any-return]


def row(server: LiveServer, task_id: str, *fields: str) -> list[Any]:
    """Columns of the task's row, read with ``manage.py shell``."""
    out = server.manage(
        "shell",
        "-c",
        "from a2a_toolcall.models import Task;"
        f"t = Task.objects.get(pk='{task_id}');"
        f"print(repr([getattr(t, f) for f in {list(fields)!r}]))",
    )
    return ast.literal_eval(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


def holder(server: LiveServer, task_id: str) -> subprocess.Popen[bytes]:
    """The worker process whose runtime holds the task (its runtime id names its pid)."""
    deadline = time.monotonic() + 10
    while True:
        (runtime_id,) = row(server, task_id, "runtime_id")
        if runtime_id:
            pid = int(runtime_id.split(":")[1])
            return next(p for p in server.processes[1:] if p.pid == pid)
        assert time.monotonic() < deadline, "no runtime claimed the task"
        time.sleep(0.1)


def wait_for(server: LiveServer, task_id: str, state: str, seconds: float) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while True:
        task = call(server, "GetTask", {"id": task_id, "historyLength": 50})
        if task["status"]["state"] == state:
            return task
        assert time.monotonic() < deadline, f"still {task['status']['state']}, not {state}"
        time.sleep(0.1)


def site(tmp_path_factory: pytest.TempPathFactory, agent: str) -> Iterator[LiveServer]:
    """Redis + PostgreSQL, two workers, a 2 s lease, serving ``agent``."""
    with live_server(
        "redis",
        tmp_path_factory.mktemp(agent),
        workers=2,
        A2A_TEST_LEASE=str(LEASE),
        A2A_TEST_AGENT=agent,
    ) as running:
        yield running


@pytest.fixture(scope="module")
def retrying(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    yield from site(tmp_path_factory, "retrying")


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    yield from site(tmp_path_factory, "durable_graph")


@pytest.fixture(scope="module")
def resumable(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    yield from site(tmp_path_factory, "resumable")


@pytest.fixture(scope="module")
def parked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    yield from site(tmp_path_factory, "parked")


def replace_worker(server: LiveServer, gone: subprocess.Popen[bytes]) -> None:
    gone.wait(30)
    server.processes.remove(gone)
    server.start_worker()


def test_a_retry_safe_agent_runs_again_on_another_worker(retrying: LiveServer) -> None:
    server = retrying
    results: list[dict[str, Any]] = []
    killed_at = None
    params = {"message": message("look it up"), "metadata": {"seconds": 60}}
    for result in stream(server, params):
        results.append(result)
        data = frame(result)
        if data is not None and data["phase"] == "started" and killed_at is None:
            task_id = results[0]["task"]["id"]
            holder(server, task_id).kill()  # SIGKILL mid-tool
            killed_at = time.monotonic()
    assert killed_at is not None
    took = time.monotonic() - killed_at
    assert took < LEASE + 5, f"the retry finished {took:.1f} s after the kill"
    frames = [(f["name"], f["phase"], f.get("error")) for f in map(frame, results) if f]
    assert frames == [
        ("lookup", "started", None),
        ("lookup", "failed", "the worker running it stopped"),
        ("lookup", "started", None),
        ("lookup", "completed", None),
    ]
    texts = [
        p.get("text")
        for r in results
        if "statusUpdate" in r and r["statusUpdate"]["status"].get("message")
        for p in r["statusUpdate"]["status"]["message"]["parts"]
    ]
    assert "the worker running it stopped; running it again (attempt 2 of 2)" in texts
    final = results[-1]["statusUpdate"]["status"]
    assert final["state"] == "TASK_STATE_COMPLETED"
    task = call(server, "GetTask", {"id": task_id})
    assert task["artifacts"][0]["parts"][0]["text"] == "looked up on attempt 2"
    summary = task["metadata"][TOOL_CALLS]["toolCalls"]
    assert [c["state"] for c in summary] == ["failed", "completed"]
    assert row(server, task_id, "attempt", "failed_tool_count", "tool_call_count") == [2, 1, 2]
    replace_worker(server, next(p for p in server.processes[1:] if p.poll() is not None))


def test_a_checkpointed_langgraph_task_resumes_on_another_worker_after_a_deploy(
    graph: LiveServer,
) -> None:
    server = graph
    params = {"message": message("plan my trip")}
    results = list(stream(server, params))
    task_id = results[0]["task"]["id"]
    assert results[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    asked = holder(server, task_id)
    asked.send_signal(signal.SIGTERM)  # a deploy: warm shutdown
    assert asked.wait(15) == 0
    # Parked: no runtime and no recorder hold it; it waits for its answer in the database.
    assert row(server, task_id, "state", "runtime_id", "recorder_id") == [
        "TASK_STATE_INPUT_REQUIRED",
        "",
        "",
    ]
    server.processes.remove(asked)
    answer = message("Paris", taskId=task_id)
    resumed = list(stream(server, {"message": answer}))
    final = resumed[-1]["statusUpdate"]["status"]
    assert final["state"] == "TASK_STATE_COMPLETED", resumed
    task = call(server, "GetTask", {"id": task_id, "historyLength": 50})
    assert task["artifacts"][0]["parts"][0]["text"] == "sunny in Oslo; next: Paris"
    # The tool ran once, before the question: the resume did not run it again.
    frames = [(f["name"], f["phase"]) for f in map(frame, results + resumed) if f]
    assert frames == [("forecast", "started"), ("forecast", "completed")]
    assert row(server, task_id, "attempt", "tool_call_count") == [2, 1]
    server.start_worker()


def test_a_plain_agent_with_a_checkpoint_survives_a_killed_worker(resumable: LiveServer) -> None:
    server = resumable
    params = {"message": message("forecast")}
    results = list(stream(server, params))
    task_id = results[0]["task"]["id"]
    assert results[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    killed = holder(server, task_id)
    killed.kill()
    deadline = time.monotonic() + LEASE + 5
    while row(server, task_id, "runtime_id", "recorder_id") != ["", ""]:
        assert time.monotonic() < deadline, "the task was not parked"
        time.sleep(0.2)
    assert call(server, "GetTask", {"id": task_id})["status"]["state"] == (
        "TASK_STATE_INPUT_REQUIRED"
    )
    reply = call(server, "SendMessage", {"message": message("Rome", taskId=task_id)})
    assert reply["task"]["status"]["state"] == "TASK_STATE_COMPLETED", reply
    text = reply["task"]["artifacts"][0]["parts"][0]["text"]
    assert text == "sunny in Oslo; next: Rome (attempt 2)"
    replace_worker(server, killed)


def test_a_cancel_mid_task_stops_the_agent_at_once(parked: LiveServer) -> None:
    server = parked
    params = {"message": message("park"), "metadata": {"seconds": 60}}
    for result in stream(server, params):
        data = frame(result)
        if data is not None and data["phase"] == "started":
            task_id = result["artifactUpdate"]["taskId"]
            started = time.monotonic()
            canceled = call(server, "CancelTask", {"id": task_id})
            took = time.monotonic() - started
            break
    # docs/deployment.md: the agent is stopped where it is within one bus round trip, and
    # CancelTask answers once the runtime confirmed it (at most CANCEL_WAIT).
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    assert took < 1.0, f"CancelTask took {took:.2f} s"
    calls = canceled["metadata"][TOOL_CALLS]["toolCalls"]
    assert [(c["name"], c["state"], c["error"]) for c in calls] == [("park", "failed", "cancelled")]


def test_the_web_process_gone_a_task_its_worker_runs_ends_with_a_reason(
    parked: LiveServer,
) -> None:
    server = parked
    params = {"message": message("park"), "metadata": {"seconds": 60}}
    for result in stream(server, params):
        data = frame(result)
        if data is not None and data["phase"] == "started":
            task_id = result["artifactUpdate"]["taskId"]
            break
    time.sleep(0.5)  # the started call reaches the database (the recorder writes in batches)
    worker = holder(server, task_id)
    server.kill_and_restart_web()
    task = wait_for(server, task_id, "TASK_STATE_FAILED", LEASE * 2 + 5)
    reason = "the server process recording it stopped"
    assert task["status"]["message"]["parts"][0]["text"] == reason
    calls = task["metadata"][TOOL_CALLS]["toolCalls"]
    assert [(c["name"], c["state"], c["error"]) for c in calls] == [("park", "failed", reason)]
    # Its worker lives on and takes new work.
    assert worker.poll() is None
    reply = call(server, "SendMessage", {"message": message("park"), "metadata": {"seconds": 0.1}})
    assert reply["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.fixture
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """The embedded default (one process, SQLite, in-memory layer), a 2 s lease."""
    with live_server(
        "memory",
        tmp_path_factory.mktemp("embedded"),
        A2A_TEST_LEASE=str(LEASE),
        A2A_TEST_AGENT="resumable",
    ) as running:
        yield running


def test_a_parked_task_survives_a_restart_of_the_only_process(embedded: LiveServer) -> None:
    server = embedded
    params = {"message": message("forecast")}
    results = list(stream(server, params))
    task_id = results[0]["task"]["id"]
    assert results[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    time.sleep(0.3)
    server.kill_and_restart_web()
    reply = call(server, "SendMessage", {"message": message("Rome", taskId=task_id)})
    assert reply["task"]["status"]["state"] == "TASK_STATE_COMPLETED", reply
    assert reply["task"]["artifacts"][0]["parts"][0]["text"] == (
        "sunny in Oslo; next: Rome (attempt 2)"
    )
