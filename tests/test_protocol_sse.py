"""Tests for the SSE codec, against the WHATWG "Interpreting an event stream" rules."""

import itertools
import json
import re
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import TypeVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from a2a_toolcall.protocol.sse import (
    ServerSentEvent,
    SSEDecoder,
    aiter_events,
    encode_comment,
    encode_event,
    iter_events,
)

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_Seq = TypeVar("_Seq", bytes, str)


def decode(*chunks: bytes | str) -> list[ServerSentEvent]:
    """Decode a complete stream given as chunks."""
    return list(iter_events(chunks))


# --- strategies ---------------------------------------------------------------------------

# Text with line breaks of every kind mixed in, so multi-line data is common.
multiline_text = st.lists(st.text() | st.sampled_from(["\n", "\r", "\r\n"])).map("".join)
# Values allowed in an "id" or "event" field.
single_line_text = st.text(st.characters(codec="utf-8", exclude_characters="\r\n\x00"))


@dataclass(frozen=True)
class Sent:
    """The arguments of one encode_event call."""

    data: str
    event: str | None
    id: str | None
    retry: int | None
    as_bytes: bool


sent_events = st.builds(
    Sent,
    data=multiline_text,
    event=st.none() | single_line_text,
    id=st.none() | single_line_text,
    retry=st.none() | st.integers(min_value=0, max_value=2**64),
    as_bytes=st.booleans(),
)


@st.composite
def streams(draw: st.DrawFn) -> tuple[bytes, list[ServerSentEvent]]:
    """An encoded stream with random keepalives, and the events a client must decode from it."""
    parts: list[bytes] = []
    expected: list[ServerSentEvent] = []
    last_id: str | None = None
    for sent in draw(st.lists(sent_events, max_size=6)):
        if draw(st.booleans()):
            parts.append(encode_comment(draw(multiline_text)))
        data = sent.data.encode() if sent.as_bytes else sent.data
        parts.append(encode_event(data, event=sent.event, id=sent.id, retry=sent.retry))
        if sent.id is not None:
            last_id = sent.id
        expected.append(
            ServerSentEvent(
                data=_LINE_BREAK.sub("\n", sent.data),
                event=sent.event or "message",
                id=last_id,
                retry=sent.retry,
            )
        )
    if draw(st.booleans()):
        parts.append(encode_comment("keepalive"))
    return b"".join(parts), expected


def cut(data: st.DataObject, whole: _Seq) -> list[_Seq]:
    """Split ``whole`` at arbitrary points (empty pieces included)."""
    points: list[int] = sorted(data.draw(st.sets(st.integers(min_value=0, max_value=len(whole)))))
    return [whole[a:b] for a, b in itertools.pairwise([0, *points, len(whole)])]


# --- round-trip properties ----------------------------------------------------------------


@given(stream=streams(), data=st.data())
def test_round_trip_over_arbitrary_byte_chunks(
    stream: tuple[bytes, list[ServerSentEvent]], data: st.DataObject
) -> None:
    raw, expected = stream
    decoder = SSEDecoder()
    events = [event for chunk in cut(data, raw) for event in decoder.feed(chunk)]
    assert events == expected
    assert decoder.close() == []
    last_id = expected[-1].id if expected else None
    assert decoder.last_event_id == (last_id or "")


@given(stream=streams(), data=st.data())
def test_round_trip_over_arbitrary_str_chunks(
    stream: tuple[bytes, list[ServerSentEvent]], data: st.DataObject
) -> None:
    raw, expected = stream
    assert decode(*cut(data, raw.decode())) == expected


@given(stream=streams(), eol=st.sampled_from([b"\r\n", b"\r"]), data=st.data())
def test_crlf_and_cr_line_ends_decode_identically(
    stream: tuple[bytes, list[ServerSentEvent]], eol: bytes, data: st.DataObject
) -> None:
    raw, expected = stream
    assert b"\r" not in raw  # the encoder writes LF only, so every LF is a line end
    assert decode(*cut(data, raw.replace(b"\n", eol))) == expected


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"])
def test_byte_at_a_time_splits_utf8_sequences_and_crlf(eol: str) -> None:
    raw = eol.join(["\ufeffid: ü1", "event: 🎉", "data: a€b", "data: 😀", "", ""]).encode()
    chunks = [raw[i : i + 1] for i in range(len(raw))]
    assert decode(*chunks) == [ServerSentEvent("a€b\n😀", event="🎉", id="ü1")]


