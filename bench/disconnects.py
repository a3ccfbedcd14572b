"""Clients that go away at every point of their stream, many times over: is any task lost?

Starts the site as deployed (``redis``: daphne, Redis, PostgreSQL and two ``a2a_worker``
processes; ``memory``: the embedded default), records one whole streamed response, then for
every byte position worth dropping at (around the end of the headers and of each event) opens
``--repeats`` streams that send ``SendStreamingMessage``, read that many bytes and reset the
connection, ``--concurrency`` at a time. Then it waits for every accepted task to end and prints,
per position, how many requests were accepted and how many tasks completed, failed or were
still unfinished (lost). Exit status 1 if any task was lost.

    python -m bench.disconnects                     # redis, 50 drops per position
    python -m bench.disconnects --config memory --repeats 10
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import collections
import sys
import tempfile
import time
import uuid
from pathlib import Path

from tests.live import LiveServer, live_server
from tests.test_disconnects import drop_points, open_and_drop


def task_states(server: LiveServer, prefix: str) -> dict[str, tuple[str, str]]:
    """The state and status text of every task whose context starts with ``prefix``, by
    context id."""
    out = server.manage(
        "shell",
        "-c",
        "from a2a_toolcall.models import Task;"
        f"rows = Task.objects.filter(context_id__startswith='{prefix}');"
        "print(repr({t.context_id: (t.state, ' '.join(p.get('text', '') for p in "
        "((t.status or {}).get('message') or {}).get('parts', []))) for t in rows}))",
    )
    return ast.literal_eval(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


async def drop_all(
    server: LiveServer, points: list[int], repeats: int, concurrency: int, prefix: str
) -> dict[str, int]:
    gate = asyncio.Semaphore(concurrency)
    contexts: dict[str, int] = {}

    async def one(point: int) -> None:
        context_id = f"{prefix}{point}-{uuid.uuid4().hex}"
        contexts[context_id] = point
        async with gate:
            await open_and_drop(server, context_id, point)

    await asyncio.gather(*(one(p) for p in points for _ in range(repeats)))
    return contexts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", choices=["redis", "memory"], default="redis")
    parser.add_argument("--repeats", type=int, default=50, help="drops per position")
    parser.add_argument("--concurrency", type=int, default=16, help="streams open at once")
    parser.add_argument("--wait", type=float, default=180, help="seconds to wait for the tasks")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, live_server(args.config, Path(tmp)) as server:
        reference = asyncio.run(open_and_drop(server, f"ref-{uuid.uuid4().hex}", None))
        points = drop_points(reference)
        head_end = reference.index(b"\r\n\r\n") + 4
        prefix = f"drop-{uuid.uuid4().hex[:8]}-"
        print(
            f"{args.config}: a {len(reference)}-byte stream, {len(points)} drop positions, "
            f"{args.repeats} drops each ({len(points) * args.repeats} streams)",
            flush=True,
        )
        started = time.monotonic()
        contexts = asyncio.run(drop_all(server, points, args.repeats, args.concurrency, prefix))
        dropped_in = time.monotonic() - started
        deadline = time.monotonic() + args.wait
        while True:
            states = task_states(server, prefix)
            unfinished = [s for s, _ in states.values() if not s.endswith(("COMPLETED", "FAILED"))]
            if not unfinished or time.monotonic() > deadline:
                break
            time.sleep(1)
    by_point: dict[int, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    reasons: collections.Counter[str] = collections.Counter()
    for context_id, point in contexts.items():
        found = states.get(context_id)
        by_point[point]["sent"] += 1
        if found is None:
            by_point[point]["not accepted"] += 1
            continue
        state, text = found
        by_point[point]["accepted"] += 1
        short = state.removeprefix("TASK_STATE_").lower()
        by_point[point][short if short in ("completed", "failed") else "lost"] += 1
        if short != "completed":
            reasons[f"{short}: {text}"] += 1
    print(f"dropped {len(contexts)} streams in {dropped_in:.1f} s\n")
    print("| byte | where | sent | accepted | completed | failed | lost |")
    print("|--:|---|--:|--:|--:|--:|--:|")
    total: collections.Counter[str] = collections.Counter()
    for point in sorted(by_point):
        counts = by_point[point]
        total.update(counts)
        where = "headers" if point < head_end else "events"
        print(
            f"| {point} | {where} | {counts['sent']} | {counts['accepted']} | "
            f"{counts['completed']} | {counts['failed']} | {counts['lost']} |"
        )
    print(
        f"| all | | {total['sent']} | {total['accepted']} | {total['completed']} | "
        f"{total['failed']} | {total['lost']} |"
    )
    for reason, count in reasons.most_common():
        print(f"\n{count} x {reason}")
    return 1 if total["lost"] else 0


if __name__ == "__main__":
    sys.exit(main())
