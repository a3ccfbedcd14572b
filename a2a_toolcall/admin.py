"""The audit views in the Django admin: tasks, their tool timeline, tool calls across tasks;
and the API keys.

The audit record is read-only for everyone: the recorder alone writes it. Viewing needs the view
permission (``a2a_toolcall.view_task`` / ``view_toolcall``), and shows a user only the tasks it
owns unless it is a superuser or holds ``a2a_toolcall.view_all_tasks`` (docs/security.md).
API keys are minted here and shown once; only their digest is kept.

What agents said (tool names, args, results, errors, narration, answers, file URLs) is hostile
input: the templates show it as text (Django's autoescaping, ``format_html``), a file URL is a
link only when it is http(s) (:func:`a2a_toolcall.untrusted.is_web_url`), and every view answers
under :data:`a2a_toolcall.csp.ADMIN_POLICY`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, Final
from weakref import WeakKeyDictionary

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db.models import (
    Case,
    Count,
    Exists,
    F,
    ForeignKey,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.functions import Coalesce, Greatest
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.text import Truncator

from a2a_toolcall.apikeys import KEY_PREFIX, mint_api_key
from a2a_toolcall.conf import get_setting
from a2a_toolcall.csp import ADMIN_POLICY, Policy, apply_policy
from a2a_toolcall.models import ApiKey, PushDelivery, PushSender, Task, TaskEvent, ToolCall
from a2a_toolcall.protocol.models import TaskState
from a2a_toolcall.untrusted import is_web_url

STATE_COLOURS = {
    TaskState.COMPLETED.value: "#2e7d32",
    TaskState.FAILED.value: "#c62828",
    TaskState.CANCELED.value: "#757575",
    TaskState.REJECTED.value: "#6d4c41",
    TaskState.INPUT_REQUIRED.value: "#ef6c00",
}
FAILED_COLOUR = "#c62828"
CANCELLED_COLOUR = "#757575"  # neutral: a call stopped with its task is not the tool's fault
SHORT_ID = 8  # characters of a task id in the list; the change page shows it whole
REQUEST_PREVIEW = 60  # characters of the request in the list
OWNER_PREVIEW = 12  # characters of the owner's name in the list
PUSH_ON_TASK_PAGE = 100  # push deliveries shown on a task's page (the rest: their own list)


VIEW_ALL_TASKS: Final = "a2a_toolcall.view_all_tasks"


def sees_all_tasks(request: HttpRequest) -> bool:
    """True for a superuser or a holder of ``view_all_tasks``: every owner's tasks (and API
    keys) are listed; anyone else sees only its own."""
    return bool(request.user.has_perm(VIEW_ALL_TASKS))


def owner_label(task: Task) -> str:
    """Who owns a task, in words: the username, "anonymous" (with "(session)" when a session
    owns it) or "deleted user"."""
    if task.owner_kind == "anonymous":
        return "anonymous (session)" if task.owner_session else "anonymous"
    if task.owner is None:
        return "deleted user"
    return str(task.owner.get_username())


def _outcome(call: ToolCall) -> str:
    """A call's outcome for display: ``pending``, ``completed``, ``failed`` or ``cancelled``."""
    return "cancelled" if call.is_cancelled else str(call.status)


def _outcome_label(call: ToolCall) -> str:
    """What the outcome reads as: "running", "completed", "failed" or "cancelled"."""
    return "cancelled" if call.is_cancelled else call.get_status_display()


class PolicyAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Every view (list, add, change, history, delete) answers under
    ``content_security_policy`` (:func:`a2a_toolcall.csp.apply_policy`: not over the site's)."""

    content_security_policy: ClassVar[Policy | None] = ADMIN_POLICY

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        response = super().changelist_view(request, extra_context)
        return apply_policy(response, self.content_security_policy)

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        response = super().changeform_view(request, object_id, form_url, extra_context)
        return apply_policy(response, self.content_security_policy)

    def history_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        response = super().history_view(request, object_id, extra_context)
        return apply_policy(response, self.content_security_policy)

    def delete_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        response = super().delete_view(request, object_id, extra_context)
        return apply_policy(response, self.content_security_policy)


class ReadOnlyAdmin(PolicyAdmin):
    """No add, change or delete: audit rows are never edited by hand."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class TaskRecordAdmin(ReadOnlyAdmin):
    """Rows of a task's record (its tool calls, its push deliveries): scoped by the task's owner
    as the tasks are, each linking to its task's page."""

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        rows = super().get_queryset(request)
        if not sees_all_tasks(request):
            rows = rows.filter(task__owner_kind="user", task__owner_id=request.user.pk)
        return rows

    @admin.display(description="task")
    def task_link(self, obj: Any) -> str:
        return format_html('<a href="../task/{}/change/">{}</a>', obj.task_id, obj.task_id)


class FailedToolsFilter(admin.SimpleListFilter):
    """Tasks with at least one failed tool call (cancelled ones are not failures), or none."""

    title = "failed tools"
    parameter_name = "failed_tools"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "with failed tools"), ("no", "without failed tools")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        # `tool_failures` is TaskAdmin.get_queryset's annotation.
        if self.value() == "yes":
            return queryset.filter(tool_failures__gt=0)
        if self.value() == "no":
            return queryset.filter(tool_failures=0)
        return queryset


class OwnerFilter(admin.SimpleListFilter):
    """Tasks by owner: a user that owns tasks, the anonymous callers, or deleted users."""

    title = "owner"
    parameter_name = "owner"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        # Users with a task, by the (owner, ...) index: one probe per user, whatever the
        # number of tasks.
        users = get_user_model()._default_manager.filter(
            Exists(Task.objects.filter(owner=OuterRef("pk")))
        )
        owners = sorted((str(user.get_username()), str(user.pk)) for user in users)
        return [
            *((pk, username) for username, pk in owners),
            ("anonymous", "anonymous"),
            ("deleted", "deleted user"),
        ]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if value is None:
            return queryset
        if value == "anonymous":
            return queryset.filter(owner_kind="anonymous")
        if value == "deleted":
            return queryset.filter(owner_kind="user", owner__isnull=True)
        try:
            return queryset.filter(owner_kind="user", owner_id=value)
        except (ValueError, ValidationError) as error:
            raise IncorrectLookupParameters(error) from error


