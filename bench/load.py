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
import bisect
import contextlib
import gc
import json
import math
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

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
    arrivals: list[tuple[float, float]] = field(default_factory=list)
    """Per tool frame, in stream order: (the agent's ``t_emit``, when the client read it)."""

    def leads(self) -> list[int]:
        """Per tool frame: how many of the stream's frames the agent had made and the client
        not yet read when the agent made this one (how far the agent ran ahead of its
        reader)."""
        read_at = sorted(received for _, received in self.arrivals)
        return [
            i - bisect.bisect_right(read_at, emitted)
            for i, (emitted, _) in enumerate(self.arrivals)
        ]


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
        leads = [float(n) for s in self.streams for n in s.leads()]
        return {
            "frames_per_s": self.frames / self.wall_s,
            "tasks_per_s": len(self.streams) / self.wall_s,
            "first_event_p50_ms": percentile(first, 50),
            "first_event_p99_ms": percentile(first, 99),
            "task_p50_ms": percentile(whole, 50),
            "task_p99_ms": percentile(whole, 99),
            "emit_to_receive_p50_ms": percentile(lag, 50),
            "emit_to_receive_p99_ms": percentile(lag, 99),
            "lead_p50_frames": percentile(leads, 50),
            "lead_p99_frames": percentile(leads, 99),
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
    arrivals: list[tuple[float, float]] = []
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
                    emitted = float(payload["t_emit"])
                    lags.append((received - emitted) * 1000)
                    arrivals.append((emitted, received))
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
        arrivals=arrivals,
    )


def client(
    concurrency: int, timeout: float = 120.0, transport: httpx.AsyncBaseTransport | None = None
) -> httpx.AsyncClient:
    """An HTTP/1.1 client with one connection per concurrent stream."""
    limits = httpx.Limits(max_connections=concurrency + 8, max_keepalive_connections=concurrency)
    return httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(timeout), transport=transport)


@contextlib.contextmanager
def collector_held() -> Iterator[None]:
    """This process's cyclic garbage collector held off while it measures.

    The client keeps every stream's figures, and its heap grows over a run of several targets
    and repetitions: a full collection of it took 40-65 ms and came in the middle of a later
    repetition, while every stream's frames waited in their sockets, so that repetition's
    emit->receive p99 doubled whatever the server did. What is collectable is collected
    before, and after when the collector was on.
    """
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
            gc.collect()


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

        with collector_held():
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
class BurstStream:
    """One stream of a burst: when it got how far (s since the burst began), or why it broke."""

    sent_s: float | None = None  # the client started the request
    connected_s: float | None = None  # its TCP connection was established
    response_s: float | None = None  # the response's status and headers
    first_event_s: float | None = None  # the first SSE event (the Task)
    first_frame_s: float | None = None  # the first tool-call-v1 frame (``started``)
    ended_s: float | None = None  # the stream ended or broke before it was let go
    failure: str | None = None  # why it broke: an exception's class, "HTTP <status>", ...


