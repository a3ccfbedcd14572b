"""The benchmark: this app beside the official a2a-sdk server and a raw ASGI ceiling, in one run.

Starts every target server pinned to one core, drives them from this process pinned to the other
with ``bench.load`` (every stream verified), interleaving the repetitions so drift hits every
target alike, and measures each server's CPU from /proc. Then, per target and stream count S,
a burst: S idle streams (``bench hold=<H>``) fired at once on a fresh server (its first work, as
after a deploy), how many open within a deadline and how fast, the server's thread peak while
they open, and the memory and threads they cost once open. Writes ``docs/benchmarks.json`` and
the results tables in ``docs/benchmarks.md``; exits non-zero if a target is void or failed a
burst.

    python -m bench.run                      # the full run (about 15 minutes)
    python -m bench.run --smoke --out /tmp/b  # seconds: every target, tiny load
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg

from bench.load import LoadError, open_burst, run_load

ROOT = Path(__file__).resolve().parent.parent
CLOCK_TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")
PAGE_KIB = os.sysconf("SC_PAGE_SIZE") / 1024
MARK_START, MARK_END = "<!-- results -->", "<!-- /results -->"
SETTLE_S = 1.0  # after a burst has opened, before its memory and threads are read


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --- what /proc says about a process ------------------------------------------------------------


def cpu_ms(pid: int) -> float:
    """User + system CPU time of a process (all its threads), in ms."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * CLOCK_TICK_MS


SERVICES = ("postgres", "redis-server")


def service_cpu() -> dict[int, float]:
    """CPU ms of every PostgreSQL and Redis server process on the machine, by pid."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue  # gone meanwhile
        name = text[text.index("(") + 1 : text.rindex(")")]
        if name.startswith(SERVICES):
            fields = text.rsplit(")", 1)[1].split()
            found[int(stat.parent.name)] = (int(fields[11]) + int(fields[12])) * CLOCK_TICK_MS
    return found


def rss_kib(pid: int) -> float:
    """Resident memory of a process, in KiB."""
    return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE_KIB


def threads(pid: int) -> int:
    """Number of threads of a process."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    raise RuntimeError(f"no Threads line for {pid}")


class ThreadPeak:
    """The highest total thread count of some processes while the ``with`` block runs.

    A background thread reads ``Threads:`` from /proc/<pid>/status of every pid every
    ``interval`` seconds (a process that is gone counts 0); ``before`` is the first sample,
    taken on entry, ``peak`` the highest of all, ``samples`` how many were taken.
    """

    def __init__(self, pids: list[int], interval: float = 0.005) -> None:
        self.pids = pids
        self.interval = interval
        self.before = self.peak = self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="thread-peak", daemon=True)

    def sample(self) -> int:
        total = 0
        for pid in self.pids:
            try:
                with open(f"/proc/{pid}/status", "rb") as status:
                    text = status.read()
            except OSError:
                continue  # gone
            at = text.index(b"Threads:") + 8
            total += int(text[at : text.index(b"\n", at)])
        self.samples += 1
        self.peak = max(self.peak, total)
        return total

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def __enter__(self) -> ThreadPeak:
        self.before = self.peak = self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()


# --- targets ------------------------------------------------------------------------------------


@dataclass
class Target:
    """A server to measure: how to start it and what its processes are."""

    name: str
    label: str
    kind: str  # "app", "sdk", "raw"
    server: str  # "daphne", "uvicorn"
    env: dict[str, str] = field(default_factory=dict)
    workers: int = 0
    postgres: bool = False
    port: int = 0
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    database: str = ""
    logs: list[Path] = field(default_factory=list)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def endpoint(self) -> str:
        return self.base + "/a2a/"

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.processes]

    def cpu_ms(self) -> float:
        return sum(cpu_ms(pid) for pid in self.pids)

    def rss_kib(self) -> float:
        return sum(rss_kib(pid) for pid in self.pids)

    def threads(self) -> int:
        return sum(threads(pid) for pid in self.pids)


