"""Server-Sent Events codec: encode event blocks, decode event streams incrementally.

Pure stdlib (no I/O), shared by the server, the clients and the tests. Decoding implements
WHATWG HTML "Interpreting an event stream"
(https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation);
quoted comments below cite that section. Encoding emits only what that algorithm reads back
unchanged, so ``SSEDecoder`` (or any conforming client) recovers every encoded event.
"""

import codecs
import json
import re
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = [
    "SSEDecoder",
    "ServerSentEvent",
    "aiter_events",
    "encode_comment",
    "encode_event",
    "iter_events",
]

# "a U+000D CARRIAGE RETURN U+000A LINE FEED (CRLF) character pair, a single U+000A LINE FEED
# (LF) character not preceded by a U+000D CARRIAGE RETURN (CR) character, and a single U+000D
# CARRIAGE RETURN (CR) character not followed by a U+000A LINE FEED (LF) character" end a line.
# Alternation order makes CRLF one terminator. str.splitlines() is not used: it also breaks on
# VT, FF, NEL, U+2028 and others, which the event stream format treats as ordinary characters.
_LINE_END = re.compile(r"\r\n|\r|\n")

# The format has no escaping, so these would end (CR, LF) or void (NUL in "id") the field.
_NOT_IN_FIELD = re.compile(r"[\r\n\x00]")

_BOM = "\ufeff"


@dataclass(frozen=True, slots=True)
class ServerSentEvent:
    """One dispatched event.

    ``event`` is the event type ("message" when the block set none). ``id`` is the last event
    ID in effect at dispatch: it persists across events once an ``id`` field sets it, an empty
    ``id`` field resets it to "", and it is None while the stream has sent no ``id`` field.
    ``retry`` is the reconnection time set by a ``retry`` field in this event's own block.
    """

    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None

    def json(self) -> Any:
        """Return ``data`` parsed as JSON (raises ``json.JSONDecodeError`` if it is not)."""
        return json.loads(self.data)


def _field_line(name: str, value: str) -> str:
    # The decoder removes exactly one space after the colon ("If value starts with a U+0020
    # SPACE character, remove it from value"), so always writing one keeps a value that itself
    # starts with a space intact; an empty value needs no space at all.
    return f"{name}: {value}" if value else f"{name}:"


def _checked_field_line(name: str, value: str) -> str:
    if _NOT_IN_FIELD.search(value):
        raise ValueError(f"SSE {name} must not contain CR, LF or NUL: {value!r}")
    return _field_line(name, value)


def encode_event(
    data: str | bytes,
    *,
    event: str | None = None,
    id: str | None = None,
    retry: int | None = None,
) -> bytes:
    """Encode one event block: ``id``, ``event``, ``retry`` and ``data`` lines, then a blank line.

    The result is UTF-8 with LF line ends. ``data`` (``bytes`` are decoded as UTF-8) may
    contain any line breaks; a decoder returns them all as LF. ``id=""`` resets the client's
    last event ID. Raises ``ValueError`` if ``id`` or ``event`` contains CR, LF or NUL, or if
    ``retry`` is negative.
    """
    if (
        isinstance(data, bytes)
        and event is None
        and retry is None
        and data
        and b"\n" not in data
        and b"\r" not in data
    ):
        # The hot path: one line of JSON (compact JSON has no raw line breaks).
        if id is None:
            return b"data: " + data + b"\n\n"
        return (_checked_field_line("id", id) + "\ndata: ").encode() + data + b"\n\n"
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    lines: list[str] = []
    if id is not None:
        lines.append(_checked_field_line("id", id))
    if event is not None:
        lines.append(_checked_field_line("event", event))
    if retry is not None:
        if retry < 0:
            raise ValueError(f"SSE retry must be a non-negative integer, got {retry}")
        # ":d" writes a bool as 1/0 (not "True") and rejects a float; the decoder only accepts
        # ASCII digits.
        lines.append(f"retry: {retry:d}")
    # A "data" field appends its value plus LF to the data buffer and dispatch removes one
    # trailing LF, so one data line per line of text reproduces the text, line breaks as LF.
    # Empty data thus becomes a lone "data:" line, which is still dispatched (with data ""):
    # only a block with no data line at all leaves the buffer empty and dispatches nothing.
    lines.extend(_field_line("data", part) for part in _LINE_END.split(text))
    return ("\n".join(lines) + "\n\n").encode("utf-8")


def encode_comment(text: str = "") -> bytes:
    """Encode comment lines (``: text``, one per line of ``text``) with no blank line after.

    Comments never dispatch events, so ``encode_comment("keepalive")`` is the keepalive to
    send on an idle stream; it is also harmless in the middle of an event block.
    """
    # "If the line starts with a U+003A COLON character (:) Ignore the line." Each line of text
    # gets its own colon so a line break in text cannot smuggle in a field.
    return "".join(_field_line("", part) + "\n" for part in _LINE_END.split(text)).encode("utf-8")


