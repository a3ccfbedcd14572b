"""Push notifications: a task's webhooks, and the sender that delivers its outbox (docs/push.md).

A config (:class:`~a2a_toolcall.models.PushConfig`) names a URL the task's events are POSTed
to. Every event of a task with configs puts one :class:`~a2a_toolcall.models.PushDelivery` per
config in the outbox, in the transaction that stores the event
(:func:`a2a_toolcall.store.enqueue_push_sync`). A :class:`Sender` runs in every server process
and ``a2a_worker`` (``PUSH_SENDER``), or in ``manage.py a2a_push``; any number of them share
the outbox:

- a sender claims a config (a lease on its row) before it sends any of its deliveries, so one
  webhook gets its events from one sender at a time, oldest first, one at a time;
- a delivery is marked delivered only after a 2xx answer: a sender that dies mid-way leaves it
  pending and its claim expires, so it is sent again (at least once, never lost);
- a failed attempt is retried after an exponential, jittered backoff, holding the config's
  later deliveries back (order), until ``PUSH_MAX_ATTEMPTS``; then it is given up with the
  reason recorded, and the next one goes;
- nothing here runs on a stream's or an agent's path: a slow or dead webhook costs a coroutine
  waiting on a socket, never a thread.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import contextvars
import functools
import logging
import random
import re
import weakref
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from django.db import router, transaction
from django.db.models import Q
from django.utils import timezone
from pydantic_core import to_json

from a2a_toolcall import models as orm
from a2a_toolcall import store, webhooks
from a2a_toolcall.conf import get_setting
from a2a_toolcall.protocol import jsonrpc
from a2a_toolcall.protocol.models import (
    AuthenticationInfo,
    ListTaskPushNotificationConfigsResponse,
    TaskPushNotificationConfig,
)

__all__ = [
    "CONTENT_TYPE",
    "Sender",
    "backoff",
    "check_config",
    "create_config",
    "delete_config",
    "ensure_sender",
    "get_config",
    "list_configs",
    "push_enabled",
    "save_config",
    "save_config_sync",
]

logger = logging.getLogger(__name__)

CONTENT_TYPE: Final = "application/a2a+json"
"""The deliveries' Content-Type (a 1.0 ``StreamResponse``, spec 4.3.3)."""
TOKEN_HEADER: Final = "X-A2A-Notification-Token"  # noqa: S105 (a header name)
CLAIM_MARGIN: Final = 10.0
"""Seconds a sender's claim on a config outlasts one attempt (``PUSH_TIMEOUT``); renewed after
each, so a sender that died mid-way holds its webhooks for at most this long past that."""
HEARTBEAT_EVERY: Final = 15.0
"""Seconds between a sender's heartbeats (PushSender rows, read by the system check)."""
MAX_ID_LENGTH: Final = 255
MAX_TOKEN_LENGTH: Final = 512
MAX_CREDENTIALS_LENGTH: Final = 4096
DEFAULT_PAGE_SIZE: Final = 100
_TOKEN_CHARS: Final = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
"""An HTTP token (RFC 9110 5.6.2): what an authentication scheme must be."""


def push_enabled() -> bool:
    """``PUSH_NOTIFICATIONS``: the methods are served and the card says so."""
    return bool(get_setting("PUSH_NOTIFICATIONS"))


# --- configs ----------------------------------------------------------------------------------


def _invalid(field: str, problem: str) -> jsonrpc.InvalidParamsError:
    return jsonrpc.InvalidParamsError(
        f"Invalid parameters: {field}: {problem}",
        violations=[jsonrpc.FieldViolation(field, problem)],
    )


