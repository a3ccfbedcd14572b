"""Giving memory back to the operating system after large task timelines.

A task that streams megabytes of tool values allocates its events' JSON (tens of KiB each)
from the C allocator and frees them once written and sent. glibc keeps freed memory inside its
heaps when small long-lived objects sit between the freed blocks, so without help a process's
RSS stays at its high-water mark after such tasks: ten 12 MB timelines left about 190 MiB in
the process long after their streams were gone, all of it free inside glibc. ``malloc_trim(0)``
hands those free pages back (``madvise``), bringing the process back to within a few MiB of
where it started.

The hubs count the bytes of the events they hand out (:func:`churned`); each lease keeper round
(every quarter of ``TASK_LEASE``) calls :func:`trim_if_due`, which trims once at least
:data:`TRIM_AFTER` bytes went through since the last trim, and once more when the traffic
stops. Elsewhere than glibc this does nothing.

:func:`tune_gc` raises the cyclic garbage collector's first threshold (``GC_GEN0_THRESHOLD``):
a burst of streams allocates tens of thousands of long-lived objects a second, and with
CPython's default of 700 the collector walks the whole heap again and again while they arrive
(a third of the event loop's time in a burst of 1,000 streams, docs/benchmarks.md).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging
import time
from collections.abc import Callable
from typing import Final

__all__ = ["TRIM_AFTER", "churned", "released", "trim", "trim_if_due", "tune_gc"]

logger = logging.getLogger(__name__)

TRIM_AFTER: Final = 16 * 1024 * 1024
"""Bytes of events handed out since the last trim that make the next keeper round trim."""

QUIET_ROUNDS: Final = 2
"""Keeper rounds without activity after which the memory freed since is given back."""

_since_trim = 0
"""Bytes of events handed out since the last trim."""
_active = False
"""Something used or freed memory since the last quiet trim."""
_quiet_rounds = 0


def _load_malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        function = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None  # not glibc (musl, macOS): nothing to do
    function.argtypes = [ctypes.c_size_t]
    function.restype = ctypes.c_int
    return function


_malloc_trim = _load_malloc_trim()


def churned(nbytes: int) -> None:
    """``nbytes`` of event data went through this process (and will be freed)."""
    global _since_trim, _active, _quiet_rounds
    _since_trim += nbytes
    _active = True
    _quiet_rounds = 0


def released() -> None:
    """Memory was let go (a task's events, a stream's buffers): trim once things are quiet."""
    global _active, _quiet_rounds
    _active = True
    _quiet_rounds = 0


def trim() -> bool:
    """Give the C allocator's free memory back to the OS now; False where there is no
    ``malloc_trim``."""
    global _since_trim
    _since_trim = 0
    if _malloc_trim is None:
        return False
    started = time.perf_counter()
    _malloc_trim(0)
    logger.debug("malloc_trim took %.1f ms", (time.perf_counter() - started) * 1000)
    return True


def trim_if_due() -> bool:
    """Called every keeper round: :func:`trim` when at least :data:`TRIM_AFTER` bytes went
    through since the last trim, and when there was activity and then none for
    :data:`QUIET_ROUNDS` rounds (the tasks are over, their memory freed: give it back)."""
    global _active, _quiet_rounds
    if _since_trim >= TRIM_AFTER:
        return trim()
    if not _active:
        return False
    _quiet_rounds += 1
    if _quiet_rounds < QUIET_ROUNDS:
        return False
    _active = False
    _quiet_rounds = 0
    return trim()


def tune_gc(threshold: int | None) -> bool:
    """Raise the collector's generation-0 threshold to ``threshold``; never lower it.

    Leaves the collector alone when ``threshold`` is None, when the collector is disabled, or
    when the threshold is already at least that high (the site set its own). Returns whether
    it changed anything. Called by ``a2a_toolcall.asgi.wrap()`` (``get_asgi_application()``) and
    ``manage.py a2a_worker`` with the ``GC_GEN0_THRESHOLD`` setting.
    """
    if threshold is None or not gc.isenabled():
        return False
    first, *rest = gc.get_threshold()
    if first >= threshold:
        return False
    gc.set_threshold(threshold, *rest)
    logger.debug("gc generation-0 threshold raised from %d to %d", first, threshold)
    return True
