"""The test command's own set-up: the browser tests find a Chromium, or say what to install."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.browser import ENV, MISSING, ChromiumMissing, find_chromium
from tests.live import ROOT


def _executable(path: Path) -> Path:
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_the_environment_variable_names_the_browser(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chrome = _executable(tmp_path / "my-chrome")
    monkeypatch.setenv(ENV, str(chrome))
    assert find_chromium() == str(chrome)


def test_a_bad_environment_variable_is_an_error_not_a_fallback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENV, str(tmp_path / "missing"))
    with pytest.raises(ChromiumMissing, match=ENV):
        find_chromium()


@pytest.mark.parametrize("name", ["chromium", "chromium-browser", "google-chrome"])
def test_each_known_name_on_path_is_found(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = _executable(tmp_path / name)
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert find_chromium() == str(found)


def test_no_browser_and_no_way_to_install_one_stops_the_run_at_once(tmp_path: Path) -> None:
    """A PATH with no browser and no apt-get: one line saying what to install, no test run."""
    env = {key: value for key, value in os.environ.items() if key != ENV}
    env["PATH"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/test_admin.py", "-m", "browser", "-q"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert MISSING in done.stdout + done.stderr
    assert " passed" not in done.stdout and " failed" not in done.stdout
