"""Two asyncio primitives cheaper than the stdlib's for what each open stream holds.

A process holding a thousand idle streams holds a thousand of everything a stream keeps:
an ``asyncio.Event`` is 860 bytes (its deque of waiters), an ``asyncio.timeout`` around every
wait schedules and cancels a timer each time. :class:`Flag` is an event with at most one future,
made while someone waits; :class:`Alarm` keeps the deadline of a series of waits with one timer.
Stdlib only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

__all__ = ["Alarm", "Flag"]


class Flag:
    """``asyncio.Event``'s ``set``, ``clear``, ``is_set`` and ``wait``, with one future while
    anyone waits (the reader of a stream, the agent of a task) and none otherwise."""

    __slots__ = ("_set", "_waiter")

    def __init__(self) -> None:
        self._set = False
        self._waiter: asyncio.Future[None] | None = None

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        if self._set:
            return
        self._set = True
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def clear(self) -> None:
        self._set = False

    async def wait(self) -> None:
        """Until the flag is set."""
        while not self._set:
            waiter = self._waiter
            if waiter is None or waiter.done():
                waiter = self._waiter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is None or task.cancelling():
                    raise
                # Another waiter was cancelled, and the future all of them awaited with it.


class Alarm:
    """The deadline of the current wait of a series, kept by one timer rather than a timer per
    wait (a stream or a subscription waits thousands of times a minute, nearly always far
    less than its timeout).

    :meth:`set` arms it for a wait: ``ring`` is called once the deadline passes (unless
    :meth:`clear` came first). The timer is moved only when it fires before the current
    deadline, so a series of short waits with a 2 s timeout costs about one timer per 2 s.
    """

    __slots__ = ("_deadline", "_ring", "_timer")

    def __init__(self) -> None:
        self._deadline = 0.0
        self._ring: Callable[[], None] | None = None
        self._timer: asyncio.TimerHandle | None = None

    def set(
        self, loop: asyncio.AbstractEventLoop, deadline: float, ring: Callable[[], None]
    ) -> None:
        self._deadline = deadline
        self._ring = ring
        timer = self._timer
        if timer is not None and timer.when() > deadline:
            timer.cancel()
            timer = None
        if timer is None:
            self._timer = loop.call_at(deadline, self._fire, loop)

    def clear(self) -> None:
        """The wait ended: nothing rings (the timer, if any, fires later and finds that)."""
        self._ring = None

    def cancel(self) -> None:
        """No more waits: the timer goes."""
        self._ring = None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _fire(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = None
        ring = self._ring
        if ring is None:
            return
        if loop.time() >= self._deadline:
            self._ring = None
            ring()
        else:
            self._timer = loop.call_at(self._deadline, self._fire, loop)
