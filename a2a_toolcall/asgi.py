"""ASGI glue: flow control for streamed responses, and a fixed pool of threads for sync code.

Two middlewares, both put around Django by :func:`get_asgi_application` (whose Django handler
is :class:`a2a_toolcall.handler.ASGIHandler`: Django's own middleware without a thread hop per
hook, where the hook does no I/O):

- :class:`FlowControl`: a stream waits for a slow client, under daphne as under uvicorn;
- :class:`SharedThreads`: the sync code of every request (the ORM, sync middleware, Django's
  request signals) runs in a fixed pool of threads instead of one new thread per request.

**Flow control.**
A client that reads a stream slower than its events arrive must not make the server hold the
difference. uvicorn's ``send()`` already waits while a connection's write buffer is full;
daphne's returns at once and Twisted keeps every byte in memory until the client reads it (ten
clients that stop reading a 12 MB stream cost 165 MiB). :class:`FlowControl` gives daphne the
same behaviour as uvicorn, through Twisted's own producer/consumer interface: a body message
waits while the connection's buffer is above Twisted's 64 KiB mark. The stream then sees the
client falling behind, and closes past ``STREAM_BUFFER_LIMIT`` (docs/server.md, "Slow
readers").

**Shared threads.** Django runs each ASGI request in its own asgiref
``ThreadSensitiveContext``, whose executor starts a thread for the request's first sync call
and keeps it until the response ends: a burst of 1,000 requests (a deploy, a reconnect storm)
starts 1,000 threads at once, each with its own database connection, while they queue. With
:class:`SharedThreads` each request is given one of ``SYNC_THREADS`` long-lived lanes (the one
with the least work waiting) as its thread-sensitive context: its sync code still runs on one
thread, in order, as Django expects, and the process never has more threads for requests than
the pool. Django's own ``ThreadSensitiveContext`` finds the lane set and leaves it in place.

Use them in ``asgi.py``::

    from a2a_toolcall.asgi import get_asgi_application

    application = get_asgi_application()

or wrap an application you build yourself with :func:`wrap`
(``wrap(ProtocolTypeRouter({...}))``). Under servers other than daphne, FlowControl changes
nothing but a mark in the scope that tells the streams it is there.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import functools
import itertools
import logging
import queue
import sys
import threading
import weakref
from collections.abc import Awaitable, Callable, MutableMapping
from concurrent.futures import Executor, Future
from typing import TYPE_CHECKING, Any, Final

from asgiref.sync import SyncToAsync, ThreadSensitiveContext

if TYPE_CHECKING:
    from .handler import ASGIHandler

__all__ = [
    "SCOPE_KEY",
    "ClientWrites",
    "FlowControl",
    "SharedThreads",
    "django_handler",
    "get_asgi_application",
    "uses_shared_threads",
    "wrap",
]

logger = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[..., Awaitable[None]]

SCOPE_KEY: Final = "a2a_toolcall.flow_control"
"""Set in the scope of every HTTP request that went through :class:`FlowControl`: its
:class:`ClientWrites`."""


class ClientWrites:
    """Whether a response's client holds its writes back now: a ``send()`` of the response is
    waiting for the client to read (under daphne with :class:`FlowControl`, as under uvicorn).

    A stream that is waiting so no longer paces its task's agent (docs/server.md, "Slow
    readers"): the agent goes on, and the stream closes past ``STREAM_BUFFER_LIMIT``.
    """

    __slots__ = ("waiting",)

    def __init__(self) -> None:
        self.waiting = False

    def blocked(self) -> bool:
        """True while a send of this response waits for the client."""
        return self.waiting

    def watch(self, send: Send) -> Send:
        """``send``, noting while it waits."""

        async def watched(message: Message) -> None:
            # Only a send that suspends can be seen waiting: one that returns at once runs
            # with nothing else in between.
            self.waiting = True
            try:
                await send(message)
            finally:
                self.waiting = False

        return watched


class FlowControl:
    """ASGI middleware: a streamed body waits for the client instead of filling the process.

    On daphne each ``http.response.body`` message of a streamed response (one sent with
    ``more_body``) waits while Twisted reports the connection's send buffer full; a client
    that goes away ends the wait (the application is told by ``http.disconnect`` as usual).
    On any other server the messages pass as they are. On every server, the request's
    :class:`ClientWrites` (in the scope) says while a send waits for the client.
    """

    def __init__(self, application: ASGIApp) -> None:
        self.application = application

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.application(scope, receive, send)
            return
        scope = dict(scope)
        client = ClientWrites()
        scope[SCOPE_KEY] = client
        request = _twisted_request(send)
        if request is not None:
            send = _TwistedFlow(request, send).send
        await self.application(scope, receive, client.watch(send))


class _Lane(Executor):
    """One thread of the pool, with the count of calls given to it and not yet done.

    An executor of its own rather than a one-thread ``ThreadPoolExecutor``: a call made from
    the event loop (``run_in_executor``, what ``sync_to_async`` does) gets an asyncio future
    at once, with no ``concurrent.futures.Future`` (a lock and a condition each) chained to it.
    Each sync call of a request (Django runs every ``MiddlewareMixin`` hook through
    one: a dozen per request with startproject's middleware) cost the event loop 20 us of
    CPU that way with a hundred calls in flight, and costs 8.5 here (``python -m bench.hops``).

    ``given`` is written from the threads that submit (the event loop's), ``finished`` from
    the lane's own: each counter by one thread only. ``detached``: how many of the calls
    given that were detached (:meth:`detach`: nobody waits for them).
    """

    def __init__(self, name: str) -> None:
        self.given = 0
        self.finished = 0
        self.detached = 0
        self._queue: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._shutdown = False
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        self._thread.start()
        _lanes_alive.add(self)
        self.context = ThreadSensitiveContext()
        # The lane's context maps to the lane for as long as the pool lives (asgiref keeps the
        # map weakly, by context).
        SyncToAsync.context_to_thread_executor[self.context] = self

    @property
    def waiting(self) -> int:
        return self.given - self.finished

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """Run ``fn`` in the lane: an asyncio future of the running loop when called from
        one (``run_in_executor`` takes it as it is), else a ``concurrent.futures.Future``."""
        if self._shutdown:
            raise RuntimeError("cannot schedule new calls after the lane was shut down")
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        future: asyncio.Future[Any] | Future[Any] = (
            Future() if loop is None else loop.create_future()
        )
        self.given += 1
        self._queue.put((fn, args, kwargs, future, loop))
        return future

    def detach(self, fn: Callable[..., Any], /, *args: Any) -> None:
        """Run ``fn(*args)`` in the lane after the calls already given to it, and before any
        given after, without a future: nobody waits for it, and the event loop is not woken
        when it is done. What it raises is logged (``a2a_toolcall.asgi``)."""
        if self._shutdown:
            raise RuntimeError("cannot schedule new calls after the lane was shut down")
        self.given += 1
        self.detached += 1
        self._queue.put((fn, args, {}, None, None))

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        if not self._shutdown:
            self._shutdown = True
            self._queue.put(None)
        if wait and threading.current_thread() is not self._thread:
            self._thread.join()

    def _work(self) -> None:
        get = self._queue.get
        while True:
            call = get()
            if call is None:
                break
            fn, args, kwargs, future, loop = call
            if future is None:  # detached
                try:
                    fn(*args, **kwargs)
                except Exception:
                    logger.exception(
                        "%r, run in %s with no caller waiting, failed", fn, self._thread.name
                    )
            elif loop is None:
                assert isinstance(future, Future)
                if future.set_running_or_notify_cancel():
                    try:
                        future.set_result(fn(*args, **kwargs))
                    except BaseException as exc:
                        future.set_exception(exc)
            else:
                assert isinstance(future, asyncio.Future)
                if not future.cancelled():  # as a thread pool skips a canceled call
                    try:
                        result: tuple[bool, Any] = (True, fn(*args, **kwargs))
                    except BaseException as exc:
                        result = (False, exc)
                    with contextlib.suppress(RuntimeError):  # that loop is closed
                        loop.call_soon_threadsafe(_hand_back, future, *result)
                    del result
            self.finished += 1
            del call, fn, args, kwargs, future, loop


_Call = tuple[
    Callable[..., Any],
    tuple[Any, ...],
    dict[str, Any],
    "asyncio.Future[Any] | Future[Any] | None",
    "asyncio.AbstractEventLoop | None",
]


def _hand_back(future: asyncio.Future[Any], ok: bool, value: Any) -> None:
    """On the event loop: settle the future of a call a lane has run."""
    if future.done():
        return  # canceled meanwhile
    if ok:
        future.set_result(value)
    elif isinstance(value, StopIteration):
        # An asyncio future refuses StopIteration (it would end the awaiting coroutine).
        future.set_exception(RuntimeError(f"the call raised {value!r}"))
    else:
        future.set_exception(value)


_lanes_alive: weakref.WeakSet[_Lane] = weakref.WeakSet()


@atexit.register
def _stop_lanes() -> None:
    # The lanes are daemon threads (one blocked in its queue must not keep the interpreter
    # alive); at exit each finishes what it was given before the interpreter goes.
    for lane in list(_lanes_alive):
        lane.shutdown(wait=False)
    for lane in list(_lanes_alive):
        lane._thread.join(timeout=5)


class _Pool:
    """The process's lanes, made on first use."""

    def __init__(self, size: int) -> None:
        self.lanes = [_Lane(f"a2a-sync-{i}") for i in range(size)]
        self.by_context = {lane.context: lane for lane in self.lanes}
        self._turn = itertools.count()

    def pick(self) -> _Lane:
        """The lane with the least work waiting; equal ones in turn."""
        start = next(self._turn) % len(self.lanes)
        best = self.lanes[start]
        if best.waiting == 0:
            return best
        for lane in itertools.chain(self.lanes[start + 1 :], self.lanes[:start]):
            if lane.waiting < best.waiting:
                best = lane
                if best.waiting == 0:
                    break
        return best


_pool: _Pool | None = None
_pool_lock = threading.Lock()


def _the_pool(size: int | None) -> _Pool:
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                if size is None:
                    from a2a_toolcall.conf import get_setting

                    size = int(get_setting("SYNC_THREADS"))
                _pool = _Pool(size)
    return _pool


def uses_shared_threads() -> bool:
    """True when the running request's sync code goes to a :class:`SharedThreads` lane (its
    thread, and the thread's database connections, are shared with other requests)."""
    return current_lane() is not None


def current_lane() -> _Lane | None:
    """The lane the running request's sync code goes to, if it runs in :class:`SharedThreads`."""
    context = SyncToAsync.thread_sensitive_context.get(None)
    if _pool is None or context is None:
        return None
    return _pool.by_context.get(context)


class SharedThreads:
    """ASGI middleware: the sync code of each request runs in one of a fixed pool of threads.

    ``threads``: the pool's size (default: the ``SYNC_THREADS`` setting, read when the first
    request arrives). The pool is the process's: every SharedThreads shares it.
    """

    def __init__(self, application: ASGIApp, *, threads: int | None = None) -> None:
        self.application = application
        self.threads = threads

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or SyncToAsync.thread_sensitive_context.get(None) is not None:
            # Lifespan and websockets keep their own ways, as does a request that already runs
            # in a context (a test client's, or an outer SharedThreads').
            await self.application(scope, receive, send)
            return
        _start_background_work()
        lane = _the_pool(self.threads).pick()
        token = SyncToAsync.thread_sensitive_context.set(lane.context)
        try:
            await self.application(scope, receive, send)
        finally:
            SyncToAsync.thread_sensitive_context.reset(token)


_started_loops: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()


def _start_background_work() -> None:
    """On a loop's first request of any kind (a health check, the card): the lease keeper and
    the push sender start, so a restarted process reaps orphaned tasks and sends the pending
    push deliveries without waiting for an A2A call."""
    loop = asyncio.get_running_loop()
    if loop in _started_loops:
        return
    _started_loops.add(loop)
    from .leases import ensure_keeper
    from .push import ensure_sender

    ensure_keeper()
    ensure_sender()


def wrap(application: ASGIApp) -> ASGIApp:
    """``application`` with :class:`FlowControl` and :class:`SharedThreads` around it.

    Also, once settings are configured (as they are where an ASGI module calls this), raises
    the garbage collector's first threshold to ``GC_GEN0_THRESHOLD``
    (:func:`a2a_toolcall.memory.tune_gc`) and, with ``RAISE_OPEN_FILES_LIMIT``, the process's
    soft limit of open files to its hard limit
    (:func:`a2a_toolcall.limits.raise_open_files_limit`): docs/deployment.md, "Bursts"; and
    with ``DB_THREAD_NICE`` the nice value of the thread that does the app's batched database
    work (:func:`a2a_toolcall.priority.lower_database_thread_priority`): docs/deployment.md,
    "One process per core".
    """
    from django.conf import settings

    if settings.configured:
        from .conf import db_thread_nice, gc_threshold, get_setting
        from .limits import raise_open_files_limit
        from .memory import tune_gc
        from .priority import lower_database_thread_priority

        tune_gc(gc_threshold())
        if get_setting("RAISE_OPEN_FILES_LIMIT") is True:
            raise_open_files_limit()
        lower_database_thread_priority(db_thread_nice())
    return FlowControl(SharedThreads(application))


def django_handler() -> ASGIHandler:
    """Django's ASGI application as ``django.core.asgi.get_asgi_application`` makes it (Django
    set up, its handler made), the handler being :class:`a2a_toolcall.handler.ASGIHandler`:
    the hooks of Django's own middleware run on the event loop when they do no I/O."""
    import django

    django.setup(set_prefix=False)
    from .handler import ASGIHandler

    return ASGIHandler()


def get_asgi_application() -> ASGIApp:
    """:func:`django_handler` passed through :func:`wrap`."""
    return wrap(django_handler())


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


def _flush(transport: Any) -> None:
    """Write what daphne just gave Twisted now, rather than on the reactor's next turn.

    Twisted's TCP transport only buffers a write and asks the reactor to say when the
    socket is writable: the bytes leave on a later turn of the event loop, behind every
    callback already queued there (under load, a whole turn of other streams' work per
    event: daphne's emit->receive p99 was twice uvicorn's, whose transport sends at once;
    docs/benchmarks.md). Here the transport writes what it can at once, as its reactor
    would on that turn (``doWrite``: it stops watching the socket once its buffer is
    empty, resumes a paused producer, and leaves the rest of a partial write, or an error,
    to the reactor, which still watches the socket). Only a plain TCP connection that is
    not closing; TLS and other transports keep Twisted's own schedule.
    """
    if (
        transport is None
        or not _plain_tcp(transport)
        or not transport.connected
        or transport.disconnecting
        or not (transport._tempDataLen or len(transport.dataBuffer) > transport.offset)
    ):
        return
    try:
        transport.doWrite()
    except Exception:  # never the stream's failure: the reactor's own write reports it
        logger.debug("writing a daphne response at once failed", exc_info=True)


def _plain_tcp(transport: Any) -> bool:
    """True for Twisted's own TCP connection without TLS (its buffer is what ``doWrite``
    sends)."""
    tcp = sys.modules.get("twisted.internet.tcp")
    return (
        tcp is not None
        and isinstance(transport, tcp.Connection)
        and not getattr(transport, "TLS", False)
    )


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
            # Taken first: a request that finishes lets go of its channel.
            transport = getattr(getattr(self._request, "channel", None), "transport", None)
            await self._send(message)
            _flush(transport)
            return
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