def targets(names: list[str] | None) -> list[Target]:
    app = {
        "DJANGO_SETTINGS_MODULE": "project.settings",
        "A2A_DEMO_AGENT": "bench",
        "DJANGO_DEBUG": "0",
    }
    every = [
        Target("app-daphne", "a2a-toolcall, daphne", "app", "daphne", dict(app)),
        Target("app-uvicorn", "a2a-toolcall, uvicorn", "app", "uvicorn", dict(app)),
        Target(
            "app-daphne-norec",
            "a2a-toolcall, daphne, recording off",
            "app",
            "daphne",
            {**app, "A2A_DEMO_RECORD_EVENTS": "0"},
        ),
        Target(
            "app-uvicorn-unpaced",
            "a2a-toolcall, uvicorn, pacing off",
            "app",
            "uvicorn",
            {**app, "A2A_DEMO_STREAM_PACING": "0"},
        ),
        Target(
            "app-uvicorn-pg",
            "a2a-toolcall, uvicorn, PostgreSQL",
            "app",
            "uvicorn",
            dict(app),
            postgres=True,
        ),
        Target(
            "app-redis-pg",
            "a2a-toolcall, daphne + 1 worker, Redis + PostgreSQL",
            "app",
            "daphne",
            {**app, "A2A_DEMO_REDIS": "redis://127.0.0.1:6379/0"},
            workers=1,
            postgres=True,
        ),
        Target("sdk", "official a2a-sdk 1.3.0, uvicorn", "sdk", "uvicorn"),
        Target("raw", "raw ASGI ceiling, uvicorn", "raw", "uvicorn"),
    ]
    if not names:
        return every
    known = {t.name: t for t in every}
    unknown = sorted(set(names) - set(known))
    if unknown:
        raise SystemExit(f"unknown targets {unknown}; known: {sorted(known)}")
    return [known[n] for n in names]


def _pin(core: int | None) -> Any:
    def setup() -> None:
        if core is not None:
            os.sched_setaffinity(0, {core})
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 16384)), hard))

    return setup


def uvicorn_options(port: int, application: str, *, lifespan: bool = False) -> list[str]:
    """uvicorn's arguments for a target: a backlog large enough for a burst, warnings only,
    no access log; the lifespan protocol off unless ``lifespan`` (Django's handler has none)."""
    return [
        "--port",
        str(port),
        "--backlog",
        "2048",
        *(() if lifespan else ("--lifespan", "off")),
        "--no-access-log",
        "--log-level",
        "warning",
        application,
    ]


def start(target: Target, workdir: Path, core: int | None) -> None:
    """Start the target's processes and wait until it answers."""
    target.port = free_port()
    target.logs = []
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **target.env}
    if target.kind == "app":
        if target.postgres:
            target.database = f"a2a_bench_{uuid.uuid4().hex[:8]}"
            with psycopg.connect("host=127.0.0.1 user=postgres dbname=test", autocommit=True) as db:
                db.execute(f'CREATE DATABASE "{target.database}"')
            env["A2A_DEMO_POSTGRES"] = target.database
            env["A2A_DEMO_REDIS_PREFIX"] = f"a2a-bench-{uuid.uuid4().hex[:8]}"
        else:
            # A database of its own per start, as on PostgreSQL: a burst's server meets no
            # tasks an earlier server left behind.
            env["DATABASE_PATH"] = str(workdir / f"{target.name}-{uuid.uuid4().hex[:8]}.sqlite3")
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "-v0", "--skip-checks"],
            cwd=ROOT,
            env=env,
            check=True,
        )
        if target.server == "daphne":
            # -b/-p listen with Twisted's backlog of 50: a burst of connections overflows it.
            # -v 0: no access log and warnings only, as uvicorn below (daphne's default, 1,
            # writes an access log line per request and every INFO record of the site).
            server = [
                sys.executable,
                "-m",
                "daphne",
                "-v",
                "0",
                "-e",
                f"tcp:port={target.port}:interface=127.0.0.1:backlog=1024",
                "project.asgi:application",
            ]
        else:
            server = [
                sys.executable,
                "-m",
                "uvicorn",
                *uvicorn_options(target.port, "project.asgi:application"),
            ]
    elif target.kind == "sdk":
        server = [sys.executable, "-m", "bench.sdk_server", "--port", str(target.port)]
    else:
        server = [
            sys.executable,
            "-m",
            "uvicorn",
            *uvicorn_options(target.port, "bench.raw_asgi:app", lifespan=True),
        ]
    commands = [server] + [[sys.executable, "manage.py", "a2a_worker"]] * target.workers
    for i, command in enumerate(commands):
        log = workdir / f"{target.name}-{i}.log"
        target.logs.append(log)
        with log.open("ab") as out:
            target.processes.append(
                subprocess.Popen(
                    command, cwd=ROOT, env=env, stdout=out, stderr=out, preexec_fn=_pin(core)
                )
            )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for process, log in zip(target.processes, target.logs, strict=True):
            if process.poll() is not None:
                raise RuntimeError(f"{target.name} exited:\n{log.read_text()[-3000:]}")
        with contextlib.suppress(httpx.HTTPError):
            if (
                httpx.get(target.base + "/.well-known/agent-card.json", timeout=2).status_code
                == 200
                # and every worker has started its runtime (a burst meets processes that are
                # up, not ones still importing and running their checks)
                and all(b"a2a_worker ready" in log.read_bytes() for log in target.logs[1:])
            ):
                return
        time.sleep(0.2)
    raise RuntimeError(f"{target.name} did not come up:\n{target.logs[0].read_text()[-3000:]}")


