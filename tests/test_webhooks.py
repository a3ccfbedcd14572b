"""The webhook URL rules (a2a_toolcall.webhooks): what is refused, what the allow-list opens, and
the one POST a delivery makes, against real sockets."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from typing import Any

import pytest

from a2a_toolcall import webhooks
from tests.receiver import receiving


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("ftp://hooks.example.com/x", "scheme must be http or https"),
        ("file:///etc/passwd", "scheme must be http or https"),
        ("gopher://127.0.0.1:6379/_FLUSHALL", "scheme must be http or https"),
        ("hooks.example.com/x", "scheme"),
        ("https://user:pass@hooks.example.com/", "user name or password"),
        ("https://hooks.example.com:99999/", "not valid"),
        ("https:///nohost", "no host"),
        ("https://hooks.example.com/a b", "spaces or control characters"),
        ("https://hooks.example.com/\r\nX-Injected: 1", "spaces or control characters"),
        ("https://" + "a" * 2100 + ".com/", "longer than 2048"),
        ("", "empty"),
    ],
)
def test_malformed_urls_are_refused(url: str, why: str) -> None:
    with pytest.raises(webhooks.Refused, match=why):
        webhooks.parse_url(url)


def test_a_url_is_taken_apart_for_the_request() -> None:
    target = webhooks.parse_url("HTTPS://Hooks.Example.com./a2a/events?x=1#frag")
    assert (target.scheme, target.host, target.port) == ("https", "hooks.example.com", 443)
    assert target.path == "/a2a/events?x=1"
    assert target.host_header == "hooks.example.com"
    v6 = webhooks.parse_url("http://[2001:4860::8888]:8080")
    assert v6.host == "2001:4860::8888" and v6.host_header == "[2001:4860::8888]:8080"
    assert v6.path == "/"


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("::1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.1", "private"),
        ("fd12:3456::1", "private"),
        ("169.254.10.10", "link-local"),
        ("fe80::1", "link-local"),
        ("224.0.0.1", "multicast"),
        ("239.255.255.250", "multicast"),
        ("ff02::1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("::", "unspecified"),
        ("169.254.169.254", "metadata"),
        ("fd00:ec2::254", "metadata"),
        ("100.100.100.200", "metadata"),
        ("100.64.0.1", "not a public address"),
        ("198.18.0.1", "private"),
        ("2001:db8::1", "private"),
        ("::ffff:127.0.0.1", "embeds 127.0.0.1"),
        ("::ffff:10.0.0.1", "embeds 10.0.0.1"),
        ("64:ff9b::a9fe:a9fe", "embeds 169.254.169.254"),
        ("2002:c0a8:0101::1", "embeds 192.168.1.1"),
    ],
)
def test_every_kind_of_internal_address_is_refused(address: str, kind: str) -> None:
    why = webhooks.address_refusal(ipaddress.ip_address(address))
    assert why is not None and kind in why


@pytest.mark.parametrize("address", ["8.8.8.8", "93.184.215.14", "2606:4700:4700::1111"])
def test_public_addresses_are_allowed(address: str) -> None:
    assert webhooks.address_refusal(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/",
        "http://localhost:8000/hook",
        "http://[::1]/",
        "http://2130706433/",  # 127.0.0.1 as one number
        "http://127.1/",
        "http://0x7f.0.0.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::ffff:169.254.169.254]/",
    ],
)
async def test_urls_reaching_this_machine_or_the_metadata_service_are_refused(url: str) -> None:
    with pytest.raises(webhooks.Refused) as refused:
        await webhooks.resolve(webhooks.parse_url(url))
    assert not isinstance(refused.value, webhooks.Unresolved)
    assert "PUSH_ALLOWED_HOSTS" in str(refused.value)


async def test_the_allow_list_opens_names_addresses_and_networks() -> None:
    local = webhooks.parse_url("http://localhost:8000/hook")
    assert await webhooks.resolve(local, ["LOCALHOST"])
    assert await webhooks.resolve(webhooks.parse_url("http://127.0.0.1/"), ["127.0.0.1"]) == [
        "127.0.0.1"
    ]
    assert await webhooks.resolve(webhooks.parse_url("http://10.1.2.3/"), ["10.1.0.0/16"])
    with pytest.raises(webhooks.Refused):
        await webhooks.resolve(webhooks.parse_url("http://10.2.0.1/"), ["10.1.0.0/16"])
    assert webhooks.is_allowed_host("hooks.internal", ["hooks.internal"])
    assert not webhooks.is_allowed_host("evil.hooks.internal", ["hooks.internal"])


async def test_a_name_answering_one_private_address_among_public_ones_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def answers(host: str, port: Any, **kwargs: Any) -> list[Any]:
        return [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.215.14", port)),
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.7", port)),
        ]

    monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", answers)
    with pytest.raises(webhooks.Refused, match="resolves to 10.0.0.7"):
        await webhooks.resolve(webhooks.parse_url("https://hooks.example.test/"))


async def test_a_name_that_does_not_resolve_is_unresolved_not_refused() -> None:
    with pytest.raises(webhooks.Unresolved):
        await webhooks.resolve(webhooks.parse_url("https://no-such-host.invalid/"))


@pytest.mark.parametrize(
    ("value", "ok"),
    [("Bearer abc", True), ("a\r\nX-Evil: 1", False), ("tab\tok", True), ("é", True), ("€", False)],
)
def test_header_values_must_be_plain_http(value: str, ok: bool) -> None:
    assert (webhooks.check_header_value(value) is None) is ok


async def test_post_sends_one_request_to_the_checked_address_and_reads_only_the_status() -> None:
    with receiving(lambda n: 503) as hook:
        target = webhooks.parse_url(hook.url.replace("127.0.0.1", "localhost"))
        reply = await webhooks.post(
            target,
            ["127.0.0.1"],
            b'{"task":{}}',
            {"Content-Type": "application/a2a+json", "Authorization": "Bearer s"},
            timeout=5,
        )
        assert reply.status == 503 and not reply.ok
        assert len(reply.excerpt) <= webhooks.BODY_EXCERPT
        (got,) = hook.received
    assert got.path == "/hook"
    assert got.headers["host"] == f"localhost:{hook.port}"
    assert got.headers["content-type"] == "application/a2a+json"
    assert got.headers["authorization"] == "Bearer s"
    assert got.body == b'{"task":{}}'


async def test_post_does_not_follow_a_redirect() -> None:
    with (
        receiving(lambda n: 200) as elsewhere,
        receiving(lambda n: ("redirect", elsewhere.url)) as hook,
    ):
        reply = await webhooks.post(
            webhooks.parse_url(hook.url), ["127.0.0.1"], b"{}", {}, timeout=5
        )
        assert reply.status == 302 and reply.location == elsewhere.url
        assert elsewhere.received == []


async def test_post_gives_up_on_a_webhook_that_never_answers() -> None:
    with receiving(lambda n: "hang") as hook, pytest.raises(TimeoutError):
        await webhooks.post(webhooks.parse_url(hook.url), ["127.0.0.1"], b"{}", {}, timeout=0.5)
