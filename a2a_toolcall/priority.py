"""The OS priority of the thread that does the app's batched database work (opt-in).

The app's writes that are not a request's own (the journal's batches of every task's events,
the group-committed inserts of new tasks, the runtime's claims, the lease renewals) run in one
thread, asgiref's shared thread (``sync_to_async(thread_sensitive=True)`` outside a request).
It shares the process's GIL with the event loop, and where the process has one core to itself
it shares that core too: while SQLite or psycopg work without the GIL, the kernel gives the
thread and the loop half the core each, and the streams wait.

``DB_THREAD_NICE`` (None by default) raises that thread's nice value by its amount when the ASGI
application is built (``a2a_toolcall.asgi.wrap()``): the loop then has the core whenever both
want it, the database work runs in the gaps and finds larger batches waiting. Measured on a
process alone on its core (docs/benchmarks.md, "The database thread's priority"): 14-20% less
CPU per tool frame, 10-22% more frames per second, a lower emit->receive p50, the p99 about the
same. Where several busy processes share a core it costs the tail instead: the thread may be
holding its process's GIL when the kernel prefers another process's loop, and its own loop
waits for it (emit->receive p99 28-63 ms against 22-34 ms, two processes on one core). Hence
opt-in: for a deployment of one server process per core.

Linux only: there a thread's nice value is its own (``setpriority`` on its thread id).
Elsewhere it is the whole process's, so nothing is changed and a warning is logged. An
unprivileged process may raise a thread's nice value but not lower it again.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from concurrent.futures import Future
from typing import Final

__all__ = ["MAX_NICE", "lower_database_thread_priority", "thread_nice"]

logger = logging.getLogger(__name__)

MAX_NICE: Final = 19
"""The highest nice value Linux has: larger sums stop there."""

_lowered: set[int] = set()
"""Native ids of the threads already lowered (wrap() may run more than once)."""


def thread_nice(native_id: int) -> int:
    """The nice value of the thread ``native_id`` of this process (Linux)."""
    return os.getpriority(os.PRIO_PROCESS, native_id)


def _lower_this_thread(by: int) -> tuple[int, int, int] | None:
    native_id = threading.get_native_id()
    if native_id in _lowered:
        return None
    try:
        before = thread_nice(native_id)
        after = min(MAX_NICE, before + by)
        if after != before:
            os.setpriority(os.PRIO_PROCESS, native_id, after)
    except OSError as exc:
        logger.warning("could not lower the database thread's priority: %s", exc)
        return None
    _lowered.add(native_id)
    logger.info("database thread %d: nice %d -> %d (DB_THREAD_NICE)", native_id, before, after)
    return native_id, before, after


def lower_database_thread_priority(
    by: int | None,
) -> Future[tuple[int, int, int] | None] | None:
    """Raise the nice value of asgiref's shared thread by ``by`` (at most to 19).

    The change is made by that thread itself, as its next piece of work (starting it if
    asgiref has not yet: it is one long-lived thread either way). Nothing waits for it, so
    this may be called from anywhere, that thread included (an ASGI module imported by sync
    code run through ``sync_to_async``). Returns that work's future, whose result is
    ``(native thread id, nice before, nice after)``, or None when the thread was lowered
    already or the system refused (logged); returns None at once when there is nothing to do:
    ``by`` is None or not positive, or the platform is not Linux (a warning is logged).
    """
    if by is None or isinstance(by, bool) or not isinstance(by, int) or by <= 0:
        return None
    if not sys.platform.startswith("linux"):
        logger.warning(
            "DB_THREAD_NICE is set but only works on Linux (a thread's own nice value): "
            "nothing was changed"
        )
        return None
    from asgiref.sync import SyncToAsync

    return SyncToAsync.single_thread_executor.submit(_lower_this_thread, by)
