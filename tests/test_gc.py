"""GC_GEN0_THRESHOLD: the collector's first threshold raised where the ASGI application and
the worker start, never lowered, left alone when the setting is None."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from a2a_toolcall.memory import tune_gc

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def threshold() -> Iterator[None]:
    saved = gc.get_threshold()
    try:
        yield
    finally:
        gc.set_threshold(*saved)


def test_tune_gc_raises_the_first_threshold_only(threshold: None) -> None:
    gc.set_threshold(700, 10, 10)
    assert tune_gc(10_000) is True
    assert gc.get_threshold() == (10_000, 10, 10)
    # Never lowered: a site that set a higher one keeps it.
    gc.set_threshold(50_000, 20, 5)
    assert tune_gc(10_000) is False
    assert gc.get_threshold() == (50_000, 20, 5)
    assert tune_gc(None) is False
    assert gc.get_threshold() == (50_000, 20, 5)


def test_tune_gc_leaves_a_disabled_collector_alone(threshold: None) -> None:
    gc.set_threshold(700, 10, 10)
    gc.disable()
    try:
        assert tune_gc(10_000) is False
        assert gc.get_threshold() == (700, 10, 10)
        assert not gc.isenabled()
    finally:
        gc.enable()


def _threshold_after(module: str, setting: str | None = None) -> list[int]:
    """gc.get_threshold() in a fresh interpreter after importing an ASGI module."""
    script = (
        "import ast, gc, json, os\n"
        f"setting = {setting!r}\n"
        "if setting is not None:\n"
        "    from django.conf import settings\n"
        "    import importlib\n"
        "    base = importlib.import_module(os.environ['DJANGO_SETTINGS_MODULE'])\n"
        "    config = dict(getattr(base, 'A2A_TOOLCALL', {}))\n"
        "    config['GC_GEN0_THRESHOLD'] = ast.literal_eval(setting)\n"
        "    values = {k: getattr(base, k) for k in dir(base) if k.isupper()}\n"
        "    values['A2A_TOOLCALL'] = config\n"
        "    settings.configure(**values)\n"
        f"import {module}\n"
        "print(json.dumps(gc.get_threshold()))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={"DJANGO_SETTINGS_MODULE": "project.settings", "PATH": "", "A2A_SERVE_STATIC": "0"},
        check=True,
        capture_output=True,
        text=True,
    )
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def test_the_demo_asgi_module_raises_it() -> None:
    first, *_ = _threshold_after("project.asgi")
    assert first == 10_000


def test_none_leaves_the_interpreter_default() -> None:
    default = subprocess.run(
        [sys.executable, "-c", "import gc; print(gc.get_threshold()[0])"],
        check=True,
        capture_output=True,
        text=True,
    )
    first, *_ = _threshold_after("project.asgi", "None")
    assert first == int(default.stdout) < 10_000


def test_a_higher_setting_is_used() -> None:
    first, *_ = _threshold_after("project.asgi", "25_000")
    assert first == 25_000
