"""Bounding what goes on the wire: a value JSON cannot carry is marked, a large one cut.

Agent output is untrusted: a model that read a web page can be made to return any string or
number. Everything an agent hands out passes through here before it is published, so one odd
value never fails a task:

- :func:`jsonable` turns a value into JSON data, writing what JSON cannot carry as a string
  with a marker (:data:`NOT_JSON_MARKER`): ``NaN`` and infinities (``"[not JSON: NaN]"``),
  integers beyond 64 bits (``"[not JSON: integer] 1234…"``), bytes (``"[not JSON: 3 bytes]
  AAEC"``, base64), text with lone surrogates (each replaced by U+FFFD), objects it does not
  know (their ``str()``; ``"[not JSON: Foo]"`` if even that fails), nesting deeper than
  :data:`MAX_DEPTH` and cycles;
- :func:`bound` and :func:`bound_text` cut a value or a text over a limit, with
  :data:`TRUNCATION_MARKER` stating the full size.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import decimal
import enum
import math
import uuid
from collections.abc import Mapping
from typing import Any, Final

from pydantic import BaseModel
from pydantic_core import to_json, to_jsonable_python

__all__ = [
    "MAX_DEPTH",
    "NOT_JSON_MARKER",
    "TRUNCATION_MARKER",
    "bound",
    "bound_text",
    "jsonable",
    "valid_text",
]

TRUNCATION_MARKER = "… [truncated: {total:,} characters in all, the first {shown:,} shown]"
"""Appended to a cut value; states the full size, so a cut is never silent."""

NOT_JSON_MARKER: Final = "[not JSON: {kind}]"
"""Starts the string that stands for a value JSON cannot carry (docs/agents.md)."""

MAX_DEPTH: Final = 64
"""Nesting kept in a value; deeper parts (and cycles) become a marked string."""

_INT_MIN: Final = -(2**63)
_INT_MAX: Final = 2**64 - 1
_INT_DIGITS: Final = 4000  # str() of a larger int raises (sys.int_max_str_digits)


def _marked(kind: str, text: str = "") -> str:
    head = NOT_JSON_MARKER.format(kind=kind)
    return f"{head} {text}" if text else head


def valid_text(text: str) -> str:
    """``text`` with every lone surrogate (not Unicode; JSON and UTF-8 cannot carry it) replaced
    by U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def jsonable(value: Any) -> Any:
    """``value`` as JSON data: tuples and sets become lists, dates ISO text, models their
    JSON, keys text; what JSON cannot carry a marked string (see the module's docs)."""
    return _safe(value, 0, set())


def _safe(value: Any, depth: int, seen: set[int]) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, int):
        if _INT_MIN <= value <= _INT_MAX:
            return int(value)
        if value.bit_length() * 0.302 < _INT_DIGITS:
            return _marked("integer", str(value))
        return _marked("integer", f"of {value.bit_length():,} bits")
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return _marked("NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity"))
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        return _marked(f"{len(raw):,} bytes", base64.b64encode(raw).decode())
    if depth >= MAX_DEPTH:
        return _marked(f"nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, Mapping | list | tuple | set | frozenset):
        marker = id(value)
        if marker in seen:
            return _marked("a cycle")
        seen.add(marker)
        try:
            if isinstance(value, Mapping):
                return {_key(key): _safe(item, depth + 1, seen) for key, item in value.items()}
            return [_safe(item, depth + 1, seen) for item in value]
        finally:
            seen.discard(marker)
    if isinstance(value, decimal.Decimal) and not value.is_finite():
        return _marked(str(value))
    if isinstance(
        value, decimal.Decimal | datetime.date | datetime.time | datetime.timedelta | uuid.UUID
    ):
        return to_jsonable_python(value)
    if isinstance(value, enum.Enum):
        return _safe(value.value, depth + 1, seen)
    if isinstance(value, BaseModel) or (
        dataclasses.is_dataclass(value) and not isinstance(value, type)
    ):
        try:
            data = to_jsonable_python(value, fallback=_fallback, inf_nan_mode="constants")
        except Exception:
            return _text_of(value)
        return _safe(data, depth + 1, seen)
    return _text_of(value)


def _fallback(value: Any) -> Any:
    return _text_of(value)


def _key(key: Any) -> str:
    if isinstance(key, str):
        return valid_text(key)
    if isinstance(key, enum.Enum):
        key = key.value
    made = _safe(key, MAX_DEPTH, set())
    return made if isinstance(made, str) else to_json(made).decode()


def _text_of(value: Any) -> str:
    try:
        return valid_text(str(value))
    except Exception:
        return _marked(type(value).__name__)


def bound(value: Any, limit: int | None) -> Any:
    """``value`` as JSON data, or, when its JSON text is over ``limit`` characters, a string of
    the first ``limit`` characters followed by :data:`TRUNCATION_MARKER`."""
    data = jsonable(value)
    if limit is None:
        return data
    if isinstance(data, str):
        text = data
    else:
        encoded = to_json(data)
        if len(encoded) <= limit:  # UTF-8 bytes: never fewer than characters
            return data
        text = encoded.decode()
    if len(text) <= limit:
        return data
    return text[:limit] + TRUNCATION_MARKER.format(total=len(text), shown=limit)


def bound_text(text: Any, limit: int | None) -> str:
    """``text`` as valid Unicode text, cut to ``limit`` characters with
    :data:`TRUNCATION_MARKER` when it is longer (narration, questions, answers, errors)."""
    cleaned = valid_text(text if isinstance(text, str) else _text_of(text))
    if limit is None or len(cleaned) <= limit:
        return cleaned
    return cleaned[:limit] + TRUNCATION_MARKER.format(total=len(cleaned), shown=limit)
