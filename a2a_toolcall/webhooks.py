"""Webhook URLs a server may call, and the one POST it makes to them (docs/push.md).

A push-notification URL comes from a client, so calling it is calling wherever the client
likes: the loopback interface, the private network, a cloud's metadata service (SSRF). The
rules, checked when a config is created and again, with a fresh DNS answer, before every
delivery:

- the scheme is ``http`` or ``https``; no user name or password in the URL;
- every address the host resolves to is a global unicast address: loopback, private,
  link-local, shared (CGNAT), reserved, documentation, multicast and unspecified addresses are
  refused, so are IPv6 forms that embed an IPv4 address (mapped, NAT64, 6to4) when that one is
  refused, and the cloud metadata addresses;
- unless the host is in ``PUSH_ALLOWED_HOSTS`` (a name, an address or a network): that is how
  a site opens a receiver on its own network, and how the tests reach theirs on 127.0.0.1.

The connection goes to the very address that was checked (no second lookup a DNS rebinding
could answer differently); TLS still verifies the certificate against the URL's host name.
Redirects are not followed, and no more than ``RESPONSE_LIMIT`` bytes of a response are read.
No Django here but the settings: the rules are plain functions of their inputs.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

__all__ = [
    "MAX_URL_LENGTH",
    "Refused",
    "Reply",
    "Target",
    "Unresolved",
    "address_refusal",
    "check_header_value",
    "is_allowed_host",
    "parse_url",
    "post",
    "resolve",
]

MAX_URL_LENGTH: Final = 2048
RESPONSE_LIMIT: Final = 4096
"""Bytes of a response read at most (status line and headers included)."""
BODY_EXCERPT: Final = 256
"""Bytes of an unsuccessful response's body kept for the record."""

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

_METADATA: Final = tuple(
    ipaddress.ip_network(n)
    for n in (
        "169.254.169.254/32",  # AWS, GCP, Azure, OpenStack
        "fd00:ec2::254/128",  # AWS over IPv6
        "100.100.100.200/32",  # Alibaba Cloud
        "192.0.0.192/32",  # Oracle Cloud
        "192.0.0.0/24",  # IETF protocol assignments (is_global says yes to some of it)
    )
)
_NAT64: Final = ipaddress.ip_network("64:ff9b::/96")


class Refused(ValueError):
    """A URL the rules refuse; ``str()`` says why, in words fit for the client."""


class Unresolved(Refused):
    """The URL's host does not resolve (now): nothing to connect to, nothing refused either."""


@dataclass(frozen=True, slots=True)
class Target:
    """A webhook URL taken apart: where to connect and what to ask for."""

    url: str
    scheme: str
    host: str
    """The host name or address literal, lower case, without brackets or a trailing dot."""
    port: int
    path: str
    """The request target: path and query."""
    host_header: str

    @property
    def is_tls(self) -> bool:
        return self.scheme == "https"