def _with_call_counts(queryset: QuerySet[Task]) -> QuerySet[Task]:
    """Tasks annotated with ``cancelled_tools`` and ``tool_failures`` (failed, not cancelled).

    ``failed_tool_count`` (the recorder's) counts every failed frame; the cancelled calls are
    counted here, by a subquery on the task's calls, and only for tasks with a failed call.
    """
    cancelled = (
        ToolCall.objects.filter(ToolCall.cancelled_filter(), task=OuterRef("pk"))
        .order_by()
        .values("task")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return queryset.annotate(
        cancelled_tools=Case(
            When(failed_tool_count=0, then=Value(0)),
            default=Coalesce(Subquery(cancelled, output_field=IntegerField()), Value(0)),
            output_field=IntegerField(),
        ),
        tool_failures=Greatest(F("failed_tool_count") - F("cancelled_tools"), Value(0)),
    )


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
    state: str = ""  # _outcome(): the row's CSS class
    state_label: str = ""


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


@admin.register(Task)
class TaskAdmin(ReadOnlyAdmin):
    """Tasks, newest first, with the tool timeline on each task's page."""

    # Narrow enough for a 1280 px window with the filter sidebar (tests/test_admin.py checks
    # it in a browser): short ids, the request cut, no context id (searchable, on the page).
    list_display = (
        "short_id",
        "request_preview",
        "state_badge",
        "agent",
        "started",
        "tool_calls",
        "owner_column",
    )
    list_filter = ("state", "agent", FailedToolsFilter)
    date_hierarchy = "created_at"
    search_fields = ("=id", "=context_id", "tool_calls__name", "request_text")
    ordering = ("-created_at",)
    list_per_page = 50
    show_full_result_count = False
    change_form_template = "admin/a2a_toolcall/task/change_form.html"
    fields = (
        "id",
        "state",
        "agent",
        "context_id",
        "created_at",
        "finished_at",
        "owner_display",
        "auth_scheme",
        "credential",
        "tenant",
        "client_address",
        "request_text",
        "attempt",
        "runtime_id",
        "claimed_at",
        "recorder_id",
    )
    readonly_fields = ("owner_display",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Task]:
        # Scoping here scopes every view: the list, its filters and dates, and the task's page
        # (someone else's task is answered as a missing one).
        rows = super().get_queryset(request).select_related("owner")
        if not sees_all_tasks(request):
            rows = rows.filter(owner_kind="user", owner_id=request.user.pk)
        return _with_call_counts(rows)

    def get_list_filter(self, request: HttpRequest) -> Any:
        # Only for those who see every owner's tasks: the choices name every user with a task.
        if sees_all_tasks(request):
            return (*self.list_filter, OwnerFilter)
        return self.list_filter

    @admin.display(description="owner")
    def owner_column(self, obj: Task) -> str:
        # A username cut, whole on hover: long ones (emails) would not fit at 1280 px.
        label = owner_label(obj)
        shown = Truncator(label).chars(OWNER_PREVIEW) if obj.owner is not None else label
        return format_html('<span title="{}">{}</span>', label, shown)

    @admin.display(description="owner")
    def owner_display(self, obj: Task) -> str:
        return owner_label(obj)

    @admin.display(description="task", ordering="id")
    def short_id(self, obj: Task) -> str:
        return format_html('<span title="{}">{}</span>', obj.id, obj.id[:SHORT_ID])

    @admin.display(description="request")
    def request_preview(self, obj: Task) -> str:
        text = " ".join(obj.request_text.split())
        return format_html(
            '<span title="{}">{}</span>', text, Truncator(text).chars(REQUEST_PREVIEW)
        )

    @admin.display(description="started", ordering="created_at")
    def started(self, obj: Task) -> str:
        return timezone.localtime(obj.created_at).strftime("%Y-%m-%d %H:%M:%S")

    @admin.display(description="tool calls", ordering="tool_failures")
    def tool_calls(self, obj: Task) -> str:
        # One column, a count per line: three columns do not fit beside the filters at 1280 px.
        # Sorted by failures: "which tasks had tools fail" is what sorting this column asks.
        failed: int = getattr(obj, "tool_failures", obj.failed_tool_count)
        cancelled: int = getattr(obj, "cancelled_tools", 0)
        return format_html(
            '<span class="a2a-calls">{}</span>{}{}',
            obj.tool_call_count,
            format_html(
                '<br><span class="a2a-failed" style="color:{}">{} failed</span>',
                FAILED_COLOUR,
                failed,
            )
            if failed
            else "",
            format_html(
                '<br><span class="a2a-cancelled" style="color:{}">{} cancelled</span>',
                CANCELLED_COLOUR,
                cancelled,
            )
            if cancelled
            else "",
        )

    @admin.display(description="state", ordering="state")
    def state_badge(self, obj: Task) -> str:
        # The duration under the state ("completed", "in 0.70 s"), not a column of its own: the
        # owner column needed the room.
        duration = obj.duration
        return format_html(
            '<span style="color:{}">{}</span>{}',
            STATE_COLOURS.get(obj.state, "inherit"),
            obj.get_state_display(),
            format_html(
                '<br><span class="a2a-duration">in {} s</span>',
                f"{duration.total_seconds():.2f}",
            )
            if duration is not None
            else "",
        )

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
            # The live page follows a task as its caller, who sees only its own tasks.
            context["is_own_task"] = task.owner_kind == "user" and task.owner_id == request.user.pk
            deliveries = list(task.push_deliveries.order_by("id")[: PUSH_ON_TASK_PAGE + 1])
            context["push_deliveries"] = deliveries[:PUSH_ON_TASK_PAGE]
            if len(deliveries) > PUSH_ON_TASK_PAGE:
                context["push_deliveries_more"] = task.push_deliveries.count() - PUSH_ON_TASK_PAGE
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
                    state=_outcome(call),
                    state_label=_outcome_label(call),
                )
            )
        rows.sort(key=lambda row: (row.at, row.kind != "narration"))
        outcomes = [row.state for row in rows if row.kind == "call"]
        return {
            "timeline": rows,
            "timeline_span_s": span,
            "is_running": not task.task_state.is_terminal,
            "answer_parts": _answer_parts(task),
            "answer_note": _answer_note(task),
            "calls_total": len(calls),
            "calls_failed": outcomes.count("failed"),
            "calls_cancelled": outcomes.count("cancelled"),
        }


