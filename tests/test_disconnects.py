"""A client that goes away loses nothing: dropped at any byte of its stream, the task still ends.

Real servers (daphne; the in-memory layer with the runtime in the web process, and Redis +
PostgreSQL with worker processes); the client is a raw socket that sends one
``SendStreamingMessage``, reads a given number of bytes of the response and resets the
connection.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.live import LiveServer, live_server

REPEATS = 3
"""Drops per position (``python -m bench.disconnects`` repeats more)."""


@pytest.fixture(scope="module", params=["memory", "redis"])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    with live_server(request.param, tmp_path_factory.mktemp(request.param)) as running:
        yield running


def request_bytes(server: LiveServer, context_id: str) -> bytes:
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "SendStreamingMessage",
            "params": {
                "message": {
                    "messageId": uuid.uuid4().hex,
                    "role": "ROLE_USER",
                    "contextId": context_id,
                    "parts": [{"text": "what is 6*7 and the time in Tokyo"}],
                }
            },
        }
    ).encode()
    url = urlsplit(server.endpoint)
    head = (
        f"POST {url.path} HTTP/1.1\r\nHost: {url.netloc}\r\nContent-Type: application/json\r\n"
        f"A2A-Version: 1.0\r\nX-API-Key: {server.api_key()}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


async def open_and_drop(server: LiveServer, context_id: str, after: int | None) -> bytes:
    """Send the stream request, read ``after`` bytes of the answer (None: all of it), then
    reset the connection; returns what was read."""
    url = urlsplit(server.url)
    reader, writer = await asyncio.open_connection(url.hostname, url.port)
    writer.write(request_bytes(server, context_id))
    await writer.drain()
    got = b""
    try:
        async with asyncio.timeout(30):
            while after is None or len(got) < after:
                chunk = await reader.read(1 if after is None else after - len(got))
                if not chunk:
                    break
                got += chunk
    finally:
        sock = writer.get_extra_info("socket")
        # A reset, not a polite close: the server learns of it at its next write.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        writer.transport.abort()
    return got


def drop_points(response: bytes) -> list[int]:
    """Byte positions worth dropping at: before anything, around the end of the headers, and
    around the end of each event (the last one excluded: the stream is over by then)."""
    head_end = response.index(b"\r\n\r\n") + 4
    points = {0, 1, head_end - 1, head_end, head_end + 1}
    at = head_end
    while (end := response.find(b"\n\n", at)) != -1 and end + 2 < len(response) - 8:
        points.update({end + 1, end + 2, end + 3})
        at = end + 2
    return sorted(p for p in points if p < len(response))


async def states_of(server: LiveServer, context_ids: list[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    async with httpx.AsyncClient(timeout=30) as http:
        for context_id in context_ids:
            reply = await http.post(
                server.endpoint,
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "ListTasks",
                    "params": {"contextId": context_id},
                },
                headers={"A2A-Version": "1.0", "X-API-Key": server.api_key()},
            )
            found[context_id] = [t["status"]["state"] for t in reply.json()["result"]["tasks"]]
    return found


async def test_a_dropped_stream_never_loses_its_task(server: LiveServer) -> None:
    reference = await open_and_drop(server, f"ref-{uuid.uuid4().hex}", None)
    assert reference.startswith(b"HTTP/1.1 200")
    points = drop_points(reference)
    assert len(points) > 10
    contexts: dict[str, int] = {}
    for point in points:
        for _ in range(REPEATS):
            context_id = f"drop-{point}-{uuid.uuid4().hex}"
            contexts[context_id] = point
            await open_and_drop(server, context_id, point)
    deadline = time.monotonic() + 60
    while True:
        states = await states_of(server, list(contexts))
        # A request dropped before the server read it all starts no task: nothing was
        # accepted, nothing is lost. A task that was accepted must complete.
        unfinished: dict[str, Any] = {
            c: s for c, s in states.items() if s not in ([], ["TASK_STATE_COMPLETED"])
        }
        if not unfinished or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.5)
    lost = {contexts[c]: s for c, s in unfinished.items()}
    assert not lost, f"tasks not completed, by drop position: {lost}"
    # Past the response's headers every request was accepted.
    head_end = reference.index(b"\r\n\r\n") + 4
    assert all(states[c] for c, point in contexts.items() if point >= head_end)
