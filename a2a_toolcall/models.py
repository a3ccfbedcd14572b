"""The task store: the source of truth for GetTask, ListTasks and stream replay.

One :class:`Task` row per A2A task and an append-only :class:`TaskEvent` log of exactly what was
streamed (one row per stream event, numbered by ``seq`` from 1), written by a single writer per
task: the recorder in the process that accepted the task (see docs/architecture.md).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.db.models.functions import Left
from django.db.models.lookups import Exact
from django.utils import timezone
from pydantic_core import to_json

from a2a_toolcall.contract import CANCELLED_ERROR, is_cancelled_error
from a2a_toolcall.protocol.models import TaskState

STATE_CHOICES = [(state.value, state.name.replace("_", " ").lower()) for state in TaskState]


class RawJSON:
    """JSON text to store in a JSONField as it is (already serialised, e.g. for the wire)."""

    __slots__ = ("text",)

    def __init__(self, text: bytes | str) -> None:
        self.text = text.decode() if isinstance(text, bytes) else text


class WireJSONEncoder(DjangoJSONEncoder):
    """The JSONFields' encoder: pydantic-core's serialiser, and :class:`RawJSON` passed through.

    Writes the same JSON as ``json.dumps`` for JSON data (NaN and infinities become ``null``,
    which PostgreSQL's jsonb requires anyway), several times faster; anything else falls back to
    Django's encoder (dates, decimals, UUIDs).
    """

    def encode(self, o: Any) -> str:
        if isinstance(o, RawJSON):
            return o.text
        return to_json(o, fallback=self.default, inf_nan_mode="null").decode()


class Task(models.Model):
    """An A2A task: its current status, conversation and answer, as GetTask returns them."""

    id = models.CharField(primary_key=True, max_length=64)
    context_id = models.CharField(max_length=255, db_index=True)
    agent = models.CharField(max_length=100)
    state = models.CharField(max_length=32, choices=STATE_CHOICES)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    status = models.JSONField(encoder=WireJSONEncoder, help_text="The A2A TaskStatus (1.0 JSON).")
    history = models.JSONField(
        encoder=WireJSONEncoder, default=list, help_text="A2A Messages (1.0 JSON), oldest first."
    )
    artifacts = models.JSONField(
        encoder=WireJSONEncoder, default=list, help_text="Answer artifacts (1.0 JSON)."
    )
    metadata = models.JSONField(encoder=WireJSONEncoder, default=dict)
    pending_request_id = models.CharField(
        max_length=64, blank=True, help_text="The open question's id while input-required."
    )
    last_seq = models.PositiveIntegerField(default=0, help_text="seq of the last event logged.")
    reply_message = models.JSONField(
        encoder=WireJSONEncoder,
        null=True,
        blank=True,
        help_text="The agent's answer when it replied with a Message instead of an artifact.",
    )
    # For the audit views: what was asked, when it ended, how many tools ran and failed.
    request_text = models.TextField(blank=True, help_text="The text of the request.")
    finished_at = models.DateTimeField(null=True, blank=True)
    tool_call_count = models.PositiveIntegerField(default=0)
    failed_tool_count = models.PositiveIntegerField(default=0)
    # Who created it (docs/security.md). A user's task belongs to that user; an anonymous
    # caller's task belongs to its session (a digest of the session key, never the key) or, with
    # no session, to whoever holds its id. A task whose user was deleted belongs to no one
    # (owner_kind stays "user"): only staff who may view all tasks see it.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="a2a_tasks",
        db_index=False,
    )
    owner_kind = models.CharField(
        max_length=16,
        choices=[("user", "user"), ("anonymous", "anonymous")],
        default="anonymous",
    )
    owner_session = models.CharField(
        max_length=64, blank=True, help_text="Digest of an anonymous caller's session key."
    )
    tenant = models.CharField(max_length=255, blank=True, help_text="The request's tenant.")
    # The runtime that claimed it (docs/architecture.md, "Claims"): a task is started only by
    # the one runtime whose claim moved this from "" while the task was still submitted.
    runtime_id = models.CharField(
        max_length=128, blank=True, help_text="The runtime that claimed the task."
    )
    claimed_at = models.DateTimeField(null=True, blank=True)
    # Leases (docs/deployment.md, "Leases"): the runtime renews its tasks' lease while it runs
    # them, and the process recording a task renews the recorder's. A process that finds one
    # expired ends the task with a reason (or runs it again, or parks it for a resume).
    lease_expires_at = models.DateTimeField(
        null=True, blank=True, help_text="Until when the claiming runtime holds the task."
    )
    recorder_id = models.CharField(
        max_length=128, blank=True, help_text="The server process recording the task."
    )
    recorder_expires_at = models.DateTimeField(
        null=True, blank=True, help_text="Until when that process holds the recording."
    )
    attempt = models.PositiveSmallIntegerField(
        default=1, help_text="Which run of the task this is (a retry or a resume adds one)."
    )
    checkpoint = models.JSONField(
        encoder=WireJSONEncoder,
        null=True,
        blank=True,
        help_text="While input-required: what a resumable agent needs to go on elsewhere.",
    )
    client_address = models.CharField(
        max_length=64, blank=True, help_text="The creator's address (TRUSTED_PROXY_COUNT)."
    )
    auth_scheme = models.CharField(
        max_length=32, blank=True, help_text="How the creator authenticated."
    )
    credential = models.CharField(
        max_length=200, blank=True, help_text="Which credential: the API key's prefix and name…"
    )

    class Meta:
        permissions = (("view_all_tasks", "Can view every owner's tasks"),)
        indexes = (
            models.Index(fields=["owner", "-updated_at", "-id"], name="a2a_task_owner_recent"),
            models.Index(
                fields=["owner_session", "-updated_at", "-id"], name="a2a_task_session_recent"
            ),
            models.Index(fields=["-updated_at", "-id"], name="a2a_task_recent"),
            models.Index(fields=["context_id", "-updated_at"], name="a2a_task_context_recent"),
            models.Index(fields=["state", "-updated_at"], name="a2a_task_state_recent"),
            models.Index(fields=["runtime_id", "state"], name="a2a_task_runtime"),
            models.Index(fields=["recorder_id", "state"], name="a2a_task_recorder"),
            models.Index(fields=["-created_at"], name="a2a_task_created"),
            models.Index(fields=["agent", "-created_at"], name="a2a_task_agent_created"),
        )
        verbose_name = "task"

    def __str__(self) -> str:
        return f"{self.id} ({self.get_state_display()})"

    @property
    def task_state(self) -> TaskState:
        """The state as the protocol enum."""
        return TaskState(self.state)

    @property
    def duration(self) -> timedelta | None:
        """From creation to the terminal state (None while running)."""
        return self.finished_at - self.created_at if self.finished_at else None


class TaskEvent(models.Model):
    """One streamed event of a task, exactly as sent (a 1.0 StreamResponse JSON)."""

    class Kind(models.TextChoices):
        TASK = "task", "task snapshot"
        STATUS = "status", "status update"
        ARTIFACT = "artifact", "artifact update"

    # No index of its own: the (task, seq) constraint's index serves every lookup by task, and
    # one index less is one write less per event.
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="events", db_index=False)
    seq = models.PositiveIntegerField()
    kind = models.CharField(max_length=16, choices=Kind.choices)
    state = models.CharField(max_length=32, blank=True, help_text="For status updates.")
    emitted_at = models.DateTimeField(help_text="When the runtime (or server) emitted it.")
    data = models.JSONField(
        encoder=WireJSONEncoder,
    )

    class Meta:
        constraints = (models.UniqueConstraint(fields=["task", "seq"], name="a2a_event_task_seq"),)
        ordering = ("task", "seq")
        verbose_name = "task event"

    def __str__(self) -> str:
        return f"{self.task_id} #{self.seq} {self.kind}"

    @property
    def payload(self) -> dict[str, Any]:
        """The StreamResponse JSON."""
        return self.data  # type: ignore[no-any-return]


class ToolCall(models.Model):
    """One tool invocation of a task, stitched from its frames (the audit's unit).

    ``started_at``/``finished_at`` are the runtime's emission times of the frames, not the time
    the row was written.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "running"
        COMPLETED = "completed", "completed"
        FAILED = "failed", "failed"

    # No index of its own: the (task, tool_call_id) constraint's index and the (task, order)
    # index serve every lookup by task, and one index less is one write less per call.
    task = models.ForeignKey(
        Task, on_delete=models.CASCADE, related_name="tool_calls", db_index=False
    )
    tool_call_id = models.CharField(max_length=255)
    name = models.CharField(max_length=255)
    order = models.PositiveIntegerField(help_text="Position among the task's calls, from 0.")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    args = models.JSONField(encoder=WireJSONEncoder, null=True, blank=True)
    result = models.JSONField(encoder=WireJSONEncoder, null=True, blank=True)
    error = models.TextField(blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    duration_ms = models.FloatField(null=True, blank=True)

    class Meta:
        constraints = (
            models.UniqueConstraint(fields=["task", "tool_call_id"], name="a2a_toolcall_task_id"),
        )
        indexes = (
            models.Index(fields=["task", "order"], name="a2a_toolcall_task_order"),
            models.Index(fields=["name", "status"], name="a2a_toolcall_name_status"),
            models.Index(fields=["status", "-started_at"], name="a2a_toolcall_status_started"),
            models.Index(fields=["duration_ms"], name="a2a_toolcall_duration"),
        )
        ordering = ("task", "order")
        verbose_name = "tool call"

    def __str__(self) -> str:
        return f"{self.name} ({self.get_status_display()})"

    @property
    def is_cancelled(self) -> bool:
        """True when it failed only because its task was stopped (the contract's rule)."""
        return self.status == self.Status.FAILED and is_cancelled_error(self.error)

    @classmethod
    def cancelled_filter(cls) -> models.Q:
        """:attr:`is_cancelled` as a query filter: the same rule, for querysets."""
        prefix = f"{CANCELLED_ERROR}: "
        # LEFT() and = rather than startswith: SQLite's LIKE ignores case, the rule does not.
        return models.Q(status=cls.Status.FAILED) & (
            models.Q(error=CANCELLED_ERROR) | models.Q(Exact(Left("error", len(prefix)), prefix))
        )


class ApiKey(models.Model):
    """An API key: only its SHA-256 digest is kept; the key itself is shown once, when minted.

    Keys look like ``a2a_<prefix>_<secret>``; the prefix is stored in clear so a key can be told
    apart in lists and logs. See :mod:`a2a_toolcall.apikeys`.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="a2a_api_keys"
    )
    name = models.CharField(max_length=100, help_text="What the key is for.")
    prefix = models.CharField(max_length=16, unique=True, editable=False)
    digest = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="Empty: never expires.")
    revoked = models.BooleanField(default=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        verbose_name = "API key"
        ordering = ("-created_at",)

    def __str__(self) -> str:
        return f"{self.name} (a2a_{self.prefix}_…)"

    @property
    def is_expired(self) -> bool:
        """True once ``expires_at`` has passed."""
        return self.expires_at is not None and self.expires_at <= timezone.now()

    @property
    def is_usable(self) -> bool:
        """Neither revoked nor expired."""
        return not self.revoked and not self.is_expired


class PushConfig(models.Model):
    """A task's webhook (A2A ``TaskPushNotificationConfig``): where its events are POSTed.

    The credentials are kept as given: they are sent with every delivery, so they cannot be
    hashed. ``retry_at`` holds the sender back from the config while its oldest pending
    delivery waits for its next attempt (deliveries go out in order, one at a time); the
    ``sender_*`` pair is the claim of the process sending its deliveries now.
    """

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="push_configs")
    config_id = models.CharField(max_length=255, help_text="The id the client knows it by.")
    url = models.URLField(max_length=2048)
    token = models.CharField(max_length=512, blank=True)
    auth_scheme = models.CharField(max_length=64, blank=True)
    auth_credentials = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    retry_at = models.DateTimeField(null=True, blank=True)
    sender_id = models.CharField(max_length=128, blank=True)
    sender_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = (
            models.UniqueConstraint(fields=["task", "config_id"], name="a2a_push_task_config"),
        )
        ordering = ("task", "id")
        verbose_name = "push notification config"

    def __str__(self) -> str:
        return f"{self.config_id} → {self.url}"


class PushDelivery(models.Model):
    """One event of a task for one of its webhooks: the outbox row, and its record once sent.

    Written in the transaction that stores the event (docs/push.md); sent at least once, in
    ``id`` order per config, retried with backoff until it is delivered or given up.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "pending"
        DELIVERED = "delivered", "delivered"
        FAILED = "failed", "given up"
        CANCELED = "canceled", "canceled"

    config = models.ForeignKey(
        PushConfig, on_delete=models.SET_NULL, null=True, blank=True, related_name="deliveries"
    )
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="push_deliveries")
    seq = models.PositiveIntegerField(help_text="The event's seq in the task's log.")
    url = models.URLField(max_length=2048, help_text="The webhook, as when it was queued.")
    body = models.JSONField(encoder=WireJSONEncoder, help_text="The StreamResponse sent.")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    response_code = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True)

    class Meta:
        indexes = (
            models.Index(fields=["status", "config"], name="a2a_push_pending"),
            models.Index(fields=["task", "id"], name="a2a_push_task"),
            models.Index(fields=["config", "id"], name="a2a_push_config_order"),
        )
        ordering = ("task", "id")
        verbose_name = "push delivery"
        verbose_name_plural = "push deliveries"

    def __str__(self) -> str:
        return f"{self.task_id} #{self.seq} → {self.url} ({self.get_status_display()})"


class PushSender(models.Model):
    """A process sending push deliveries, as last seen (for the system check and the admin)."""

    id = models.CharField(primary_key=True, max_length=128)
    seen_at = models.DateTimeField()

    class Meta:
        verbose_name = "push sender"

    def __str__(self) -> str:
        return f"{self.id} (seen {self.seen_at:%Y-%m-%d %H:%M:%S})"
