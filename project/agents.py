"""The demo agent: plain async Python, no LLM, real tools.

It reads the request as a list of things to do, separated by "and", commas, semicolons or
"then", and runs one tool per thing, all of them in parallel:

- arithmetic ("what is 2 + 3 * 4")          -> ``calculator`` (a safe evaluator)
- "time in Tokyo" / "time in Europe/Paris"  -> ``clock`` (zoneinfo; unknown places fail)
- "wait 3" / "slow 2.5 seconds"             -> ``slow`` (sleeps, to watch a spinner)
- "fail" / "break"                          -> ``broken`` (always raises: a failed frame)
- "ask me"                                  -> asks for your name (input-required), then greets

Try: ``what is 6*7 and the time in Tokyo, wait 2 and fail``.
"""

from __future__ import annotations

import ast
import asyncio
import operator
import re
from collections.abc import AsyncGenerator, Callable
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from a2a_toolcall.runtime import (
    AgentInput,
    Event,
    InputRequest,
    Progress,
    Reply,
    ToolCall,
    ToolResult,
    UserAnswer,
)

# --- tools -----------------------------------------------------------------------------------

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
_MAX_MAGNITUDE = 10**100


def calculator(expression: str) -> int | float:
    """Evaluate arithmetic (+ - * / // % ** and parentheses) without eval()."""

    def walk(node: ast.AST) -> int | float:
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            return node.value  # type: ignore[return-value]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            left, right = walk(node.left), walk(node.right)
            if isinstance(node.op, ast.Pow) and abs(right) > 100:
                raise ValueError("exponents above 100 are not allowed")
            value = _BINARY[type(node.op)](left, right)
        elif isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            value = _UNARY[type(node.op)](walk(node.operand))
        else:
            raise ValueError(f"not arithmetic: {ast.unparse(node)!r}")
        if abs(value) > _MAX_MAGNITUDE:
            raise ValueError("the result is too large")
        return value  # type: ignore[no-any-return]

    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError:
        raise ValueError(f"not arithmetic: {expression!r}") from None
    return walk(tree.body)


CITIES = {
    "tokyo": "Asia/Tokyo",
    "paris": "Europe/Paris",
    "london": "Europe/London",
    "berlin": "Europe/Berlin",
    "new york": "America/New_York",
    "san francisco": "America/Los_Angeles",
    "los angeles": "America/Los_Angeles",
    "sydney": "Australia/Sydney",
    "mumbai": "Asia/Kolkata",
    "sao paulo": "America/Sao_Paulo",
    "utc": "UTC",
}


def clock(place: str) -> dict[str, str]:
    """The current time in a city (see CITIES) or an IANA time zone such as Europe/Paris."""
    key = place.strip().rstrip("?.!").strip()
    zone_name = CITIES.get(key.lower(), key)
    try:
        zone = ZoneInfo(zone_name)
    except (ZoneInfoNotFoundError, ValueError):
        raise LookupError(
            f"unknown place or time zone {key!r}; try a city ({', '.join(sorted(CITIES))}) "
            "or an IANA zone such as Europe/Paris"
        ) from None
    now = datetime.now(UTC).astimezone(zone)
    return {
        "place": key,
        "zone": zone_name,
        "time": now.strftime("%H:%M"),
        "utcOffset": now.strftime("%z"),
    }


async def slow(seconds: float) -> str:
    """Wait ``seconds`` (at most 120), then report it: a tool to watch a spinner on."""
    if not 0 <= seconds <= 120:
        raise ValueError("wait between 0 and 120 seconds")
    await asyncio.sleep(seconds)
    return f"waited {seconds:g} s"


def broken() -> str:
    """Always fails, to show a failed frame."""
    raise RuntimeError("this tool always fails (it is here to show a failed frame)")


# --- reading the request ---------------------------------------------------------------------

_SPLIT = re.compile(r"\s*(?:[,;\n]|\band\b|\bthen\b)\s*", re.IGNORECASE)
_CLOCK = re.compile(r"\b(?:time|clock)\s+(?:is it\s+)?in\s+(?P<place>.+)$", re.IGNORECASE)
_SLOW = re.compile(
    r"\b(?:wait|sleep|slow)\s*(?:for\s*)?(?P<seconds>\d+(?:\.\d+)?)\s*(?:s|secs?|seconds?)?\b",
    re.IGNORECASE,
)
_FAIL = re.compile(r"\b(?:fail|break|crash)\b", re.IGNORECASE)
_ASK = re.compile(r"\bask me\b", re.IGNORECASE)
_MATH_PREFIX = re.compile(r"^(?:what(?:'s| is)|calculate|compute|eval(?:uate)?)\s+", re.IGNORECASE)
_MATH = re.compile(r"^[\d\s.+\-*/%()]*\d[\d\s.+\-*/%()]*$")

HELP = (
    'I can do arithmetic ("what is 6*7"), tell the time somewhere ("time in Tokyo"), '
    'wait a while ("wait 3"), fail on purpose ("fail") and ask you something ("ask me"). '
    'Combine them with "and" to run several tools in parallel.'
)


def plan(text: str) -> tuple[list[ToolCall], bool]:
    """The tool calls a request asks for, and whether it asks to be asked something."""
    calls: list[ToolCall] = []
    ask = False
    for clause in filter(None, (c.strip() for c in _SPLIT.split(text))):
        if _ASK.search(clause):
            ask = True
        elif match := _CLOCK.search(clause):
            calls.append(ToolCall("clock", {"place": match["place"]}, run=clock))
        elif match := _SLOW.search(clause):
            calls.append(ToolCall("slow", {"seconds": float(match["seconds"])}, run=slow))
        elif _FAIL.search(clause):
            calls.append(ToolCall("broken", {}, run=broken))
        else:
            expression = _MATH_PREFIX.sub("", clause).rstrip("?= ")
            if _MATH.match(expression):
                calls.append(ToolCall("calculator", {"expression": expression}, run=calculator))
    return calls, ask


def _describe(call: ToolCall, result: ToolResult) -> str:
    if not result.ok:
        return f"{call.name} failed: {result.error}"
    if call.name == "calculator":
        return f"{call.args['expression']} = {result.value}"
    if call.name == "clock":
        value = result.value
        return f"it is {value['time']} in {value['place']} ({value['zone']})"
    return f"{call.name}: {result.value}"


async def demo_agent(task: AgentInput) -> AsyncGenerator[Event, Any]:
    """Run the tools the request asks for, in parallel, then answer."""
    calls, ask = plan(task.text)
    if not calls and not ask:
        yield Reply(text=HELP)
        return
    lines: list[str] = []
    if calls:
        results: list[ToolResult] = yield calls
        lines = [_describe(call, result) for call, result in zip(calls, results, strict=True)]
    if ask:
        yield Progress("waiting for your answer")
        answer: UserAnswer = yield InputRequest("What is your name?")
        lines.append(f"nice to meet you, {answer.text.strip() or 'stranger'}")
    yield Reply(text="; ".join(lines) + ".")
