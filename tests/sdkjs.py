"""The official A2A JavaScript SDK (``@a2a-js/sdk``) for the interop tests: installed by the
tests themselves, outside the repository, or a clear stop.

``tests/js_auth_client`` holds the client script and its ``package.json`` (the SDK pinned to one
version). The first run copies the ``package.json`` to ``A2A_TEST_JS_SDK_DIR`` (by default
``$XDG_CACHE_HOME/a2a-toolcall-tests/js-sdk``, i.e. ``~/.cache/...``) and runs ``npm install``
there; later runs reuse it while the pinned version is what is installed. The script is copied
beside its ``node_modules`` before each run (Node resolves an ES module's imports from where the
module file is). Node.js 20 or later and npm are needed: without them the tests fail saying so.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

SOURCE: Final = Path(__file__).resolve().parent / "js_auth_client"
PACKAGE: Final = "@a2a-js/sdk"
ENV: Final = "A2A_TEST_JS_SDK_DIR"
NODE_MAJOR: Final = 20

MISSING: Final = (
    "the JavaScript SDK interop tests need Node.js {major} or later and npm: install them "
    "(Debian: apt-get install nodejs npm; or https://nodejs.org/), they install "
    f"{PACKAGE} themselves"
)


class JsSdkUnavailable(RuntimeError):
    """Node.js, npm or the SDK could not be had; the message says what to do."""


def pinned_version() -> str:
    """The SDK version ``tests/js_auth_client/package.json`` pins."""
    package = json.loads((SOURCE / "package.json").read_text())
    return str(package["dependencies"][PACKAGE])


def install_dir() -> Path:
    """Where the SDK is installed: ``A2A_TEST_JS_SDK_DIR``, else under the user's cache."""
    chosen = os.environ.get(ENV)
    if chosen:
        return Path(chosen)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "a2a-toolcall-tests" / "js-sdk"


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise JsSdkUnavailable(f"{name} was not found on PATH; " + MISSING.format(major=NODE_MAJOR))
    return found


def node() -> str:
    """The ``node`` binary, checked to be recent enough."""
    binary = _tool("node")
    done = subprocess.run([binary, "--version"], capture_output=True, text=True, check=False)
    version = done.stdout.strip().lstrip("v")
    try:
        major = int(version.split(".")[0])
    except ValueError:
        raise JsSdkUnavailable(
            f"`node --version` said {done.stdout.strip() or done.stderr.strip()!r}; "
            + MISSING.format(major=NODE_MAJOR)
        ) from None
    if major < NODE_MAJOR:
        raise JsSdkUnavailable(f"node is {version}; " + MISSING.format(major=NODE_MAJOR))
    return binary


def installed_version(where: Path) -> str | None:
    """The SDK version installed in ``where``, if any."""
    manifest = where / "node_modules" / PACKAGE / "package.json"
    try:
        return str(json.loads(manifest.read_text())["version"])
    except (OSError, ValueError, KeyError):
        return None


@contextlib.contextmanager
def _locked(where: Path) -> Iterator[None]:
    # Two test runs on one machine install one at a time.
    with (where / ".install.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def ensure_js_sdk() -> Path:
    """The directory holding the pinned SDK (installed with npm first if need be) and the
    client script; raises :class:`JsSdkUnavailable` saying what is missing."""
    node()
    npm = _tool("npm")
    where = install_dir()
    where.mkdir(parents=True, exist_ok=True)
    version = pinned_version()
    with _locked(where):
        if installed_version(where) != version:
            shutil.copyfile(SOURCE / "package.json", where / "package.json")
            done = subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=where,
                capture_output=True,
                text=True,
                check=False,
                timeout=600,
            )
            if done.returncode != 0 or installed_version(where) != version:
                raise JsSdkUnavailable(
                    f"npm install {PACKAGE}@{version} in {where} failed "
                    f"(exit {done.returncode}):\n{done.stderr.strip() or done.stdout.strip()}"
                )
        for script in SOURCE.glob("*.mjs"):
            shutil.copyfile(script, where / script.name)
    return where


def run_client(
    script: str, request: dict[str, Any], *, timeout: float = 120
) -> list[dict[str, Any]]:
    """Run ``tests/js_auth_client/<script>`` under Node with ``request`` as JSON on stdin; its
    output lines, parsed. A failing script raises AssertionError with its output."""
    where = ensure_js_sdk()
    done = subprocess.run(
        [node(), str(where / script)],
        input=json.dumps(request),
        cwd=where,
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )
    assert done.returncode == 0, (
        f"node {script} exited {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n"
        f"{done.stderr}"
    )
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
