"""The benchmark keeps working: its load verifies what it measures, and a smoke run of every target.

The figures themselves come from ``python -m bench.run`` (docs/benchmarks.md), never from a test.
"""

from __future__ import annotations

import gc
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench import raw_asgi
from bench.load import LoadError, collector_held, run_load
from project.bench_agent import parse

ROOT = Path(__file__).resolve().parent.parent
Send = Callable[[dict[str, Any]], Any]


def test_the_client_holds_its_collector_off_while_it_measures() -> None:
    assert gc.isenabled()
    with collector_held():
        assert not gc.isenabled()
    assert gc.isenabled()
    # A process that keeps its collector off keeps it off.
    gc.disable()
    try:
        with collector_held():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_workload_is_parsed_exactly() -> None:
    assert parse("bench k=50 pad=200") == (50, 200, None)
    assert parse(" bench hold=1.5 ") == (1, 0, 1.5)
    for wrong in ("bench", "bench k=1", "bench k=x pad=1", "benchmark k=1 pad=1", "hello"):
        with pytest.raises(Exception, match="not a benchmark request"):
            parse(wrong)


def tampered(change: Callable[[bytes, int], bytes | None]) -> Any:
    """The raw ASGI app with each SSE event body passed through ``change(body, index)``."""

    async def app(scope: dict[str, Any], receive: Any, send: Send) -> None:
        count = 0

        async def edited(message: dict[str, Any]) -> None:
            nonlocal count
            if message["type"] == "http.response.body" and message.get("body"):
                body = change(message["body"], count)
                count += 1
                if body is None:
                    return
                message = {**message, "body": body}
            await send(message)

        await raw_asgi.app(scope, receive, edited)

    return app


async def load(app: Any, **kwargs: Any) -> Any:
    transport = httpx.ASGITransport(app=app)
    return await run_load(
        "http://bench/a2a/", concurrency=2, tasks=4, k=3, pad=8, transport=transport, **kwargs
    )


async def test_the_load_measures_a_correct_server() -> None:
    result = await load(raw_asgi.app)
    assert result.frames == 4 * 6 and len(result.streams) == 4
    figures = result.figures()
    assert figures["frames_per_s"] > 0 and figures["emit_to_receive_p99_ms"] >= 0


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        # The Task, WORKING, thinking, then frames from index 3: drop a completed frame.
        (lambda body, i: None if i == 4 else body, "frames"),
        # Send a started frame twice.
        (lambda body, i: body + body if i == 3 else body, "started twice"),
        # A frame that names another task.
        (
            lambda body, i: (
                body.replace(b'"toolCallId":"', b'"toolCallId":"other-', 1) if i == 5 else body
            ),
            "another task",
        ),
        # The task fails instead of completing.
        (
            lambda body, i: body.replace(b"TASK_STATE_COMPLETED", b"TASK_STATE_FAILED"),
            "not COMPLETED",
        ),
    ],
)
async def test_the_load_fails_a_stream_that_breaks_the_workload(
    change: Callable[[bytes, int], bytes | None], problem: str
) -> None:
    with pytest.raises(LoadError, match=problem):
        await load(tampered(change))


def test_a_smoke_run_of_every_target(tmp_path: Path) -> None:
    # Every server the benchmark compares starts, serves the verified load and is measured;
    # the report is written. Tiny figures, for keeping the benchmark working only.
    out = tmp_path / "benchmarks"
    result = subprocess.run(
        [sys.executable, "-m", "bench.run", "--smoke", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads(out.with_suffix(".json").read_text())
    names = [
        "app-daphne",
        "app-uvicorn",
        "app-daphne-norec",
        "app-uvicorn-unpaced",
        "app-uvicorn-pg",
        "app-redis-pg",
        "sdk",
        "raw",
    ]
    assert list(report["targets"]) == names
    for name in names:
        figures = report["targets"][name]
        assert figures["load"]["frames"]["median"] == 4 * 2 * 3
        assert figures["load"]["cpu_ms_per_1000_frames"]["median"] >= 0
        assert figures["hold"][0]["streams"] == 5
    table = out.with_suffix(".md").read_text()
    assert "| a2a-toolcall, uvicorn |" in table and "| raw ASGI ceiling, uvicorn |" in table


def test_the_floor_measures_every_target(tmp_path: Path) -> None:
    # bench.floor times first events and holds streams on the app, on a plain Django streaming
    # response of the same site and on the raw ceiling, and counts what the streams hold from
    # the servers' own censuses.
    out = tmp_path / "floor.json"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.floor",
            "--streams",
            "30",
            "--objects",
            "5",
            "--c1",
            "5",
            "--json",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    figures = {r["target"]: r for r in json.loads(out.read_text())}
    assert list(figures) == ["app", "floor", "raw"]
    for r in figures.values():
        assert r["held"] == 30 and not r["failures"]
        assert r["threads_added"] <= 0  # no thread per stream
        assert 0 < r["first_event_c1_p50_ms"] < 1000
    # The census sees what each holds: the app runs an agent, a recorder and a stream per task
    # (tasks of its own beyond the request's), the floor only Django's request and response.
    assert figures["app"]["tasks_per_stream"] > figures["floor"]["tasks_per_stream"] >= 1
    assert any("bench_agent" in kind for kind in figures["app"]["kinds"])
    assert not any("bench_agent" in kind for kind in figures["floor"]["kinds"])
    assert re.search(r"^\| app \| [0-9.]+ \| 30/30 \|", result.stdout, re.M)
    assert re.search(r"^\| floor \| [0-9.]+ \| 30/30 \|", result.stdout, re.M)
