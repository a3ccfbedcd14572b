"""Bounding what goes on the wire: a large tool value is cut with an explicit marker."""

from __future__ import annotations

from typing import Any

from pydantic_core import to_json, to_jsonable_python

__all__ = ["TRUNCATION_MARKER", "bound", "jsonable"]

TRUNCATION_MARKER = "… [truncated: {total:,} characters in all, the first {shown:,} shown]"
"""Appended to a cut value; states the full size, so a cut is never silent."""


def jsonable(value: Any) -> Any:
    """``value`` as JSON data: tuples become lists, dates ISO text, anything unknown its str()."""
    return to_jsonable_python(value, fallback=str)


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
