"""``manage.py a2a_chat "message"``: the terminal client, pointed at this site by default."""

from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.urls import NoReverseMatch, reverse


class Command(BaseCommand):
    help = (
        "Send a message to this site's agent and watch its tool calls live "
        "(the terminal client; see `python -m a2a_toolcall --help`). By default it talks to "
        "the site on 127.0.0.1:8000 (`manage.py runserver`); --port or --url point elsewhere. "
        "Needs the client extra: pip install 'a2a-toolcall[client]'."
    )

    def run_from_argv(self, argv: list[str]) -> None:
        # The client's options come from the client package: without it there is nothing to
        # parse them with, so only the command name is kept and handle() says what to install.
        if _missing_client_module() is not None:
            argv = argv[:2]
        super().run_from_argv(argv)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--url", help="the agent's base or card URL (default: this site on --host/--port)"
        )
        parser.add_argument("--host", default="127.0.0.1", help="default: 127.0.0.1")
        parser.add_argument("--port", type=int, default=8000, help="default: 8000")
        if _missing_client_module() is None:
            from a2a_toolcall.client.terminal import add_options

            add_options(parser)
        else:
            parser.add_argument("message", nargs="*")

    def handle(self, *args: Any, **options: Any) -> None:
        missing = _missing_client_module(draws=not options.get("json"))
        if missing is not None:
            raise CommandError(
                f"a2a_chat needs {missing}, part of the client extra: "
                "pip install 'a2a-toolcall[client]'"
            )
        from a2a_toolcall.client.terminal import run

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


def _missing_client_module(*, draws: bool = False) -> str | None:
    """The client extra's module that cannot be imported (httpx; rich too if ``draws``), or None."""
    try:
        import httpx  # noqa: F401

        if draws:
            import rich  # noqa: F401
    except ImportError as exc:
        return exc.name or "httpx"
    return None
