"""A burst of streams opened at once: every one opens, and the server's threads stay a pool.

Real servers as deployed (daphne serving ``project.asgi``, which wraps Django in
``a2a_toolcall.asgi.SharedThreads``, with a listen backlog for bursts; uvicorn), on SQLite with
the in-memory layer and on PostgreSQL with Redis and worker processes. A few hundred
``bench hold`` streams are sent together; each must carry its task, its tool call started and
completed, and COMPLETED. While they open, the web process's OS threads are sampled: a thread
per request (Django's own way under ASGI) would add hundreds; the pool adds at most
``SYNC_THREADS`` plus the event loop's default executor. The web process starts with a soft
limit of open files below the burst's streams (as 1,024 is to a burst of more), which the app
raises to the hard limit. No timing is asserted.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from a2a_toolcall.contract import (
    TOOL_CALL_V1_URI,
    ToolCallCompleted,
    ToolCallStarted,
    parse_tool_call,
)
from a2a_toolcall.protocol.sse import SSEDecoder
from tests.live import LiveServer, live_server

STREAMS = 300
OPEN_FILES = 256
SYNC_THREADS = 4
DEFAULT_EXECUTOR = min(32, (os.cpu_count() or 1) + 4)
"""asyncio's default executor (``thread_sensitive=False`` calls), a fixed pool too."""


def threads(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    raise AssertionError("no Threads: line")


class Peak:
    """The most threads a process had, sampled every few milliseconds while in use."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = threads(pid)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, threads(self.pid))
            time.sleep(0.003)

    def __enter__(self) -> Peak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def request(text: str) -> bytes:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "SendStreamingMessage",
            "params": {
                "message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": text}]}
            },
        }
    ).encode()


HEADERS = {
    "A2A-Version": "1.0",
    "Content-Type": "application/json",
    "A2A-Extensions": TOOL_CALL_V1_URI,
}


async def read_stream(client: httpx.AsyncClient, url: str, text: str) -> list[dict[str, Any]]:
    """The results of one stream, to its end."""
    decoder = SSEDecoder()
    results: list[dict[str, Any]] = []
    async with client.stream("POST", url, content=request(text), headers=HEADERS) as response:
        assert response.status_code == 200
        async for chunk in response.aiter_bytes():
            results.extend(event.json()["result"] for event in decoder.feed(chunk))
    return results


def check_stream(results: list[dict[str, Any]]) -> None:
    """The task, its one call started then completed, COMPLETED last."""
    assert "task" in results[0], results[:1]
    task_id = results[0]["task"]["id"]
    updates = [r["artifactUpdate"] for r in results if "artifactUpdate" in r]
    frames = [parse_tool_call(update["artifact"]["parts"]) for update in updates]
    frames = [frame for frame in frames if frame is not None]  # the answer is an artifact too
    assert [type(f) for f in frames] == [ToolCallStarted, ToolCallCompleted], frames
    assert {f.tool_call_id for f in frames} == {f"{task_id}:0"}
    last = results[-1]["statusUpdate"]
    assert last["taskId"] == task_id
    assert last["status"]["state"] == "TASK_STATE_COMPLETED"


async def burst(server: LiveServer, streams: int, hold: float) -> list[Any]:
    limits = httpx.Limits(max_connections=streams + 8, max_keepalive_connections=streams + 8)
    async with httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(120, pool=120)) as client:
        return await asyncio.gather(
            *(read_stream(client, server.endpoint, f"bench hold={hold:g}") for _ in range(streams)),
            return_exceptions=True,
        )


@pytest.mark.parametrize(
    ("config", "http"),
    [("memory", "daphne"), ("memory", "uvicorn"), ("redis", "daphne")],
)
def test_a_burst_of_streams_all_open_on_a_fixed_pool_of_threads(
    tmp_path: Path, config: str, http: str
) -> None:
    with live_server(
        config,
        tmp_path,
        http=http,
        A2A_TEST_AGENT="bench",
        A2A_TEST_SYNC_THREADS=str(SYNC_THREADS),
        A2A_TEST_WORKER_CONCURRENCY=str(STREAMS * 2),
        # Fewer open files than the burst has streams, as a soft limit of 1,024 is to a burst
        # of more than a thousand: the app raises it to the hard limit (a2a_toolcall.limits).
        open_files=OPEN_FILES,
    ) as server:
        pid = server.processes[0].pid
        # One stream first, so the process has made what it makes once.
        for result in asyncio.run(burst(server, 1, 0)):
            check_stream(result)
        before = threads(pid)
        with Peak(pid) as peak:
            results = asyncio.run(burst(server, STREAMS, 2))
        failed = [r for r in results if isinstance(r, BaseException)]
        assert not failed, f"{len(failed)} of {STREAMS} streams failed: {failed[:3]!r}"
        for result in results:
            check_stream(result)
        assert peak.peak <= before + SYNC_THREADS + DEFAULT_EXECUTOR, (
            f"{peak.peak} threads during the burst, {before} before it"
        )
        for log_file in server.log_files:  # the web process's, each worker's
            log = log_file.read_text()
            assert "Traceback" not in log, log[log.index("Traceback") - 500 :][:4000]
