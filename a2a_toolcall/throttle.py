"""Limits per caller: a request rate (``RATE_LIMIT``) and tasks running at once
(``MAX_RUNNING_TASKS_PER_OWNER``), both refused with HTTP 429, ``Retry-After`` and a JSON-RPC
error body.

The rate is counted in fixed windows in Django's cache (``THROTTLE_CACHE``): a cache every
process shares (Redis, Memcached, the database) makes it one limit for the site; the default
local-memory cache makes it one limit per process. The running-task cap reads the task rows,
so it holds across every process.
"""

from __future__ import annotations

import math
import re
import time
from functools import cache
from typing import Final

from django.core.cache import caches

from a2a_toolcall import models as orm
from a2a_toolcall.auth import Caller
from a2a_toolcall.conf import get_setting
from a2a_toolcall.protocol import jsonrpc
from a2a_toolcall.protocol.models import TaskState
from a2a_toolcall.store import Owner

__all__ = ["RUNNING_RETRY_AFTER", "check_rate", "check_running", "parse_rate"]

PERIODS: Final = {
    "s": 1,
    "sec": 1,
    "second": 1,
    "m": 60,
    "min": 60,
    "minute": 60,
    "h": 3600,
    "hour": 3600,
    "d": 86400,
    "day": 86400,
}
RUNNING_RETRY_AFTER: Final = 5
"""Seconds a caller at its running-task cap is told to wait."""
_RATE = re.compile(r"^\s*(\d+)\s*/\s*(\d*)\s*([a-z]+)\s*$")
RUNNING_STATES: Final = (TaskState.SUBMITTED.value, TaskState.WORKING.value)


@cache
def parse_rate(rate: str) -> tuple[int, int]:
    """``"120/min"`` -> (120, 60); also ``10/s``, ``1000/hour``, ``5/10s``, ``50000/day``.

    Raises ValueError for anything else (system check E016 reports it at start-up).
    """
    match = _RATE.match(rate.lower())
    if match is None or match.group(3) not in PERIODS or int(match.group(1)) < 1:
        raise ValueError(
            f"{rate!r} is not a rate: write requests/period, e.g. '120/min', '10/s', '1000/hour'"
        )
    count, multiple, unit = match.groups()
    return int(count), (int(multiple) if multiple else 1) * PERIODS[unit]


def _too_many(message: str, retry_after: int, **metadata: object) -> jsonrpc.ResourceExhaustedError:
    error = jsonrpc.ResourceExhaustedError(
        message, metadata={**metadata, "retryAfter": retry_after}
    )
    error.headers = {"Retry-After": str(retry_after)}
    return error


async def check_rate(caller: Caller) -> None:
    """Count one request against the caller's ``RATE_LIMIT``; raise 429 past it."""
    rate = get_setting("RATE_LIMIT")
    if not rate:
        return
    limit, period = parse_rate(str(rate))
    now = time.time()
    window = int(now // period)
    key = f"a2a_toolcall:rate:{caller.throttle_key}:{period}:{window}"
    store = caches[str(get_setting("THROTTLE_CACHE"))]
    await store.aadd(key, 0, timeout=period + 1)
    try:
        count = await store.aincr(key)
    except ValueError:  # evicted between add and incr
        await store.aset(key, 1, timeout=period + 1)
        count = 1
    if count > limit:
        retry_after = max(1, math.ceil((window + 1) * period - now))
        raise _too_many(
            f"Too many requests: the limit is {rate} per caller; retry in {retry_after} s",
            retry_after,
            limit=str(rate),
        )


async def check_running(owner: Owner) -> None:
    """Refuse a new task when ``owner`` already has ``MAX_RUNNING_TASKS_PER_OWNER`` tasks
    submitted or working (tasks waiting for input do not count), in any tenant. An anonymous
    caller without a session is counted by its address."""
    cap = get_setting("MAX_RUNNING_TASKS_PER_OWNER")
    if cap is None:
        return
    running = owner.running(orm.Task.objects.filter(state__in=RUNNING_STATES))
    # Count no further than the cap.
    count = len([pk async for pk in running.values_list("pk", flat=True)[: int(cap)]])
    if count >= int(cap):
        raise _too_many(
            f"Too many running tasks: at most {cap} at once per caller; wait for one to finish",
            RUNNING_RETRY_AFTER,
            maxRunningTasks=int(cap),
        )