@dataclass(frozen=True)
class _AnswerPart:
    """One part of a task's answer as the page shows it: text, or a file (name and URL).

    ``is_link``: the URL is http(s), so the page links it; any other (``javascript:``,
    ``data:``, relative...) is shown as text.
    """

    text: str = ""
    url: str = ""
    filename: str = ""
    is_link: bool = False


def _answer_part(part: Any) -> _AnswerPart:
    if not isinstance(part, dict):
        return _AnswerPart(text=_pretty(part))
    filename = str(part.get("filename") or "")
    if isinstance(part.get("url"), str):
        url = part["url"]
        return _AnswerPart(url=url, filename=filename, is_link=is_web_url(url))
    if "raw" in part:
        return _AnswerPart(text=f"(a file{f': {filename}' if filename else ''})")
    text = part.get("text")
    return _AnswerPart(text=text if isinstance(text, str) and text else _pretty(part.get("data")))


def _answer_parts(task: Task) -> list[_AnswerPart]:
    """The answer: the artifacts' parts, else the agent's direct reply (text, data as JSON,
    files)."""
    parts = [part for artifact in task.artifacts for part in artifact.get("parts", [])]
    if not parts and task.reply_message:
        parts = task.reply_message.get("parts") or []
    return [_answer_part(part) for part in parts]


def _answer_note(task: Task) -> str:
    """What the Answer box says when there is no answer: never the latest narration line.

    A WORKING status message is narration (what the agent is doing), not an answer; a
    terminal one is (the failure's reason, say), and an input-required one is the question.
    """
    state = task.task_state
    text = _status_text({"statusUpdate": {"status": task.status}})
    if state.is_terminal:
        return text or "(no answer)"
    if state.is_interrupted:
        return f"Waiting for input: {text}" if text else "Waiting for input."
    return "(no answer yet: the task is still running)"


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


class OutcomeFilter(admin.SimpleListFilter):
    """Tool calls by outcome; "failed" leaves out the calls cancelled with their task."""

    title = "status"
    parameter_name = "status"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [
            (ToolCall.Status.PENDING, "running"),
            (ToolCall.Status.COMPLETED, "completed"),
            (ToolCall.Status.FAILED, "failed"),
            ("cancelled", "cancelled"),
        ]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if value == "cancelled":
            return queryset.filter(ToolCall.cancelled_filter())
        if value == ToolCall.Status.FAILED:
            return queryset.filter(status=value).exclude(ToolCall.cancelled_filter())
        if value in (ToolCall.Status.PENDING, ToolCall.Status.COMPLETED):
            return queryset.filter(status=value)
        return queryset


@admin.register(ToolCall)
class ToolCallAdmin(TaskRecordAdmin):
    """Every tool call across tasks: which tool fails most, which is slow."""

    list_display = (
        "name",
        "outcome",
        "task_link",
        "started_at",
        "duration_display",
        "error_short",
    )
    list_filter = (OutcomeFilter, "name", DurationFilter)
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

    @admin.display(description="status", ordering="status")
    def outcome(self, obj: ToolCall) -> str:
        if obj.is_cancelled:
            return format_html('<span style="color:{}">cancelled</span>', CANCELLED_COLOUR)
        return obj.get_status_display()

    @admin.display(description="duration", ordering="duration_ms")
    def duration_display(self, obj: ToolCall) -> str:
        return "" if obj.duration_ms is None else f"{obj.duration_ms:.1f} ms"

    @admin.display(description="error")
    def error_short(self, obj: ToolCall) -> str:
        return obj.error[:120]


class ApiKeyStatusFilter(admin.SimpleListFilter):
    """API keys by whether they still work: usable, expired or revoked."""

    title = "status"
    parameter_name = "status"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("usable", "usable"), ("expired", "expired"), ("revoked", "revoked")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        now = timezone.now()
        if self.value() == "usable":
            return queryset.filter(
                Q(expires_at__isnull=True) | Q(expires_at__gt=now), revoked=False
            )
        if self.value() == "expired":
            return queryset.filter(revoked=False, expires_at__lte=now)
        if self.value() == "revoked":
            return queryset.filter(revoked=True)
        return queryset


DISPLAYED_KEY = re.compile(rf"{KEY_PREFIX}([0-9a-f]+)(?:_.*)?", re.ASCII)
"""A key as the list shows it (``a2a_<prefix>_…``), or a whole key: searched by its prefix."""


