"""Slow readers: a stream holds at most ``STREAM_BUFFER_LIMIT`` for a client that reads slower
than its events arrive, then closes; the client resumes with ``Last-Event-ID`` without a gap;
the server's memory stays bounded while such clients hang on, and comes back when they leave.

Real servers as deployed: daphne serving ``project.asgi`` (which wraps Django in
``a2a_toolcall.asgi.FlowControl``) and uvicorn, with Python's allocations traced
(tests/traced_asgi.py: the heap is where unread stream data piles up), on the in-memory layer
with SQLite and on Redis with PostgreSQL. The clients are raw sockets with a 4 KiB receive
buffer that send their request and then stop reading. The ``firehose`` agent (tests/agents.py)
streams 400 tool calls of 30 KB results, a 12 MB timeline, as fast as the runtime takes them.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import h11
import httpx
import pytest

from a2a_toolcall.contract import TOOL_CALL_V1_URI, ToolCallCompleted, parse_tool_call
from a2a_toolcall.protocol.sse import SSEDecoder
from tests.agents import FIREHOSE_RESULT
from tests.live import LiveServer, call, live_server

LIMIT = 256 * 1024
"""The servers' STREAM_BUFFER_LIMIT here."""
CALLS = 400
SLOW_CLIENTS = 10
CLOSED = re.compile(
    rb": closed: this client fell more than (\d+) bytes behind the task; resume "
    rb"with SubscribeToTask and Last-Event-ID: (\d+)\n"
)


@pytest.fixture(
    scope="module",
    params=[("daphne", "memory"), ("uvicorn", "memory"), ("daphne", "redis")],
    ids=lambda p: "-".join(p),
)
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    http, config = request.param
    with live_server(
        config,
        tmp_path_factory.mktemp("slow"),
        workers=1,
        http=http,
        A2A_TEST_AGENT="firehose",
        app="tests.traced_asgi:application",
        A2A_TEST_STREAM_BUFFER=str(LIMIT),
    ) as running:
        yield running


def message(text: str) -> dict[str, Any]:
    return {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}]}


class SlowClient:
    """One SendStreamingMessage over a raw socket whose owner reads only when told to."""

    def __init__(self, server: LiveServer, text: str) -> None:
        host, port = server.url.removeprefix("http://").split(":")
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "SendStreamingMessage",
                "params": {"message": message(text)},
            }
        ).encode()
        self.sock = socket.socket()
        # A small receive window (set before connecting): the kernel holds little for us, so
        # what the client has not read stays on the server's side, where it is measured.
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.sock.settimeout(60)
        self.sock.connect((host, int(port)))
        self.http = h11.Connection(h11.CLIENT)
        headers = [
            ("Host", f"{host}:{port}"),
            ("Content-Type", "application/json"),
            ("A2A-Version", "1.0"),
            ("X-API-Key", server.api_key()),
            ("Content-Length", str(len(body))),
        ]
        request = h11.Request(method="POST", target="/a2a/", headers=headers)
        self.sock.sendall(self.http.send(request) + self.http.send(h11.Data(data=body)))
        self.sock.sendall(self.http.send(h11.EndOfMessage()))
        self.body = bytearray()
        self.ended = False

    def _pump(self) -> None:
        while True:
            event = self.http.next_event()
            if event is h11.NEED_DATA:
                data = self.sock.recv(65536)
                self.http.receive_data(data)
                if not data:
                    raise AssertionError("the server closed the connection mid-response")
                continue
            if isinstance(event, h11.Response):
                assert event.status_code == 200
                continue
            if isinstance(event, h11.Data):
                self.body += event.data
                return
            if isinstance(event, h11.EndOfMessage):
                self.ended = True
                return
            raise AssertionError(f"unexpected {event!r}")

    def first_result(self) -> dict[str, Any]:
        """Read up to the end of the first event (the task), and no further than that needs."""
        while b"\n\n" not in self.body:
            self._pump()
        head = self.body[: self.body.index(b"\n\n") + 2]
        (event,) = SSEDecoder().feed(bytes(head))
        return event.json()["result"]  # type: ignore[no-any-return]

    def read_to_end(self) -> bytes:
        while not self.ended:
            self._pump()
        return bytes(self.body)

    def close(self) -> None:
        self.sock.close()


def wait_completed(server: LiveServer, task_ids: list[str]) -> None:
    # A guard against a hang, not a timing: on a 2-core machine, ten 12 MB tasks whose
    # clients stopped reading took 73-112 s through Redis with the web process's allocations
    # traced.
    deadline = time.monotonic() + 300
    for task_id in task_ids:
        while (
            state := call(server, "GetTask", {"id": task_id, "historyLength": 0})["status"]["state"]
        ) != "TASK_STATE_COMPLETED":
            assert time.monotonic() < deadline, (
                f"task {task_id} did not complete ({state}):\n{task_log(server, task_id)}"
            )
            time.sleep(0.2)


def task_log(server: LiveServer, task_id: str, limit: int = 60) -> str:
    """What the server's processes logged about ``task_id``, and how each log ends: for a
    task that hangs, where it stopped (a gap it asked the runtime to fill, a lost runtime)."""
    lines = []
    for path in server.log_files:
        try:
            text = path.read_text(errors="replace").splitlines()
        except OSError as exc:
            lines.append(f"--- {path.name}: unreadable ({exc})")
            continue
        naming = [line for line in text if task_id in line]
        lines.append(f"--- {path.name}: {len(naming)} lines name the task; the last {limit}:")
        lines += naming[-limit:]
        lines.append(f"--- {path.name}: its last 20 lines:")
        lines += text[-20:]
    return "\n".join(lines)


