"""Agents by name, from the ``AGENTS`` setting (name -> dotted path)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from a2a_toolcall.runtime.events import Agent

__all__ = ["load_agent", "load_agents", "warm_up"]


def load_agent(name: str, path: str) -> Agent:
    """Import the agent at ``path``; ImproperlyConfigured names the setting entry at fault."""
    try:
        agent: Any = import_string(path)
    except ImportError as exc:
        raise ImproperlyConfigured(
            f"A2A_TOOLCALL['AGENTS'][{name!r}] = {path!r} cannot be imported: {exc}"
        ) from exc
    if not callable(agent):
        raise ImproperlyConfigured(
            f"A2A_TOOLCALL['AGENTS'][{name!r}] = {path!r} is a {type(agent).__name__}, not a "
            "callable taking an AgentInput (an async generator function, for example)"
        )
    return agent  # type: ignore[no-any-return]


def load_agents() -> dict[str, Agent]:
    """Every agent the settings name, imported."""
    from a2a_toolcall.conf import get_setting

    agents = get_setting("AGENTS")
    if not isinstance(agents, dict):
        raise ImproperlyConfigured(
            "A2A_TOOLCALL['AGENTS'] must be a dict of agent name -> dotted path"
        )
    return {name: load_agent(name, path) for name, path in agents.items()}


def warm_up() -> dict[str, Agent]:
    """Resolve the configured agents now, at process start, if this process runs them.

    Importing an agent can be slow (the LangGraph demo agent imports LangGraph and LangChain and
    builds its graph: 0.7 s measured), and the in-process runtime resolves its agents when it is
    created, on the first request. Called at start-up (``AppConfig.ready``, the ASGI module),
    this moves that cost there; the first task then finds the modules imported. A web process
    whose agents run in ``manage.py a2a_worker`` processes imports nothing (returns ``{}``); the
    worker needs no call, as it creates its runtime before it takes work.
    """
    from a2a_toolcall.runtime.runner import runs_in_process

    return load_agents() if runs_in_process() else {}
