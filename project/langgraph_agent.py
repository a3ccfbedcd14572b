"""The demo site's default agent: a LangGraph ReAct loop with real tools.

The model is, by default, an offline deterministic planner written as a LangChain chat model:
it reads the request as a list of things to do (see ``project.agents``), answers with one tool
call per thing, all in one turn (so they run in parallel), then answers from the tool results.
No network, no key. Set ``A2A_DEMO_OPENAI_MODEL`` (and ``A2A_DEMO_OPENAI_BASE_URL``,
``A2A_DEMO_OPENAI_API_KEY``) to use an OpenAI-compatible model instead (needs
``langchain-openai``, the ``openai`` extra).

Tools: ``calculator``, ``clock``, ``slow``, ``broken`` (as in the plain demo agent),
``search_docs``, a search over this project's own documentation, and two that need the user,
through LangGraph's ``interrupt`` (A2A input-required): ``ask_user`` ("ask me": asks your name,
then greets) and ``charge_card`` ("charge 5 to my card"), marked sensitive: the graph asks for
approval before it runs, and anything but "approve" declines it. Each tool call runs as its own
task (``Send``), so a call waiting for the user never makes the others run twice.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool, tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command, Send, interrupt
from pydantic import Field

from a2a_toolcall.runtime import ToolCall
from a2a_toolcall.runtime.langgraph import LangGraphAgent, message_text
from project import agents as plain

DOCS = Path(__file__).resolve().parent.parent / "docs"
README = DOCS.parent / "README.md"

# --- tools -------------------------------------------------------------------------------------


@tool
def calculator(expression: str) -> float | int:
    """Evaluate arithmetic: + - * / // % ** and parentheses."""
    return plain.calculator(expression)


@tool
def clock(place: str) -> dict[str, str]:
    """The current time in a city or an IANA time zone such as Europe/Paris."""
    return plain.clock(place)


@tool
async def slow(seconds: float) -> str:
    """Wait a number of seconds (at most 120), then say so."""
    return await plain.slow(seconds)


@tool
def broken() -> str:
    """Always fails, to show a failed tool call."""
    return plain.broken()


@tool
def search_docs(query: str) -> list[dict[str, Any]]:
    """Search this project's documentation; returns matching lines with file and line number."""
    words = [w for w in re.findall(r"\w+", query.lower()) if len(w) > 2]
    if not words:
        raise ValueError("say what to search for")
    hits: list[tuple[int, dict[str, Any]]] = []
    for path in sorted([README, *DOCS.glob("*.md")]):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            score = sum(word in line.lower() for word in words)
            if score:
                where = str(path.relative_to(DOCS.parent))
                hits.append((score, {"file": where, "line": number, "text": line.strip()[:200]}))
    hits.sort(key=lambda hit: -hit[0])
    return [hit for _, hit in hits[:5]]


@tool
def ask_user(question: str) -> str:
    """Ask the user a question and wait for the answer."""
    return str(interrupt(question)).strip()


CHARGES: deque[dict[str, Any]] = deque(maxlen=100)
"""The demo card's ledger: what ``charge_card`` "charged" (nothing real), newest last."""


@tool
def charge_card(amount: float) -> dict[str, Any]:
    """Charge an amount to the user's card (a demo: nothing is charged). Needs approval."""
    if not 0 < amount <= 10_000:
        raise ValueError("charge between 0 and 10000")
    receipt = {"charged": amount, "currency": "EUR", "receipt": f"demo-{uuid.uuid4().hex[:8]}"}
    CHARGES.append(receipt)
    return receipt


SENSITIVE = "sensitive"
"""The tool metadata key that makes the graph ask the user before the tool runs."""
charge_card.metadata = {SENSITIVE: True}

APPROVE = "approve"

TOOLS: list[BaseTool] = [calculator, clock, slow, broken, search_docs, ask_user, charge_card]


async def approve_sensitive(
    request: ToolCallRequest,
    execute: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
) -> ToolMessage | Command[Any]:
    """Before a tool marked sensitive runs, ask the user (``interrupt``); only "approve" runs it.

    On resume the tool task starts again: ``interrupt`` then returns the answer instead of
    pausing, so the tool runs (or is declined) exactly once.
    """
    if request.tool is None or not (request.tool.metadata or {}).get(SENSITIVE):
        return await execute(request)
    call = request.tool_call
    args = ", ".join(f"{key}={value!r}" for key, value in call["args"].items())
    decision = interrupt(
        {
            "question": f"approve {call['name']}({args})? Answer approve or reject.",
            "tool": call["name"],
            "args": call["args"],
            "choices": [APPROVE, "reject"],
        }
    )
    if str(decision).strip().lower() == APPROVE:
        return await execute(request)
    return ToolMessage(
        f"rejected by the user (answered {str(decision).strip()!r}); nothing was done",
        tool_call_id=call["id"],
        name=call["name"],
        status="error",
    )


# --- the offline planner -----------------------------------------------------------------------

_SEARCH = re.compile(
    r"\b(?:search|look\s+up|find)\s+(?:in\s+)?(?:the\s+)?docs?\s+(?:for|about)\s+(?P<q>.+)$",
    re.IGNORECASE,
)
_CHARGE = re.compile(r"\bcharge\s+(?:me\s+)?(?P<amount>\d+(?:\.\d+)?)\b", re.IGNORECASE)
NAME_QUESTION = "What is your name?"

