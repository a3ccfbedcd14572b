"""Warm-up: the agents a process runs are resolved at start-up, not on the first request."""

from __future__ import annotations

import subprocess
import sys

from django.test import override_settings

from a2a_toolcall.runtime.registry import warm_up
from project.agents import demo_agent
from tests.live import ROOT


@override_settings(
    A2A_TOOLCALL={"AGENTS": {"demo": "project.agents.demo_agent"}, "RUN_IN_PROCESS": True}
)
def test_a_process_running_agents_resolves_them() -> None:
    assert warm_up() == {"demo": demo_agent}


@override_settings(
    A2A_TOOLCALL={"AGENTS": {"demo": "project.agents.demo_agent"}, "RUN_IN_PROCESS": False}
)
def test_a_web_process_whose_agents_run_in_workers_imports_nothing() -> None:
    assert warm_up() == {}


def test_the_demo_assistant_is_built_by_the_warm_up() -> None:
    # A fresh interpreter, as a server starts: LangGraph is imported and the graph built.
    script = (
        "import sys, django; django.setup()\n"
        "assert 'langgraph' not in sys.modules\n"
        "from a2a_toolcall.runtime.registry import warm_up\n"
        "agents = warm_up()\n"
        "from project.langgraph_agent import assistant\n"
        "assert agents['assistant'] is assistant and 'langgraph' in sys.modules\n"
    )
    subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={"DJANGO_SETTINGS_MODULE": "project.settings", "PATH": ""},
        check=True,
    )