@dataclass
class Burst:
    """S ``bench hold=<H>`` streams fired at once by ``open_burst``, still open until ``close()``.

    ``opened_s``: when ``open_burst`` stopped waiting (every stream had its first tool frame or
    had broken, or the deadline came); ``client_cpu_s``: the CPU this process (the client, one
    core) used meanwhile: near ``opened_s``, the client bounded the opening.
    """

    streams: list[BurstStream]
    hold: float
    deadline: float
    opened_s: float
    client_cpu_s: float
    connections: list[_BurstConnection]

    def held(self) -> int:
        """How many streams are open and past their first tool frame now."""
        return sum(1 for s in self.streams if s.first_frame_s is not None and s.ended_s is None)

    def failures(self) -> dict[str, int]:
        """Broken streams by kind; a stream without its tool frame by the deadline is a timeout
        named by how far it got."""
        kinds: Counter[str] = Counter()
        d = self.deadline
        for s in self.streams:
            if s.failure is not None:
                kinds[s.failure] += 1
            elif s.first_frame_s is None or s.first_frame_s > d:
                if s.connected_s is None or s.connected_s > d:
                    kinds["timeout: not connected"] += 1
                elif s.response_s is None or s.response_s > d:
                    kinds["timeout: no response"] += 1
                elif s.first_event_s is None or s.first_event_s > d:
                    kinds["timeout: no first event"] += 1
                else:
                    kinds["timeout: no tool frame"] += 1
        return dict(kinds.most_common())

    def figures(self) -> dict[str, Any]:
        """Counts within the deadline, times to all and per stream, failures by kind.

        Times are from the burst's start (every request was fired then); ``None`` where there
        is nothing to measure (no stream, or not every stream got there in time).
        """
        n, d = len(self.streams), self.deadline
        events = _within([s.first_event_s for s in self.streams], d)
        frames = _within([s.first_frame_s for s in self.streams], d)
        sent = [s.sent_s for s in self.streams if s.sent_s is not None]
        connected = _within([s.connected_s for s in self.streams], d)
        failures = self.failures()
        return {
            "streams": n,
            "deadline_s": d,
            "connected": len(connected),
            "opened_first_event": len(events),
            "opened_first_frame": len(frames),
            "all_first_event_s": max(events) / 1000 if events and len(events) == n else None,
            "all_first_frame_s": max(frames) / 1000 if frames and len(frames) == n else None,
            "first_event_p50_ms": _or_none(percentile(events, 50)),
            "first_event_p99_ms": _or_none(percentile(events, 99)),
            "first_event_max_ms": max(events, default=None),
            "first_frame_p50_ms": _or_none(percentile(frames, 50)),
            "first_frame_p99_ms": _or_none(percentile(frames, 99)),
            "first_frame_max_ms": max(frames, default=None),
            "requests_sent_s": max(sent, default=None),
            "connect_p99_ms": _or_none(percentile(connected, 99)),
            "wait_s": self.opened_s,
            "client_cpu_s": self.client_cpu_s,
            "failures": failures,
            "failed": sum(failures.values()),
            "ok": len(frames) == n and not failures,
        }

    async def close(self) -> None:
        for connection in self.connections:
            connection.close()
        await asyncio.sleep(0)


def _within(times: list[float | None], deadline: float) -> list[float]:
    """The times (s) that came by the deadline, in ms."""
    return [at * 1000 for at in times if at is not None and at <= deadline]


def _or_none(value: float) -> float | None:
    return None if math.isnan(value) else value