class SSEDecoder:
    """Incremental ``text/event-stream`` parser: ``feed`` chunks as they arrive, then ``close``.

    One decoder parses one stream (one HTTP response); feed it either all ``bytes`` or all
    ``str`` chunks. Chunk boundaries may fall anywhere, even inside a UTF-8 sequence or a CRLF.
    """

    def __init__(self) -> None:
        """Start a stream with empty buffers, as the spec initialises them."""
        # "Streams must be decoded using the UTF-8 decode algorithm": the incremental decoder
        # holds back a sequence split across chunks and turns invalid bytes into U+FFFD.
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._at_start = True
        self._skip_lf = False
        # Pieces of the unterminated last line, joined once its line end arrives; a list
        # rather than a growing str keeps a long line spread over many chunks linear.
        self._partial: list[str] = []
        # The spec's data buffer, one value per data line: joining them with LF equals the
        # buffer minus its final LF, and an empty list is exactly the "empty string" buffer.
        self._data: list[str] = []
        self._event_type = ""
        # The last event ID buffer; None stands for "" when no id field has been seen yet.
        self._id: str | None = None
        self._block_retry: int | None = None
        self._last_event_id = ""
        self._retry: int | None = None
        self._closed = False

    @property
    def last_event_id(self) -> str:
        """The value to send as ``Last-Event-ID`` when reconnecting ("" means send none).

        This is the spec's "last event ID string", copied from the last event ID buffer at each
        blank line: an ``id`` inside an event that the stream cut off does not count.
        """
        return self._last_event_id

    @property
    def retry(self) -> int | None:
        """The latest reconnection time (ms) set by a ``retry`` field, or None if none was."""
        return self._retry

    def feed(self, chunk: bytes | str) -> list[ServerSentEvent]:
        """Parse the next chunk and return the events that it completes (often none)."""
        if self._closed:
            raise RuntimeError("SSEDecoder.feed() called after close()")
        text = chunk if isinstance(chunk, str) else self._utf8.decode(chunk)
        if not text:
            return []
        if self._at_start:
            # "The UTF-8 decode algorithm strips one leading UTF-8 Byte Order Mark (BOM), if
            # any": only the stream's very first character, and only one.
            self._at_start = False
            text = text.removeprefix(_BOM)
        elif self._skip_lf and text[0] == "\n":
            # The previous chunk ended in CR, already taken as a line end; this LF is the
            # second half of that CRLF, not a blank line.
            text = text[1:]
        # A final CR ends its line right away rather than waiting for the next chunk to rule
        # out an LF (which could delay an event indefinitely); remember to skip such an LF.
        self._skip_lf = text.endswith("\r")

        events: list[ServerSentEvent] = []
        start = 0
        for line_end in _LINE_END.finditer(text):
            line = text[start : line_end.start()]
            if self._partial:
                self._partial.append(line)
                line = "".join(self._partial)
                self._partial.clear()
            event = self._process_line(line)
            if event is not None:
                events.append(event)
            start = line_end.end()
        if start < len(text):
            self._partial.append(text[start:])
        return events

    def close(self) -> list[ServerSentEvent]:
        """End the stream, discarding any incomplete event; always returns [].

        Only a blank line dispatches, and ``feed`` acts on every line end as soon as it
        arrives, so nothing left at the end of the stream can form an event. The list return
        lets callers treat ``close`` like a final ``feed``. ``feed`` is refused afterwards.
        """
        # "Once the end of the file is reached, any pending data must be discarded. (If the
        # file ends in the middle of an event, before the final empty line, the incomplete
        # event is not dispatched.)" An unterminated last line is not a line (every line
        # ends with CR, LF or CRLF), so it is dropped unprocessed, as are the buffers of the
        # incomplete event and any unfinished UTF-8 sequence.
        self._closed = True
        self._partial.clear()
        self._data.clear()
        return []

    def _process_line(self, line: str) -> ServerSentEvent | None:
        if not line:
            # "If the line is empty (a blank line) Dispatch the event".
            return self._dispatch()
        if line.startswith(":"):
            # "If the line starts with a U+003A COLON character (:) Ignore the line."
            return None
        # Split at the first colon; a line without one is a field name with an empty value.
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        # "Field names must be compared literally, with no case folding performed."
        match name:
            case "event":
                self._event_type = value
            case "data":
                self._data.append(value)
            case "id" if "\x00" not in value:
                self._id = value
            case "retry" if value.isascii() and value.isdigit():
                # Only ASCII digits count (str.isdigit alone accepts e.g. "²" and "٣"); an
                # empty value has no digits to interpret and is ignored.
                self._set_retry(value)
            # "Otherwise The field is ignored." (So are "id" with NUL and non-digit "retry".)
        return None

    def _set_retry(self, digits: str) -> None:
        try:
            retry = int(digits)
        except ValueError:
            # CPython refuses to parse more than sys.get_int_max_str_digits() (default 4300)
            # digits; such a delay is meaningless, so treat it like any other unusable value.
            return
        # The spec sets the reconnection time at once, even if the block is never dispatched.
        self._retry = self._block_retry = retry

    def _dispatch(self) -> ServerSentEvent | None:
        # Step 1: "Set the last event ID string of the event source to the value of the last
        # event ID buffer. The buffer does not get reset".
        self._last_event_id = self._id or ""
        data, self._data = self._data, []
        event_type, self._event_type = self._event_type, ""
        retry, self._block_retry = self._block_retry, None
        # Step 2: "If the data buffer is an empty string, set the data buffer and the event
        # type buffer to the empty string and return."
        if not data:
            return None
        # Steps 3-7: drop the buffer's final LF, type defaults to "message", reset buffers.
        return ServerSentEvent("\n".join(data), event_type or "message", self._id, retry)


def iter_events(chunks: Iterable[bytes | str]) -> Iterator[ServerSentEvent]:
    """Decode a whole stream of chunks, yielding events as soon as each one completes."""
    decoder = SSEDecoder()
    for chunk in chunks:
        yield from decoder.feed(chunk)
    # At the end of the stream close() discards any incomplete event; it never returns events.
    decoder.close()


async def aiter_events(chunks: AsyncIterable[bytes | str]) -> AsyncIterator[ServerSentEvent]:
    """Decode an async stream of chunks, yielding events as soon as each one completes."""
    decoder = SSEDecoder()
    async for chunk in chunks:
        for event in decoder.feed(chunk):
            yield event
    # At the end of the stream close() discards any incomplete event; it never returns events.
    decoder.close()
