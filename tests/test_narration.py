"""Narration: one line per tool turn."""

from __future__ import annotations

import pytest
from django.test import override_settings

from a2a_toolcall.runtime.narration import NarrationRule, get_humanizer, humanize, make_humanizer


def test_empty_turn_says_nothing() -> None:
    assert humanize([]) == ""


@pytest.mark.parametrize(
    ("name", "args", "line"),
    [
        ("delegate", {"agent": "quinn"}, "routing to quinn"),
        ("delegate_to_agent", {"agent_name": "ava"}, "routing to ava"),
        ("chat_with_agent", {"target": "roxy"}, "routing to roxy"),
        ("handoff", {"to": " orbis "}, "routing to orbis"),
        ("transfer_to_agent", None, "routing to another agent"),
        ("a2a_call", {"agent": ""}, "routing to another agent"),
        ("chat", {"agent": "quinn"}, "routing to quinn"),
        ("web_search", {"query": "x"}, "searching the web"),
        ("tavily_search", {}, "searching the web"),
        ("search_web", {}, "searching the web"),
        ("GoogleSearch", {}, "searching the web"),
        ("search_docs", {}, "running search_docs"),
        ("chatterbox", {}, "running chatterbox"),
        ("calculator", {"expression": "1+1"}, "running calculator"),
    ],
)
def test_builtin_rules(name: str, args: object, line: str) -> None:
    assert humanize([(name, args)]) == line


def test_phrases_keep_first_seen_order_and_are_deduplicated() -> None:
    turn = [
        ("web_search", {"q": "a"}),
        ("fetch", {}),
        ("web_search", {"q": "b"}),
        ("delegate", {"agent": "quinn"}),
        ("fetch", {}),
        ("delegate", {"agent": "ava"}),
    ]
    assert humanize(turn) == "searching the web; running fetch; routing to quinn; routing to ava"


def test_extra_rules_come_first_and_unknown_fields_stay_literal() -> None:
    humanizer = make_humanizer(
        [
            NarrationRule.of(r"^sql_", "querying the {args[db]} database"),
            NarrationRule.of(r"search", "looking up {missing}"),
        ]
    )
    assert humanizer([("sql_select", {"db": "orders"})]) == "querying the orders database"
    assert humanizer([("web_search", {})]) == "looking up {missing}"
    assert humanizer([("other", {})]) == "running other"


@override_settings(A2A_TOOLCALL={"AGENTS": {}, "NARRATION_RULES": [(r"^git", "using git")]})
def test_rules_from_settings() -> None:
    assert get_humanizer()([("git_log", {}), ("web_search", {})]) == (
        "using git; searching the web"
    )


def shout(calls: object) -> str:
    return "WORKING"


@override_settings(A2A_TOOLCALL={"AGENTS": {}, "HUMANIZER": "tests.test_narration.shout"})
def test_humanizer_from_settings() -> None:
    assert get_humanizer() is shout


def test_default_humanizer_without_settings() -> None:
    assert get_humanizer() is humanize
