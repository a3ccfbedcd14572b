"""Errors the client raises on its own account.

A JSON-RPC error answered by the server is raised as the typed
:class:`a2a_toolcall.protocol.jsonrpc.A2AError` subclass for its code (``TaskNotFoundError``
for -32001 and so on), so ``except A2AError`` catches every error the agent reported and
``except ClientError`` everything that went wrong on the way.
"""

from __future__ import annotations

__all__ = [
    "A2AConnectionError",
    "A2AHTTPError",
    "ClientError",
    "NotAnA2AServerError",
    "ProtocolViolationError",
]


class ClientError(Exception):
    """Base of the errors raised by :mod:`a2a_toolcall.client` itself."""


class A2AConnectionError(ClientError):
    """The server could not be reached, or a stream broke and could not be resumed."""


class NotAnA2AServerError(ClientError):
    """The URL does not serve an A2A agent card the client can use."""


class A2AHTTPError(ClientError):
    """An HTTP error status without a JSON-RPC answer (a proxy, auth or server failure)."""

    def __init__(self, message: str, *, status_code: int) -> None:
        super().__init__(message)
        self.status_code = status_code


class ProtocolViolationError(ClientError):
    """The server answered something that is not valid A2A (bad JSON-RPC, bad event)."""