async def check_config(
    config: TaskPushNotificationConfig, field: str = "params"
) -> TaskPushNotificationConfig:
    """``config`` checked at the edge (``field`` names it in errors): the URL by the rules of
    :mod:`a2a_toolcall.webhooks` against a fresh DNS answer, the headers it will send. Returns
    it with its URL as given; raises -32602 naming the member at fault."""
    if config.id is not None:
        if not config.id.strip():
            raise _invalid(f"{field}.id", "must not be blank")
        if len(config.id) > MAX_ID_LENGTH:
            raise _invalid(f"{field}.id", f"is longer than {MAX_ID_LENGTH} characters")
        if webhooks.check_header_value(config.id) is not None:
            raise _invalid(f"{field}.id", "must not contain control characters")
    try:
        target = webhooks.parse_url(config.url)
        await webhooks.resolve(target, _allowed_hosts())
    except webhooks.Unresolved:
        # Not refused: a name that does not resolve now is checked again, resolved again,
        # before every delivery (and the attempt fails, with the reason, while it does not).
        pass
    except webhooks.Refused as exc:
        raise _invalid(f"{field}.url", f"this webhook URL is refused: {exc}") from None
    if config.token is not None:
        if len(config.token) > MAX_TOKEN_LENGTH:
            raise _invalid(f"{field}.token", f"is longer than {MAX_TOKEN_LENGTH} characters")
        if (why := webhooks.check_header_value(config.token)) is not None:
            raise _invalid(f"{field}.token", why)
    auth = config.authentication
    if auth is not None:
        if not _TOKEN_CHARS.match(auth.scheme) or len(auth.scheme) > 64:
            raise _invalid(
                f"{field}.authentication.scheme",
                "must be an HTTP authentication scheme (a token such as Bearer or Basic)",
            )
        credentials = auth.credentials or ""
        if len(credentials) > MAX_CREDENTIALS_LENGTH:
            raise _invalid(
                f"{field}.authentication.credentials",
                f"is longer than {MAX_CREDENTIALS_LENGTH} characters",
            )
        if (why := webhooks.check_header_value(credentials)) is not None:
            raise _invalid(f"{field}.authentication.credentials", why)
    return config


def _allowed_hosts() -> list[str]:
    return [str(host) for host in get_setting("PUSH_ALLOWED_HOSTS") or ()]


def _wire(row: orm.PushConfig) -> TaskPushNotificationConfig:
    auth = (
        AuthenticationInfo(scheme=row.auth_scheme, credentials=row.auth_credentials or None)
        if row.auth_scheme
        else None
    )
    return TaskPushNotificationConfig(
        tenant=row.task.tenant or None,
        id=row.config_id,
        task_id=row.task_id,
        url=row.url,
        token=row.token or None,
        authentication=auth,
    )


def save_config_sync(
    task: orm.Task, config: TaskPushNotificationConfig, field: str
) -> orm.PushConfig:
    """Store a checked ``config`` for ``task`` (sync): a config with the same id is replaced.
    Its id defaults to the task's (as the official SDK does)."""
    config_id = config.id or task.id
    auth = config.authentication
    values = {
        "url": config.url,
        "token": config.token or "",
        "auth_scheme": auth.scheme if auth else "",
        "auth_credentials": (auth.credentials or "") if auth else "",
    }
    with transaction.atomic(using=router.db_for_write(orm.PushConfig)):
        # The task row's lock serialises creations for one task (the limit below holds).
        list(orm.Task.objects.select_for_update().filter(pk=task.pk).values_list("pk"))
        existing = orm.PushConfig.objects.filter(task=task, config_id=config_id).first()
        if existing is not None:
            for name, value in values.items():
                setattr(existing, name, value)
            existing.retry_at = None
            existing.save(update_fields=[*values, "retry_at"])
            existing.task = task
            return existing
        limit = int(get_setting("PUSH_MAX_CONFIGS_PER_TASK"))
        if orm.PushConfig.objects.filter(task=task).count() >= limit:
            raise _invalid(field, f"a task has at most {limit} push notification configs")
        created = orm.PushConfig.objects.create(task=task, config_id=config_id, **values)
        created.task = task
        return created


async def save_config(
    task: orm.Task, config: TaskPushNotificationConfig, field: str = "params"
) -> orm.PushConfig:
    """:func:`save_config_sync` from the event loop (``config`` checked already)."""
    return await store.in_shared_thread(functools.partial(save_config_sync, task, config, field))


async def create_config(
    task: orm.Task, config: TaskPushNotificationConfig, field: str = "params"
) -> TaskPushNotificationConfig:
    """``CreateTaskPushNotificationConfig``: check ``config`` and store it for ``task`` (whose
    later events it receives)."""
    await check_config(config, field)
    return _wire(await save_config(task, config, field))


def _not_found(task: orm.Task, config_id: str) -> jsonrpc.TaskNotFoundError:
    # Spec 3.1.8: an unknown config is TaskNotFoundError.
    return jsonrpc.TaskNotFoundError(
        f"Push notification config not found: task {task.id} has no config {config_id!r}",
        metadata={"taskId": task.id, "configId": config_id},
    )


async def get_config(task: orm.Task, config_id: str) -> TaskPushNotificationConfig:
    """``GetTaskPushNotificationConfig``."""
    try:
        row = await orm.PushConfig.objects.aget(task=task, config_id=config_id)
    except orm.PushConfig.DoesNotExist:
        raise _not_found(task, config_id) from None
    row.task = task
    return _wire(row)


def _page_token(pk: int) -> str:
    return base64.urlsafe_b64encode(str(pk).encode()).decode().rstrip("=")


