"""Settings for a live server whose default agent asks twice per task through LangGraph's
``interrupt`` (``tests.scripted_model.asks_twice``; tests/test_sdk_interop.py)."""

from typing import Any

from tests.settings import *  # noqa: F403
from tests.settings import A2A_TOOLCALL as _TEST_SETTINGS

_BASE: dict[str, Any] = _TEST_SETTINGS

A2A_TOOLCALL = {
    **_BASE,
    "AGENTS": {**_BASE["AGENTS"], "asks-twice": "tests.scripted_model.asks_twice"},
    "DEFAULT_AGENT": "asks-twice",
}
