"""The floor under this app: a plain Django streaming response on the same site, beside the
app and the raw ASGI ceiling, for what does not depend on the frame path: the first event of
a request at a time, and what an idle open stream holds.

Three servers under uvicorn, one after the other, each pinned to one core and driven from
this process on the other:

- ``app``: the demo site (``project.asgi``), its in-memory layer and SQLite, the A2A endpoint:
  the task stored, the agent run in the web process, the recorder, the stream;
- ``floor``: the same site, handler, middleware and server, the same request, answered by a
  plain Django ``StreamingHttpResponse`` that writes the Task and one tool frame, then sleeps
  for the request's ``hold`` (``bench.floor_urls``): what Django's request and streaming
  response cost, whatever an app does with them;
- ``raw``: the raw ASGI ceiling (``bench.raw_asgi``).

Per server:

- **first event at C=1**: ``--c1`` requests one after another (``bench k=1 pad=200``; the
  floor's ``bench hold=0``), from sending the request to the first SSE event (the Task), the
  median after the first ten;
- **idle streams**: S ``bench hold=<H>`` streams opened at once and held (after a few streams
  served first: what the server makes once, on its first requests, is out of these figures,
  unlike ``bench.run``'s bursts on a fresh server); a second after they opened, the growth of
  the server's RSS per stream held and, from a census of the objects its garbage collector
  tracks (``bench.census_server``), how many objects and bytes (``sys.getsizeof``, an
  instance's ``__dict__`` included) each stream holds, by kind: with ``--objects N`` the N
  largest kinds per server. Strings, bytes and numbers are not in the census (only in the
  RSS), nor is the allocator's own overhead.

    python -m bench.floor                      # 1,000 streams per server, about a minute
    python -m bench.floor --streams 500 --objects 30 --targets app floor
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from bench.load import HEADERS, open_burst, request_body
from bench.run import ROOT, free_port, rss_kib, threads, uvicorn_options

TARGETS = {
    "app": ("project.settings", "project.asgi:application", "/a2a/", "bench k=1 pad=200"),
    "floor": ("bench.floor_settings", "project.asgi:application", "/floor/", "bench hold=0"),
    "raw": ("project.settings", "bench.raw_asgi:app", "/a2a/", "bench k=1 pad=200"),
}
"""name -> (DJANGO_SETTINGS_MODULE, ASGI application, the streams' path, a C=1 request)."""
C1_SKIPPED = 10
WARM_STREAMS = 20
SETTLE_S = 1.0


@dataclass
class Server:
    name: str
    process: subprocess.Popen[bytes]
    port: int
    census: Path
    censuses: int = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def take_census(self) -> dict[str, Any]:
        """The server's census now (it collects its garbage first)."""
        self.censuses += 1
        path = Path(f"{self.census}.{self.censuses}")
        self.process.send_signal(signal.SIGUSR2)
        deadline = time.monotonic() + 60
        while not path.exists():
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError(f"{self.name}: no census")
            time.sleep(0.05)
        data: dict[str, Any] = json.loads(path.read_text())
        if "error" in data:
            raise RuntimeError(f"{self.name}: census failed: {data['error']}")
        return data


def _pinned(core: int) -> Any:
    def setup() -> None:
        os.sched_setaffinity(0, {core})
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 16384)), hard))

    return setup


@contextlib.contextmanager
def serving(name: str, workdir: Path, core: int) -> Iterator[Server]:
    settings_module, application, _, _ = TARGETS[name]
    env = {
        **os.environ,
        "PYTHONUNBUFFERED": "1",
        "DJANGO_SETTINGS_MODULE": settings_module,
        "A2A_DEMO_AGENT": "bench",
        "DJANGO_DEBUG": "0",
        "DATABASE_PATH": str(workdir / f"{name}.sqlite3"),
        "BENCH_CENSUS": str(workdir / f"{name}.census"),
    }
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v0", "--skip-checks"],
        cwd=ROOT,
        env=env,
        check=True,
    )
    port = free_port()
    log = (workdir / f"{name}.log").open("ab")
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.census_server", *uvicorn_options(port, application)],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=log,
        preexec_fn=_pinned(core),
    )
    server = Server(name, process, port, workdir / f"{name}.census")
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{name} did not come up: see {log.name}")
            with contextlib.suppress(httpx.HTTPError):
                httpx.get(server.base + "/.well-known/agent-card.json", timeout=2)
                break
            time.sleep(0.2)
        yield server
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def _diff(
    before: dict[str, dict[str, int]], after: dict[str, dict[str, int]], held: int
) -> dict[str, Any]:
    kinds = {}
    for kind, size in after["bytes"].items():
        grown = size - before["bytes"].get(kind, 0)
        count = after["count"][kind] - before["count"].get(kind, 0)
        if grown or count:
            kinds[kind] = {"bytes": grown / held, "count": count / held}
    return kinds