def _after(token: str) -> int:
    try:
        text = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        if not text.isdigit() or len(text) > 18:
            raise ValueError(text)
        return int(text)
    except ValueError:
        raise _invalid("params.pageToken", "is not a token this server gave") from None


async def list_configs(
    task: orm.Task, page_size: int | None, page_token: str | None
) -> ListTaskPushNotificationConfigsResponse:
    """``ListTaskPushNotificationConfigs``, oldest first, ``page_size`` (1..100) at a time."""
    if page_size is not None and not 0 <= page_size <= DEFAULT_PAGE_SIZE:
        raise _invalid("params.pageSize", f"must be between 1 and {DEFAULT_PAGE_SIZE}")
    size = page_size or DEFAULT_PAGE_SIZE
    rows = orm.PushConfig.objects.filter(task=task).order_by("pk")
    if page_token:
        rows = rows.filter(pk__gt=_after(page_token))
    found = [row async for row in rows[: size + 1]]
    more = len(found) > size
    found = found[:size]
    for row in found:
        row.task = task
    return ListTaskPushNotificationConfigsResponse(
        configs=[_wire(row) for row in found],
        next_page_token=_page_token(found[-1].pk) if more else None,
    )


def _delete_sync(task: orm.Task, config_id: str) -> None:
    with transaction.atomic(using=router.db_for_write(orm.PushConfig)):
        config = orm.PushConfig.objects.filter(task=task, config_id=config_id).first()
        if config is None:
            return
        # What was still to go is not sent; the record says why.
        config.deliveries.filter(status=orm.PushDelivery.Status.PENDING).update(
            status=orm.PushDelivery.Status.CANCELED,
            next_attempt_at=None,
            last_error="the push notification config was deleted",
        )
        config.delete()


async def delete_config(task: orm.Task, config_id: str) -> None:
    """``DeleteTaskPushNotificationConfig``: idempotent (deleting what is not there succeeds)."""
    await store.in_shared_thread(functools.partial(_delete_sync, task, config_id))


# --- delivery ---------------------------------------------------------------------------------


def backoff(attempts: int, rng: random.Random | None = None) -> float:
    """Seconds before the attempt after ``attempts`` failed ones: ``PUSH_RETRY_DELAY`` doubled
    per attempt, at most ``PUSH_RETRY_MAX_DELAY``, drawn from the upper half of that (jitter:
    webhooks that failed together are not retried together)."""
    base = float(get_setting("PUSH_RETRY_DELAY"))
    ceiling = float(get_setting("PUSH_RETRY_MAX_DELAY"))
    delay: float = min(ceiling, base * 2.0 ** max(0, attempts - 1))
    return delay * (0.5 + (rng or random).random() / 2)


@dataclass(frozen=True, slots=True)
class _Due:
    """A config's oldest pending delivery, with what sending it needs."""

    delivery_id: int
    attempts: int
    body: Any
    url: str
    token: str
    auth_scheme: str
    auth_credentials: str


@dataclass(frozen=True, slots=True)
class _Outcome:
    delivered: bool
    status: int | None = None
    error: str = ""


def _claim() -> timedelta:
    return timedelta(seconds=float(get_setting("PUSH_TIMEOUT")) + CLAIM_MARGIN)


def _claimable(sender_id: str, now: datetime, prefix: str = "") -> Q:
    """Configs no sender holds, whose sender's claim lapsed, or that ``sender_id`` holds."""
    return (
        Q(**{f"{prefix}sender_id": ""})
        | Q(**{f"{prefix}sender_until__lt": now})
        | Q(**{f"{prefix}sender_id": sender_id})
    )


def _candidates_sync(sender_id: str, limit: int, busy: frozenset[int]) -> list[int]:
    now = timezone.now()
    rows = (
        orm.PushDelivery.objects.filter(status=orm.PushDelivery.Status.PENDING)
        .filter(config__isnull=False)
        .filter(Q(config__retry_at__isnull=True) | Q(config__retry_at__lte=now))
        .filter(_claimable(sender_id, now, "config__"))
        .exclude(config_id__in=busy)
        .order_by("config_id")
        .values_list("config_id", flat=True)
        .distinct()
    )
    return [int(pk) for pk in rows[:limit]]


def _claim_sync(config_id: int, sender_id: str) -> bool:
    now = timezone.now()
    rows = orm.PushConfig.objects.filter(pk=config_id).filter(_claimable(sender_id, now))
    claimed = rows.update(sender_id=sender_id, sender_until=now + _claim())
    return claimed == 1


