"""``manage.py a2a_purge``: delete tasks (and their events and tool calls) past retention."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.utils import timezone

from a2a_toolcall.conf import get_setting
from a2a_toolcall.models import Task, TaskEvent, ToolCall


class Command(BaseCommand):
    help = (
        "Delete the tasks created more than --older-than days ago (default RETENTION_DAYS), "
        "with their event logs and tool calls. A dry run unless --delete is given."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--older-than",
            type=float,
            metavar="DAYS",
            help="Age in days (default: A2A_TOOLCALL['RETENTION_DAYS']).",
        )
        parser.add_argument(
            "--delete",
            action="store_true",
            help="Really delete (without it, only report what would go).",
        )
        parser.add_argument(
            "--include-running",
            action="store_true",
            help="Also delete tasks not in a terminal state.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        days = options["older_than"]
        if days is None:
            days = float(get_setting("RETENTION_DAYS"))
        if days < 0:
            raise CommandError("--older-than must not be negative")
        cutoff = timezone.now() - timedelta(days=days)
        tasks = Task.objects.filter(created_at__lt=cutoff)
        if not options["include_running"]:
            tasks = tasks.filter(finished_at__isnull=False)
        counts = {
            "tasks": tasks.count(),
            "events": TaskEvent.objects.filter(task__in=tasks).count(),
            "tool calls": ToolCall.objects.filter(task__in=tasks).count(),
        }
        summary = ", ".join(f"{n} {what}" for what, n in counts.items())
        when = cutoff.strftime("%Y-%m-%d %H:%M:%S %Z")
        if not options["delete"]:
            self.stdout.write(
                f"Would delete {summary} (tasks created before {when}). "
                "Run again with --delete to delete them."
            )
            return
        with transaction.atomic():
            tasks.delete()
        self.stdout.write(f"Deleted {summary} (tasks created before {when}).")
