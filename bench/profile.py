"""Where a target's CPU goes under the benchmark load: py-spy on the server, the top as a table.

Starts one target of ``bench.run`` (default: this app under uvicorn), warms it up, then samples
its process with py-spy for one load run and prints, per thread (the event loop's thread, the
journal's database thread, the rest), the functions with the most samples: on their own (self)
and with what they call (inclusive). ``--write`` puts the tables in docs/benchmarks.md between
the ``<!-- profile -->`` markers.

    python -m bench.profile                       # app-uvicorn, C=32 N=200 K=50 P=200
    python -m bench.profile --target sdk --write  # the same for the official SDK server
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import re
import shutil
import signal
import sys
import tempfile
from pathlib import Path

from bench.load import run_load
from bench.run import ROOT, running, targets

MARK_START, MARK_END = "<!-- profile -->", "<!-- /profile -->"
IDLE = re.compile(
    r"^(select|poll|epoll|EpollSelector\.select|_worker|wait|Condition\.wait|Event\.wait) \("
)


def thread_kind(name: str) -> str:
    if name == "MainThread":
        return "event loop"
    if name == "ThreadPoolExecutor-0_0":
        return "database (journal)"
    return "other threads"


def aggregate(raw: Path) -> dict[str, dict[str, collections.Counter[str]]]:
    """Samples per thread kind: ``{"total": {...}, "self": {...}, "inclusive": {...}}``."""
    out: dict[str, dict[str, collections.Counter[str]]] = {
        "total": collections.defaultdict(collections.Counter),  # type: ignore[dict-item]
        "self": collections.defaultdict(collections.Counter),  # type: ignore[dict-item]
        "inclusive": collections.defaultdict(collections.Counter),  # type: ignore[dict-item]
    }
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        frames = stack.split(";")
        kind = thread_kind(frames[0].split(": ", 1)[-1].strip())
        calls = [short(f) for f in frames[1:]]
        if not calls or IDLE.match(calls[-1]):
            continue  # waiting, not working
        n = int(count)
        out["total"][kind]["all"] += n
        out["self"][kind][calls[-1]] += n
        for call in set(calls):
            out["inclusive"][kind][call] += n
    return out


def short(frame: str) -> str:
    """``func (path/to/module.py:12)`` -> ``func (module.py:12)``, site-packages paths cut."""
    match = re.match(r"^(.*) \((.*?):(\d+)\)$", frame)
    if not match:
        return frame.strip()
    func, path, line = match.groups()
    parts = Path(path).parts
    for root in ("site-packages", "a2a_toolcall", "lib"):
        if root in parts:
            parts = parts[parts.index(root) + (0 if root == "a2a_toolcall" else 1) :]
            break
    return f"{func} ({'/'.join(parts[-2:])}:{line})"


def report(agg: dict[str, dict[str, collections.Counter[str]]], top: int, label: str) -> str:
    totals = {kind: c["all"] for kind, c in agg["total"].items()}
    every = sum(totals.values()) or 1
    lines = [
        f"Profile of {label}: {every} busy samples; "
        + ", ".join(f"{kind} {100 * n / every:.0f}%" for kind, n in sorted(totals.items())),
        "",
    ]
    for kind in sorted(totals, key=lambda k: -totals[k]):
        if totals[kind] < every * 0.05:
            continue
        lines += [
            f"**{kind}** (share of all busy samples)",
            "",
            "| self % | function | | inclusive % | function |",
            "|---|---|---|---|---|",
        ]
        own = agg["self"][kind].most_common(top)
        boring = {"_run_module_as_main", "_run_code", "<module>", "run", "main", "Thread."}
        inclusive = [
            (f, n)
            for f, n in agg["inclusive"][kind].most_common(top * 4)
            if not any(f.startswith(b) for b in boring)
        ][:top]
        for i in range(top):
            left = f"{100 * own[i][1] / every:.1f} | `{own[i][0]}`" if i < len(own) else " | "
            right = (
                f"{100 * inclusive[i][1] / every:.1f} | `{inclusive[i][0]}`"
                if i < len(inclusive)
                else " | "
            )
            lines.append(f"| {left} | | {right} |")
        lines.append("")
    return "\n".join(lines)


def write(text: str) -> None:
    doc = ROOT / "docs" / "benchmarks.md"
    block = f"{MARK_START}\n{text}\n{MARK_END}"
    current = doc.read_text()
    if MARK_START in current:
        head, rest = current.split(MARK_START, 1)
        doc.write_text(head + block + rest.split(MARK_END, 1)[1])
    else:
        doc.write_text(current.rstrip() + "\n\n" + block + "\n")


def find_pyspy() -> str:
    found = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(found).exists():
        raise SystemExit("py-spy is not installed: pip install 'a2a-toolcall[bench]'")
    return found


async def profile(args: argparse.Namespace, pyspy: str, workdir: Path) -> tuple[str, Path]:
    (target,) = targets([args.target])
    raw = workdir / "profile.txt"
    cores = (0, 1) if len(os.sched_getaffinity(0)) >= 2 else None
    if cores:
        os.sched_setaffinity(0, {cores[1]})
    with running([target], workdir, cores[0] if cores else None):
        await run_load(target.endpoint, concurrency=8, tasks=32, k=args.k, pad=args.pad)
        sampler = await asyncio.create_subprocess_exec(
            *(pyspy, "record", "-p", str(target.pids[args.process]), "-f", "raw", "--threads"),
            *("-r", str(args.rate), "-o", str(raw), "--nonblocking"),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        await asyncio.sleep(1.0)
        result = await run_load(
            target.endpoint, concurrency=args.concurrency, tasks=args.tasks, k=args.k, pad=args.pad
        )
        sampler.send_signal(signal.SIGINT)  # py-spy writes what it has
        _, err = await asyncio.wait_for(sampler.communicate(), 60)
    label = (
        f"{target.label} at C={args.concurrency}, N={args.tasks}, K={args.k}, P={args.pad} "
        f"({result.frames / result.wall_s:.0f} frames/s while sampled at {args.rate} Hz)"
    )
    if err and sampler.returncode not in (0, -signal.SIGINT):
        print(err.decode()[-2000:], file=sys.stderr)
    return label, raw


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--target", default="app-uvicorn")
    parser.add_argument("--concurrency", "-c", type=int, default=32)
    parser.add_argument("--tasks", "-n", type=int, default=200)
    parser.add_argument("-k", type=int, default=50)
    parser.add_argument("--pad", "-p", type=int, default=200)
    parser.add_argument("--rate", type=int, default=200, help="samples per second")
    parser.add_argument(
        "--process", type=int, default=0, help="0: the server; 1: its first a2a_worker"
    )
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--write", action="store_true", help="into docs/benchmarks.md")
    args = parser.parse_args()
    pyspy = find_pyspy()
    workdir = Path(tempfile.mkdtemp(prefix="a2a-profile-"))
    try:
        label, raw = asyncio.run(profile(args, pyspy, workdir))
        if not raw.exists():
            raise SystemExit("py-spy wrote no profile")
        text = report(aggregate(raw), args.top, label)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(text)
    if args.write:
        write(text)


if __name__ == "__main__":
    main()
