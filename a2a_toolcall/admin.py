"""The audit views in the Django admin: tasks, their tool timeline, tool calls across tasks.

Read-only for everyone: the audit record is written by the recorder alone. Viewing needs the
view permission (``a2a_toolcall.view_task`` / ``view_toolcall``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.utils.html import format_html

from a2a_toolcall.models import Task, TaskEvent, ToolCall
from a2a_toolcall.protocol.models import TaskState

STATE_COLOURS = {
    TaskState.COMPLETED.value: "#2e7d32",
    TaskState.FAILED.value: "#c62828",
    TaskState.CANCELED.value: "#757575",
    TaskState.REJECTED.value: "#6d4c41",
    TaskState.INPUT_REQUIRED.value: "#ef6c00",
}


class ReadOnlyAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """No add, change or delete: audit rows are never edited by hand."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class FailedToolsFilter(admin.SimpleListFilter):
    """Tasks with at least one failed tool call, or none."""

    title = "failed tools"
    parameter_name = "failed_tools"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "with failed tools"), ("no", "without failed tools")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "yes":
            return queryset.filter(failed_tool_count__gt=0)
        if self.value() == "no":
            return queryset.filter(failed_tool_count=0)
        return queryset


@dataclass(frozen=True)
class _Row:
    """One line of the timeline: a tool call (with its bar) or a narration line."""

    at: datetime
    kind: str
    call: ToolCall | None = None
    text: str = ""
    left: float = 0.0
    width: float = 0.0
    offset_ms: float = 0.0
    args: str = ""
    outcome: str = ""


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


@admin.register(Task)
class TaskAdmin(ReadOnlyAdmin):
    """Tasks, newest first, with the tool timeline on each task's page."""

    list_display = (
        "id",
        "state_badge",
        "agent",
        "context_id",
        "created_at",
        "duration_display",
        "tool_call_count",
        "failed_tool_count",
    )
    list_filter = ("state", "agent", FailedToolsFilter)
    date_hierarchy = "created_at"
    search_fields = ("=id", "=context_id", "tool_calls__name", "request_text")
    ordering = ("-created_at",)
    list_per_page = 50
    show_full_result_count = False
    change_form_template = "admin/a2a_toolcall/task/change_form.html"
    fields = ("id", "state", "agent", "context_id", "created_at", "finished_at", "request_text")

    @admin.display(description="state", ordering="state")
    def state_badge(self, obj: Task) -> str:
        label = obj.get_state_display()
        return format_html(
            '<span style="color:{}">{}</span>', STATE_COLOURS.get(obj.state, "inherit"), label
        )

    @admin.display(description="duration")
    def duration_display(self, obj: Task) -> str:
        duration = obj.duration
        return "running" if duration is None else f"{duration.total_seconds():.2f} s"

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        # Searching tool names joins the calls: one row per task all the same.
        results, _ = super().get_search_results(request, queryset, search_term)
        return results.distinct(), False

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        task = self.get_object(request, object_id)
        context = dict(extra_context or {})
        if task is not None:
            context.update(self.timeline_context(task))
        return super().change_view(request, object_id, form_url, context)

    def timeline_context(self, task: Task) -> dict[str, Any]:
        """The page's data: two queries, whatever the number of calls."""
        calls = list(task.tool_calls.order_by("order"))
        narration = [
            (event.emitted_at, text)
            for event in TaskEvent.objects.filter(task=task, kind=TaskEvent.Kind.STATUS)
            .order_by("seq")
            .only("emitted_at", "data")
            if (text := _status_text(event.data))
        ]
        start = task.created_at
        ends = [c.finished_at or c.started_at for c in calls if c.started_at]
        end = task.finished_at or max([timezone.now(), *ends])
        span = max((end - start).total_seconds(), 0.001)
        rows = [
            _Row(at=at, kind="narration", text=text, offset_ms=(at - start).total_seconds() * 1000)
            for at, text in narration
        ]
        for call in calls:
            began = call.started_at or start
            finished = call.finished_at or end
            left = max(0.0, (began - start).total_seconds() / span * 100)
            width = max(0.4, (finished - began).total_seconds() / span * 100)
            left = min(left, 99.6)
            rows.append(
                _Row(
                    at=began,
                    kind="call",
                    call=call,
                    left=left,
                    width=min(width, 100 - left),
                    offset_ms=(began - start).total_seconds() * 1000,
                    args=_pretty(call.args) if call.args is not None else "",
                    outcome=call.error or (_pretty(call.result) if call.result is not None else ""),
                )
            )
        rows.sort(key=lambda row: (row.at, row.kind != "narration"))
        answer = [
            part.get("text") or _pretty(part.get("data"))
            for artifact in task.artifacts
            for part in artifact.get("parts", [])
        ]
        return {
            "timeline": rows,
            "timeline_span_s": span,
            "is_running": not task.task_state.is_terminal,
            "answer_parts": answer,
            "status_text": _status_text({"statusUpdate": {"status": task.status}}),
            "calls_total": len(calls),
            "calls_failed": sum(c.status == ToolCall.Status.FAILED for c in calls),
        }


def _status_text(data: dict[str, Any]) -> str:
    status = (data.get("statusUpdate") or {}).get("status") or {}
    parts = (status.get("message") or {}).get("parts") or []
    return " ".join(p["text"] for p in parts if isinstance(p, dict) and p.get("text"))


class DurationFilter(admin.SimpleListFilter):
    """Tool calls by how long they took."""

    title = "duration"
    parameter_name = "duration"
    RANGES: ClassVar[dict[str, tuple[str, float | None, float | None]]] = {
        "lt100ms": ("under 100 ms", None, 100.0),
        "100ms-1s": ("100 ms to 1 s", 100.0, 1000.0),
        "1s-10s": ("1 s to 10 s", 1000.0, 10_000.0),
        "gt10s": ("over 10 s", 10_000.0, None),
    }

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(key, label) for key, (label, _, _) in self.RANGES.items()]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        bounds = self.RANGES.get(self.value() or "")
        if bounds is None:
            return queryset
        _, low, high = bounds
        if low is not None:
            queryset = queryset.filter(duration_ms__gte=low)
        if high is not None:
            queryset = queryset.filter(duration_ms__lt=high)
        return queryset


@admin.register(ToolCall)
class ToolCallAdmin(ReadOnlyAdmin):
    """Every tool call across tasks: which tool fails most, which is slow."""

    list_display = ("name", "status", "task_link", "started_at", "duration_display", "error_short")
    list_filter = ("status", "name", DurationFilter)
    search_fields = ("name", "=tool_call_id", "=task__id")
    date_hierarchy = "started_at"
    ordering = ("-started_at",)
    list_select_related = ("task",)
    show_full_result_count = False
    fields = (
        "task",
        "tool_call_id",
        "name",
        "status",
        "started_at",
        "finished_at",
        "duration_ms",
        "args",
        "result",
        "error",
    )

    @admin.display(description="task")
    def task_link(self, obj: ToolCall) -> str:
        return format_html('<a href="../task/{}/change/">{}</a>', obj.task_id, obj.task_id)

    @admin.display(description="duration", ordering="duration_ms")
    def duration_display(self, obj: ToolCall) -> str:
        return "" if obj.duration_ms is None else f"{obj.duration_ms:.1f} ms"

    @admin.display(description="error")
    def error_short(self, obj: ToolCall) -> str:
        return obj.error[:120]
