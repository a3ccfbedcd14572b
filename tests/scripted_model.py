"""A chat model that answers from a script: real LangGraph graphs, predictable decisions.

Also ``asks_twice``: a LangGraph agent that asks the user twice in one task (``interrupt`` inside
a tool), for end-to-end tests of input-required over a live server (tests/hitl_settings.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import interrupt
from pydantic import Field

from a2a_toolcall.runtime.langgraph import LangGraphAgent, message_text


class ScriptedChatModel(BaseChatModel):
    """Returns the scripted messages in order, one per call (the last one repeats)."""

    script: list[AIMessage]
    delay: float = 0.0
    calls: list[int] = Field(default_factory=lambda: [0])

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(
        self, tools: Sequence[Any], **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self

    def _next(self) -> AIMessage:
        index = min(self.calls[0], len(self.script) - 1)
        self.calls[0] += 1
        return self.script[index].model_copy()

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._next())])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.delay:
            await asyncio.sleep(self.delay)
        return ChatResult(generations=[ChatGeneration(message=self._next())])


def call(name: str, call_id: str | None, **args: Any) -> dict[str, Any]:
    """A tool call as a model writes it."""
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def scripted(*messages: AIMessage, delay: float = 0.0) -> ScriptedChatModel:
    """A fresh scripted model (its call counter is its own)."""
    return ScriptedChatModel(script=list(messages), delay=delay, calls=[0])


@tool
def confirm(question: str) -> str:
    """Ask the user to confirm something: the run waits (``interrupt``) for the answer."""
    return f"the user said {interrupt(question)}"


QUESTIONS = ("Ship it?", "Really?")


async def _ask_in_turn(state: MessagesState) -> dict[str, Any]:
    """Call ``confirm`` once per question of ``QUESTIONS``, one turn each, then answer."""
    answers: list[ToolMessage] = []
    for message in reversed(state["messages"]):
        if isinstance(message, HumanMessage):
            break
        if isinstance(message, ToolMessage):
            answers.insert(0, message)
    if len(answers) < len(QUESTIONS):
        asked = len(answers)
        question = QUESTIONS[asked]
        ask = call("confirm", f"confirm-{asked + 1}", question=question)
        return {"messages": [AIMessage("", tool_calls=[ask])]}
    return {"messages": [AIMessage("shipped: " + ", ".join(map(message_text, answers)))]}


def _asks_twice_graph() -> Any:
    graph = StateGraph(MessagesState)
    graph.add_node("agent", _ask_in_turn)
    graph.add_node("tools", ToolNode([confirm]))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition, ["tools", END])
    graph.add_edge("tools", "agent")
    return graph.compile()


asks_twice = LangGraphAgent(_asks_twice_graph())
"""Asks "Ship it?", then "Really?", each from a tool call, then answers with both answers."""
