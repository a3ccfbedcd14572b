"""A faster in-memory channel layer for the bus (one process, no Redis).

``channels.layers.InMemoryChannelLayer`` deep-copies every message, walks every channel and
every group membership to expire old ones on every ``send``, ``receive`` and ``group_send``,
and starts an asyncio task per group member for each ``group_send``. With a few dozen open
streams that is most of the cost of a tool frame (docs/benchmarks.md). This subclass keeps its
semantics (capacity, message expiry, group expiry, ``ChannelFull``) and drops that cost:

- messages are passed by reference, not copied: neither the sender nor a receiver may change a
  message after sending or receiving it. The bus never does (envelopes are built fresh for
  every publish and only read); code of your own on the same layer must not either;
- expired messages and group memberships are swept at most once per ``sweep_interval`` seconds
  (default 1 s) instead of on every call;
- ``group_send`` puts the message on each member's queue directly;
- ``receive_nowait(channel)`` takes a waiting message without a task, and
  ``message_waiter(channel)`` is a future done once one waits (the bus uses both: a stream
  waiting for its next message costs a future, not a task and a queue);
- ``new_callback_channel(callback)`` makes a channel whose messages are handed to
  ``callback`` in a later turn of the event loop instead of queued: a reader that only reacts
  to messages (a running task's control messages, in the runtime) costs no task waiting on a
  queue; with ``immediate=True``, inside the send itself (a recorder takes a tool frame in
  the agent's own turn).

Use it as the layer's ``BACKEND``::

    CHANNEL_LAYERS = {"default": {"BACKEND": "a2a_toolcall.layers.InMemoryChannelLayer"}}
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import re
import time
from collections.abc import Callable
from typing import Any

from channels.exceptions import ChannelFull
from channels.layers import InMemoryChannelLayer as _StockInMemoryChannelLayer

__all__ = ["DEFAULT_CAPACITY", "InMemoryChannelLayer"]

logger = logging.getLogger(__name__)

DEFAULT_CAPACITY = 1000
"""Messages a channel holds (channels' own default is 100). Each stream's subscription is a
channel of its own, and a task's publisher may have ``bus.PUBLISH_WINDOW`` (256) envelopes
unacknowledged: with room for only 100, an agent emitting frames faster than its stream is read
overflowed the channel, and the frames dropped waited for the consumer's probe (2 s) to be sent
again."""


class InMemoryChannelLayer(_StockInMemoryChannelLayer):
    """``channels.layers.InMemoryChannelLayer`` without per-message copies and sweeps."""

    def __init__(
        self,
        expiry: int = 60,
        group_expiry: int = 86400,
        capacity: int = DEFAULT_CAPACITY,
        channel_capacity: dict[re.Pattern[str] | str, int] | None = None,
        *,
        sweep_interval: float = 1.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            expiry=expiry,
            group_expiry=group_expiry,
            capacity=capacity,
            channel_capacity=channel_capacity,
            **kwargs,
        )
        self.sweep_interval = sweep_interval
        self._next_sweep = 0.0
        self._waiters: dict[str, asyncio.Future[None]] = {}
        self._callbacks: dict[str, Callable[[dict[str, Any]], None]] = {}
        self._immediate: set[str] = set()
        self._callback_numbers = itertools.count(1)

    def _sweep(self) -> None:
        now = time.monotonic()
        if now >= self._next_sweep:
            self._next_sweep = now + self.sweep_interval
            self._clean_expired()  # type: ignore[attr-defined]

    def _put(self, channel: str, message: dict[str, Any]) -> None:
        callback = self._callbacks.get(channel)
        if callback is not None:
            if channel in self._immediate:
                self._call_back(channel, callback, message)
            else:
                # Later, not now: the sender goes on as after a queued message, and the
                # callback runs in a loop turn of its own, as a reader woken by it would.
                asyncio.get_running_loop().call_soon(self._call_back, channel, callback, message)
            return
        queue = self.channels.get(channel)
        if queue is None:
            queue = self.channels[channel] = asyncio.Queue(maxsize=self.get_capacity(channel))
        try:
            queue.put_nowait((time.time() + self.expiry, message))
        except asyncio.QueueFull:
            raise ChannelFull(channel) from None
        waiter = self._waiters.pop(channel, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def new_callback_channel(
        self,
        callback: Callable[[dict[str, Any]], None],
        prefix: str = "specific",
        *,
        immediate: bool = False,
    ) -> str:
        """A new channel whose every message is passed to ``callback`` (called on the event
        loop, in a turn of its own, in the order the messages were sent) instead of queued.

        ``immediate``: called at once instead, inside the ``send`` or ``group_send`` that
        delivers the message (before it returns; for a callback that only takes note of the
        message, or that does at once what its reader would do next, saving a loop turn).

        Not part of the channel layer API. Such a channel has no queue: nothing waits on it,
        no capacity applies, and ``receive`` on it would wait forever. It joins and leaves
        groups as any channel does; :meth:`discard_callback` ends it (messages sent to it
        afterwards, or still on their way, are dropped). What ``callback`` raises is logged,
        never raised to the sender.
        """
        channel = f"{prefix}.inmemory!cb{next(self._callback_numbers)}"
        self._callbacks[channel] = callback
        if immediate:
            self._immediate.add(channel)
        return channel

    def discard_callback(self, channel: str) -> None:
        """End a channel of :meth:`new_callback_channel`: its callback is called no more."""
        self._callbacks.pop(channel, None)
        self._immediate.discard(channel)

    def _call_back(
        self, channel: str, callback: Callable[[dict[str, Any]], None], message: dict[str, Any]
    ) -> None:
        if self._callbacks.get(channel) is not callback:
            return  # discarded meanwhile
        try:
            callback(message)
        except Exception:
            logger.exception("the callback of channel %s failed on %.200r", channel, message)

    def message_waiter(self, channel: str) -> asyncio.Future[None]:
        """A future that is done once a message waits on ``channel`` (at once if one does).

        Not part of the channel layer API: with :meth:`receive_nowait` it lets the bus wait
        for a message without a receive task and without a queue for an empty channel. One
        waiter per channel (a channel has one reader); :meth:`discard_waiter` forgets it.
        """
        waiter = asyncio.get_running_loop().create_future()
        queue = self.channels.get(channel)
        if queue is not None and not queue.empty():
            waiter.set_result(None)
        else:
            self._waiters[channel] = waiter
        return waiter

    def discard_waiter(self, channel: str) -> None:
        """Forget the waiter of ``channel`` (its reader stopped waiting)."""
        waiter = self._waiters.pop(channel, None)
        if waiter is not None and not waiter.done():
            waiter.cancel()

    async def send(self, channel: str, message: dict[str, Any]) -> None:
        """Put ``message`` (not a copy) on ``channel``."""
        assert isinstance(message, dict), "message is not a dict"
        self.require_valid_channel_name(channel)
        assert "__asgi_channel__" not in message
        self._sweep()
        self._put(channel, message)

    async def receive(self, channel: str) -> dict[str, Any]:
        """The next message on ``channel``."""
        self.require_valid_channel_name(channel)
        self._sweep()
        queue = self.channels.get(channel)
        if queue is None:
            queue = self.channels[channel] = asyncio.Queue(maxsize=self.get_capacity(channel))
        try:
            _, message = await queue.get()
        finally:
            if queue.empty() and self.channels.get(channel) is queue:
                del self.channels[channel]
        return message

    def receive_nowait(self, channel: str) -> dict[str, Any] | None:
        """The next message on ``channel`` if one is waiting, else None (never blocks).

        Not part of the channel layer API: the bus uses it, when a layer has it, to take
        waiting messages without starting a receive task for each.
        """
        self._sweep()
        queue = self.channels.get(channel)
        if queue is None or queue.empty():
            return None
        _, message = queue.get_nowait()
        if queue.empty():
            del self.channels[channel]
        return message

    async def flush(self) -> None:
        await super().flush()
        self._callbacks.clear()
        self._immediate.clear()

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        """Put ``message`` on the queue of every member of ``group`` (full ones drop it)."""
        self.group_send_nowait(group, message)

    def group_send_nowait(self, group: str, message: dict[str, Any]) -> None:
        """:meth:`group_send`, which never waits, as a plain call.

        Not part of the channel layer API: the bus uses it, when a layer has it, to publish
        without an await (see ``TaskPublisher.publish_nowait``).
        """
        assert isinstance(message, dict), "Message is not a dict"
        self.require_valid_group_name(group)
        self._sweep()
        for channel in list(self.groups.get(group, ())):
            try:
                self._put(channel, message)
            except ChannelFull:  # as the stock layer: a full member misses the message
                continue
