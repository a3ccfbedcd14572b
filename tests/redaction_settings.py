"""Settings for a live server running the ``leaky`` agent (tests/test_redaction.py): the default
REDACT_KEYS plus ``pin``, and a REDACT_HOOK masking card numbers."""

from typing import Any

from tests.agents import CARD
from tests.settings import *  # noqa: F403
from tests.settings import A2A_TOOLCALL as _TEST_SETTINGS

_BASE: dict[str, Any] = _TEST_SETTINGS
CARD_MASK = "[card]"


def mask_cards(value: Any) -> Any:
    """REDACT_HOOK: ``value`` with every string holding :data:`~tests.agents.CARD` masked."""
    if isinstance(value, dict):
        return {key: mask_cards(child) for key, child in value.items()}
    if isinstance(value, list):
        return [mask_cards(child) for child in value]
    return CARD_MASK if isinstance(value, str) and CARD in value else value


A2A_TOOLCALL = {
    **_BASE,
    "AGENTS": {**_BASE["AGENTS"], "leaky": "tests.agents.leaky"},
    "DEFAULT_AGENT": "leaky",
    "REDACT_KEYS": ["password", "token", "api_key", "authorization", "secret", "pin"],
    "REDACT_HOOK": "tests.redaction_settings.mask_cards",
}