HELP = (
    'I can do arithmetic ("what is 6*7"), tell the time somewhere ("time in Tokyo"), '
    'wait a while ("wait 3"), fail on purpose ("fail"), ask you something ("ask me"), search '
    'these docs ("search the docs for keepalive") and charge your card once you approve '
    '("charge 5 to my card"; a demo: nothing is charged). Combine them with "and" to run '
    "several tools in parallel."
)


def _own_clause(clause: str) -> ToolCall | None:
    if match := _SEARCH.search(clause):
        return ToolCall("search_docs", {"query": match["q"].strip()})
    if match := _CHARGE.search(clause):
        amount = float(match["amount"])
        return ToolCall("charge_card", {"amount": int(amount) if amount.is_integer() else amount})
    return None


def read_request(text: str) -> plain.Plan:
    """What a request asks for, in this agent's tools ("ask me" becomes an ``ask_user`` call)."""
    request = plain.read_request(text, more=_own_clause)
    if request.ask:
        request.calls.append(ToolCall("ask_user", {"question": NAME_QUESTION}))
    return request


def plan_calls(text: str) -> list[dict[str, Any]]:
    """The tool calls (name, args) a request asks for, in order."""
    return [{"name": call.name, "args": dict(call.args or {})} for call in read_request(text).calls]


def _describe(name: str, args: dict[str, Any], message: ToolMessage) -> str:
    if message.status == "error":
        first_line = message_text(message).strip().splitlines()[0]
        if first_line.startswith("rejected by the user"):
            return f"{name} was not run: {first_line}"
        return f"{name} failed: {first_line}"
    try:
        value: Any = json.loads(message_text(message))
    except ValueError:
        value = message_text(message)
    if name == "calculator":
        return f"{args.get('expression')} = {value}"
    if name == "clock" and isinstance(value, dict):
        return f"it is {value['time']} in {value['place']} ({value['zone']})"
    if name == "ask_user":
        return f"nice to meet you, {value or 'stranger'}"
    if name == "charge_card" and isinstance(value, dict):
        return f"charged {value['charged']:g} {value['currency']} (receipt {value['receipt']})"
    if name == "search_docs" and isinstance(value, list):
        found = ", ".join(f"{hit['file']}:{hit['line']}" for hit in value) or "nothing"
        return f"the docs mention {args.get('query')!r} at {found}"
    return f"{name}: {value}"


class PlannerChatModel(BaseChatModel):
    """A deterministic, offline chat model that plans tool calls from the request's wording."""

    bound_tools: list[str] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "a2a-toolcall-offline-planner"

    def bind_tools(
        self, tools: Sequence[Any], **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        names = [convert_to_openai_tool(t)["function"]["name"] for t in tools]
        return self.model_copy(update={"bound_tools": names})

    def _decide(self, messages: list[BaseMessage]) -> AIMessage:
        last = messages[-1]
        if isinstance(last, HumanMessage):
            calls = [c for c in plan_calls(message_text(last)) if c["name"] in self.bound_tools]
            if not calls:
                return AIMessage(content=HELP)
            return AIMessage(
                content="",
                tool_calls=[
                    {"name": c["name"], "args": c["args"], "id": f"call_{uuid.uuid4().hex[:24]}"}
                    for c in calls
                ],
            )
        # Tool results: answer from the results of the last turn.
        asked = next(m for m in reversed(messages) if isinstance(m, AIMessage) and m.tool_calls)
        results = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
        lines = [
            _describe(call["name"], call["args"], results[call["id"]])
            for call in asked.tool_calls
            if call["id"] in results
        ]
        request = next(m for m in reversed(messages) if isinstance(m, HumanMessage))
        note = plain.not_understood_note(read_request(message_text(request)).not_understood)
        return AIMessage(content="; ".join(lines) + "." + (f" {note}" if note else ""))

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._decide(messages))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._generate(messages, stop)


def default_model() -> BaseChatModel:
    """The offline planner, or an OpenAI-compatible model when the environment names one."""
    model = os.environ.get("A2A_DEMO_OPENAI_MODEL")
    if not model:
        return PlannerChatModel()
    from langchain_openai import ChatOpenAI  # the "openai" extra

    chat: BaseChatModel = ChatOpenAI(
        model=model,
        base_url=os.environ.get("A2A_DEMO_OPENAI_BASE_URL") or None,
        api_key=os.environ.get("A2A_DEMO_OPENAI_API_KEY") or os.environ.get("OPENAI_API_KEY"),
    )
    return chat


def _act(state: MessagesState) -> list[Send] | str:
    """Each tool call of the model's last turn as its own task (all in one step), or the end."""
    last = state["messages"][-1]
    if isinstance(last, AIMessage) and last.tool_calls:
        return [Send("tools", [call]) for call in last.tool_calls]
    return END


def build_graph(model: BaseChatModel, tools: Sequence[BaseTool] = TOOLS) -> Any:
    """A ReAct loop: the model, then the tools it asked for (in parallel), until it answers.

    Each tool call is a task of its own (``Send``): when one waits for the user (``interrupt``),
    the results of the others are kept, and only the waiting one runs again on resume.
    """
    bound = model.bind_tools(list(tools))

    async def think(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", think)
    graph.add_node(
        "tools",
        ToolNode(list(tools), handle_tool_errors=True, awrap_tool_call=approve_sensitive),
    )
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", _act, ["tools", END])
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=InMemorySaver())


assistant = LangGraphAgent(build_graph(default_model()))
"""The demo site's default agent (``A2A_TOOLCALL['AGENTS']['assistant']``)."""
