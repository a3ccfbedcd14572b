"""``manage.py a2a_chat "message"``: the terminal client, pointed at this site by default."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.urls import NoReverseMatch, reverse

from a2a_toolcall.client.terminal import add_options, run


class Command(BaseCommand):
    help = (
        "Send a message to this site's agent and watch its tool calls live "
        "(the terminal client; see `python -m a2a_toolcall --help`). By default it talks to "
        "the site on 127.0.0.1:8000 (`manage.py runserver`); --port or --url point elsewhere."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--url", help="the agent's base or card URL (default: this site on --host/--port)"
        )
        parser.add_argument("--host", default="127.0.0.1", help="default: 127.0.0.1")
        parser.add_argument("--port", type=int, default=8000, help="default: 8000")
        add_options(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        url = options["url"]
        if not url:
            try:
                card = reverse("a2a_toolcall:agent_card")
            except NoReverseMatch:
                card = "/.well-known/agent-card.json"
            url = f"http://{options['host']}:{options['port']}{card}"
        options["url"] = url
        parser = self.create_parser("manage.py", "a2a_chat")
        namespace = parser.parse_args([])  # defaults, then the given options on top
        for key, value in options.items():
            setattr(namespace, key, value)
        status = run(namespace, parser)
        if status:
            sys.exit(status)
