"""ASGI glue: flow control for streamed responses, on every ASGI server.

A client that reads a stream slower than its events arrive must not make the server hold the
difference. uvicorn's ``send()`` already waits while a connection's write buffer is full;
daphne's returns at once and Twisted keeps every byte in memory until the client reads it (ten
clients that stop reading a 12 MB stream cost 165 MiB). :class:`FlowControl` gives daphne the
same behaviour as uvicorn, through Twisted's own producer/consumer interface: a body message
waits while the connection's buffer is above Twisted's 64 KiB mark. The stream then sees the
client falling behind, and closes past ``STREAM_BUFFER_LIMIT`` (docs/server.md, "Slow
readers").

Use it in ``asgi.py``::

    from a2a_toolcall.asgi import get_asgi_application

    application = get_asgi_application()

or wrap an application you build yourself (``FlowControl(ProtocolTypeRouter({...}))``). Under
other servers it changes nothing but a mark in the scope that tells the streams it is there.
"""

from __future__ import annotations

import asyncio
import functools
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Final

__all__ = ["SCOPE_KEY", "FlowControl", "get_asgi_application"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[..., Awaitable[None]]

SCOPE_KEY: Final = "a2a_toolcall.flow_control"
"""Set (to True) in the scope of every HTTP request that went through :class:`FlowControl`."""


class FlowControl:
    """ASGI middleware: a streamed body waits for the client instead of filling the process.

    On daphne each ``http.response.body`` message of a streamed response (one sent with
    ``more_body``) waits while Twisted reports the connection's send buffer full; a client
    that goes away ends the wait (the application is told by ``http.disconnect`` as usual).
    On any other server the messages pass as they are.
    """

    def __init__(self, application: ASGIApp) -> None:
        self.application = application

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.application(scope, receive, send)
            return
        scope = dict(scope)
        scope[SCOPE_KEY] = True
        request = _twisted_request(send)
        if request is not None:
            send = _TwistedFlow(request, send).send
        await self.application(scope, receive, send)


def get_asgi_application() -> ASGIApp:
    """Django's ASGI application (``django.core.asgi.get_asgi_application``) with
    :class:`FlowControl` around it."""
    from django.core.asgi import get_asgi_application as django_application

    return FlowControl(django_application())


def _twisted_request(send: Send) -> Any | None:
    """The Twisted request a daphne ``send`` answers, or None under any other server.

    daphne passes ``functools.partial(server.handle_reply, protocol)`` as ``send``, where the
    protocol is its ``WebRequest``, a ``twisted.web.http.Request``.
    """
    http = sys.modules.get("twisted.web.http")
    if http is None or not isinstance(send, functools.partial) or len(send.args) != 1:
        return None
    request = send.args[0]
    return request if isinstance(request, http.Request) else None


class _TwistedFlow:
    """A push producer on one Twisted request: paused while its connection cannot write.

    Twisted calls :meth:`pauseProducing` when the transport holds more than its buffer size
    (64 KiB) unsent and :meth:`resumeProducing` once it has written it all; daphne runs
    Twisted on the asyncio reactor, so these arrive on the event loop's thread.
    """

    def __init__(self, request: Any, send: Send) -> None:
        self._request = request
        self._send = send
        self._writable = asyncio.Event()
        self._writable.set()
        self._registered = False
        self._gone = False

    # --- IPushProducer (Twisted's method names) -------------------------------------------

    def pauseProducing(self) -> None:
        if not self._gone:
            self._writable.clear()

    def resumeProducing(self) -> None:
        self._writable.set()

    def stopProducing(self) -> None:
        self._end()

    # --- the ASGI send ----------------------------------------------------------------------

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.body":
            more = bool(message.get("more_body", False))
            if more and not self._registered and not self._gone:
                self._register()
            if not self._writable.is_set():
                await self._writable.wait()
            if not more:
                self._unregister()
        await self._send(message)

    def _register(self) -> None:
        request = self._request
        channel = getattr(request, "channel", None)
        if channel is None or getattr(request, "producer", None) is not None:
            return  # already gone, or someone else's producer: leave the request alone
        request.registerProducer(self, True)
        self._registered = True
        if getattr(channel, "_waitingForTransport", False):
            self._writable.clear()  # the buffer was already full when this response began
        request.notifyFinish().addBoth(self._finished)

    def _unregister(self) -> None:
        if self._registered:
            self._registered = False
            if getattr(self._request, "channel", None) is not None:
                self._request.unregisterProducer()

    def _finished(self, result: object) -> None:
        # The response ended, or the connection was lost: nothing waits any longer. Returning
        # None from the errback consumes the failure (Twisted would log it as unhandled).
        self._end()

    def _end(self) -> None:
        self._gone = True
        self._writable.set()
