"""A chat model that answers from a script: real LangGraph graphs, predictable decisions."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from pydantic import Field


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
