"""The journal: every recorder's writes in this process, committed together in batches.

A recorder hands each event to the journal as it happens and goes on; the journal writes what
all the tasks of this process produced in one transaction every ``FLUSH_INTERVAL`` (one
``bulk_create`` of events, one upsert of changed tool calls, one ``UPDATE`` per task row), in
asgiref's shared thread, off the streams' path. A recorder that must not hand an event out
before it is stored (a state change) awaits :meth:`Journal.commit`, which writes at once (after
the rest below, if a write just ended).

Between two writes the journal rests as long as the last write took (at most
``FLUSH_INTERVAL``), a commit included. A write takes a millisecond or two on an idle process,
so a lone commit barely waits; on a busy one the write shares the core and the GIL with the
event loop and takes tens of milliseconds, and the rest keeps the writes from following each
other back to back: each takes what gathered meanwhile, so the fixed cost of a write (its
transaction and commit, the update of each task's row) is paid half as often. Measured at 32
streams (docs/benchmarks.md): 10-17% less CPU per tool frame, a state change's write a few
milliseconds later.

A crash loses what was not yet written: at most ``FLUSH_INTERVAL`` seconds of events (plus the
write in flight), never a state change a client has seen.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import weakref
from collections.abc import Callable
from typing import Final, Protocol

from a2a_toolcall import store

__all__ = ["FLUSH_INTERVAL", "Journal", "JournalSource", "journal"]

logger = logging.getLogger(__name__)

FLUSH_INTERVAL: Final = 0.05
"""Seconds between batched writes while events keep coming."""


class JournalSource(Protocol):
    """What the journal asks a recorder for when it writes (in the event loop's thread)."""

    task_id: str

    def take_write(self) -> store.TaskWrite:
        """The events added since the last write, changed calls and changed row fields."""
        ...

    async def written(self, write: store.TaskWrite) -> None:
        """Called once ``write`` is committed (e.g. to notify other processes)."""
        ...


class Journal:
    """The batched writer of one event loop (see the module docstring)."""

    def __init__(self, interval: float = FLUSH_INTERVAL) -> None:
        self.interval = interval
        self._sources: dict[str, JournalSource] = {}
        self._waiters: list[asyncio.Future[None]] = []
        self._urgent = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def add(self, source: JournalSource) -> None:
        """``source`` has something to write: take it in the next batch."""
        self._sources.setdefault(source.task_id, source)
        if self._task is None:
            # A task of its own with a fresh context: it outlives the request that added the
            # first event, and must not use that request's thread-sensitive executor.
            self._task = asyncio.get_running_loop().create_task(
                self._drain(), context=contextvars.Context()
            )

    async def commit(self, source: JournalSource) -> None:
        """Write what ``source`` (and every other source) has so far, now; return when stored."""
        self.add(source)
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        self._urgent.set()
        await waiter

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        took = 0.0
        ended = loop.time()
        try:
            while self._sources:
                if not self._urgent.is_set():
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._urgent.wait(), self.interval)
                # Between two writes, a rest as long as the last one took (at most the
                # interval), also before a commit (see the module docstring).
                rest = min(took, self.interval) - (loop.time() - ended)
                if rest > 0:
                    await asyncio.sleep(rest)
                self._urgent.clear()
                sources, self._sources = self._sources, {}
                waiters, self._waiters = self._waiters, []
                started = loop.time()
                await self._write(list(sources.values()), waiters)
                ended = loop.time()
                took = ended - started
        finally:
            self._task = None
            # Cancelled (the loop is closing) with commits pending: they fail, not hang.
            for waiter in self._waiters:
                if not waiter.done():
                    waiter.set_exception(RuntimeError("the journal stopped before writing"))

    async def _write(
        self, sources: list[JournalSource], waiters: list[asyncio.Future[None]]
    ) -> None:
        writes = [source.take_write() for source in sources]
        try:
            await store.write_batch(writes)
        except Exception as exc:
            logger.exception("writing %d tasks' events failed", len(writes))
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_exception(exc)
            return
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
        for source, write in zip(sources, writes, strict=True):
            try:
                await source.written(write)
            except Exception:
                logger.exception("task %s: after-write notification failed", source.task_id)


_journals: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Journal] = (
    weakref.WeakKeyDictionary()
)


def journal(factory: Callable[[], Journal] = Journal) -> Journal:
    """The journal of the running event loop."""
    loop = asyncio.get_running_loop()
    found = _journals.get(loop)
    if found is None:
        found = _journals[loop] = factory()
    return found
