"""Under daphne, a stream's write leaves at once, not on the reactor's next turn.

Twisted's TCP transport buffers every write and sends it once the reactor finds the socket
writable, a turn of the event loop later; ``a2a_toolcall.asgi._TwistedFlow`` (FlowControl's
part under daphne) has the transport write it at once. These tests use Twisted's own TCP
transport and HTTP request on a real loopback TCP connection, with a reactor that is never
run (no reactor turn can send anything): what the peer receives was sent by the flush.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from twisted.internet import selectreactor, tcp
from twisted.web import http

from a2a_toolcall.asgi import _TwistedFlow


@dataclass(repr=False)
class Connection:
    reactor: Any  # Twisted's classes are untyped here
    transport: Any
    request: Any
    peer: socket.socket

    def received(self) -> bytes:
        """What the peer can read now (without waiting)."""
        chunks = []
        while True:
            try:
                chunk = self.peer.recv(1 << 20)
            except BlockingIOError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)


@pytest.fixture
def connection() -> Iterator[Connection]:
    listener = socket.create_server(("127.0.0.1", 0))
    peer = socket.create_connection(listener.getsockname())
    ours, address = listener.accept()
    listener.close()
    ours.setblocking(False)
    peer.setblocking(False)
    reactor: Any = selectreactor.SelectReactor()  # never run: only its writers are looked at
    channel: Any = http.HTTPChannel()  # type: ignore[no-untyped-call]
    transport: Any = tcp.Server(ours, channel, address, None, 1, reactor)  # type: ignore[arg-type]
    channel.makeConnection(transport)
    channel.persistent = True  # an HTTP/1.1 request: the connection stays open after it
    request: Any = http.Request(channel)
    channel.requests.append(request)  # as the channel does for a request it parsed
    request.method = b"POST"
    request.clientproto = b"HTTP/1.1"
    request.setResponseCode(200)
    request.setHeader(b"content-type", b"text/event-stream")
    try:
        yield Connection(reactor, transport, request, peer)
    finally:
        peer.close()
        ours.close()


def daphne_send(request: Any) -> Any:
    """What daphne's ``handle_reply`` does with a response body: ``Request.write``, then
    ``finish()`` for the last one (the ASGI-to-Twisted translation is daphne's)."""

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            request.write(message.get("body", b""))
            if not message.get("more_body", False):
                request.finish()

    return send


async def test_a_body_write_reaches_the_socket_at_once(connection: Connection) -> None:
    flow = _TwistedFlow(connection.request, daphne_send(connection.request))
    await flow.send({"type": "http.response.start", "status": 200, "headers": []})
    await flow.send({"type": "http.response.body", "body": b"data: one\n\n", "more_body": True})

    received = connection.received()
    assert received.startswith(b"HTTP/1.1 200 OK\r\n")
    assert received.endswith(b"data: one\n\n\r\n")  # the chunk, sent without a reactor turn
    # Nothing left: the transport no longer waits for the socket to be writable.
    assert connection.transport not in connection.reactor.getWriters()

    await flow.send({"type": "http.response.body", "body": b"data: two\n\n", "more_body": True})
    assert connection.received().endswith(b"data: two\n\n\r\n")
    await flow.send({"type": "http.response.body", "body": b"", "more_body": False})
    assert connection.received().endswith(b"0\r\n\r\n")  # the last chunk: the response ended


async def test_a_write_larger_than_the_socket_takes_leaves_the_rest_to_the_reactor(
    connection: Connection,
) -> None:
    flow = _TwistedFlow(connection.request, daphne_send(connection.request))
    await flow.send({"type": "http.response.start", "status": 200, "headers": []})
    big = b"x" * (16 << 20)  # more than the two sockets' buffers hold
    await flow.send({"type": "http.response.body", "body": big, "more_body": True})

    transport = connection.transport
    first = connection.received()
    assert first.startswith(b"HTTP/1.1 200 OK\r\n")
    assert len(first) < len(big)
    # The rest waits in Twisted's buffer, the reactor watching the socket for it, and the
    # stream's producer is paused (the buffer is over Twisted's 64 KiB).
    assert transport in connection.reactor.getWriters()
    assert not flow._writable.is_set()

    # What the reactor would do on its turns, the peer reading meanwhile.
    got = len(first)
    while transport in connection.reactor.getWriters():
        assert transport.doWrite() is None
        got += len(connection.received())
    got += len(connection.received())
    assert got > len(big)  # the headers, the chunk's size line, the whole body
    assert flow._writable.is_set()  # the producer resumed once the buffer emptied


async def test_a_closing_connection_is_left_to_twisted(connection: Connection) -> None:
    flow = _TwistedFlow(connection.request, daphne_send(connection.request))
    await flow.send({"type": "http.response.start", "status": 200, "headers": []})
    connection.transport.loseConnection()  # closing once its buffer is written
    await flow.send({"type": "http.response.body", "body": b"data: late\n\n", "more_body": True})
    assert connection.received() == b""  # not written by the flush: the reactor's to do
