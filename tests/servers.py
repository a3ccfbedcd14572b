"""Run a real ASGI server (daphne, uvicorn, ``manage.py runserver``) for one test, in a subprocess.

tests/live.py runs the demo project as the end-to-end tests need it; this runs any command line
in any directory, for the tests of the install story, static files and proxies.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from tests.live import free_port

BIN = Path(sys.executable).parent


def server_command(server: str, app: str, port: int, *options: str) -> list[str]:
    """The command line that serves ASGI application ``app`` (``module:attr``) on ``port``."""
    if server == "daphne":
        return [str(BIN / "daphne"), "-b", "127.0.0.1", "-p", str(port), *options, app]
    if server == "uvicorn":
        return [str(BIN / "uvicorn"), "--host", "127.0.0.1", "--port", str(port), *options, app]
    raise ValueError(f"unknown server {server!r}")


def migrated(env: dict[str, str], cwd: Path | None = None) -> dict[str, str]:
    """Create the tables of the site ``env`` names (its sessions too: the live page gives an
    anonymous visitor one), as a deployment does before serving; returns ``env``."""
    root = cwd or Path(__file__).resolve().parent.parent
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v0"], cwd=root, env=env, check=True, timeout=120
    )
    return env


@contextlib.contextmanager
def serving(
    command: list[str],
    *,
    port: int,
    cwd: Path,
    env: dict[str, str],
    log: Path,
    ready_path: str = "/.well-known/agent-card.json",
) -> Iterator[str]:
    """Start ``command``; once ``ready_path`` answers 200, yield the base URL; then stop it."""
    url = f"http://127.0.0.1:{port}"
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=out)
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{command[0]} exited:\n{log.read_text()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url + ready_path, timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{command[0]} did not come up:\n{log.read_text()}")
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


__all__ = ["BIN", "free_port", "server_command", "serving"]
