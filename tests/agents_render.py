"""The ``hostile_render`` agent: every kind of output an agent gives, each a payload that a
renderer taking agent output as markup, or a URL as a link, would run (tests/test_render_safety.py).

A model can be made to return any string or URL: these are what an attacker would make it say.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any, Final

from a2a_toolcall.protocol.models import Part
from a2a_toolcall.runtime import (
    AgentInput,
    ArtifactUpdate,
    Event,
    InputRequest,
    Progress,
    Reply,
    ToolCall,
)

SCRIPT: Final = "<script>window.__pwned=1</script>"
IMG: Final = '<img src=x onerror="window.__pwned=1">'
JAVASCRIPT_URL: Final = "javascript:window.__pwned=1"
DATA_URL: Final = "data:text/html,<script>window.__pwned=1</script>"
HTTP_URL: Final = "https://example.com/report.pdf"
BIDI: Final = "\u202eevil"
"""A right-to-left override: what follows it is shown reversed ("live")."""
MARKUP: Final = "[bold red]styled[/] [link=javascript:window.__pwned=1]click[/link]"
"""rich markup: a terminal client parsing agent text as markup would style it and link it."""
ESCAPES: Final = (
    "\x1b[2J\x1b]0;pwned\x07\x1b]8;;javascript:window.__pwned=1\x1b\\click\x1b]8;;\x1b\\\x9b31m"
)
"""Terminal escapes: clear the screen, set the window title, an OSC 8 hyperlink, a C1 CSI."""

UNLINKED: Final = {
    SCRIPT: JAVASCRIPT_URL,
    "page.html": DATA_URL,
    "shouting.html": " JAVASCRIPT:window.__pwned=1",
    "tabbed.html": "java\tscript:window.__pwned=1",
    "basic.vbs": "vbscript:msgbox(1)",
    "relative": "/files/report.pdf",
    "malformed": "https//example.com/report.pdf",
}
"""File parts (file name -> URL) whose URL is not http(s): shown as text, never as a link."""
LINKED: Final = {"report.pdf": HTTP_URL}
"""The file part whose URL is http(s): a link."""

NARRATION: Final = f"{SCRIPT} {BIDI}"
QUESTION: Final = f"{IMG} {BIDI}"
ARGS: Final = {"html": SCRIPT, "url": JAVASCRIPT_URL, "markup": MARKUP}
RESULT: Final = {"html": IMG, "bidi": BIDI, "escapes": ESCAPES}
ERROR: Final = f"{SCRIPT} {BIDI}"
ANSWER: Final = f"{SCRIPT}\n{IMG}\n{MARKUP}\n{BIDI}"
DATA: Final = {"html": SCRIPT, "url": DATA_URL}
PAUSE: Final = 2.0
"""Seconds the first narration line stays up, for a test to see it."""


def fail(**_: Any) -> None:
    """A tool whose error message is markup."""
    raise RuntimeError(ERROR)


async def hostile_render(task: AgentInput) -> AsyncGenerator[Event, Any]:
    """Narrates markup, runs a tool named markup (args and result markup) and one failing with
    markup, hands out the files of :data:`UNLINKED` and :data:`LINKED`, asks a question in markup,
    then answers markup, with a data part."""
    yield Progress(NARRATION)
    await asyncio.sleep(PAUSE)
    yield ToolCall(IMG, ARGS, run=lambda **_: RESULT)
    yield ToolCall("broken", {"markup": MARKUP}, run=fail)
    files = {**UNLINKED, **LINKED}
    yield ArtifactUpdate(
        [Part(url=url, filename=name) for name, url in files.items()], name="files"
    )
    answer = yield InputRequest(QUESTION, meta={"choices": [MARKUP, "yes"]})
    yield Reply(text=f"{ANSWER}\n(you said {answer})", data=[DATA])
