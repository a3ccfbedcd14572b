"""uvicorn, with a census of the process's objects on ``SIGUSR2`` (for ``bench.floor``).

    python -m bench.census_server <uvicorn's arguments>

On ``SIGUSR2`` the process collects its garbage, counts the objects the collector tracks by
type (coroutines and async generators by their function, tasks by their coroutine's), adds up
their ``sys.getsizeof`` (an instance's ``__dict__`` included), and writes the census as JSON
to the path in ``BENCH_CENSUS``, with a number added for each census (``<path>.1``, ...).
Objects the collector does not track (strings, bytes, numbers) are not counted: they are in
the RSS ``bench.floor`` reports, not in the census.
"""

from __future__ import annotations

import asyncio
import collections
import gc
import json
import os
import signal
import sys
import types
from typing import Any

_taken = 0


def _kind(obj: Any) -> str:
    kind = type(obj)
    name = f"{kind.__module__}.{kind.__qualname__}"
    if isinstance(obj, types.CoroutineType):
        return f"{name} {obj.cr_code.co_qualname}"
    if isinstance(obj, types.AsyncGeneratorType):
        return f"{name} {obj.ag_code.co_qualname}"
    if isinstance(obj, asyncio.Task):
        code = getattr(obj.get_coro(), "cr_code", None)
        return f"{name} {code.co_qualname if code is not None else '?'}"
    return name


def census() -> dict[str, dict[str, int]]:
    """Every object the collector tracks, by kind: how many, and their bytes."""
    gc.collect()
    counts: collections.Counter[str] = collections.Counter()
    sizes: collections.Counter[str] = collections.Counter()
    for obj in gc.get_objects():
        kind = _kind(obj)
        counts[kind] += 1
        size = sys.getsizeof(obj)
        if not isinstance(obj, type):
            try:
                # Not getattr: a class may answer attribute reads with anything (or raise).
                own = object.__getattribute__(obj, "__dict__")
            except Exception:
                own = None
            if type(own) is dict:
                size += sys.getsizeof(own)
        sizes[kind] += size
    return {"count": dict(counts), "bytes": dict(sizes)}


def _on_signal(signum: int, frame: Any) -> None:
    global _taken
    _taken += 1
    path = f"{os.environ['BENCH_CENSUS']}.{_taken}"
    data: dict[str, Any]
    try:
        data = census()
    except Exception as exc:  # a census must never take the server down
        data = {"error": repr(exc)}
    with open(path + ".tmp", "w") as out:
        json.dump(data, out)
    os.replace(path + ".tmp", path)


def main() -> None:
    if os.environ.get("BENCH_CENSUS"):
        signal.signal(signal.SIGUSR2, _on_signal)
    import uvicorn.main

    sys.argv = ["uvicorn", *sys.argv[1:]]
    uvicorn.main.main()


if __name__ == "__main__":
    main()
