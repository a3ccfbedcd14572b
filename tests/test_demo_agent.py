"""The demo agent and its tools."""

from __future__ import annotations

import pytest

from a2a_toolcall.testing import run_agent
from project.agents import (
    HELP,
    calculator,
    clock,
    demo_agent,
    not_understood_note,
    plan,
    read_request,
    slow,
)


@pytest.mark.parametrize(
    ("expression", "value"),
    [
        ("6*7", 42),
        ("2 + 3 * 4", 14),
        ("(1+2)/4", 0.75),
        ("-2**3", -8),
        ("7 // 2 % 3", 0),
        ("2**100", 2**100),
    ],
)
def test_calculator(expression: str, value: float) -> None:
    assert calculator(expression) == value


@pytest.mark.parametrize(
    ("expression", "error"),
    [
        ("__import__('os')", "not arithmetic"),
        ("2**1000", "exponents above 100"),
        ("10**100*10", "too large"),
        ("1/0", "division"),
        ("2 +", "not arithmetic"),
        ("'a'*3", "not arithmetic"),
    ],
)
def test_calculator_refuses(expression: str, error: str) -> None:
    with pytest.raises((ValueError, ZeroDivisionError), match=error):
        calculator(expression)


def test_clock() -> None:
    tokyo = clock("Tokyo")
    assert tokyo["zone"] == "Asia/Tokyo" and tokyo["utcOffset"] == "+0900"
    assert clock("Europe/Paris")["zone"] == "Europe/Paris"
    with pytest.raises(LookupError, match="unknown place or time zone 'Atlantis'"):
        clock("Atlantis?")


async def test_slow_bounds() -> None:
    assert await slow(0) == "waited 0 s"
    with pytest.raises(ValueError, match="between 0 and 120"):
        await slow(500)


def test_plan_reads_several_requests() -> None:
    calls, ask = plan("What is 6*7, the time in Tokyo and wait 2 seconds then fail; ask me")
    assert [(c.name, c.args) for c in calls] == [
        ("calculator", {"expression": "6*7"}),
        ("clock", {"place": "Tokyo"}),
        ("slow", {"seconds": 2.0}),
        ("broken", {}),
    ]
    assert ask
    assert plan("hello there") == ([], False)


async def test_help_when_nothing_is_asked() -> None:
    run = await run_agent(demo_agent, "hello")
    assert run.text == HELP and run.frames == []


async def test_a_full_run_with_parallel_tools_a_failure_and_a_question() -> None:
    run = await run_agent(
        demo_agent, "what is 6*7 and time in Atlantis and wait 0.1 and ask me", answers=["Ada"]
    )
    assert run.status == "completed"
    assert run.questions == ["What is your name?"]
    assert run.narration == [
        "thinking",
        "running calculator; running clock; running slow",
        "waiting for your answer",
    ]
    timeline = run.timeline
    assert [c.name for c in timeline] == ["calculator", "clock", "slow"]
    assert [c.state.value for c in timeline] == ["completed", "failed", "completed"]
    assert run.text is not None
    assert run.text.startswith("6*7 = 42; clock failed: LookupError: unknown place")
    assert run.text.endswith("slow: waited 0.1 s; nice to meet you, Ada.")


def test_a_place_after_a_time_request_is_another_clock_call() -> None:
    request = read_request("what is 6*7 and the time in Tokyo and in Lima, Paris and Europe/Rome")
    assert [(c.name, c.args) for c in request.calls] == [
        ("calculator", {"expression": "6*7"}),
        ("clock", {"place": "Tokyo"}),
        ("clock", {"place": "Lima"}),
        ("clock", {"place": "Paris"}),
        ("clock", {"place": "Europe/Rome"}),
    ]
    assert request.not_understood == []
    # Without a time request before it, "in Lima" means nothing.
    assert read_request("in Lima").not_understood == ["in Lima"]


async def test_what_is_not_understood_is_said_not_dropped() -> None:
    run = await run_agent(demo_agent, "what is 6*7 and the time in Tokyo and in Lima and dance")
    assert [c.name for c in run.timeline] == ["calculator", "clock", "clock"]
    assert run.text is not None
    assert run.text.startswith("6*7 = 42; it is ")
    assert "in Lima (America/Lima)" in run.text
    assert run.text.endswith(". I did not understand: 'dance'.")
    assert not_understood_note(["a", "b c"]) == "I did not understand: 'a', 'b c'."
