"""The Chromium the browser tests drive: found on the machine, or installed, or a clear stop.

The tests never download a browser of their own (Playwright's browser builds are not used): they
drive the machine's Chromium or Chrome. Where it is looked for, in order:

1. ``A2A_TEST_CHROMIUM``: a path to a Chromium or Chrome binary;
2. the first of ``chromium``, ``chromium-browser``, ``google-chrome``, ``google-chrome-stable``
   on ``PATH``.

With none found, the test run installs Debian's ``chromium`` package when it can (root, with
``apt-get``); otherwise it stops before any test runs, with one line saying what to install.
``pytest -m "not browser"`` runs everything else on a machine without a browser.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Playwright

ENV: Final = "A2A_TEST_CHROMIUM"
NAMES: Final = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
DEBIAN_PACKAGE: Final = "chromium"

# As the machine's own checks start it: headless as root, and nothing that phones home (on a
# closed network those connections are refused, many at a time, at every start).
LAUNCH_ARGS: Final = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

MISSING: Final = (
    "the browser tests need Chromium and none was found: install Debian's `chromium` package "
    f"(apt-get install chromium), or set {ENV} to a Chromium or Chrome binary, "
    'or leave them out with -m "not browser"'
)


class ChromiumMissing(RuntimeError):
    """No Chromium could be found or installed; the message says what to do."""


def find_chromium() -> str | None:
    """The Chromium to drive: ``A2A_TEST_CHROMIUM``, else the first known name on PATH."""
    chosen = os.environ.get(ENV)
    if chosen:
        path = Path(chosen)
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
        found = shutil.which(chosen)
        if found:
            return found
        raise ChromiumMissing(f"{ENV}={chosen!r} is not an executable file")
    for name in NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def can_install() -> bool:
    """True where Debian's package can be installed here: root, with apt-get."""
    return hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get") is not None


def _apt_get(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["apt-get", *args],
        env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )


def install_chromium() -> None:
    """``apt-get install chromium``, updating the package lists first if that fails."""
    install = ("install", "-y", "-q", "--no-install-recommends", DEBIAN_PACKAGE)
    if _apt_get(*install).returncode == 0:
        return
    _apt_get("update", "-q")  # a fresh machine may have no package lists yet
    done = _apt_get(*install)
    if done.returncode != 0:
        last = done.stderr.strip().splitlines()[-1:] or ["no output"]
        raise ChromiumMissing(f"apt-get install {DEBIAN_PACKAGE} failed ({last[0]}); {MISSING}")


def ensure_chromium(announce: bool = True) -> str:
    """The Chromium's path, installing Debian's package first where it is missing and can be."""
    found = find_chromium()
    if found:
        return found
    if not can_install():
        raise ChromiumMissing(MISSING)
    if announce:
        print(f"\nChromium not found: installing Debian's {DEBIAN_PACKAGE} package (apt-get)")
    install_chromium()
    found = find_chromium()
    if not found:
        raise ChromiumMissing(
            f"{DEBIAN_PACKAGE} was installed but no browser is on PATH; {MISSING}"
        )
    return found


def launch(pw: Playwright) -> Browser:
    """Headless Chromium (the one :func:`ensure_chromium` finds) under Playwright."""
    return pw.chromium.launch(executable_path=ensure_chromium(), args=LAUNCH_ARGS)
