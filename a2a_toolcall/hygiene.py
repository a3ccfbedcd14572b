"""Data hygiene before anything is stored: secrets redacted, sizes capped (with a marker).

Applied by the recorder, once, to every data value the agent hands out (tool args and results,
data parts, part and artifact metadata, narration and question ``meta``) before it is streamed
or written, so the database and every client see the same cleaned value. Free text (narration,
questions, answers, text parts) is not cleaned: docs/audit.md lists what is and is not.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import cache
from typing import Any, Final

from a2a_toolcall.runtime.limits import bound

__all__ = [
    "DEFAULT_REDACT_KEYS",
    "REDACTED",
    "Cleaner",
    "clean_metadata",
    "clean_part",
    "get_cleaner",
    "make_cleaner",
    "redact",
]

DEFAULT_REDACT_KEYS: Final = ("password", "token", "api_key", "authorization", "secret")
"""Key names redacted by default (see :func:`redact` for how names match)."""

REDACTED: Final = "[redacted]"

Cleaner = Callable[[Any], Any]


def _normal(key: str) -> str:
    return re.sub(r"[\s\-.]+", "_", key.strip().lower())


def _matches(key: str, names: frozenset[str]) -> bool:
    # "access_token", "x-api-key", "Authorization", "password_hash" match; "tokens_used" does not.
    normal = _normal(key)
    return any(
        normal == name or normal.endswith("_" + name) or normal.startswith(name + "_")
        for name in names
    )


def _key_matcher(names: Iterable[str]) -> Callable[[str], bool]:
    """``key -> bool`` for ``names``, remembering its answers (tools reuse their key names)."""
    wanted = frozenset(_normal(name) for name in names)
    seen: dict[str, bool] = {}

    def matches(key: str) -> bool:
        found = seen.get(key)
        if found is None:
            found = _matches(key, wanted)
            if len(seen) >= _MATCH_CACHE_SIZE:
                seen.clear()
            seen[key] = found
        return found

    return matches


_MATCH_CACHE_SIZE: Final = 4096


def _redactor(names: Iterable[str]) -> Callable[[Any], Any]:
    matches = _key_matcher(names)

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {
                key: REDACTED if isinstance(key, str) and matches(key) else walk(child)
                for key, child in node.items()
            }
        if isinstance(node, list | tuple):
            return [walk(child) for child in node]
        return node

    return walk


def redact(value: Any, names: Iterable[str] = DEFAULT_REDACT_KEYS) -> Any:
    """A copy of ``value`` with the values of matching keys (at any depth) replaced."""
    return _redactor(names)(value)


def make_cleaner(
    names: Iterable[str] = DEFAULT_REDACT_KEYS,
    hook: Callable[[Any], Any] | None = None,
    limit: int | None = None,
) -> Cleaner:
    """Redact ``names``, then apply ``hook``, then cap the JSON size at ``limit`` characters."""
    walk = _redactor(tuple(names))

    def clean(value: Any) -> Any:
        if value is None:
            return None
        cleaned = walk(value)
        if hook is not None:
            cleaned = hook(cleaned)
        return bound(cleaned, limit)

    return clean


def clean_metadata(clean: Cleaner, metadata: Any) -> Any:
    """``clean(metadata)``, still a JSON object where it was one.

    A metadata object cut for size (or turned into something else by the hook) is kept as
    ``{"value": <what the cleaner made of it>}``: the A2A models accept only an object there.
    """
    cleaned = clean(metadata)
    if isinstance(metadata, dict) and not isinstance(cleaned, dict):
        return {"value": cleaned}
    return cleaned


def clean_part(clean: Cleaner, part: dict[str, Any]) -> dict[str, Any]:
    """A copy of the wire ``part`` with its ``data`` and ``metadata`` cleaned.

    Its other members (``text``, ``raw``, ``url``, ``filename``, ``mediaType``) are content or
    free text and go out as they are.
    """
    cleaned = dict(part)
    if "data" in part:
        cleaned["data"] = clean(part["data"])
    if "metadata" in part:
        cleaned["metadata"] = clean_metadata(clean, part["metadata"])
    return cleaned


@cache
def _cached_cleaner(names: tuple[str, ...], hook_path: str | None, limit: int) -> Cleaner:
    from django.utils.module_loading import import_string

    hook = import_string(hook_path) if hook_path else None
    return make_cleaner(names, hook, limit)


def get_cleaner() -> Cleaner:
    """The cleaner the settings describe (REDACT_KEYS, REDACT_HOOK, STORED_VALUE_LIMIT)."""
    from a2a_toolcall.conf import get_setting

    return _cached_cleaner(
        tuple(get_setting("REDACT_KEYS")),
        get_setting("REDACT_HOOK"),
        int(get_setting("STORED_VALUE_LIMIT")),
    )
