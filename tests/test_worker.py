"""``manage.py a2a_worker``: real worker processes on the real Redis layer."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
from channels_redis.core import RedisChannelLayer
from django.conf import settings
from django.core.management import CommandError, call_command

from a2a_toolcall.bus import TASK_TOPICS, TOPIC_RESPONSE, TOPIC_TOOLFRAME, Bus
from a2a_toolcall.runtime import build_request
from a2a_toolcall.testing import TaskRecorder, user_message

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def prefix() -> str:
    return f"a2a-worker-{uuid.uuid4().hex[:10]}"


@pytest.fixture
async def bus(prefix: str) -> AsyncIterator[Bus]:
    layer = RedisChannelLayer(hosts=[settings.REDIS_HOST], prefix=prefix, capacity=10_000)
    yield Bus(layer, request_layer=layer)
    await layer.flush()
    await layer.close_pools()


@pytest.fixture
def worker_env(prefix: str, tmp_path: Path) -> dict[str, str]:
    """The workers' settings, with a task store of their own (migrated)."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "A2A_TEST_REDIS_PREFIX": prefix,
        "A2A_TEST_DB": "sqlite",
        "A2A_TEST_SQLITE": str(tmp_path / "worker.sqlite3"),
        "PYTHONUNBUFFERED": "1",
    }
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    return env


@pytest.fixture
def submitted(worker_env: dict[str, str]) -> Callable[..., None]:
    """Store submitted tasks with the given ids, as the server does before it sends their work
    (a runtime runs only a task it claims in the store)."""

    def store(*cids: str) -> None:
        code = (
            "from a2a_toolcall.models import Task\n"
            f"for cid in {list(cids)!r}:\n"
            "    Task.objects.create(id=cid, context_id=cid, agent='x', "
            "state='TASK_STATE_SUBMITTED', status={'state': 'TASK_STATE_SUBMITTED'})\n"
        )
        subprocess.run(
            [sys.executable, "manage.py", "shell", "-v0", "-c", code],
            cwd=ROOT,
            env=worker_env,
            check=True,
        )

    return store