def stop(target: Target) -> None:
    for process in target.processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in target.processes:
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
    target.processes.clear()
    if target.database:
        with psycopg.connect("host=127.0.0.1 user=postgres dbname=test", autocommit=True) as db:
            db.execute(f'DROP DATABASE IF EXISTS "{target.database}" WITH (FORCE)')
        target.database = ""


@contextlib.contextmanager
def running(chosen: list[Target], workdir: Path, core: int | None) -> Iterator[None]:
    try:
        for target in chosen:
            start(target, workdir, core)
        yield
    finally:
        for target in chosen:
            stop(target)


# --- the measurements ---------------------------------------------------------------------------


@dataclass
class Config:
    concurrency: int
    tasks: int
    k: int
    pad: int
    reps: int
    c1_tasks: int
    hold: list[int]
    hold_seconds: float
    fresh_for_hold: bool = True
    burst_deadline: float = 10.0


async def load_on(target: Target, **kwargs: Any) -> Any:
    """``run_load`` against ``target``; a broken stream names the target."""
    try:
        return await run_load(target.endpoint, **kwargs)
    except LoadError as exc:
        raise LoadError(f"{target.name}: {exc}") from exc


async def measure_load(target: Target, cfg: Config, concurrency: int, tasks: int) -> dict[str, Any]:
    services = service_cpu() if target.postgres else {}
    before = target.cpu_ms()
    result = await load_on(target, concurrency=concurrency, tasks=tasks, k=cfg.k, pad=cfg.pad)
    used = target.cpu_ms() - before
    figures = result.figures()
    figures["cpu_ms_per_1000_frames"] = used / result.frames * 1000
    if target.postgres:
        # What Redis and PostgreSQL spent on top (a backend that exited meanwhile is missed).
        after = service_cpu()
        spent = sum(ms - services.get(pid, 0.0) for pid, ms in after.items())
        figures["services_cpu_ms_per_1000_frames"] = spent / result.frames * 1000
    figures["cpu_ms"] = used
    figures["frames"] = result.frames
    figures["wall_s"] = result.wall_s
    return figures


