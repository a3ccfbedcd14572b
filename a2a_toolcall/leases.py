"""Leases: how every process learns, within seconds, that a task's runtime or recorder is gone.

Two leases sit on each running task's row (``TASK_LEASE`` seconds each):

- the **runtime lease**, taken by the claim and renewed by the runtime running the task;
- the **recorder lease**, taken when the task is created and renewed by the server process that
  records it (the single writer of its log).

One :class:`Keeper` per event loop (the web process's, a worker's) renews the leases of what
runs and records there every quarter of ``TASK_LEASE``, and reaps: for every running task with
an expired lease,

- recorded here, its runtime's lease expired: the recorder is told; it parks the task (waiting
  for input with a checkpoint), runs it again (a retry-safe agent, once) or fails it, closing
  every open tool call as failed (:meth:`~a2a_toolcall.recorder.Recorder.lease_expired`);
- recorded by a process whose own lease expired (that process is gone): this process takes
  over in the database: it parks the task, or fails it with its open calls closed, and tells
  its runtime, if one still runs it, to stop (:func:`~a2a_toolcall.recorder.settle_abandoned`);
- recorded by a live process elsewhere: left to that process.

A runtime whose renewal finds a task no longer held (failed or taken over elsewhere) stops
running it: a task never runs in two places, nor after it was ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from typing import TYPE_CHECKING, Final

from a2a_toolcall import memory, store
from a2a_toolcall.recorder import live_recorders, recorder_for, settle_abandoned

if TYPE_CHECKING:
    from a2a_toolcall.runtime.runner import Runtime

__all__ = ["PROCESS_ID", "Keeper", "ensure_keeper", "keeper_for_loop"]

logger = logging.getLogger(__name__)

PROCESS_ID: Final = store.PROCESS_ID
"""This process, as the recorder leases name it."""

ERROR_LOG_EVERY: Final = 60.0
"""Seconds between two logged failures of the keeper (the database down, say)."""


class Keeper:
    """Renews this loop's leases and reaps expired ones, every quarter of ``TASK_LEASE``."""

    def __init__(self) -> None:
        self.runtimes: weakref.WeakSet[Runtime] = weakref.WeakSet()
        self._task: asyncio.Task[None] | None = None
        self._last_error = -float("inf")
        self.reaped = 0
        """Tasks this keeper parked, failed or handed to their recorder (for tests, metrics)."""

    @property
    def interval(self) -> float:
        return max(0.05, store.lease_seconds() / 4)

    def add_runtime(self, runtime: Runtime) -> None:
        self.runtimes.add(runtime)

    def start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.interval)
            try:
                await self.tick()
            except Exception:
                if loop.time() - self._last_error >= ERROR_LOG_EVERY:
                    self._last_error = loop.time()
                    logger.exception("could not renew or check task leases; trying again")

    async def tick(self) -> None:
        """One round: renew, reap, let idle runtimes pick up waiting work."""
        if live_recorders():
            await store.renew_recorder_leases(PROCESS_ID)
        for runtime in list(self.runtimes):
            await runtime.renew_leases()
        await self.reap()
        for runtime in list(self.runtimes):
            await runtime.pick_up_waiting()
        memory.trim_if_due()

    async def reap(self) -> int:
        """Act on every running task whose lease expired (see the module's docs)."""
        acted = 0
        for expired in await store.expired_leases():
            recorder = recorder_for(expired.task_id)
            if recorder is not None:
                if expired.runtime_expired:
                    await recorder.lease_expired()
                    acted += 1
                continue
            if expired.recorder_expired and await settle_abandoned(expired):
                acted += 1
        self.reaped += acted
        return acted


_KEEPERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Keeper] = weakref.WeakKeyDictionary()


def keeper_for_loop() -> Keeper | None:
    """This loop's keeper, if one was started."""
    return _KEEPERS.get(asyncio.get_running_loop())


def ensure_keeper() -> Keeper:
    """This loop's keeper, started if it was not (the views and the runtime call it)."""
    loop = asyncio.get_running_loop()
    keeper = _KEEPERS.get(loop)
    if keeper is None:
        keeper = _KEEPERS[loop] = Keeper()
    keeper.start()
    return keeper
