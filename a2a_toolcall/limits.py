"""The open files a server process may hold: one per client connection, so one per stream.

A process holds at most its soft ``RLIMIT_NOFILE`` of open files, sockets included, and that
is often 1,024 (systemd's default for services, many shells' and containers'). Past it the
server's ``accept()`` fails (EMFILE): the connections wait in the listen backlog until one
closes, and streams held open never close, so a burst of more streams than that at once does
not open (1,100 streams at once with a soft limit of 1,024: 92 lost, docs/benchmarks.md). The
hard limit is usually far higher (systemd's: 524,288), and a process may raise its own soft
limit up to it: :func:`raise_open_files_limit` does, when ``a2a_toolcall.asgi.wrap()`` (and
so ``get_asgi_application()``) makes the ASGI application, unless ``RAISE_OPEN_FILES_LIMIT``
is False. It never lowers a limit. Where the hard limit itself is low it says so in the log.
"""

from __future__ import annotations

import logging
from typing import Final

__all__ = ["LOW_OPEN_FILES", "raise_open_files_limit"]

logger = logging.getLogger(__name__)

LOW_OPEN_FILES: Final = 4096
"""Below this many open files (after raising), the process logs a warning: a burst of a few
thousand streams would not open."""

_UNLIMITED_TARGET: Final = 1 << 20
"""The soft limit asked for when the hard limit is unlimited (Linux's usual ``nr_open``)."""


def raise_open_files_limit() -> tuple[int, int] | None:
    """Raise this process's soft limit of open files to its hard limit.

    Returns ``(before, after)`` when it changed the limit, None when it did not (already at
    the hard limit, no such limit on this platform, or the system refused). Logs a warning
    when the limit the process ends with is below :data:`LOW_OPEN_FILES`.
    """
    try:
        import resource
    except ImportError:  # not POSIX
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = _UNLIMITED_TARGET if hard == resource.RLIM_INFINITY else hard
    changed: tuple[int, int] | None = None
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError) as exc:
            logger.debug(
                "could not raise the open files limit from %d to %d: %s", soft, target, exc
            )
        else:
            changed = (soft, target)
            logger.info("open files limit raised from %d to %d (the hard limit)", soft, target)
            soft = target
    if soft != resource.RLIM_INFINITY and soft < LOW_OPEN_FILES:
        logger.warning(
            "this process may hold at most %d open files, one per stream: a burst of more "
            "streams than that at once will not open. Raise the hard limit (systemd "
            "LimitNOFILE=, docker --ulimit nofile=, ulimit -Hn); docs/deployment.md, "
            '"Bursts".',
            soft,
        )
    return changed
