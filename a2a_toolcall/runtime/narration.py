"""Narration: one plain-text line per tool turn, for clients that read only status messages.

The built-in rules follow the seed: delegation tools read "routing to <agent>", web searches
"searching the web", anything else "running <name>". Phrases are de-duplicated (first
occurrence wins) and joined with "; ". Projects add rules (tried first) with the
``NARRATION_RULES`` setting, or replace the humanizer with ``HUMANIZER``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

__all__ = [
    "BUILTIN_RULES",
    "Humanizer",
    "NarrationRule",
    "get_humanizer",
    "humanize",
    "make_humanizer",
]

Humanizer: TypeAlias = Callable[[Sequence[tuple[str, Any]]], str]
"""Turns one tool turn, a sequence of (tool name, args), into a narration line."""

# Arguments that name the agent a delegation goes to, in order of preference.
_AGENT_KEYS = ("agent", "agent_name", "agentName", "target", "to", "recipient", "assistant")


@dataclass(frozen=True, slots=True)
class NarrationRule:
    """A regex on the tool name and the phrase for it (``{name}``, ``{agent}``, ``{args}``)."""

    pattern: re.Pattern[str]
    phrase: str

    @classmethod
    def of(cls, pattern: str, phrase: str) -> NarrationRule:
        return cls(re.compile(pattern, re.IGNORECASE), phrase)


BUILTIN_RULES: tuple[NarrationRule, ...] = (
    NarrationRule.of(
        r"(^|_)(delegate|handoff|hand_off|transfer|route|routing|ask_agent|call_agent|"
        r"chat_with|send_to_agent|a2a)(_|$)|^chat$",
        "routing to {agent}",
    ),
    NarrationRule.of(
        r"(web|internet|online|google|bing|tavily|duckduckgo|brave|serp).*search|"
        r"search.*(web|internet|online)",
        "searching the web",
    ),
)


class _Fields(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def _agent_of(args: Any) -> str:
    if isinstance(args, dict):
        for key in _AGENT_KEYS:
            value = args.get(key)
            if isinstance(value, str) and value.strip():
                return value.strip()
    return "another agent"


def _phrase(rules: Iterable[NarrationRule], name: str, args: Any) -> str:
    for rule in rules:
        if rule.pattern.search(name):
            fields = _Fields(name=name, agent=_agent_of(args), args=args)
            return rule.phrase.format_map(fields)
    return f"running {name}"


def make_humanizer(extra_rules: Iterable[NarrationRule] = ()) -> Humanizer:
    """A humanizer trying ``extra_rules`` first, then :data:`BUILTIN_RULES`."""
    rules = (*extra_rules, *BUILTIN_RULES)

    def humanizer(calls: Sequence[tuple[str, Any]]) -> str:
        phrases = dict.fromkeys(_phrase(rules, name, args) for name, args in calls)
        return "; ".join(phrases)

    return humanizer


humanize: Humanizer = make_humanizer()
"""The built-in humanizer: ``humanize([("web_search", {}), ("fetch", {})])`` ->
``"searching the web; running fetch"``; an empty turn gives ``""``."""


def get_humanizer() -> Humanizer:
    """The humanizer the settings ask for (``HUMANIZER``, else the rules in ``NARRATION_RULES``)."""
    from django.utils.module_loading import import_string

    from a2a_toolcall.conf import get_setting

    path = get_setting("HUMANIZER")
    if path:
        return import_string(path)  # type: ignore[no-any-return]
    rules = [NarrationRule.of(regex, phrase) for regex, phrase in get_setting("NARRATION_RULES")]
    return make_humanizer(rules) if rules else humanize
