"""Agent output is untrusted input: the rules every surface showing it follows.

A model can be made to return any string or URL, so an agent's narration, questions, tool names,
arguments, results, errors, answers and file URLs are shown as text, never as markup; a URL is a
link only when it is an absolute http(s) URL; and a terminal never gets a control character or
a bidi override raw. The admin and the terminal client use these helpers; the live page follows
the same rules in JavaScript (``httpURL`` in ``static/a2a_toolcall/a2a.js``). Stdlib only: the
client imports it without Django (docs/architecture.md).
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import urlsplit

__all__ = ["LINK_SCHEMES", "is_web_url", "json_for_terminal", "text_for_terminal"]

LINK_SCHEMES: Final = frozenset({"http", "https"})
"""The only schemes an agent's URL is linked with; ``javascript:``, ``data:``, ``vbscript:``,
``file:`` and the rest are shown as text."""

# Bidi controls (Unicode UAX #9: embeddings, overrides, isolates and the three marks): the
# "Trojan Source" characters (CVE-2021-42574), which reorder the text shown around them.
_BIDI: Final = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
# C0 and C1 controls and DEL: ESC starts the sequences that move the cursor, clear the screen,
# set the window title or write an OSC 8 hyperlink; a C1 CSI (U+009B) does the same in some
# terminals. Tab and newline are layout, and stay.
_UNSAFE_IN_TEXT: Final = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")
_UNSAFE_ON_A_LINE: Final = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}]")


def is_web_url(url: object) -> bool:
    """True for an absolute ``http``/``https`` URL with a host: the only agent URLs shown as links.

    Parsed with :func:`urllib.parse.urlsplit`, as a browser would read it (``" JavaScript:"``
    and ``"java\\tscript:"`` are ``javascript:`` URLs), never matched on its first characters.
    A relative or malformed URL, or one holding a control or bidi character, is not one.
    """
    if not isinstance(url, str) or _UNSAFE_ON_A_LINE.search(url):
        return False
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:  # an invalid IPv6 host, a port out of range...
        return False
    return parts.scheme.lower() in LINK_SCHEMES and bool(host)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def text_for_terminal(text: str, *, one_line: bool = False) -> str:
    """``text`` with every control character but tab and newline, and every bidi control,
    written as a visible escape (``\\x1b``, ``\\u202e``): what an agent says, safe to print.

    A CRLF line end is a newline; a lone CR (which would overwrite the line) is escaped.
    ``one_line=True`` escapes tabs and newlines too: for a name or a URL, shown as written.
    """
    if one_line:
        return _UNSAFE_ON_A_LINE.sub(_escape, text)
    return _UNSAFE_IN_TEXT.sub(_escape, text.replace("\r\n", "\n"))


def json_for_terminal(json_text: str) -> str:
    """JSON text with the characters :func:`text_for_terminal` escapes written as JSON escapes
    (``\\u001b``): the same value, safe to print.

    ``json.dumps`` escapes C0 controls itself; with ``ensure_ascii=False`` it writes DEL, the C1
    controls and the bidi controls raw. Outside strings JSON text is ASCII, so every match is
    inside a string and the escape keeps the text valid JSON.
    """
    return _UNSAFE_IN_TEXT.sub(lambda match: f"\\u{ord(match.group()):04x}", json_text)