def events_of(body: bytes) -> list[tuple[int | None, dict[str, Any]]]:
    return [
        (None if e.id is None else int(e.id), e.json()["result"]) for e in SSEDecoder().feed(body)
    ]


def completed_calls(results: list[dict[str, Any]]) -> list[str]:
    found = []
    for result in results:
        update = result.get("artifactUpdate")
        frame = None if update is None else parse_tool_call(update["artifact"]["parts"])
        if isinstance(frame, ToolCallCompleted):
            assert frame.result == FIREHOSE_RESULT
            found.append(frame.tool_call_id)
    return found


def test_a_stream_too_far_behind_is_closed_and_resumed_without_a_gap(server: LiveServer) -> None:
    client = SlowClient(server, str(CALLS))
    try:
        task_id = client.first_result()["task"]["id"]
        # The client reads nothing more while the agent streams its 12 MB.
        wait_completed(server, [task_id])
        body = client.read_to_end()
    finally:
        client.close()

    # The stream ended before the task's end, with the reason and where to resume.
    closed = CLOSED.search(body)
    assert closed is not None, body[-500:]
    assert int(closed[1]) == LIMIT
    last_seen = int(closed[2])
    events = events_of(body)
    assert "task" in events[0][1]
    seqs = [seq for seq, _ in events]
    assert seqs == list(range(1, last_seen + 1)), "the first stream skipped an event"
    assert not any(
        r.get("statusUpdate", {}).get("status", {}).get("state") == "TASK_STATE_COMPLETED"
        for _, r in events
    )
    assert len(body) < CALLS * len(FIREHOSE_RESULT) / 2, "the stream was not closed early"

    # Resuming from the last event seen: the task (without its tool-call summary: the frames
    # are replayed), then every event after, up to the end.
    resumed: list[tuple[int | None, dict[str, Any]]] = []
    decoder = SSEDecoder()
    payload = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "SubscribeToTask",
        "params": {"id": task_id},
    }
    headers = {"A2A-Version": "1.0", "X-API-Key": server.api_key(), "Last-Event-ID": str(last_seen)}
    with httpx.stream("POST", server.endpoint, json=payload, headers=headers, timeout=60) as reply:
        for chunk in reply.iter_bytes():
            for event in decoder.feed(chunk):
                resumed.append(
                    (None if event.id is None else int(event.id), event.json()["result"])
                )
    assert resumed[0][0] is None
    snapshot = resumed[0][1]["task"]
    assert snapshot["status"]["state"] == "TASK_STATE_COMPLETED"
    assert TOOL_CALL_V1_URI not in snapshot.get("metadata", {})
    after = [seq for seq, _ in resumed[1:]]
    assert after == list(range(last_seen + 1, last_seen + 1 + len(after)))
    final = resumed[-1][1]["statusUpdate"]["status"]["state"]
    assert final == "TASK_STATE_COMPLETED"

    # Between them, the two streams carried every tool call exactly once.
    calls = completed_calls([r for _, r in events] + [r for _, r in resumed])
    assert len(calls) == len(set(calls)) == CALLS

    if "daphne" in server.web_command:  # uvicorn's own logging setup leaves INFO out
        log = server.log_files[0].read_text()
        assert f"task {task_id}: a stream's client fell more than STREAM_BUFFER_LIMIT" in log


def run_readers(server: LiveServer, *, read: bool) -> list[SlowClient]:
    """Start :data:`SLOW_CLIENTS` streams of the 12 MB workload and wait until their tasks are
    done; with ``read``, each is read to its end meanwhile (in threads) and closed."""
    clients = [SlowClient(server, str(CALLS)) for _ in range(SLOW_CLIENTS)]
    task_ids = [client.first_result()["task"]["id"] for client in clients]
    if read:
        threads = [threading.Thread(target=client.read_to_end) for client in clients]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(300)
        for client in clients:
            client.close()
    wait_completed(server, task_ids)
    return clients


def traced(server: LiveServer) -> float:
    """MiB Python has allocated in the web process now (tests/traced_asgi.py)."""
    reply = httpx.get(server.url + "/__traced__", timeout=60)
    return float(reply.json()["current"]) / 2**20


def settled(server: LiveServer) -> float:
    """:func:`traced` once the process has let go of what it is done with (a finished
    task's events stay with its hub a few seconds)."""
    last = traced(server)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        time.sleep(2)
        now = traced(server)
        if now >= last - 0.5:
            return now
        last = now
    return last


def test_slow_readers_hold_a_bounded_amount_and_it_comes_back(server: LiveServer) -> None:
    # The workload's own footprint first: ten 12 MB tasks whose clients read them as they come.
    run_readers(server, read=True)
    base = settled(server)

    # The same ten tasks, whose clients stop reading after the first event. Unbounded, the
    # server would now hold their 120 MB; bounded, at most the limit for each, plus the
    # server's own write buffer (64 KiB, and one write of up to 64 KiB).
    clients = run_readers(server, read=False)
    try:
        held = settled(server) - base
        bound = SLOW_CLIENTS * (LIMIT + 2 * 65536) / 2**20 + 4
        assert held <= bound, f"{SLOW_CLIENTS} slow readers hold {held:.1f} MiB (bound {bound:.1f})"
        bodies = [client.read_to_end() for client in clients]
    finally:
        for client in clients:
            client.close()
    for body in bodies:
        assert CLOSED.search(body) is not None, "a slow reader's stream was not closed"

    # They left: the memory comes back to where it was.
    kept = settled(server) - base
    assert kept <= 2, f"{kept:.1f} MiB more than before the slow readers"
