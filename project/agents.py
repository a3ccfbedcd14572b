"""The demo agent: plain async Python, no LLM, real tools.

It reads the request as a list of things to do, separated by "and", commas, semicolons or
"then", and runs one tool per thing, all of them in parallel:

- arithmetic ("what is 2 + 3 * 4")          -> ``calculator`` (a safe evaluator)
- "time in Tokyo" / "time in Europe/Paris"  -> ``clock`` (zoneinfo; unknown places fail)
- "wait 3" / "slow 2.5 seconds"             -> ``slow`` (sleeps, to watch a spinner)
- "fail" / "break"                          -> ``broken`` (always raises: a failed frame)
- "ask me"                                  -> asks for your name (input-required), then greets

A clause naming only a place right after a time request ("the time in Tokyo and in Lima") is
another clock call. Whatever else it cannot read, the reply says so ("I did not understand:
'...'"): nothing is dropped silently.

Try: ``what is 6*7 and the time in Tokyo, wait 2 and fail``.
"""

from __future__ import annotations

import ast
import asyncio
import operator
import re
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field
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
    "lima": "America/Lima",
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
_MORE_PLACES = re.compile(r"^(?:(?:and|also)\s+)?(?:in|at|for)\s+(?P<place>.+)$", re.IGNORECASE)
_ZONE = re.compile(r"^[A-Za-z_]+/[A-Za-z_/+-]+$")
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


@dataclass
class Plan:
    """What a request asks for: tool calls, whether to ask the user, and what was not understood."""

    calls: list[ToolCall] = field(default_factory=list)
    ask: bool = False
    not_understood: list[str] = field(default_factory=list)


def read_request(text: str, *, more: Callable[[str], ToolCall | None] | None = None) -> Plan:
    """Read a request clause by clause (``more`` reads clauses of the caller's own tools first)."""
    result = Plan()
    previous: ToolCall | None = None
    for clause in filter(None, (c.strip() for c in _SPLIT.split(text))):
        call = more(clause) if more is not None else None
        if call is None and _ASK.search(clause):
            result.ask = True
            previous = None
            continue
        if call is None:
            call = _read_clause(clause, previous)
        if call is None:
            result.not_understood.append(clause)
        else:
            result.calls.append(call)
        previous = call
    return result


def _read_clause(clause: str, previous: ToolCall | None) -> ToolCall | None:
    if match := _CLOCK.search(clause):
        return ToolCall("clock", {"place": match["place"]}, run=clock)
    if previous is not None and previous.name == "clock":
        # "the time in Tokyo and in Lima": a place alone goes on with the time request.
        place = match["place"] if (match := _MORE_PLACES.match(clause)) else clause
        bare = place.strip().rstrip("?.!").strip()
        if match or bare.lower() in CITIES or _ZONE.match(bare):
            return ToolCall("clock", {"place": place}, run=clock)
    if match := _SLOW.search(clause):
        return ToolCall("slow", {"seconds": float(match["seconds"])}, run=slow)
    if _FAIL.search(clause):
        return ToolCall("broken", {}, run=broken)
    expression = _MATH_PREFIX.sub("", clause).rstrip("?= ")
    if _MATH.match(expression):
        return ToolCall("calculator", {"expression": expression}, run=calculator)
    return None


def plan(text: str) -> tuple[list[ToolCall], bool]:
    """The tool calls a request asks for, and whether it asks to be asked something."""
    request = read_request(text)
    return request.calls, request.ask


def not_understood_note(clauses: list[str]) -> str:
    """The sentence a reply ends with when parts of the request were not understood."""
    if not clauses:
        return ""
    return "I did not understand: " + ", ".join(repr(clause) for clause in clauses) + "."


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
    request = read_request(task.text)
    calls = request.calls
    if not calls and not request.ask:
        yield Reply(text=HELP)
        return
    lines: list[str] = []
    if calls:
        results: list[ToolResult] = yield calls
        lines = [_describe(call, result) for call, result in zip(calls, results, strict=True)]
    if request.ask:
        yield Progress("waiting for your answer")
        answer: UserAnswer = yield InputRequest("What is your name?")
        lines.append(f"nice to meet you, {answer.text.strip() or 'stranger'}")
    note = not_understood_note(request.not_understood)
    yield Reply(text="; ".join(lines) + "." + (f" {note}" if note else ""))