async def measure_burst(target: Target, streams: int, cfg: Config) -> dict[str, Any]:
    """Fire ``streams`` idle streams at ``target`` at once and measure the burst.

    The ``bench.load.Burst`` figures (opened within the deadline, times, failures by kind),
    the target's thread count before and at its peak while the streams open (sampled every
    ~5 ms until every stream has its first tool frame or has broken, or the deadline), then
    ``SETTLE_S`` later, with the streams held, its RSS and threads: their growth per stream
    still held. ``ok`` is false if a stream did not get its first tool frame in time, broke, or
    a server process exited.
    """
    await asyncio.sleep(0.5)
    rss0, threads0 = target.rss_kib(), target.threads()
    with ThreadPeak(target.pids) as peak:
        burst = await open_burst(target.endpoint, streams, cfg.hold_seconds, cfg.burst_deadline)
    try:
        await asyncio.sleep(SETTLE_S)
        held = burst.held()
        alive = all(process.poll() is None for process in target.processes)
        rss1, threads1 = (target.rss_kib(), target.threads()) if alive else (None, None)
    finally:
        await burst.close()
    figures = burst.figures()
    figures.update(
        {
            "threads_before": peak.before,
            "threads_peak": peak.peak,
            "threads_peak_added": peak.peak - peak.before,
            "thread_samples": peak.samples,
            "held_at_rest": held,
            "rss_base_kib": rss0,
            "rss_kib": rss1,
            "rss_per_stream_kib": (rss1 - rss0) / held if rss1 is not None and held else None,
            "threads_base": threads0,
            "threads": threads1,
            "threads_per_stream": (
                (threads1 - threads0) / held if threads1 is not None and held else None
            ),
            "server_exited": not alive,
        }
    )
    figures["ok"] = figures["ok"] and alive
    return figures


def _num(value: float | None, digits: int = 0, suffix: str = "") -> str:
    return "-" if value is None else f"{value:.{digits}f}{suffix}"


def _failures(figures: dict[str, Any]) -> str:
    kinds = [f"{n} {kind}" for kind, n in figures["failures"].items()]
    if figures.get("server_exited"):
        kinds.append("a server process exited")
    return ", ".join(kinds) or "none"


async def hold_once(target: Target, streams: int, cfg: Config) -> dict[str, Any]:
    figures = await measure_burst(target, streams, cfg)
    f = figures
    print(
        f"  burst {streams} {target.name}: {'PASS' if f['ok'] else 'FAIL'}; within "
        f"{f['deadline_s']:g} s {f['connected']}/{streams} connected (p99 "
        f"{_num(f['connect_p99_ms'])} ms), {f['opened_first_event']}/{streams} first events "
        f"(all in {_num(f['all_first_event_s'], 2, ' s')}; p50/p99/max "
        f"{_num(f['first_event_p50_ms'])}/{_num(f['first_event_p99_ms'])}/"
        f"{_num(f['first_event_max_ms'])} ms), {f['opened_first_frame']}/{streams} tool "
        f"frames (all in {_num(f['all_first_frame_s'], 2, ' s')}; p50/p99/max "
        f"{_num(f['first_frame_p50_ms'])}/{_num(f['first_frame_p99_ms'])}/"
        f"{_num(f['first_frame_max_ms'])} ms; all requests started by "
        f"{_num(f['requests_sent_s'], 2, ' s')}, client CPU {f['client_cpu_s']:.2f} s over "
        f"{f['wait_s']:.2f} s); failures: {_failures(f)}; threads "
        f"{f['threads_before']} -> peak {f['threads_peak']} (+{f['threads_peak_added']}, "
        f"{f['thread_samples']} samples); at rest, {f['held_at_rest']} held: "
        f"{_num(f['rss_per_stream_kib'], 1)} KiB and {_num(f['threads_per_stream'], 2)} "
        "threads per stream",
        flush=True,
    )
    return figures


def summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


