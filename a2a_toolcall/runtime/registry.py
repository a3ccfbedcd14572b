"""Agents by name, from the ``AGENTS`` setting (name -> dotted path)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from a2a_toolcall.runtime.events import Agent

__all__ = ["load_agent", "load_agents"]


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
