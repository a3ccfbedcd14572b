"""``manage.py a2a_worker``: run the agent runtime in its own process."""

from __future__ import annotations

import asyncio
import os
import signal
from typing import Any

from channels.layers import InMemoryChannelLayer
from django.core.management.base import BaseCommand, CommandError, CommandParser

from a2a_toolcall import push, store
from a2a_toolcall.bus import Bus
from a2a_toolcall.conf import gc_threshold, get_setting
from a2a_toolcall.leases import ensure_keeper
from a2a_toolcall.memory import tune_gc
from a2a_toolcall.runtime import Runtime

SHUTDOWN_REASON = "the worker is shutting down"


class Command(BaseCommand):
    help = (
        "Run the a2a_toolcall agent runtime: take work requests from the channel layer and run "
        "agents. Start several to share the work (needs a Redis channel layer). SIGTERM or "
        "Ctrl-C stops taking work and lets the running tasks finish for up to the grace period "
        "(WORKER_SHUTDOWN_GRACE), then fails the rest with a reason; a second signal stops at "
        "once."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--layer",
            help="Channel layer alias for the bus and the work requests "
            "(default: A2A_TOOLCALL['CHANNEL_LAYER'] and ['REQUEST_CHANNEL_LAYER']).",
        )
        parser.add_argument(
            "--concurrency",
            type=int,
            help="Tasks run at once (default: A2A_TOOLCALL['WORKER_CONCURRENCY']).",
        )
        parser.add_argument(
            "--grace",
            type=float,
            metavar="SECONDS",
            help="Seconds running tasks may finish after SIGTERM "
            "(default: A2A_TOOLCALL['WORKER_SHUTDOWN_GRACE']).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        layer = options["layer"]
        bus = Bus(layer, request_layer=layer) if layer else Bus()
        if isinstance(bus.request_layer, InMemoryChannelLayer):
            raise CommandError(
                "the channel layer is InMemoryChannelLayer, which cannot reach other processes: "
                "a worker would never receive work. Configure channels_redis "
                "(channels_redis.core.RedisChannelLayer) or let the web process run agents "
                "(A2A_TOOLCALL['RUN_IN_PROCESS'])."
            )
        grace = options["grace"]
        if grace is None:
            grace = float(get_setting("WORKER_SHUTDOWN_GRACE"))
        if grace < 0:
            raise CommandError("--grace must not be negative")
        tune_gc(gc_threshold())
        asyncio.run(self._serve(bus, options["concurrency"], grace))

    async def _serve(self, bus: Bus, concurrency: int | None, grace: float) -> None:
        # Tasks are claimed in the task store: a task canceled before pickup is never started.
        runtime = Runtime(bus=bus, concurrency=concurrency, claims=store.StoreClaims())
        if not runtime.agents:
            raise CommandError("no agent is registered: set A2A_TOOLCALL['AGENTS']")
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        serving = runtime.start()
        # Renews the leases of what this worker runs, reaps expired ones, picks up waiting work.
        ensure_keeper().add_runtime(runtime)
        push.ensure_sender()  # this worker sends its share of the push outbox (PUSH_SENDER)
        self.stdout.write(
            f"a2a_worker ready (pid {os.getpid()}): agents {', '.join(sorted(runtime.agents))}; "
            f"up to {runtime.concurrency} tasks at once",
        )
        self.stdout.flush()
        stopped = asyncio.ensure_future(stop.wait())
        await asyncio.wait({serving, stopped}, return_when=asyncio.FIRST_COMPLETED)
        if serving.done() and not serving.cancelled() and serving.exception() is not None:
            stopped.cancel()
            raise CommandError(f"the runtime stopped: {serving.exception()!r}")
        await runtime.stop_taking_work()
        running = runtime.running_tasks
        if running and grace > 0:
            # Warm shutdown: no new work; the running tasks may finish. A second signal ends it.
            again = asyncio.Event()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, again.set)
            self.stdout.write(
                f"a2a_worker stopping: taking no new work; waiting up to {grace:g} s for "
                f"{len(running)} running task(s) (signal again to stop at once)"
            )
            self.stdout.flush()
            draining = asyncio.ensure_future(runtime.drain(grace))
            interrupted = asyncio.ensure_future(again.wait())
            await asyncio.wait({draining, interrupted}, return_when=asyncio.FIRST_COMPLETED)
            draining.cancel()
            interrupted.cancel()
        running = runtime.running_tasks
        self.stdout.write(
            f"a2a_worker stopping; ending {len(running)} running task(s) (failed, or parked "
            "to resume elsewhere if waiting for an answer with a checkpoint)"
        )
        self.stdout.flush()
        await runtime.shutdown(SHUTDOWN_REASON)
        self.stdout.write("a2a_worker stopped")
