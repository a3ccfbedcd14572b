"""The ASGI application raises its process's soft limit of open files to the hard limit (one
file per stream: a soft limit of 1,024 refuses a burst of more streams), never lowers it, says
when the limit stays low, and leaves it alone when ``RAISE_OPEN_FILES_LIMIT`` is False.

Each case runs in a process of its own started with the limits it needs (the limit is the
process's): it builds the application as an ASGI module does and prints the limit after.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

BUILD = """
import logging, resource, sys
logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(message)s")
from a2a_toolcall.asgi import get_asgi_application
get_asgi_application()
print(*resource.getrlimit(resource.RLIMIT_NOFILE))
"""


def build(soft: int, hard: int | None = None, **env: str) -> tuple[int, int, str]:
    """Build the application in a process started with these limits: its limits after, and
    what it logged."""

    def limit() -> None:
        _, current_hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard or current_hard))

    done = subprocess.run(
        [sys.executable, "-c", BUILD],
        cwd=ROOT,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", **env},
        preexec_fn=limit,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    after_soft, after_hard = (int(n) for n in done.stdout.split())
    return after_soft, after_hard, done.stderr


HARD = resource.getrlimit(resource.RLIMIT_NOFILE)[1]


@pytest.mark.skipif(HARD < 8192, reason=f"the hard limit here is {HARD}: nothing to raise to")
def test_the_soft_limit_is_raised_to_the_hard_limit() -> None:
    soft, hard, log = build(1024)
    assert (soft, hard) == (HARD, HARD)
    assert f"open files limit raised from 1024 to {HARD}" in log
    assert "WARNING" not in log


def test_a_limit_already_at_the_hard_limit_is_left_as_it_is() -> None:
    soft, hard, log = build(HARD)
    assert (soft, hard) == (HARD, HARD)
    assert "raised" not in log


def test_a_low_hard_limit_is_reached_and_said() -> None:
    soft, hard, log = build(256, 512)
    assert (soft, hard) == (512, 512)
    assert "open files limit raised from 256 to 512" in log
    assert "WARNING this process may hold at most 512 open files" in log


def test_the_setting_off_leaves_the_limit_alone() -> None:
    soft, hard, log = build(256, 512, A2A_TEST_RAISE_OPEN_FILES="0")
    assert (soft, hard) == (256, 512)
    assert "open files" not in log