async def run(
    chosen: list[Target], cfg: Config, workdir: Path, cores: tuple[int, int] | None
) -> dict[str, Any]:
    server_core = cores[0] if cores else None
    load: dict[str, list[dict[str, Any]]] = {t.name: [] for t in chosen}
    single: dict[str, list[dict[str, Any]]] = {t.name: [] for t in chosen}
    # A target whose stream breaks the workload's contract is void: no figures of it are
    # reported, the run goes on with the others and ends with a failure status.
    void: dict[str, str] = {}

    async def verified(target: Target, measurement: Any) -> Any:
        try:
            return await measurement
        except LoadError as exc:
            void[target.name] = str(exc)
            print(f"  {target.name} is void: {exc}", flush=True)
            stop(target)  # what it still does would disturb the other targets
            return None

    with running(chosen, workdir, server_core):
        for target in chosen:  # warm up: imports, connections, caches
            await verified(target, load_on(target, concurrency=4, tasks=8, k=cfg.k, pad=cfg.pad))
        for rep in range(cfg.reps):
            order = chosen[rep % len(chosen) :] + chosen[: rep % len(chosen)]
            for target in order:
                if target.name in void:
                    continue
                figures = await verified(
                    target, measure_load(target, cfg, cfg.concurrency, cfg.tasks)
                )
                if figures is None:
                    continue
                load[target.name].append(figures)
                print(
                    f"  rep {rep + 1} {target.name}: {figures['frames_per_s']:.0f} frames/s, "
                    f"{figures['cpu_ms_per_1000_frames']:.0f} CPU ms/1k frames",
                    flush=True,
                )
            for target in order:
                if target.name not in void:
                    figures = await verified(target, measure_load(target, cfg, 1, cfg.c1_tasks))
                    if figures is not None:
                        single[target.name].append(figures)
        held: dict[str, list[dict[str, Any]]] = {t.name: [] for t in chosen}
        # A target that loses streams of a burst fails it: its figures are kept, the run goes
        # on and ends with a failure status.
        failed: dict[str, str] = {}

        def burst_verdict(target: Target, streams: int, figures: dict[str, Any]) -> None:
            held[target.name].append(figures)
            if not figures["ok"]:
                failed[f"{target.name} hold {streams}"] = (
                    f"{figures['opened_first_frame']}/{streams} tool frames within "
                    f"{figures['deadline_s']:g} s; failures: {_failures(figures)}"
                )

        if not cfg.fresh_for_hold:  # the smoke run: the same servers
            for streams in cfg.hold:
                for target in chosen:
                    if target.name not in void:
                        burst_verdict(target, streams, await hold_once(target, streams, cfg))
    for streams in cfg.hold if cfg.fresh_for_hold else ():
        for target in chosen:
            if target.name in void:
                continue
            # A fresh server per measurement that has served nothing yet: the burst meets it as
            # one after a deploy or a restart does (its runtime starts with the burst's tasks
            # waiting), and its RSS grows from the same start each time.
            with running([target], workdir, server_core):
                burst_verdict(target, streams, await hold_once(target, streams, cfg))
    out: dict[str, Any] = {"targets": {}, "void": void, "burst_failed": failed}
    for target in chosen:
        if target.name in void:
            out["targets"][target.name] = {"label": target.label, "void": void[target.name]}
            continue
        keys = load[target.name][0].keys()
        out["targets"][target.name] = {
            "label": target.label,
            "load": {key: summary([r[key] for r in load[target.name]]) for key in keys},
            "c1": {key: summary([r[key] for r in single[target.name]]) for key in keys},
            "hold": held[target.name],
            "runs": {"load": load[target.name], "c1": single[target.name]},
        }
    return out


# --- the report ---------------------------------------------------------------------------------


def environment(cfg: Config, cores: tuple[int, int] | None) -> dict[str, Any]:
    import daphne
    import django
    import uvicorn

    try:
        from importlib.metadata import version

        sdk = version("a2a-sdk")
    except Exception:
        sdk = "?"
    loop = "uvloop" if _importable("uvloop") else "asyncio"
    http = "httptools" if _importable("httptools") else "h11"
    return {
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "python": platform.python_version(),
        "django": django.get_version(),
        "daphne": daphne.__version__,
        "uvicorn": f"{uvicorn.__version__} ({loop}, {http})",
        "a2a_sdk": sdk,
        "cpus": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "pinning": f"servers on core {cores[0]}, client on core {cores[1]}" if cores else "none",
        "config": cfg.__dict__,
    }