class _BurstConnection(asyncio.Protocol):
    """One stream of a burst, read straight off its socket.

    The burst client must cost far less than the servers it measures: with httpx (a client
    and an anyio task per stream) 1,000 streams took 2.9 s of this process's CPU to open
    against the raw ceiling, so the client, not the server, set the figure. Here a stream is a
    protocol object: its request is written once the connection is made, the response's head
    is parsed, its chunked body decoded, and only the first two SSE events are looked at (the
    Task, then the first event that carries a tool-call-v1 frame); what follows is not read
    beyond finding the end of the response.
    """

    def __init__(
        self,
        record: BurstStream,
        request: bytes,
        hold: float,
        now: Callable[[], float],
        resolved: Callable[[], None],
    ) -> None:
        self.record = record
        self.request = request
        self.hold = hold
        self.now = now
        self.resolved = resolved
        self.transport: asyncio.Transport | None = None
        self._head = b""
        self._headed = False
        self._chunked = False
        self._chunk_left = 0  # bytes of the current chunk's data still to come
        self._crlf_left = 0  # bytes of the CRLF after it still to skip
        self._chunk_size_line = b""
        self._decoder = SSEDecoder()
        self._counted = False
        self._closing = False

    # --- asyncio.Protocol --------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.record.connected_s = self.now()
        transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        if self.record.first_frame_s is not None or self.record.failure is not None:
            return  # held: what follows is not measured
        if not self._headed:
            self._head += data
            end = self._head.find(b"\r\n\r\n")
            if end < 0:
                return
            head, data = self._head[:end], self._head[end + 4 :]
            self._head = b""
            self._headed = True
            self.record.response_s = self.now()
            lines = head.split(b"\r\n")
            status = lines[0].split(b" ", 2)
            if len(status) < 2 or status[1] != b"200":
                self.fail(f"HTTP {status[1].decode() if len(status) > 1 else '?'}")
                return
            headers = {
                name.strip().lower(): value.strip()
                for name, _, value in (line.partition(b":") for line in lines[1:])
            }
            self._chunked = b"chunked" in headers.get(b"transfer-encoding", b"").lower()
        self._body(data)

    def connection_lost(self, exc: Exception | None) -> None:
        record = self.record
        if self._closing:
            return
        record.ended_s = self.now()
        if record.failure is None:
            if record.first_frame_s is None:
                record.failure = (
                    type(exc).__name__ if exc is not None else "closed before the tool frame"
                )
            elif record.ended_s - record.first_frame_s < self.hold * 0.9:
                record.failure = "closed while held"  # before its task could have ended
        self._resolve()

    # --- the body ------------------------------------------------------------------------------

    def _body(self, data: bytes) -> None:
        if not self._chunked:
            self._events(data)
            return
        while data:
            if self._chunk_left:
                take = data[: self._chunk_left]
                data = data[len(take) :]
                self._chunk_left -= len(take)
                if not self._chunk_left:
                    self._crlf_left = 2  # the CRLF after the chunk's data
                self._events(take)
                if self.record.first_frame_s is not None or self.record.failure is not None:
                    return
                continue
            if self._crlf_left:
                skipped = min(self._crlf_left, len(data))
                data = data[skipped:]
                self._crlf_left -= skipped
                continue
            line_end = data.find(b"\r\n")
            if line_end < 0:
                self._chunk_size_line += data
                return
            line = self._chunk_size_line + data[:line_end]
            data = data[line_end + 2 :]
            self._chunk_size_line = b""
            size = int(line.split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                return  # the last chunk: the response ended (connection_lost follows or not)
            self._chunk_left = size

    def _events(self, data: bytes) -> None:
        record = self.record
        for event in self._decoder.feed(data):
            if record.first_event_s is None:
                record.first_event_s = self.now()
                message = from_json(event.data)
                if "error" in message:
                    self.fail("JSON-RPC error")
                    return
                if "task" not in message.get("result", {}):
                    self.fail("first event not the Task")
                    return
            elif TOOL_CALL_V1_MIME_TYPE in event.data:
                record.first_frame_s = self.now()
                self._resolve()
                return

    def fail(self, why: str) -> None:
        """The stream broke (``why``): recorded, counted, its connection closed."""
        self.record.failure = why
        self.record.ended_s = self.now()
        self._resolve()
        if self.transport is not None:
            self._closing = True
            self.transport.close()

    def _resolve(self) -> None:
        if not self._counted:
            self._counted = True
            self.resolved()

    def close(self) -> None:
        """Let the stream go (the end of the burst)."""
        self._closing = True
        if self.transport is not None:
            self.transport.close()


async def open_burst(endpoint: str, streams: int, hold: float, deadline: float) -> Burst:
    """Fire ``streams`` ``bench hold=<hold>`` requests at once (no ramp, one connection each).

    Returns once every stream has its first tool frame or has broken, or at ``deadline``
    seconds after the start, whichever is first; the streams stay open (and go on being
    recorded) until ``Burst.close()``. Never raises for a stream: what broke is in the figures.
    """
    url = httpx.URL(endpoint)
    host, port = url.host, url.port or 80
    body = request_body(f"bench hold={hold:g}")
    head = (
        f"POST {url.raw_path.decode()} HTTP/1.1\r\nHost: {host}:{port}\r\n"
        + "".join(f"{name}: {value}\r\n" for name, value in HEADERS.items())
        + f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    request = head + body
    records = [BurstStream() for _ in range(streams)]
    pending = streams
    settled = asyncio.Event()
    loop = asyncio.get_running_loop()

    def now() -> float:
        return time.perf_counter() - begin

    def resolved() -> None:
        nonlocal pending
        pending -= 1
        if pending == 0:
            settled.set()

    connections = [_BurstConnection(r, request, hold, now, resolved) for r in records]

    async def connect(connection: _BurstConnection) -> None:
        connection.record.sent_s = now()
        try:
            await loop.create_connection(lambda: connection, host, port)
        except OSError as exc:
            connection.fail(type(exc).__name__)

    with collector_held():
        cpu = time.process_time()
        begin = time.perf_counter()
        connecting = [asyncio.ensure_future(connect(c)) for c in connections]
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(settled.wait(), timeout=deadline)
        opened, cpu = now(), time.process_time() - cpu
    for task in connecting:
        task.cancel()
    return Burst(records, hold, deadline, opened, cpu, connections)


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