@pytest.fixture
def start_worker(worker_env: dict[str, str]) -> Iterator[Callable[..., subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []

    def start(*args: str) -> subprocess.Popen[str]:
        env = worker_env
        process = subprocess.Popen(
            [sys.executable, "manage.py", "a2a_worker", "--layer", "redis", *args],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        started.append(process)
        assert process.stdout is not None
        line = process.stdout.readline()  # blocks until the worker says it is ready
        assert "a2a_worker ready" in line, line + process.stdout.read()
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait(10)
        if process.stdout is not None:
            process.stdout.close()


async def test_a_worker_process_runs_a_request_from_this_process(
    bus: Bus, start_worker: Callable[..., subprocess.Popen[str]], submitted: Callable[..., None]
) -> None:
    worker = start_worker()
    work = build_request(uuid.uuid4().hex, user_message("hello"), agent="echo")
    submitted(work["cid"])
    async with TaskRecorder(bus, work["cid"]) as recorder:
        await bus.send_request(work)
        run = await recorder.wait(20)
    assert run.narration == ["thinking", "echoing"]
    assert run.text == "hello"
    assert run.response["parts"] == [{"data": {"pid": worker.pid}}]  # type: ignore[index]


async def test_two_workers_share_requests_and_each_runs_once(
    bus: Bus, start_worker: Callable[..., subprocess.Popen[str]], submitted: Callable[..., None]
) -> None:
    workers = [start_worker("--concurrency", "1"), start_worker("--concurrency", "1")]
    works = [
        build_request(
            uuid.uuid4().hex, user_message("who"), agent="whoami", metadata={"seconds": 0.2}
        )
        for _ in range(20)
    ]
    submitted(*(w["cid"] for w in works))
    subscriptions = [bus.subscribe(w["cid"], TASK_TOPICS) for w in works]
    for sub in subscriptions:
        await sub.__aenter__()
    try:
        for work in works:
            await bus.send_request(work)
        seen: dict[str, list[str]] = {w["cid"]: [] for w in works}
        pids: dict[str, str] = {}
        async with asyncio.timeout(60):
            for sub, work in zip(subscriptions, works, strict=True):
                while True:
                    envelope = await sub.get()
                    assert envelope is not None and envelope.cid == work["cid"]
                    seen[work["cid"]].append(envelope.topic)
                    if envelope.topic == TOPIC_RESPONSE:
                        pids[work["cid"]] = envelope.payload["text"]
                        break
        # Give a duplicate run time to show itself, then check there was none.
        late = await asyncio.gather(*(sub.get(timeout=0.3) for sub in subscriptions))
        assert late == [None] * len(subscriptions)
    finally:
        for sub in subscriptions:
            await sub.aclose()
    assert all(topics == ["agent.skill.progress", TOPIC_RESPONSE] for topics in seen.values())
    assert set(pids.values()) == {str(w.pid) for w in workers}  # both took a share


async def test_sigterm_without_grace_fails_running_tasks_with_a_reason_and_exits(
    bus: Bus, start_worker: Callable[..., subprocess.Popen[str]], submitted: Callable[..., None]
) -> None:
    worker = start_worker("--grace", "0")
    work = build_request(
        uuid.uuid4().hex, user_message("park"), agent="parked", metadata={"seconds": 60}
    )
    submitted(work["cid"])
    async with TaskRecorder(bus, work["cid"]) as recorder:
        await bus.send_request(work)
        await recorder.wait_for(TOPIC_TOOLFRAME)
        worker.send_signal(signal.SIGTERM)
        run = await recorder.wait(20)
    assert run.response == {"status": "failed", "error": "the worker is shutting down"}
    assert [f.phase for f in run.frames] == ["started", "failed"]
    assert worker.wait(20) == 0
    assert worker.stdout is not None
    output = worker.stdout.read()
    assert "ending 1 running task(s)" in output and "a2a_worker stopped" in output


def test_the_worker_refuses_the_in_memory_layer() -> None:
    with pytest.raises(CommandError, match="InMemoryChannelLayer, which cannot reach"):
        call_command("a2a_worker")


async def test_sigterm_lets_running_tasks_finish_while_another_worker_takes_new_work(
    bus: Bus, start_worker: Callable[..., subprocess.Popen[str]], submitted: Callable[..., None]
) -> None:
    leaving = start_worker("--grace", "20")
    work = build_request(
        uuid.uuid4().hex, user_message("park"), agent="parked", metadata={"seconds": 6}
    )
    submitted(work["cid"])
    async with TaskRecorder(bus, work["cid"]) as recorder:
        await bus.send_request(work)
        await recorder.wait_for(TOPIC_TOOLFRAME)
        # Signalled while its task runs (starting another worker first could outlast the task).
        leaving.send_signal(signal.SIGTERM)
        staying = start_worker()
        # New work meanwhile goes to the worker that stays.
        later = build_request(uuid.uuid4().hex, user_message("who"), agent="whoami")
        submitted(later["cid"])
        async with TaskRecorder(bus, later["cid"]) as other:
            await bus.send_request(later)
            ran = await other.wait(20)
        assert ran.text == str(staying.pid)
        run = await recorder.wait(20)
    assert run.response is not None and run.response["status"] == "completed"
    assert run.text == "woke up"
    assert [f.phase for f in run.frames] == ["started", "completed"]
    assert leaving.wait(20) == 0
    assert leaving.stdout is not None
    output = leaving.stdout.read()
    assert "waiting up to 20 s for 1 running task(s)" in output
    assert "ending 0 running task(s)" in output and "a2a_worker stopped" in output


async def test_a_second_signal_stops_at_once(
    bus: Bus, start_worker: Callable[..., subprocess.Popen[str]], submitted: Callable[..., None]
) -> None:
    worker = start_worker("--grace", "60")
    work = build_request(
        uuid.uuid4().hex, user_message("park"), agent="parked", metadata={"seconds": 60}
    )
    submitted(work["cid"])
    async with TaskRecorder(bus, work["cid"]) as recorder:
        await bus.send_request(work)
        await recorder.wait_for(TOPIC_TOOLFRAME)
        worker.send_signal(signal.SIGTERM)
        assert worker.stdout is not None
        line = await asyncio.to_thread(worker.stdout.readline)
        assert "waiting up to 60 s" in line, line
        worker.send_signal(signal.SIGTERM)
        run = await recorder.wait(10)
    assert run.response == {"status": "failed", "error": "the worker is shutting down"}
    assert worker.wait(20) == 0
