"""``manage.py runserver`` for the demo: daphne's, with a listen backlog for bursts.

daphne's ``runserver`` listens with Twisted's default backlog of 50: a burst of clients opening
streams at once (a deploy, a reconnect storm) overflows it and connections are refused or reset
before the server sees them. This one listens with ``--backlog`` (1024 by default; the kernel
caps it at ``net.core.somaxconn``), as a production daphne is told to with
``-e tcp:port=8000:backlog=1024`` (docs/deployment.md, "Bursts").
"""

from __future__ import annotations

from typing import Any

from daphne.management.commands.runserver import (  # type: ignore[import-untyped]
    Command as DaphneRunserver,
)
from daphne.server import Server  # type: ignore[import-untyped]

BACKLOG = 1024


def with_backlog(endpoint: str, backlog: int) -> str:
    """A Twisted TCP endpoint string with ``backlog`` added (others as they are)."""
    if endpoint.startswith("tcp") and ":backlog=" not in endpoint:
        return f"{endpoint}:backlog={backlog}"
    return endpoint


class Command(DaphneRunserver):  # type: ignore[misc]
    help = DaphneRunserver.help + f" Listens with a backlog of {BACKLOG} (--backlog)."

    def add_arguments(self, parser: Any) -> None:
        super().add_arguments(parser)
        parser.add_argument(
            "--backlog",
            type=int,
            default=BACKLOG,
            help=f"Connections the kernel queues before the server accepts them ({BACKLOG}).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        backlog = int(options["backlog"])

        class BacklogServer(Server):  # type: ignore[misc]
            def __init__(self, *a: Any, endpoints: list[str], **kw: Any) -> None:
                super().__init__(*a, endpoints=[with_backlog(e, backlog) for e in endpoints], **kw)

        self.server_cls = BacklogServer
        super().handle(*args, **options)
