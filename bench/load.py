"""The load generator: C concurrent A2A streams over N tasks, every stream verified.

Works against any A2A 1.0 JSON-RPC endpoint that serves the benchmark workload
(``bench k=<K> pad=<P>``, see project/bench_agent.py). Each stream is checked while it is
measured: the Task comes first; exactly 2K tool-call-v1 frames, every ``started`` completed
exactly once, every ``toolCallId`` and every event of this task; the last state COMPLETED. Any
violation fails the run (``LoadError``).

    python -m bench.load http://127.0.0.1:8000/a2a/ --concurrency 32 --tasks 200 -k 50 --pad 200
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import uuid
from dataclasses import dataclass, field

import httpx
from pydantic_core import from_json

from a2a_toolcall.contract import TOOL_CALL_V1_MIME_TYPE
from a2a_toolcall.protocol.sse import SSEDecoder

HEADERS = {"Content-Type": "application/json", "A2A-Version": "1.0", "Accept": "text/event-stream"}


class LoadError(AssertionError):
    """A stream broke the workload's contract: the run's figures mean nothing."""


@dataclass
class StreamStats:
    """One verified stream."""

    task_id: str
    first_event_ms: float
    task_ms: float
    frames: int
    emit_to_receive_ms: list[float]


@dataclass
class LoadResult:
    """A whole run: the streams and the wall time they took."""

    concurrency: int
    tasks: int
    k: int
    pad: int
    wall_s: float
    streams: list[StreamStats] = field(default_factory=list)

    @property
    def frames(self) -> int:
        return sum(s.frames for s in self.streams)

    def figures(self) -> dict[str, float]:
        """Throughput and latency percentiles of the run."""
        first = [s.first_event_ms for s in self.streams]
        whole = [s.task_ms for s in self.streams]
        lag = [ms for s in self.streams for ms in s.emit_to_receive_ms]
        return {
            "frames_per_s": self.frames / self.wall_s,
            "tasks_per_s": len(self.streams) / self.wall_s,
            "first_event_p50_ms": percentile(first, 50),
            "first_event_p99_ms": percentile(first, 99),
            "task_p50_ms": percentile(whole, 50),
            "task_p99_ms": percentile(whole, 99),
            "emit_to_receive_p50_ms": percentile(lag, 50),
            "emit_to_receive_p99_ms": percentile(lag, 99),
        }


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (nearest rank on sorted values); NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


def request_body(text: str) -> bytes:
    """A SendStreamingMessage request for ``text`` (a fresh messageId)."""
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "SendStreamingMessage",
            "params": {
                "message": {
                    "messageId": uuid.uuid4().hex,
                    "role": "ROLE_USER",
                    "parts": [{"text": text}],
                }
            },
        }
    ).encode()


async def stream_task(http: httpx.AsyncClient, endpoint: str, k: int, pad: int) -> StreamStats:
    """Run one task over SSE and verify it; raise ``LoadError`` on any violation."""
    body = request_body(f"bench k={k} pad={pad}")
    decoder = SSEDecoder()
    task_id: str | None = None
    first_event: float | None = None
    started: set[int] = set()
    completed: set[int] = set()
    lags: list[float] = []
    final: str | None = None
    frames = 0
    begin = time.perf_counter()
    async with http.stream("POST", endpoint, content=body, headers=HEADERS) as response:
        if response.status_code != 200:
            raise LoadError(f"HTTP {response.status_code}: {(await response.aread())[:200]!r}")
        async for chunk in response.aiter_bytes():
            received = time.time()
            for event in decoder.feed(chunk):
                if first_event is None:
                    first_event = time.perf_counter()
                message = from_json(event.data)
                if "error" in message:
                    raise LoadError(f"JSON-RPC error in the stream: {message['error']}")
                result = message["result"]
                if task_id is None:
                    if "task" not in result:
                        raise LoadError(f"the first event is not the Task: {event.data[:200]}")
                    task_id = result["task"]["id"]
                    continue
                if final is not None:
                    raise LoadError(f"task {task_id}: an event after the terminal state")
                update = result.get("artifactUpdate") or result.get("statusUpdate")
                if update is None or update.get("taskId") != task_id:
                    raise LoadError(f"task {task_id}: an event of another task: {event.data[:200]}")
                if "statusUpdate" in result:
                    state = update["status"]["state"]
                    if state in (
                        "TASK_STATE_COMPLETED",
                        "TASK_STATE_FAILED",
                        "TASK_STATE_CANCELED",
                        "TASK_STATE_REJECTED",
                    ):
                        final = state
                    continue
                for part in update["artifact"].get("parts", []):
                    if (part.get("metadata") or {}).get("mimeType") != TOOL_CALL_V1_MIME_TYPE:
                        continue
                    frame = part["data"]
                    frames += 1
                    prefix, _, index = frame["toolCallId"].rpartition(":")
                    if prefix != task_id:
                        raise LoadError(f"task {task_id}: a frame of another task: {frame}")
                    i = int(index)
                    if frame["phase"] == "started":
                        if i in started:
                            raise LoadError(f"task {task_id}: call {i} started twice")
                        started.add(i)
                        payload = frame["args"]
                    elif frame["phase"] == "completed":
                        if i not in started or i in completed:
                            raise LoadError(f"task {task_id}: call {i} completed out of turn")
                        completed.add(i)
                        payload = frame["result"]
                    else:
                        raise LoadError(f"task {task_id}: unexpected frame {frame}")
                    lags.append((received - float(payload["t_emit"])) * 1000)
    end = time.perf_counter()
    if task_id is None or first_event is None:
        raise LoadError("the stream ended before the Task")
    if final != "TASK_STATE_COMPLETED":
        raise LoadError(f"task {task_id}: ended in {final}, not COMPLETED")
    if frames != 2 * k or len(started) != k or started != completed:
        raise LoadError(
            f"task {task_id}: {frames} frames, {len(started)} started, {len(completed)} completed;"
            f" expected {2 * k} frames for k={k}"
        )
    return StreamStats(
        task_id=task_id,
        first_event_ms=(first_event - begin) * 1000,
        task_ms=(end - begin) * 1000,
        frames=frames,
        emit_to_receive_ms=lags,
    )


def client(
    concurrency: int, timeout: float = 120.0, transport: httpx.AsyncBaseTransport | None = None
) -> httpx.AsyncClient:
    """An HTTP/1.1 client with one connection per concurrent stream."""
    limits = httpx.Limits(max_connections=concurrency + 8, max_keepalive_connections=concurrency)
    return httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(timeout), transport=transport)


async def run_load(
    endpoint: str,
    *,
    concurrency: int,
    tasks: int,
    k: int,
    pad: int,
    transport: httpx.AsyncBaseTransport | None = None,
) -> LoadResult:
    """N tasks over C concurrent streams; every stream verified."""
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(tasks):
        queue.put_nowait(i)
    streams: list[StreamStats] = []
    async with client(concurrency, transport=transport) as http:

        async def worker() -> None:
            while True:
                try:
                    queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                streams.append(await stream_task(http, endpoint, k, pad))

        begin = time.perf_counter()
        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(concurrency):
                    group.create_task(worker())
        except* LoadError as broken:
            raise broken.exceptions[0] from None  # the first violation, as itself
        wall = time.perf_counter() - begin
    ids = [s.task_id for s in streams]
    if len(set(ids)) != tasks:
        raise LoadError(f"{tasks} tasks sent, {len(set(ids))} distinct task ids came back")
    return LoadResult(concurrency, tasks, k, pad, wall, streams)


@dataclass
class HoldHandle:
    """Streams held open by ``open_held``: close them with ``close()``."""

    tasks: list[asyncio.Task[None]]
    http: httpx.AsyncClient

    async def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        await self.http.aclose()


async def open_held(endpoint: str, streams: int, hold: float) -> HoldHandle:
    """Open ``streams`` ``bench hold=<hold>`` streams; return once each saw its started frame."""
    http = client(streams, timeout=hold + 120)
    ready = 0
    all_ready = asyncio.Event()
    failures: list[BaseException] = []

    async def one() -> None:
        nonlocal ready
        decoder = SSEDecoder()
        body = request_body(f"bench hold={hold:g}")
        try:
            async with http.stream("POST", endpoint, content=body, headers=HEADERS) as response:
                counted = False
                async for chunk in response.aiter_bytes():
                    if counted:
                        continue
                    for event in decoder.feed(chunk):
                        if TOOL_CALL_V1_MIME_TYPE in event.data and not counted:
                            counted = True
                            ready += 1
                            if ready == streams:
                                all_ready.set()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            failures.append(exc)
            all_ready.set()

    tasks = [asyncio.create_task(one()) for _ in range(streams)]
    handle = HoldHandle(tasks, http)
    try:
        await asyncio.wait_for(all_ready.wait(), timeout=hold)
    except TimeoutError:
        await handle.close()
        raise LoadError(f"only {ready} of {streams} held streams opened within {hold} s") from None
    if failures:
        await handle.close()
        raise LoadError(f"a held stream failed: {failures[0]!r}")
    return handle


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("endpoint")
    parser.add_argument("--concurrency", "-c", type=int, default=32)
    parser.add_argument("--tasks", "-n", type=int, default=200)
    parser.add_argument("-k", type=int, default=50)
    parser.add_argument("--pad", "-p", type=int, default=200)
    args = parser.parse_args()
    result = asyncio.run(
        run_load(
            args.endpoint, concurrency=args.concurrency, tasks=args.tasks, k=args.k, pad=args.pad
        )
    )
    print(json.dumps({k: round(v, 3) for k, v in result.figures().items()}, indent=2))


if __name__ == "__main__":
    main()
