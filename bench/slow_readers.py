"""Slow readers: what the web process holds while clients stop reading, and after they leave.

For each server (daphne with ``a2a_toolcall.asgi.FlowControl`` as ``project.asgi`` serves it,
and uvicorn), the demo's test settings on the in-memory layer and SQLite, the ``firehose``
agent (400 tool calls of 30 KB results: a 12 MB timeline per task):

1. ``cold``: the web process's RSS after one small task;
2. ``read``: ten 12 MB tasks whose clients read them as they come, then a quiet moment;
3. ``stuck``: ten more whose clients stop reading after the first event, once the tasks are done;
4. ``left``: after those clients read what they were sent (each stream was closed past
   ``STREAM_BUFFER_LIMIT``) and closed their connections.

Each figure is the RSS and the bytes Python has allocated (tracemalloc, tests/traced_asgi.py),
once they stop going down (up to 90 s). Run::

    python -m bench.slow_readers [--limit BYTES] [--arena-max N]

``--arena-max`` sets ``MALLOC_ARENA_MAX`` in the servers' environment.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from tests.live import LiveServer, live_server
from tests.test_slow_readers import CALLS, SLOW_CLIENTS, SlowClient, run_readers, traced


def rss(server: LiveServer) -> float:
    for line in Path(f"/proc/{server.processes[0].pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def settled(server: LiveServer) -> tuple[float, float]:
    """(RSS, traced) in MiB once the Python heap has stopped going down for two checks in a
    row, 5 s apart (a finished task's events are let go within RETAIN_AFTER_RESPONSE, 30 s),
    and then the RSS too (the keeper gives freed memory back a few seconds later): 90 s at
    most."""
    deadline = time.monotonic() + 90
    last, steady = traced(server), 0
    while steady < 2 and time.monotonic() < deadline:
        time.sleep(5)
        now = traced(server)
        steady = steady + 1 if now >= last - 0.5 else 0
        last = min(last, now)
    resident = rss(server)
    while time.monotonic() < deadline:
        time.sleep(3)
        now = rss(server)
        if now >= resident - 1:
            break
        resident = now
    return rss(server), traced(server)


def measure(http: str, limit: int, arena_max: str | None) -> dict[str, tuple[float, float]]:
    env = {"A2A_TEST_AGENT": "firehose", "A2A_TEST_STREAM_BUFFER": str(limit)}
    if arena_max:
        env["MALLOC_ARENA_MAX"] = arena_max
    figures: dict[str, tuple[float, float]] = {}
    with (
        tempfile.TemporaryDirectory() as tmp,
        live_server(
            "memory", Path(tmp), http=http, app="tests.traced_asgi:application", **env
        ) as server,
    ):
        warm = SlowClient(server, "3")
        warm.read_to_end()
        warm.close()
        figures["cold"] = settled(server)
        run_readers(server, read=True)
        figures["read"] = settled(server)
        clients = run_readers(server, read=False)
        figures["stuck"] = settled(server)
        closed = 0
        for client in clients:
            closed += b": closed: this client fell more than" in client.read_to_end()
            client.close()
        figures["left"] = settled(server)
        figures["closed streams"] = (float(closed), float(len(clients)))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=1024 * 1024, help="STREAM_BUFFER_LIMIT")
    parser.add_argument("--arena-max", default=None, help="MALLOC_ARENA_MAX for the servers")
    args = parser.parse_args()
    print(
        f"{SLOW_CLIENTS} clients x {CALLS} calls of 30 KB, STREAM_BUFFER_LIMIT={args.limit}, "
        f"MALLOC_ARENA_MAX={args.arena_max or 'unset'}"
    )
    for http in ("daphne", "uvicorn"):
        figures = measure(http, args.limit, args.arena_max)
        closed, total = figures.pop("closed streams")
        cold_rss, cold_traced = figures["cold"]
        print(f"\n{http}: {closed:.0f}/{total:.0f} slow streams closed past the limit")
        print(f"  {'':8} {'RSS MiB':>9} {'vs cold':>8} {'Python MiB':>11} {'vs cold':>8}")
        for name, (resident, python) in figures.items():
            print(
                f"  {name:8} {resident:9.1f} {resident - cold_rss:+8.1f} "
                f"{python:11.1f} {python - cold_traced:+8.1f}"
            )


if __name__ == "__main__":
    main()
