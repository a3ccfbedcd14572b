"""What one sync call from the event loop costs the loop: a one-thread pool vs ``_Lane``.

Django runs every sync middleware hook of an async request through ``sync_to_async`` (a dozen
hops a request with startproject's middleware), so the event loop's share of a hop is paid
a dozen times per request in a burst. This times ``--hops`` calls of a trivial function through
``sync_to_async`` with each executor, ``serial`` (one after another) and ``concurrent``
(``--width`` in flight at once, as a burst has them), and prints the event loop's CPU time per
hop (``time.thread_time`` of the loop's thread: what the lane's own thread spends is not in
it) and the wall time per hop.

    taskset -c 0 python -m bench.hops --hops 20000
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor

from asgiref.sync import SyncToAsync

from a2a_toolcall.asgi import _Lane


def _nothing() -> int:
    return 1


async def _serial(call: Callable[[], object], hops: int) -> None:
    for _ in range(hops):
        await call()  # type: ignore[misc]


async def _concurrent(call: Callable[[], object], hops: int, width: int) -> None:
    async def one(count: int) -> None:
        for _ in range(count):
            await call()  # type: ignore[misc]

    await asyncio.gather(*(one(hops // width) for _ in range(width)))


def _measure(executor: Executor, hops: int, width: int, mode: str) -> tuple[float, float]:
    call = SyncToAsync(_nothing, thread_sensitive=False, executor=executor)

    async def main() -> tuple[float, float]:
        await _serial(call, 200)  # warm the thread and the code paths
        cpu, wall = time.thread_time(), time.perf_counter()
        if mode == "serial":
            await _serial(call, hops)
        else:
            await _concurrent(call, hops, width)
        return time.thread_time() - cpu, time.perf_counter() - wall

    cpu, wall = asyncio.run(main())
    return cpu / hops * 1e6, wall / hops * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hops", type=int, default=20_000)
    parser.add_argument("--width", type=int, default=100, help="calls in flight at once")
    parser.add_argument("--repeat", type=int, default=3, help="median of this many runs")
    args = parser.parse_args()
    executors: dict[str, Callable[[], Executor]] = {
        "ThreadPoolExecutor(max_workers=1)": lambda: ThreadPoolExecutor(max_workers=1),
        "_Lane": lambda: _Lane("bench-lane"),
    }
    print(f"{'executor':<36} {'mode':<11} {'loop CPU us/hop':>16} {'wall us/hop':>12}")
    for mode in ("serial", "concurrent"):
        for name, make in executors.items():
            cpus, walls = [], []
            for _ in range(args.repeat):
                executor = make()
                try:
                    cpu, wall = _measure(executor, args.hops, args.width, mode)
                finally:
                    executor.shutdown(wait=True)
                cpus.append(cpu)
                walls.append(wall)
            print(
                f"{name:<36} {mode:<11} {statistics.median(cpus):>16.1f}"
                f" {statistics.median(walls):>12.1f}"
            )


if __name__ == "__main__":
    main()
