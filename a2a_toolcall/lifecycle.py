"""One structured log record per task transition, on the ``a2a_toolcall.lifecycle`` logger.

Every record carries the task id and what happened in ``extra`` (so a JSON log formatter, or a
filter, can use them as fields) and says the same in its message for plain-text logs::

    task 6f0c…: accepted (agent demo)
    task 6f0c…: claimed by web-1:4711:9a3b0c1d (attempt 1)
    task 6f0c…: input-required
    task 6f0c…: resumed
    task 6f0c…: completed in 2.31 s
    task 6f0c…: failed in 12.40 s: the worker running it stopped (1 open tool call closed)

``extra`` keys: ``task_id``, ``task_event`` (accepted, claimed, working, input-required,
resumed, parked, retried, completed, failed, canceled, rejected), and as they apply ``agent``,
``runtime_id``, ``attempt``, ``reason``, ``duration_ms``, ``closed_calls``. Terminal records of
tasks failed because what ran or recorded them stopped are WARNINGs; the rest are INFO.
docs/deployment.md ("Lifecycle logs") shows how to route them.
"""

from __future__ import annotations

import logging
from typing import Any, Final

__all__ = ["LOGGER_NAME", "log_transition", "logger"]

LOGGER_NAME: Final = "a2a_toolcall.lifecycle"

logger = logging.getLogger(LOGGER_NAME)


def log_transition(
    task_id: str,
    event: str,
    *,
    level: int = logging.INFO,
    reason: str | None = None,
    duration: float | None = None,
    **fields: Any,
) -> None:
    """Log that task ``task_id`` went through ``event`` (with the fields that apply)."""
    if not logger.isEnabledFor(level):
        return
    extra: dict[str, Any] = {"task_id": task_id, "task_event": event}
    words = [f"task {task_id}: {event}"]
    if duration is not None:
        extra["duration_ms"] = round(duration * 1000, 1)
        words.append(f" in {duration:.2f} s")
    if event == "accepted" and fields.get("agent"):
        words.append(f" (agent {fields['agent']})")
    if event == "claimed" and fields.get("runtime_id"):
        words.append(f" by {fields['runtime_id']} (attempt {fields.get('attempt', 1)})")
    if event == "retried" and fields.get("attempt"):
        words.append(f" as attempt {fields['attempt']}")
    if reason:
        extra["reason"] = reason
        words.append(f": {reason}")
    closed = fields.get("closed_calls")
    if closed:
        words.append(f" ({closed} open tool call{'s' if closed != 1 else ''} closed as failed)")
    extra.update({k: v for k, v in fields.items() if v is not None})
    logger.log(level, "%s", "".join(words), extra=extra)