async def first_events(endpoint: str, text: str, requests: int) -> list[float]:
    """``requests`` streams of ``text`` one after another, each read to its end: the ms from
    sending each request to its first SSE event."""
    times = []
    async with httpx.AsyncClient(timeout=30) as http:
        for _ in range(requests):
            body = request_body(text)
            began = time.perf_counter()
            first: float | None = None
            async with http.stream("POST", endpoint, content=body, headers=HEADERS) as response:
                if response.status_code != 200:
                    raise RuntimeError(f"{endpoint}: HTTP {response.status_code}")
                seen = b""
                async for chunk in response.aiter_raw():
                    if first is None:
                        seen += chunk
                        if b"\n\n" in seen:  # the end of the first event
                            first = (time.perf_counter() - began) * 1000
            if first is None:
                raise RuntimeError(f"{endpoint}: a stream without an event")
            times.append(first)
    return times


async def measure(
    name: str, streams: int, hold: float, deadline: float, c1: int, workdir: Path, core: int
) -> dict[str, Any]:
    path, c1_text = TARGETS[name][2], TARGETS[name][3]
    with serving(name, workdir, core) as server:
        endpoint = server.base + path
        c1_times = (await first_events(endpoint, c1_text, C1_SKIPPED + c1))[C1_SKIPPED:]
        warm = await open_burst(endpoint, WARM_STREAMS, 1, deadline)
        await asyncio.sleep(2.5)
        await warm.close()
        await asyncio.sleep(1)
        before = server.take_census()
        rss0, threads0 = rss_kib(server.process.pid), threads(server.process.pid)
        burst = await open_burst(endpoint, streams, hold, deadline)
        try:
            await asyncio.sleep(SETTLE_S)
            held = burst.held()
            rss1, threads1 = rss_kib(server.process.pid), threads(server.process.pid)
            after = server.take_census() if held else before
        finally:
            await burst.close()
    kinds = _diff(before, after, held) if held else {}
    return {
        "target": name,
        "streams": streams,
        "held": held,
        "failures": burst.failures(),
        "rss_kib_per_stream": (rss1 - rss0) / held if held else None,
        "threads_added": threads1 - threads0,
        "objects_per_stream": sum(k["count"] for k in kinds.values()),
        "tracked_kib_per_stream": sum(k["bytes"] for k in kinds.values()) / 1024,
        "tasks_per_stream": sum(
            k["count"] for kind, k in kinds.items() if kind.startswith("_asyncio.Task")
        ),
        "first_event_c1_p50_ms": statistics.median(c1_times),
        "kinds": kinds,
    }


def report(results: list[dict[str, Any]], objects: int) -> str:
    lines = [
        "| target | first event p50 ms, C=1 | held | RSS KiB per stream | objects per stream "
        "| their KiB | tasks per stream | threads added |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        rss = "-" if r["rss_kib_per_stream"] is None else f"{r['rss_kib_per_stream']:.1f}"
        lines.append(
            f"| {r['target']} | {r['first_event_c1_p50_ms']:.2f} | {r['held']}/{r['streams']} "
            f"| {rss} | "
            f"{r['objects_per_stream']:.0f} | {r['tracked_kib_per_stream']:.1f} | "
            f"{r['tasks_per_stream']:.1f} | {r['threads_added']} |"
        )
        if r["failures"]:
            lines.append(f"| | | failures: {r['failures']} | | | | | |")
    for r in results if objects else ():
        lines += ["", f"{r['target']}: the {objects} largest kinds of object per stream held", ""]
        lines += ["| bytes | count | kind |", "|---|---|---|"]
        largest = sorted(r["kinds"].items(), key=lambda item: -item[1]["bytes"])[:objects]
        lines += [f"| {k['bytes']:.0f} | {k['count']:.2f} | `{kind}` |" for kind, k in largest]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--targets", nargs="*", choices=sorted(TARGETS), default=["app", "floor", "raw"]
    )
    parser.add_argument("--streams", "-s", type=int, default=1000)
    parser.add_argument("--hold-seconds", type=float, default=60)
    parser.add_argument(
        "--deadline", type=float, default=30, help="seconds for the streams to open"
    )
    parser.add_argument(
        "--objects", type=int, default=0, help="list the N largest kinds per target"
    )
    parser.add_argument("--c1", type=int, default=50, help="requests one at a time, measured")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    cores = sorted(os.sched_getaffinity(0))
    server_core, client_core = cores[0], cores[-1]
    os.sched_setaffinity(0, {client_core})
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 16384)), hard))
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.targets:
            result = asyncio.run(
                measure(
                    name,
                    args.streams,
                    args.hold_seconds,
                    args.deadline,
                    args.c1,
                    Path(tmp),
                    server_core,
                )
            )
            print(
                f"{name}: first event at C=1 {result['first_event_c1_p50_ms']:.2f} ms, "
                f"{result['held']}/{args.streams} held, "
                f"{result['rss_kib_per_stream'] or 0:.1f} KiB RSS per stream",
                flush=True,
            )
            results.append(result)
    print()
    print(report(results, args.objects))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