def _release_sync(config_id: int, sender_id: str) -> None:
    orm.PushConfig.objects.filter(pk=config_id, sender_id=sender_id).update(
        sender_id="", sender_until=None
    )


def _next_sync(config_id: int, sender_id: str) -> _Due | None:
    config = (
        orm.PushConfig.objects.filter(pk=config_id, sender_id=sender_id)
        .values("url", "token", "auth_scheme", "auth_credentials", "retry_at")
        .first()
    )
    if config is None or (config["retry_at"] is not None and config["retry_at"] > timezone.now()):
        return None
    head = (
        orm.PushDelivery.objects.filter(config_id=config_id, status=orm.PushDelivery.Status.PENDING)
        .order_by("pk")
        .values("pk", "attempts", "body")
        .first()
    )
    if head is None:
        return None
    return _Due(
        delivery_id=head["pk"],
        attempts=head["attempts"],
        body=head["body"],
        url=config["url"],
        token=config["token"],
        auth_scheme=config["auth_scheme"],
        auth_credentials=config["auth_credentials"],
    )


def _record_sync(config_id: int, sender_id: str, due: _Due, outcome: _Outcome) -> bool:
    """Record an attempt; True when the config's next delivery may go now (this one was
    delivered or given up), False when it waits for a retry."""
    now = timezone.now()
    attempts = due.attempts + 1
    fields: dict[str, Any] = {
        "attempts": attempts,
        "last_attempt_at": now,
        "response_code": outcome.status,
        "last_error": outcome.error[:2000],
    }
    retry_at: datetime | None = None
    if outcome.delivered:
        fields.update(
            status=orm.PushDelivery.Status.DELIVERED, delivered_at=now, next_attempt_at=None
        )
    elif attempts >= int(get_setting("PUSH_MAX_ATTEMPTS")):
        fields.update(status=orm.PushDelivery.Status.FAILED, next_attempt_at=None)
        fields["last_error"] = f"gave up after {attempts} attempts: {outcome.error}"[:2000]
    else:
        retry_at = now + timedelta(seconds=backoff(attempts))
        fields["next_attempt_at"] = retry_at
    with transaction.atomic(using=router.db_for_write(orm.PushDelivery)):
        orm.PushDelivery.objects.filter(
            pk=due.delivery_id, status=orm.PushDelivery.Status.PENDING
        ).update(**fields)
        orm.PushConfig.objects.filter(pk=config_id, sender_id=sender_id).update(
            retry_at=retry_at, sender_until=now + _claim()
        )
    return retry_at is None


def _heartbeat_sync(sender_id: str) -> None:
    orm.PushSender.objects.update_or_create(pk=sender_id, defaults={"seen_at": timezone.now()})


def _headers(due: _Due) -> dict[str, str]:
    headers = {"Content-Type": CONTENT_TYPE}
    if due.auth_scheme:
        headers["Authorization"] = (
            f"{due.auth_scheme} {due.auth_credentials}" if due.auth_credentials else due.auth_scheme
        )
    if due.token:
        headers[TOKEN_HEADER] = due.token
    for name, value in headers.items():
        if webhooks.check_header_value(value) is not None:
            raise webhooks.Refused(f"the {name} header would not be valid HTTP")
    return headers


async def _attempt(due: _Due) -> _Outcome:
    """One attempt at one delivery: the URL checked and resolved again, one POST."""
    timeout = float(get_setting("PUSH_TIMEOUT"))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout  # the lookup counts too: the claim lasts this long
    try:
        target = webhooks.parse_url(due.url)
        async with asyncio.timeout_at(deadline):
            addresses = await webhooks.resolve(target, _allowed_hosts())
        reply = await webhooks.post(
            target,
            addresses,
            to_json(due.body),
            _headers(due),
            timeout=max(0.0, deadline - loop.time()),
            user_agent=_user_agent(),
        )
    except webhooks.Refused as exc:
        return _Outcome(False, error=f"refused: {exc}")
    except TimeoutError:
        return _Outcome(False, error=f"no answer within {timeout:g} s")
    except OSError as exc:
        return _Outcome(False, error=f"could not deliver: {exc or type(exc).__name__}")
    if reply.ok:
        return _Outcome(True, reply.status)
    if 300 <= reply.status < 400:
        where = f" to {reply.location}" if reply.location else ""
        return _Outcome(
            False, reply.status, f"HTTP {reply.status}: redirects are not followed{where}"
        )
    said = f": {reply.excerpt}" if reply.excerpt else ""
    return _Outcome(False, reply.status, f"HTTP {reply.status}{said}")


@functools.cache
def _user_agent() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"a2a-toolcall/{version('a2a-toolcall')}"
    except PackageNotFoundError:
        return "a2a-toolcall"


