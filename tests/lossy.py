"""A channel layer that loses messages, as real layers do under load, for stream tests."""

from __future__ import annotations

import os
import random
from typing import Any

from a2a_toolcall.layers import InMemoryChannelLayer


class LossyInMemoryChannelLayer(InMemoryChannelLayer):
    """The in-memory layer, dropping a share of group messages (``A2A_TEST_LOSS``, 0.2)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.loss = float(os.environ.get("A2A_TEST_LOSS", "0.2"))
        self.random = random.Random(int(os.environ.get("A2A_TEST_LOSS_SEED", "1")))
        self.dropped = 0

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        if self.random.random() < self.loss:
            self.dropped += 1
            return
        await super().group_send(group, message)
