"""``DB_THREAD_NICE`` measured: the database thread at the process's priority and lowered.

The benchmark's paced load (C concurrent ``bench k=50 pad=200`` streams over N tasks) against
fresh servers of ``bench.run``'s targets, every server pinned to core 0 and this client to
core 1, alternating the nice values given (``0``: the setting off) within each repetition:

- ``alone``: one server process on the core (the deployment the setting is for);
- ``shared``: two server processes of the same target on the one core, loaded together with
  C/2 streams each (several busy processes per core: where it costs the tail).

Prints one JSON line per server and run: frames/s, server CPU ms per 1,000 frames,
emit->receive p50 and p99.

    python -m bench.priority                            # alone, uvicorn and daphne, 0 and 10
    python -m bench.priority --mode shared --targets app-uvicorn --nice 0 10
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from bench.run import Config, Target, load_on, measure_load, start, stop, targets


def _with_nice(name: str, nice: int) -> Target:
    target = targets([name])[0]
    if nice:
        target.env = {**target.env, "A2A_DEMO_DB_THREAD_NICE": str(nice)}
    return target


async def _loaded(servers: list[Target], cfg: Config, concurrency: int) -> list[dict[str, Any]]:
    # A short warm-up first (the servers' first tasks start their runtimes), then the load.
    await asyncio.gather(
        *(load_on(t, concurrency=concurrency, tasks=20, k=cfg.k, pad=cfg.pad) for t in servers)
    )
    return list(
        await asyncio.gather(*(measure_load(t, cfg, concurrency, cfg.tasks) for t in servers))
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--targets", nargs="*", default=["app-uvicorn", "app-daphne"])
    parser.add_argument("--nice", nargs="*", type=int, default=[0, 10])
    parser.add_argument("--mode", choices=("alone", "shared"), default="alone")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--concurrency", "-c", type=int, default=32)
    parser.add_argument("--tasks", "-n", type=int, default=200)
    args = parser.parse_args()
    cores = (0, 1) if len(os.sched_getaffinity(0)) >= 2 else None
    if cores:
        os.sched_setaffinity(0, {cores[1]})
    servers_per_run = 2 if args.mode == "shared" else 1
    concurrency = args.concurrency // servers_per_run
    tasks = args.tasks // servers_per_run
    cfg = Config(concurrency, tasks, 50, 200, 1, 0, [], 60)
    workdir = Path(tempfile.mkdtemp(prefix="a2a-priority-"))
    try:
        for rep in range(args.reps):
            for name in args.targets:
                for nice in args.nice:
                    servers = [_with_nice(name, nice) for _ in range(servers_per_run)]
                    try:
                        for server in servers:
                            start(server, workdir, cores[0] if cores else None)
                        figures = asyncio.run(_loaded(servers, cfg, concurrency))
                    finally:
                        for server in servers:
                            stop(server)
                    for i, f in enumerate(figures):
                        row = {
                            "target": name,
                            "mode": args.mode,
                            "nice": nice,
                            "rep": rep,
                            "server": i,
                            "frames_per_s": round(f["frames_per_s"]),
                            "cpu_ms_per_1000_frames": round(f["cpu_ms_per_1000_frames"], 1),
                            "emit_to_receive_p50_ms": round(f["emit_to_receive_p50_ms"], 1),
                            "emit_to_receive_p99_ms": round(f["emit_to_receive_p99_ms"], 1),
                        }
                        print(json.dumps(row), flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