# --- examples from the WHATWG spec --------------------------------------------------------


def test_spec_stock_ticker() -> None:
    assert decode(b"data: YHOO\ndata: +2\ndata: 10\n\n") == [ServerSentEvent("YHOO\n+2\n10")]


def test_spec_four_blocks_with_comment_and_ids() -> None:
    stream = (
        b": test stream\n\n"
        b"data: first event\nid: 1\n\n"
        b"data:second event\nid\n\n"
        b"data:  third event\n\n"
    )
    assert decode(stream) == [
        ServerSentEvent("first event", id="1"),
        ServerSentEvent("second event", id=""),
        ServerSentEvent(" third event", id=""),
    ]


def test_spec_data_without_colon_and_unterminated_block() -> None:
    assert decode(b"data\n\ndata\ndata\n\ndata:") == [ServerSentEvent(""), ServerSentEvent("\n")]


def test_spec_space_after_colon_is_optional() -> None:
    assert decode(b"data:test\n\ndata: test\n\n") == [ServerSentEvent("test")] * 2


def test_spec_event_types() -> None:
    stream = b"event: add\ndata: 73857293\n\nevent: remove\ndata: 2153\n\n"
    assert decode(stream) == [
        ServerSentEvent("73857293", event="add"),
        ServerSentEvent("2153", event="remove"),
    ]


# --- line and field rules -----------------------------------------------------------------


def test_only_one_leading_space_is_stripped_and_later_colons_are_kept() -> None:
    assert decode(b"data:  a: b \n\n") == [ServerSentEvent(" a: b ")]


def test_unknown_and_wrong_case_fields_are_ignored() -> None:
    assert decode(b"foo: bar\nData: x\nEVENT: y\ndata: a\n\n") == [ServerSentEvent("a")]


def test_comment_only_stream_dispatches_nothing() -> None:
    assert decode(b":\n: hello\n\n:data: x\n\n\n") == []


def test_comment_inside_a_block_does_not_split_it() -> None:
    stream = b"data: a\n" + encode_comment("keepalive") + b"data: b\n\n"
    assert decode(stream) == [ServerSentEvent("a\nb")]


def test_block_without_data_is_not_dispatched_and_resets_event_type() -> None:
    assert decode(b"event: add\n\ndata: x\n\n") == [ServerSentEvent("x")]


def test_empty_event_field_means_message() -> None:
    assert decode(b"event\ndata: x\n\n") == [ServerSentEvent("x", event="message")]


def test_last_event_id_persists_and_empty_id_resets_it() -> None:
    stream = b"data: a\n\nid: 1\ndata: b\n\ndata: c\n\nid:\ndata: d\n\n"
    assert decode(stream) == [
        ServerSentEvent("a", id=None),
        ServerSentEvent("b", id="1"),
        ServerSentEvent("c", id="1"),
        ServerSentEvent("d", id=""),
    ]


def test_id_containing_nul_is_ignored() -> None:
    assert decode(b"id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n") == [
        ServerSentEvent("a", id="1"),
        ServerSentEvent("b", id="1"),
    ]


def test_last_event_id_follows_dispatch_not_the_buffer() -> None:
    decoder = SSEDecoder()
    assert decoder.last_event_id == ""
    assert decoder.feed(b"id: 1\n\n") == []  # no data, yet step 1 of dispatch still runs
    assert decoder.last_event_id == "1"
    assert decoder.feed(b"id: 2\ndata: cut off\n") == []
    assert decoder.last_event_id == "1"  # event 2 never arrived: resume after 1
    assert decoder.close() == []
    assert decoder.last_event_id == "1"


def test_retry_is_per_block_on_events_and_persistent_on_decoder() -> None:
    decoder = SSEDecoder()
    assert decoder.retry is None
    assert decoder.feed(b"retry: 1000\ndata: a\n\ndata: b\n\n") == [
        ServerSentEvent("a", retry=1000),
        ServerSentEvent("b"),
    ]
    assert decoder.retry == 1000
    assert decoder.feed(b"retry: 0042\n\n") == []  # applied although nothing is dispatched
    assert decoder.retry == 42


