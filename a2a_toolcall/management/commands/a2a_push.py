"""``manage.py a2a_push``: send the push-notification outbox from a process of its own."""

from __future__ import annotations

import asyncio
import os
import signal
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from a2a_toolcall import push


class Command(BaseCommand):
    help = (
        "Send the push-notification outbox (docs/push.md): every pending delivery, in order per "
        "webhook, retried with backoff. Server processes and a2a_worker send it too unless "
        "A2A_TOOLCALL['PUSH_SENDER'] is False; any number of senders share it. SIGTERM or Ctrl-C "
        "stops (what is being sent stays pending and goes again)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--once",
            action="store_true",
            help="Send what is due now, wait for it to finish, and exit.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if not push.push_enabled():
            raise CommandError(
                "push notifications are off (A2A_TOOLCALL['PUSH_NOTIFICATIONS'] is False)"
            )
        asyncio.run(self._once() if options["once"] else self._serve())

    async def _once(self) -> None:
        sender = push.Sender()
        while await sender.tick():
            await sender.idle()
        await sender.idle()
        self.stdout.write(f"a2a_push: {sender.delivered} delivered")

    async def _serve(self) -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        sender = push.start_sender()
        self.stdout.write(f"a2a_push ready (pid {os.getpid()})")
        self.stdout.flush()
        await stop.wait()
        await sender.stop()
        self.stdout.write(f"a2a_push stopped: {sender.delivered} delivered")
