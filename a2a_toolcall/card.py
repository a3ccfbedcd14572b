"""The agent card, built from the ``CARD`` setting and the registered agent."""

from __future__ import annotations

from typing import Any

from a2a_toolcall import __version__
from a2a_toolcall.conf import get_setting
from a2a_toolcall.contract import TOOL_CALL_V1_MIME_TYPE, TOOL_CALL_V1_URI
from a2a_toolcall.protocol.models import (
    AgentCapabilities,
    AgentCard,
    AgentExtension,
    AgentInterface,
    AgentProvider,
    AgentSkill,
)

__all__ = ["TOOL_CALL_EXTENSION", "build_card", "default_agent_name"]

TOOL_CALL_EXTENSION = AgentExtension(
    uri=TOOL_CALL_V1_URI,
    description=(
        "Streams one frame per tool lifecycle event while a task works: an artifact-update "
        "named 'tool-call' holding one DataPart with metadata.mimeType "
        f"'{TOOL_CALL_V1_MIME_TYPE}' and data {{toolCallId, name, phase: started|completed|"
        "failed, args?|result?|error?}. Frames sharing a toolCallId describe one invocation. "
        "Narration travels beside them as WORKING status-updates."
    ),
    required=False,
)


def default_agent_name() -> str:
    """The name of the agent the endpoint serves (``DEFAULT_AGENT``, else the first)."""
    agents = get_setting("AGENTS") or {}
    name = get_setting("DEFAULT_AGENT") or next(iter(agents), "agent")
    return str(name)


def build_card(endpoint_url: str, *, extended: bool = False) -> AgentCard:
    """The card for this site; ``endpoint_url`` is used unless ``CARD['url']`` is set.

    ``extended``: the card for authenticated callers (``EXTENDED_CARD`` merged over ``CARD``).
    The security schemes follow the configured authenticators (a2a_toolcall.auth).
    """
    from a2a_toolcall.auth import card_security

    config: dict[str, Any] = dict(get_setting("CARD") or {})
    extra = get_setting("EXTENDED_CARD")
    if extended and extra:
        config.update(extra)
    schemes, requirements = card_security()
    agent = default_agent_name()
    url = config.get("url") or endpoint_url
    skills = config.get("skills") or [
        {
            "id": agent,
            "name": agent.replace("_", " ").title(),
            "description": config.get("description") or f"The {agent} agent.",
            "tags": ["tools"],
        }
    ]
    provider = config.get("provider")
    return AgentCard(
        name=config.get("name") or agent.replace("_", " ").title(),
        description=config.get("description")
        or f"The {agent} agent, served over A2A by a2a-toolcall with live tool-call frames.",
        version=str(config.get("version") or __version__),
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0"),
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="0.3"),
        ],
        provider=AgentProvider.model_validate(provider) if provider else None,
        documentation_url=config.get("documentationUrl"),
        icon_url=config.get("iconUrl"),
        capabilities=AgentCapabilities(
            streaming=True,
            push_notifications=bool(get_setting("PUSH_NOTIFICATIONS")),
            extended_agent_card=extra is not None,
            extensions=[TOOL_CALL_EXTENSION],
        ),
        default_input_modes=config.get("defaultInputModes") or ["text/plain", "application/json"],
        default_output_modes=config.get("defaultOutputModes") or ["text/plain", "application/json"],
        skills=[AgentSkill.model_validate(skill) for skill in skills],
        security_schemes=schemes,
        security_requirements=requirements,
    )