class Sender:
    """Delivers the outbox: claims due configs, sends each one's deliveries in order.

    One per event loop (:func:`ensure_sender`); ``manage.py a2a_push`` runs one on its own.
    """

    def __init__(self, sender_id: str = store.PROCESS_ID) -> None:
        self.sender_id = sender_id
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._draining: dict[int, asyncio.Task[None]] = {}
        self._last_heartbeat = -float("inf")
        self._last_error = -float("inf")
        self.delivered = 0
        """Deliveries this sender saw answered 2xx (for tests and metrics)."""

    def wake(self) -> None:
        """Look at the outbox now (this process just queued deliveries)."""
        self._wake.set()

    def start(self) -> None:
        if self._task is None or self._task.done():
            # A context of its own: it outlives the request that started it.
            self._task = asyncio.get_running_loop().create_task(
                self._run(), context=contextvars.Context()
            )

    async def stop(self) -> None:
        """Stop taking configs; what is being sent is cancelled (it stays pending)."""
        tasks = [t for t in (self._task, *self._draining.values()) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._task = None

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                await self.tick()
            except Exception:
                if loop.time() - self._last_error >= 60.0:
                    self._last_error = loop.time()
                    logger.exception("could not read the push outbox; trying again")
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(float(get_setting("PUSH_POLL_INTERVAL"))):
                    await self._wake.wait()
            self._wake.clear()

    async def tick(self) -> int:
        """One look at the outbox: start sending to every due config this sender can claim
        (up to ``PUSH_CONCURRENCY`` at once). Returns how many it started."""
        loop = asyncio.get_running_loop()
        if loop.time() - self._last_heartbeat >= HEARTBEAT_EVERY:
            self._last_heartbeat = loop.time()
            await store.in_shared_thread(functools.partial(_heartbeat_sync, self.sender_id))
        room = int(get_setting("PUSH_CONCURRENCY")) - len(self._draining)
        if room <= 0:
            return 0
        busy = frozenset(self._draining)
        found = await store.in_shared_thread(
            functools.partial(_candidates_sync, self.sender_id, room, busy)
        )
        started = 0
        for config_id in found:
            if config_id in self._draining:
                continue
            if not await store.in_shared_thread(
                functools.partial(_claim_sync, config_id, self.sender_id)
            ):
                continue
            task = loop.create_task(self._drain(config_id), context=contextvars.Context())
            self._draining[config_id] = task
            started += 1
        return started

    async def _drain(self, config_id: int) -> None:
        try:
            while True:
                due = await store.in_shared_thread(
                    functools.partial(_next_sync, config_id, self.sender_id)
                )
                if due is None:
                    return
                outcome = await _attempt(due)
                if outcome.delivered:
                    self.delivered += 1
                else:
                    logger.info(
                        "push delivery %s (attempt %d) failed: %s",
                        due.delivery_id,
                        due.attempts + 1,
                        outcome.error,
                    )
                goes_on = await store.in_shared_thread(
                    functools.partial(_record_sync, config_id, self.sender_id, due, outcome)
                )
                if not goes_on:
                    return
        except Exception:
            logger.exception("push deliveries of config %s stopped; they stay pending", config_id)
        finally:
            self._draining.pop(config_id, None)
            with contextlib.suppress(Exception):
                await store.in_shared_thread(
                    functools.partial(_release_sync, config_id, self.sender_id)
                )
            if not self._wake.is_set():
                self._wake.set()  # the config may have more, or another may wait for room

    async def idle(self) -> None:
        """Wait until nothing is being sent (for tests and the command's shutdown)."""
        while self._draining:
            await asyncio.gather(*self._draining.values(), return_exceptions=True)


_SENDERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Sender] = weakref.WeakKeyDictionary()


def ensure_sender() -> Sender | None:
    """This loop's sender, started if it was not; None when push is off, or sent only by
    ``manage.py a2a_push`` (``PUSH_SENDER`` False)."""
    if not push_enabled() or not get_setting("PUSH_SENDER"):
        return None
    return start_sender()


def start_sender() -> Sender:
    """This loop's sender, started (whatever ``PUSH_SENDER`` says: the command's)."""
    loop = asyncio.get_running_loop()
    sender = _SENDERS.get(loop)
    if sender is None:
        sender = _SENDERS[loop] = Sender()
        store.add_push_waker(_wake_running_sender)
    sender.start()
    return sender


def _wake_running_sender() -> None:
    # Called by the store in the loop that queued deliveries.
    sender = _SENDERS.get(asyncio.get_running_loop())
    if sender is not None:
        sender.wake()