@admin.register(ApiKey)
class ApiKeyAdmin(PolicyAdmin):
    """API keys: minted here (the key is shown once, on the page after "Save"), revoked with
    the "Revoke selected keys" action. Only a key's prefix is ever shown again, never its
    digest.

    Needs the usual permissions (``add_apikey``, ``change_apikey``, ``view_apikey``...). A user
    sees and manages only its own keys unless it may view every owner's tasks; only a
    superuser mints keys for other users (a key acts as its user).
    """

    list_display = (
        "name",
        "user",
        "key_display",
        "created_at",
        "last_used_at",
        "expires_at",
        "revoked",
    )
    list_filter = (ApiKeyStatusFilter, "created_at", "expires_at")
    list_select_related = ("user",)
    search_fields = ("name", "=prefix")
    ordering = ("-created_at",)
    actions = ("revoke",)
    minted_template = "admin/a2a_toolcall/apikey/minted.html"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The key minted by a request, from save_model to response_add: it is never stored.
        self._minted: WeakKeyDictionary[HttpRequest, str] = WeakKeyDictionary()

    def get_queryset(self, request: HttpRequest) -> QuerySet[ApiKey]:
        rows = super().get_queryset(request).select_related("user")
        if not sees_all_tasks(request):
            rows = rows.filter(user_id=request.user.pk)
        return rows

    def get_list_filter(self, request: HttpRequest) -> Any:
        # The user filter lists every user: only for those who see every user's keys.
        if sees_all_tasks(request):
            return (*self.list_filter, "user")
        return self.list_filter

    def get_search_fields(self, request: HttpRequest) -> Any:
        return (*self.search_fields, f"user__{get_user_model().USERNAME_FIELD}")

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Any], search_term: str
    ) -> tuple[QuerySet[Any], bool]:
        if match := DISPLAYED_KEY.fullmatch(search_term.strip()):
            return queryset.filter(prefix=match.group(1)), False
        return super().get_search_results(request, queryset, search_term)

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return ("user", "name", "expires_at")
        return (
            "name",
            "key_display",
            "user",
            "created_at",
            "last_used_at",
            "expires_at",
            "revoked",
            "revoked_at",
        )

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return ()
        return ("key_display", "user", "created_at", "last_used_at", "revoked", "revoked_at")

    def formfield_for_foreignkey(
        self, db_field: ForeignKey[Any, Any], request: HttpRequest, **kwargs: Any
    ) -> forms.ModelChoiceField[Any] | None:
        if db_field.name == "user":
            users = get_user_model()._default_manager.filter(is_active=True)
            if not request.user.is_superuser:
                # Staff: never anonymous, so the pk is there.
                users = users.filter(pk=request.user.pk)  # type: ignore[misc]
            kwargs["queryset"] = users.order_by(get_user_model().USERNAME_FIELD)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def get_changeform_initial_data(self, request: HttpRequest) -> dict[str, Any]:
        return {"user": request.user.pk, **super().get_changeform_initial_data(request)}

    def add_view(
        self, request: HttpRequest, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        # "Save" leads to the page showing the key: no "save and continue" or "add another".
        context = {"show_save_and_continue": False, "show_save_and_add_another": False}
        return super().add_view(request, form_url, {**context, **(extra_context or {})})

    def save_model(self, request: HttpRequest, obj: ApiKey, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        row, key = mint_api_key(obj.user, obj.name, expires_at=obj.expires_at)
        obj.pk = row.pk
        obj.refresh_from_db()
        self._minted[request] = key

    def response_add(
        self, request: HttpRequest, obj: ApiKey, post_url_continue: str | None = None
    ) -> HttpResponse:
        key = self._minted.pop(request, None)
        if key is None:
            return super().response_add(request, obj, post_url_continue)
        # The key on the answer to the POST itself (never in a redirect, the session or a
        # message, all of which are stored somewhere); the admin marks it never-cache.
        try:
            endpoint = request.build_absolute_uri(reverse("a2a_toolcall:jsonrpc"))
        except NoReverseMatch:
            endpoint = ""
        request.current_app = self.admin_site.name
        return TemplateResponse(
            request,
            self.minted_template,
            {
                **self.admin_site.each_context(request),
                "title": "API key created",
                "subtitle": str(obj),
                "opts": self.opts,
                "original": obj,
                "key": key,
                "header": get_setting("API_KEY_HEADER"),
                "endpoint": endpoint,
                "has_change_permission": self.has_change_permission(request, obj),
                "has_add_permission": self.has_add_permission(request),
            },
        )

    @admin.display(description="key", ordering="prefix")
    def key_display(self, obj: ApiKey) -> str:
        return f"{KEY_PREFIX}{obj.prefix}_…"

    @admin.action(description="Revoke selected keys", permissions=["change"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        """Revoke the selected keys (already revoked ones are left as they were)."""
        now = timezone.now()
        revoking = list(queryset.filter(revoked=False))
        ApiKey.objects.filter(pk__in=[key.pk for key in revoking]).update(
            revoked=True, revoked_at=now
        )
        for key in revoking:
            self.log_change(request, key, "Revoked.")
        self.message_user(
            request,
            f"Revoked {len(revoking)} API key{'' if len(revoking) == 1 else 's'}.",
            messages.SUCCESS,
        )


@admin.register(PushDelivery)
class PushDeliveryAdmin(TaskRecordAdmin):
    """Push notifications sent or to be sent: every delivery's attempts, answer and error.

    Read-only like the rest of the record; "retry now" puts deliveries back in the outbox (a
    change: it needs the change permission on push deliveries).
    """

    list_display = (
        "task_link",
        "seq",
        "url_short",
        "status_badge",
        "attempts",
        "response_code",
        "error_short",
        "next_try",
        "created_at",
    )
    list_filter = ("status",)
    search_fields = ("=task__id", "url")
    date_hierarchy = "created_at"
    ordering = ("-id",)
    list_select_related = ("task",)
    show_full_result_count = False
    actions = ("retry_now",)
    fields = (
        "task",
        "seq",
        "url",
        "status",
        "attempts",
        "response_code",
        "last_error",
        "created_at",
        "last_attempt_at",
        "next_attempt_at",
        "delivered_at",
        "body",
    )

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        seen = PushSender.objects.order_by("-seen_at").first()
        if seen is None:
            note = "No push sender has run yet."
        else:
            ago = (timezone.now() - seen.seen_at).total_seconds()
            note = f"Last push sender seen {ago:.0f} s ago ({seen.id})."
        context = {**(extra_context or {}), "subtitle": note}
        return super().changelist_view(request, context)

    def has_retry_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.has_perm("a2a_toolcall.change_pushdelivery"))

    @admin.action(description="Retry now", permissions=["retry"])
    def retry_now(self, request: HttpRequest, queryset: QuerySet[PushDelivery]) -> None:
        """Back to the outbox, due at once, with a fresh count of attempts."""
        from a2a_toolcall.models import PushConfig

        rows = queryset.exclude(status=PushDelivery.Status.DELIVERED).filter(config__isnull=False)
        configs = set(rows.values_list("config_id", flat=True))
        count = rows.update(
            status=PushDelivery.Status.PENDING, attempts=0, next_attempt_at=timezone.now()
        )
        PushConfig.objects.filter(pk__in=configs).update(retry_at=None)
        skipped = queryset.count() - count
        messages.success(
            request,
            f"{count} deliveries queued again."
            + (f" {skipped} skipped (delivered, or their webhook was deleted)." if skipped else ""),
        )

    @admin.display(description="webhook", ordering="url")
    def url_short(self, obj: PushDelivery) -> str:
        return format_html('<span title="{}">{}</span>', obj.url, Truncator(obj.url).chars(48))

    @admin.display(description="status", ordering="status")
    def status_badge(self, obj: PushDelivery) -> str:
        colour = {"failed": FAILED_COLOUR, "delivered": STATE_COLOURS[TaskState.COMPLETED.value]}
        return format_html(
            '<span style="color:{}">{}</span>',
            colour.get(obj.status, "inherit"),
            obj.get_status_display(),
        )

    @admin.display(description="last error")
    def error_short(self, obj: PushDelivery) -> str:
        return format_html('<span title="{}">{}</span>', obj.last_error, obj.last_error[:120])

    @admin.display(description="next try", ordering="next_attempt_at")
    def next_try(self, obj: PushDelivery) -> str:
        if obj.status != PushDelivery.Status.PENDING or obj.next_attempt_at is None:
            return ""
        return timezone.localtime(obj.next_attempt_at).strftime("%Y-%m-%d %H:%M:%S")