@pytest.mark.parametrize(
    "value",
    # Empty, signs, spaces, non-ASCII digits, and too many digits for int() to parse.
    ["", " ", "1e3", "-5", "+5", "12 ", "1_000", "\u0663", "\u00b2", "9" * 5000],
)
def test_retry_that_is_not_plain_ascii_digits_is_ignored(value: str) -> None:
    decoder = SSEDecoder()
    stream = f"retry: 7\n\nretry:{value}\ndata: x\n\n"
    assert decoder.feed(stream) == [ServerSentEvent("x")]
    assert decoder.retry == 7


# --- line ends, encoding, chunking --------------------------------------------------------


def test_cr_at_chunk_end_followed_by_lf_is_one_line_end() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"") == []  # an empty chunk does not forget the pending CR
    assert decoder.feed(b"\ndata: b\r\n\r") == [ServerSentEvent("a\nb")]
    assert decoder.feed(b"\n\n") == []  # CRLF completed, then a blank line with no data


def test_lone_cr_dispatches_without_waiting_for_more_input() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r\r") == [ServerSentEvent("a")]
    assert decoder.feed(b"data: b\r\r") == [ServerSentEvent("b")]


def test_lf_cr_is_two_line_ends() -> None:
    assert decode(b"data: a\n\r") == [ServerSentEvent("a")]


def test_long_line_over_many_chunks() -> None:
    chunks = [b"data: ", *([b"x"] * 10_000), b"\n\n"]
    assert decode(*chunks) == [ServerSentEvent("x" * 10_000)]


def test_invalid_utf8_is_replaced() -> None:
    assert decode(b"data: \xff\xfe|\xe2\x82\n\n") == [ServerSentEvent("\ufffd\ufffd|\ufffd")]


def test_utf8_bom_is_skipped_once_at_the_start_only() -> None:
    assert decode(b"\xef\xbb\xbfdata: a\n\n") == [ServerSentEvent("a")]
    assert decode(b"\xef", b"\xbb", b"\xbfdata: a\n\n") == [ServerSentEvent("a")]
    assert decode("\ufeffdata: a\n\n") == [ServerSentEvent("a")]
    # A second BOM makes the field name "\ufeffdata", which is not "data".
    assert decode(b"\xef\xbb\xbf\xef\xbb\xbfdata: a\n\n") == []
    assert decode(b"data: a\n\n\xef\xbb\xbfdata: b\n\n") == [ServerSentEvent("a")]
    assert decode(b"data: \xef\xbb\xbfa\n\n") == [ServerSentEvent("\ufeffa")]


@pytest.mark.parametrize("tail", [b"data: a\n", b"data: a", b"data: a\r\n", b"id: 1\ndata"])
def test_unterminated_final_event_is_discarded_on_close(tail: bytes) -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: kept\n\n" + tail) == [ServerSentEvent("kept")]
    assert decoder.close() == []
    assert decoder.last_event_id == ""


def test_unterminated_retry_line_is_not_processed() -> None:
    decoder = SSEDecoder()
    decoder.feed(b"retry: 5")
    assert decoder.close() == []
    assert decoder.retry is None


def test_feed_after_close_is_refused() -> None:
    decoder = SSEDecoder()
    assert decoder.close() == []
    assert decoder.close() == []
    with pytest.raises(RuntimeError, match="after close"):
        decoder.feed(b"data: x\n\n")


# --- encoder ------------------------------------------------------------------------------


def test_encode_simple_event() -> None:
    assert encode_event("hello") == b"data: hello\n\n"


def test_encode_field_order_and_multiline_data() -> None:
    encoded = encode_event("a\r\nb\rc\nd", event="update", id="42", retry=1500)
    assert encoded == b"id: 42\nevent: update\nretry: 1500\ndata: a\ndata: b\ndata: c\ndata: d\n\n"
    assert decode(encoded) == [ServerSentEvent("a\nb\nc\nd", event="update", id="42", retry=1500)]


@pytest.mark.parametrize(
    ("data", "encoded", "decoded"),
    [
        ("", b"data:\n\n", ""),
        ("\n", b"data:\ndata:\n\n", "\n"),
        ("a\n", b"data: a\ndata:\n\n", "a\n"),
        (" lead", b"data:  lead\n\n", " lead"),
        # Only CR, LF and CRLF are SSE line ends; other Unicode line breaks are plain text.
        ("a\u2028b\x0bc\x0cd\x85e", "data: a\u2028b\x0bc\x0cd\x85e\n\n".encode(), None),
    ],
)
def test_encode_edge_data_round_trips(data: str, encoded: bytes, decoded: str | None) -> None:
    assert encode_event(data) == encoded
    assert decode(encoded) == [ServerSentEvent(data if decoded is None else decoded)]