def _importable(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def _cell(summary_: dict[str, float], digits: int = 0) -> str:
    low, mid, high = (f"{summary_[key]:.{digits}f}" for key in ("min", "median", "max"))
    return f"{mid} ({low}-{high})"


def table(report: dict[str, Any]) -> str:
    env = report["environment"]
    cfg = env["config"]
    lines = [
        f"Run {env['when']} on {env['cpus']} CPUs ({env['cpu_model']}), {env['pinning']}; "
        f"Python {env['python']}, Django {env['django']}, daphne {env['daphne']}, uvicorn "
        f"{env['uvicorn']}, a2a-sdk {env['a2a_sdk']}.",
        "",
        f"Load: C={cfg['concurrency']} concurrent streams, N={cfg['tasks']} tasks, "
        f"K={cfg['k']} tool calls per task (2K frames), P={cfg['pad']}; {cfg['reps']} "
        "interleaved repetitions, median (min-max). First event at C=1 over "
        f"{cfg['c1_tasks']} tasks.",
        "",
        "| target | frames/s | tasks/s | CPU ms per 1,000 frames | first event p50 / p99 ms "
        "| task p50 / p99 ms | emit->receive p50 / p99 ms | first event p50 ms, C=1 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for t in report["targets"].values():
        if "void" in t:
            lines.append(f"| {t['label']} | void: {t['void'][:160]} |" + " |" * 6)
            continue
        ld, c1 = t["load"], t["c1"]
        lines.append(
            f"| {t['label']} | {_cell(ld['frames_per_s'])} | {_cell(ld['tasks_per_s'], 1)} "
            f"| {_cell(ld['cpu_ms_per_1000_frames'])} "
            f"| {ld['first_event_p50_ms']['median']:.1f} / "
            f"{ld['first_event_p99_ms']['median']:.1f} "
            f"| {ld['task_p50_ms']['median']:.0f} / {ld['task_p99_ms']['median']:.0f} "
            f"| {ld['emit_to_receive_p50_ms']['median']:.1f} / "
            f"{ld['emit_to_receive_p99_ms']['median']:.1f} "
            f"| {_cell(c1['first_event_p50_ms'], 1)} |"
        )
    for t in report["targets"].values():
        services = t.get("load", {}).get("services_cpu_ms_per_1000_frames")
        if services:
            lines += [
                "",
                f"{t['label']}: the Redis and PostgreSQL server processes (shared with nothing "
                f"else during the run) used {_cell(services)} CPU ms per 1,000 frames on top "
                "of the figure above.",
            ]
    fresh = "fresh server that has served nothing before it" if cfg["fresh_for_hold"] else "server"
    lines += [
        "",
        f"A burst of idle streams: on a {fresh}, S `bench hold={cfg['hold_seconds']:g}` "
        f"streams fired at once (a connection each), {cfg['burst_deadline']:g} s to open: how "
        "many had their first event (the Task) and their first tool frame within it, when all "
        "had (from the burst's start), the p99 of the first tool frame, the server processes' "
        "thread count at its peak while the streams opened (sampled every ~5 ms; added since "
        f"before the burst), and {SETTLE_S:g} s after, with the streams held, the growth of "
        "their RSS and threads per stream held. FAIL: a stream did not get its tool frame in "
        "time or broke.",
        "",
        "| target | S | opened: first event / tool frame | all first events | all tool frames "
        "| tool frame p99 ms | peak threads (added) | KiB per stream | threads per stream | |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    broken, bound = [], []
    for t in report["targets"].values():
        if "void" in t:
            continue
        for h in t["hold"]:
            s = h["streams"]
            if "void" in h:
                lines.append(f"| {t['label']} | {s} | void: {h['void'][:160]} |" + " |" * 7)
                continue
            # Per stream held at rest: fewer than S when the burst failed.
            partial = f" ({h['held_at_rest']} held)" if h["held_at_rest"] != s else ""
            lines.append(
                f"| {t['label']} | {s} | {h['opened_first_event']} / {h['opened_first_frame']} "
                f"| {_num(h['all_first_event_s'], 2, ' s')} "
                f"| {_num(h['all_first_frame_s'], 2, ' s')} | {_num(h['first_frame_p99_ms'])} "
                f"| {h['threads_peak']} (+{h['threads_peak_added']}) "
                f"| {_num(h['rss_per_stream_kib'], 1)}{partial} "
                f"| {_num(h['threads_per_stream'], 2)}{partial} "
                f"| {'PASS' if h['ok'] else '**FAIL**'} |"
            )
            if not h["ok"]:
                broken.append(f"- {t['label']}, {s} streams: {_failures(h)}.")
            if h["client_cpu_s"] >= 0.9 * h["wait_s"]:
                bound.append(
                    f"- {t['label']}, {s} streams: {h['client_cpu_s']:.2f} s of client CPU "
                    f"in {h['wait_s']:.2f} s."
                )
    if broken:
        lines += ["", "Failed bursts, the streams lost by kind:", "", *broken]
    if bound:
        lines += [
            "",
            "Bursts whose opening the client (one core, httpx) bounded, busy 90% of the time "
            "or more: the server may open them faster than shown.",
            "",
            *bound,
        ]
    return "\n".join(lines)


def write(report: dict[str, Any], out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(report, indent=1) + "\n")
    doc = out.with_suffix(".md")
    block = f"{MARK_START}\n{table(report)}\n{MARK_END}"
    if doc.exists() and MARK_START in doc.read_text():
        text = doc.read_text()
        head, rest = text.split(MARK_START, 1)
        tail = rest.split(MARK_END, 1)[1]
        doc.write_text(head + block + tail)
    else:
        doc.write_text(f"# Benchmarks\n\n{block}\n")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--targets", nargs="*", help="default: all")
    parser.add_argument("--concurrency", "-c", type=int, default=32)
    parser.add_argument("--tasks", "-n", type=int, default=200)
    parser.add_argument("-k", type=int, default=50)
    parser.add_argument("--pad", "-p", type=int, default=200)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--c1-tasks", type=int, default=50)
    parser.add_argument("--hold", default="200,1000", help="stream counts, comma-separated")
    parser.add_argument("--hold-seconds", type=float, default=60)
    parser.add_argument(
        "--burst-deadline",
        type=float,
        default=10.0,
        help="seconds for a burst's streams to open (default 10)",
    )
    parser.add_argument(
        "--out", type=Path, default=ROOT / "docs" / "benchmarks", help="path without suffix"
    )
    parser.add_argument("--smoke", action="store_true", help="tiny figures, every check: seconds")
    args = parser.parse_args()
    if args.smoke:
        cfg = Config(2, 4, 3, 10, 1, 2, [5], 4, fresh_for_hold=False, burst_deadline=2)
    else:
        cfg = Config(
            args.concurrency,
            args.tasks,
            args.k,
            args.pad,
            args.reps,
            args.c1_tasks,
            [int(s) for s in args.hold.split(",") if s],
            args.hold_seconds,
            burst_deadline=args.burst_deadline,
        )
    if cfg.hold_seconds < cfg.burst_deadline + SETTLE_S + 1:
        # Streams that end by themselves before their memory is read would not be held.
        raise SystemExit(
            f"--hold-seconds {cfg.hold_seconds:g} must be at least --burst-deadline "
            f"{cfg.burst_deadline:g} + {SETTLE_S + 1:g}"
        )
    cores = (0, 1) if len(os.sched_getaffinity(0)) >= 2 else None
    if cores:
        os.sched_setaffinity(0, {cores[1]})
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 16384)), hard))
    chosen = targets(args.targets)
    workdir = Path(tempfile.mkdtemp(prefix="a2a-bench-"))
    try:
        report = asyncio.run(run(chosen, cfg, workdir, cores))
    except LoadError as exc:
        raise SystemExit(f"the run is void, a stream broke the workload's contract: {exc}") from exc
    finally:
        keep = os.environ.get("A2A_BENCH_KEEP_LOGS") == "1"
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)
    report["environment"] = environment(cfg, cores)
    write(report, args.out)
    print(table(report))
    problems = []
    if report["void"]:
        problems.append(f"void targets (a stream broke the workload's contract): {report['void']}")
    if report["burst_failed"]:
        problems.append(f"failed bursts (streams lost): {report['burst_failed']}")
    if problems:
        raise SystemExit("\n".join(problems))


if __name__ == "__main__":
    main()