def parse_url(url: str) -> Target:
    """``url`` checked for shape (scheme, host, port, no credentials); raises :class:`Refused`."""
    if not isinstance(url, str) or not url:
        raise Refused("the URL is empty")
    if len(url) > MAX_URL_LENGTH:
        raise Refused(f"the URL is longer than {MAX_URL_LENGTH} characters")
    if any(ord(c) <= 0x20 or ord(c) == 0x7F for c in url):
        raise Refused("the URL contains spaces or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise Refused(f"the URL is not valid ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise Refused(f"the scheme must be http or https, not {parts.scheme or '(none)'!r}")
    if "@" in parts.netloc:
        raise Refused(
            "the URL must not carry a user name or password: use the config's authentication"
        )
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise Refused("the URL has no host")
    try:
        host.encode("ascii")
    except UnicodeEncodeError:
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise Refused(f"the host {host!r} is not a valid name") from None
    default = 443 if scheme == "https" else 80
    port = default if port is None else port
    if not 0 < port < 65536:
        raise Refused(f"the port {port} is out of range")
    literal = _literal(host)
    shown = f"[{host}]" if literal is not None and literal.version == 6 else host
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return Target(
        url=url,
        scheme=scheme,
        host=host,
        port=port,
        path=path,
        host_header=shown if port == default else f"{shown}:{port}",
    )


def _literal(host: str) -> Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def address_refusal(address: Address) -> str | None:
    """Why the rules refuse to call ``address`` (None: they allow it)."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is None and address in _NAT64:
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None:
            why = address_refusal(embedded)
            return f"it embeds {embedded}, and {why}" if why else None
    if any(address in network for network in _METADATA):
        return f"{address} is a cloud metadata or protocol address"
    if address.is_multicast:
        return f"{address} is a multicast address"
    if address.is_loopback:
        return f"{address} is a loopback address"
    if address.is_link_local:
        return f"{address} is a link-local address"
    if address.is_unspecified:
        return f"{address} is the unspecified address"
    if address.is_private:
        return f"{address} is a private address"
    if not address.is_global:
        return f"{address} is not a public address"
    return None


def _allowed(entries: Iterable[str]) -> tuple[frozenset[str], tuple[Network, ...]]:
    names: set[str] = set()
    networks: list[Network] = []
    for entry in entries:
        text = str(entry).strip().lower().rstrip(".")
        try:
            networks.append(ipaddress.ip_network(text.strip("[]"), strict=False))
        except ValueError:
            names.add(text)
    return frozenset(names), tuple(networks)


def is_allowed_host(host: str, allowed: Iterable[str]) -> bool:
    """True when ``host`` is named by ``allowed`` (``PUSH_ALLOWED_HOSTS``) as a name, or falls in
    one of its addresses or networks."""
    names, networks = _allowed(allowed)
    if host.lower() in names:
        return True
    literal = _literal(host)
    return literal is not None and any(literal in network for network in networks)


async def resolve(target: Target, allowed: Sequence[str] = ()) -> list[str]:
    """The addresses to connect to for ``target``, every one checked; raises :class:`Refused`.

    A host named in ``allowed`` may resolve anywhere; otherwise each address must pass
    :func:`address_refusal` or fall in an allowed network. One refused address refuses the
    host (a name that answers both a public and a private address is a rebinding attempt or a
    mistake either way).
    """
    names, networks = _allowed(allowed)
    literal = _literal(target.host)
    if literal is not None:
        found: list[Address] = [literal]
    else:
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(
                target.host, target.port, type=socket.SOCK_STREAM
            )
        except (OSError, UnicodeError) as exc:
            raise Unresolved(f"the host {target.host!r} does not resolve ({exc})") from None
        found = []
        for info in infos:
            address = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
            if address not in found:
                found.append(address)
        if not found:
            raise Unresolved(f"the host {target.host!r} does not resolve")
    if target.host in names:
        return [str(a) for a in found]
    for address in found:
        if any(address in network for network in networks):
            continue
        why = address_refusal(address)
        if why is not None:
            named = "" if literal is not None else f"{target.host} resolves to {address}: "
            raise Refused(f"{named}{why} (PUSH_ALLOWED_HOSTS opens a host)")
    return [str(a) for a in found]


def check_header_value(value: str) -> str | None:
    """Why ``value`` cannot be sent as an HTTP header value (None: it can)."""
    if any((ord(c) < 0x20 and c != "\t") or ord(c) == 0x7F for c in value):
        return "must not contain control characters (line breaks included)"
    try:
        value.encode("latin-1")
    except UnicodeEncodeError:
        return "must be ISO-8859-1 text (HTTP header values are)"
    return None


@dataclass(frozen=True, slots=True)
class Reply:
    """What the webhook answered."""

    status: int
    location: str = ""
    excerpt: str = ""

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


async def post(
    target: Target,
    addresses: Sequence[str],
    body: bytes,
    headers: Mapping[str, str],
    *,
    timeout: float,
    user_agent: str = "a2a-toolcall",
) -> Reply:
    """POST ``body`` to ``target`` at the first of ``addresses`` that accepts a connection,
    within ``timeout`` seconds in all; raises ``OSError`` or ``TimeoutError`` when none answers.

    HTTP/1.1 with ``Connection: close``: one request per connection, nothing pooled that a
    later delivery could reuse after its host's addresses changed.
    """
    lines = [
        f"POST {target.path} HTTP/1.1",
        f"Host: {target.host_header}",
        f"User-Agent: {user_agent}",
        f"Content-Length: {len(body)}",
        "Connection: close",
    ]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    context = ssl.create_default_context() if target.is_tls else None
    async with asyncio.timeout(timeout):
        last: OSError | None = None
        for address in addresses:
            try:
                reader, writer = await asyncio.open_connection(
                    address,
                    target.port,
                    ssl=context,
                    server_hostname=target.host if context is not None else None,
                    limit=RESPONSE_LIMIT,
                )
            except OSError as exc:
                last = exc
                continue
            try:
                writer.write(head + body)
                await writer.drain()
                return await _read_reply(reader)
            finally:
                writer.close()
        raise last or OSError("no address to connect to")


async def _read_reply(reader: asyncio.StreamReader) -> Reply:
    read = 0

    async def line() -> bytes:
        nonlocal read
        try:
            data = await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            raise OSError("the connection closed before the response ended") from exc
        except asyncio.LimitOverrunError as exc:
            raise OSError(f"the response's head is longer than {RESPONSE_LIMIT} bytes") from exc
        read += len(data)
        if read > RESPONSE_LIMIT:
            raise OSError(f"the response's head is longer than {RESPONSE_LIMIT} bytes")
        return data.rstrip(b"\r\n")

    status_line = (await line()).decode("latin-1")
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise OSError(f"not an HTTP response: {status_line[:80]!r}")
    status = int(parts[1])
    location = ""
    length: int | None = None
    while header := await line():
        name, _, value = header.decode("latin-1").partition(":")
        name = name.strip().lower()
        if name == "location":
            location = value.strip()[:500]
        elif name == "content-length" and value.strip().isdigit():
            length = int(value.strip())
    excerpt = ""
    if not 200 <= status < 300 and length != 0:
        # A few bytes of what the webhook said, for the record; never more, never waited for.
        try:
            async with asyncio.timeout(1.0):
                data = await reader.read(min(BODY_EXCERPT, length or BODY_EXCERPT))
            excerpt = data.decode("utf-8", "replace").strip()
        except (TimeoutError, OSError):
            pass
    return Reply(status=status, location=location, excerpt=excerpt)
