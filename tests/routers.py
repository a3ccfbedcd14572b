"""Route the app's models to the database a test chose, so recording is tested on both."""

from __future__ import annotations

from typing import Any

ALIAS = "default"
"""Where a2a_toolcall's models live for the test running now (``default`` or ``postgres``)."""


class AuditDatabaseRouter:
    """Sends the app's reads and writes to :data:`ALIAS`; everything else is untouched."""

    def db_for_read(self, model: Any, **hints: Any) -> str | None:
        return ALIAS if model._meta.app_label == "a2a_toolcall" else None

    def db_for_write(self, model: Any, **hints: Any) -> str | None:
        return ALIAS if model._meta.app_label == "a2a_toolcall" else None

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool:
        return True

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool:
        return True