def test_encode_bytes_data_as_utf8() -> None:
    assert encode_event("é€😀".encode()) == "data: é€😀\n\n".encode()


def test_encode_empty_id_and_event() -> None:
    encoded = encode_event("x", id="", event="")
    assert encoded == b"id:\nevent:\ndata: x\n\n"
    assert decode(b"id: 1\n\n" + encoded) == [ServerSentEvent("x", id="")]


def test_encode_retry_zero_and_bool() -> None:
    assert encode_event("x", retry=0) == b"retry: 0\ndata: x\n\n"
    assert encode_event("x", retry=True) == b"retry: 1\ndata: x\n\n"


UNSAFE_FIELD_VALUES = ["a\rb", "a\nb", "a\r\nb", "a\x00b", "\n"]


@pytest.mark.parametrize("bad", UNSAFE_FIELD_VALUES)
def test_encode_rejects_line_breaks_and_nul_in_id(bad: str) -> None:
    with pytest.raises(ValueError, match="SSE id must not contain CR, LF or NUL"):
        encode_event("x", id=bad)


@pytest.mark.parametrize("bad", UNSAFE_FIELD_VALUES)
def test_encode_rejects_line_breaks_and_nul_in_event(bad: str) -> None:
    with pytest.raises(ValueError, match="SSE event must not contain CR, LF or NUL"):
        encode_event("x", event=bad)


def test_encode_rejects_negative_retry() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        encode_event("x", retry=-1)


@pytest.mark.parametrize(
    ("text", "encoded"),
    [
        ("", b":\n"),
        ("keepalive", b": keepalive\n"),
        ("a\nb\r\nc\rd", b": a\n: b\n: c\n: d\n"),
        ("\n", b":\n:\n"),
    ],
)
def test_encode_comment(text: str, encoded: bytes) -> None:
    assert encode_comment(text) == encoded
    assert decode(encoded + b"\n") == []


def test_encode_comment_default_is_a_bare_colon() -> None:
    assert encode_comment() == b":\n"


def test_comment_cannot_inject_a_field() -> None:
    assert decode(encode_comment("x\ndata: injected") + b"\n") == []


# --- JSON-RPC shape, ServerSentEvent, wrappers --------------------------------------------


def test_json_rpc_event() -> None:
    text = '{"jsonrpc": "2.0", "id": 7, "result": {"state": "working", "text": "a\\nb"}}'
    encoded = encode_event(text, id="7")
    assert encoded == (
        b'id: 7\ndata: {"jsonrpc": "2.0", "id": 7, "result": {"state": "working", "text": "a\\nb"}}'
        b"\n\n"
    )
    [event] = decode(encoded)
    assert event.id == "7"
    assert event.event == "message"
    assert event.json() == {
        "jsonrpc": "2.0",
        "id": 7,
        "result": {"state": "working", "text": "a\nb"},
    }


def test_server_sent_event_defaults_and_json_error() -> None:
    event = ServerSentEvent("not json")
    assert (event.event, event.id, event.retry) == ("message", None, None)
    with pytest.raises(json.JSONDecodeError):
        event.json()


def test_iter_events_yields_each_event_once_its_chunk_arrives() -> None:
    received: list[bytes] = []

    def chunks() -> Iterator[bytes]:
        for chunk in [b"data: a\n", b"\ndata: b\n\n", b"data: partial"]:
            received.append(chunk)
            yield chunk

    events = iter_events(chunks())
    assert next(events) == ServerSentEvent("a")
    assert len(received) == 2
    assert next(events) == ServerSentEvent("b")
    assert list(events) == []


async def test_aiter_events() -> None:
    async def chunks() -> AsyncIterator[bytes]:
        for chunk in [b"id: 1\ndata: a\r", b"\n\r\nevent: e\ndata: ", b"b\n\n", b"data: x"]:
            yield chunk

    events = [event async for event in aiter_events(chunks())]
    assert events == [ServerSentEvent("a", id="1"), ServerSentEvent("b", event="e", id="1")]
