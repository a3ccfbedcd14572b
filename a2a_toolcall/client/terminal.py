"""The terminal client: ``python -m a2a_toolcall URL "message"``.

Streams one task and draws it live with ``rich``: the narration line (with a progress bar
when the agent reports a percentage), then one row per tool call (a spinner while it runs, then
a check, a cross or, for a call stopped with its task, a neutral "cancelled", with its duration
and a one-line result or error); parallel calls are parallel rows. A question from the agent
(input-required) is asked at a prompt and the answer sent back. Ctrl-C cancels the task on the
server and draws the rows as the server closed them. ``--json`` prints each event's JSON-RPC
result, as the server sent it, one per line, for scripts.

Exit status: 0 completed (or a direct reply), 1 failed, canceled or rejected, 2 a usage,
connection or protocol error, 3 the task waits for input and none could be read,
130 interrupted (the task was canceled), 141 standard output was closed by its reader.

What the agent says is hostile input: it is drawn as rich ``Text`` (never parsed as markup),
with control characters and bidi overrides written as visible escapes
(:func:`a2a_toolcall.untrusted.text_for_terminal`), and a file's URL is a terminal hyperlink
only when it is http(s). ``--json`` lines keep their value, with the same characters as JSON
escapes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from typing import IO, Any

from a2a_toolcall.client.errors import ClientError
from a2a_toolcall.client.events import (
    ClientEvent,
    DirectMessage,
    Finished,
    InputRequest,
    Narration,
    Reconnecting,
    RunState,
)
from a2a_toolcall.contract import ToolInvocation, ToolState
from a2a_toolcall.protocol.jsonrpc import A2AError
from a2a_toolcall.protocol.models import Part, TaskState
from a2a_toolcall.untrusted import is_web_url, json_for_terminal, text_for_terminal

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_FAILED",
    "EXIT_INPUT",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "main",
    "render_answer",
    "render_question",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INPUT = 3
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a reader that went away

_REFRESH = 0.1
_BAR_WIDTH = 20
_STATE_STYLES = {
    TaskState.COMPLETED: "green",
    TaskState.CANCELED: "bright_black",  # neutral: the user asked for it, nothing broke
}


def build_parser(prog: str = "python -m a2a_toolcall") -> argparse.ArgumentParser:
    """The command line of the terminal client (shared with ``manage.py a2a_chat``)."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Send a message to an A2A agent and watch its tool calls live.",
    )
    parser.add_argument("url", help="the agent's base URL (or its agent card URL)")
    add_options(parser)
    return parser


def add_options(parser: argparse.ArgumentParser) -> None:
    """Every option but the URL (``manage.py a2a_chat`` has its own default URL)."""
    parser.add_argument("message", nargs="*", help="the message (words are joined by spaces)")
    parser.add_argument(
        "--json", action="store_true", help="print the events as JSON lines, nothing else"
    )
    parser.add_argument(
        "--protocol", choices=["1.0", "0.3"], help="the A2A dialect (default: the newest offered)"
    )
    parser.add_argument("--context", metavar="ID", help="continue the conversation of a context")
    parser.add_argument(
        "--task", metavar="ID", help="follow a running task (SubscribeToTask) instead of sending"
    )
    parser.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="an HTTP header for every request (repeatable), e.g. 'Authorization: Bearer ...'",
    )
    parser.add_argument(
        "--api-key",
        default=os.environ.get("A2A_API_KEY") or None,
        metavar="KEY",
        help="an API key, sent in the header the agent card names (X-API-Key if none; "
        "default: $A2A_API_KEY)",
    )
    parser.add_argument(
        "--token",
        default=os.environ.get("A2A_TOKEN") or None,
        metavar="TOKEN",
        help="a bearer token, sent as 'Authorization: Bearer TOKEN' (default: $A2A_TOKEN)",
    )
    parser.add_argument(
        "--no-input",
        action="store_true",
        help="do not ask questions: exit with status 3 when the task needs input",
    )


def main(argv: Sequence[str] | None = None, *, prog: str = "python -m a2a_toolcall") -> int:
    """Run the terminal client with ``argv`` (default: ``sys.argv[1:]``); return the status."""
    parser = build_parser(prog)
    # Options may come after the message words too: `URL hello world --json`.
    args = parser.parse_intermixed_args(argv)
    return run(args, parser)


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Run a parsed command line (see :func:`build_parser`)."""
    text = " ".join(args.message).strip()
    if not text and not args.task:
        parser.error("give a message, or --task ID to follow a running task")
    headers: dict[str, str] = {}
    for header in args.header:
        name, sep, value = header.partition(":")
        if not sep or not name.strip():
            parser.error(f"--header takes 'NAME: VALUE', not {header!r}")
        headers[name.strip()] = value.strip()
    try:
        from a2a_toolcall.client.http import A2AClient  # noqa: F401  (httpx is an extra)

        if not args.json:
            import rich  # noqa: F401
    except ModuleNotFoundError as exc:
        print(
            f"the terminal client needs {exc.name}: pip install 'a2a-toolcall[client]'",
            file=sys.stderr,
        )
        return EXIT_USAGE
    session = Session(args, text, headers)
    try:
        return asyncio.run(session.main())
    except KeyboardInterrupt:
        # A second Ctrl-C while the first one's cancel is under way: stop at once.
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`... --json | head`): stop quietly, as Unix tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


class _LineReader:
    """Reads one line from stdin in a daemon thread, so Ctrl-C and exit never wait on it."""

    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    async def readline(self) -> str | None:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[str | None] = loop.create_future()

        def read() -> None:
            try:
                line: str | None = self.stream.readline()
            except (OSError, ValueError):
                line = None
            if line == "":
                line = None  # end of input

            def deliver() -> None:
                if not done.done():
                    done.set_result(line)

            loop.call_soon_threadsafe(deliver)

        threading.Thread(target=read, name="a2a-stdin", daemon=True).start()
        return await done


class Session:
    """One run of the client: connect, stream, render, ask, and turn the outcome into a status."""

    def __init__(self, args: argparse.Namespace, text: str, headers: dict[str, str]) -> None:
        self.args = args
        self.text = text
        self.headers = headers
        self.state = RunState()
        self.interrupted = False
        self.view: TimelineView | None = None
        self.live: Any = None  # the rich Live drawing self.view, while it is on screen
        self.ticker: asyncio.Task[None] | None = None
        self.console: Any = None
        if not args.json:
            from rich.console import Console

            self.console = Console(highlight=False)
        self.stdin = _LineReader(sys.stdin)

    async def main(self) -> int:
        from a2a_toolcall.client.http import A2AClient

        loop = asyncio.get_running_loop()
        async with A2AClient(
            self.args.url,
            protocol=self.args.protocol,
            headers=self.headers,
            api_key=getattr(self.args, "api_key", None),
            token=getattr(self.args, "token", None),
        ) as client:
            work = asyncio.create_task(self.converse(client))

            def interrupt() -> None:
                self.interrupted = True
                loop.remove_signal_handler(signal.SIGINT)  # a second Ctrl-C stops at once
                work.cancel()

            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(signal.SIGINT, interrupt)
            try:
                return await work
            except asyncio.CancelledError:
                if not self.interrupted:
                    raise
                return await self.cancel_on_server(client)
            except (ClientError, A2AError) as exc:
                self.close_view()
                self.error(exc)
                return EXIT_USAGE
            finally:
                self.close_view()
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    loop.remove_signal_handler(signal.SIGINT)

    async def converse(self, client: Any) -> int:
        if self.args.task:
            run = client.resubscribe(self.args.task, state=self.state)
        else:
            run = client.stream(self.text, context_id=self.args.context, state=self.state)
        while True:
            await self.follow(run)
            if self.state.message is not None:
                return EXIT_OK
            if self.state.is_terminal:
                return EXIT_OK if self.state.state is TaskState.COMPLETED else EXIT_FAILED
            question = self.state.question
            if question is None or self.args.no_input:
                self.say(f"the task {self.state.task_id} is waiting for input", err=True)
                return EXIT_INPUT
            answer = await self.ask(question)
            if answer is None:
                self.say("no answer (end of input); the task keeps waiting", err=True)
                return EXIT_INPUT
            run = run.respond(answer)

    async def follow(self, run: Any) -> None:
        if self.args.json:
            async with run:  # closes the stream's connection however the loop ends
                async for event in run:
                    self.print_json(event)
            return
        from rich.live import Live

        # Rows a previous view (before a question) left finished are on the screen already;
        # a row still open then (a tool waiting on the user's approval) is drawn again here.
        shown = frozenset(c.tool_call_id for c in self.state.timeline if c.is_finished)
        view = self.view = TimelineView(self.state, shown=shown)
        live = self.live = Live(
            view, console=self.console, auto_refresh=False, redirect_stderr=False
        )
        live.start()
        self.ticker = asyncio.create_task(self._tick(live))
        try:
            async with run:
                async for event in run:
                    view.note(event)
                    live.refresh()
        finally:
            # Interrupted: the view stays live while the task is cancelled, so its rows end
            # as the server closed them (cancel_on_server), not frozen as running.
            if not self.interrupted:
                self.close_view()
        self.print_outcome()

    async def _tick(self, live: Any) -> None:
        while True:
            await asyncio.sleep(_REFRESH)
            live.refresh()

    def end_notice(self) -> None:
        if self.view is not None:
            self.view.notice = ""

    def close_view(self) -> None:
        """Draw the view one last time, stopped, and take it off the live display."""
        if self.ticker is not None:
            self.ticker.cancel()
            self.ticker = None
        if self.view is not None:
            self.view.stopped = True
        if self.live is not None:
            self.live.refresh()
            self.live.stop()
            self.live = None

    async def ask(self, question: InputRequest) -> str | None:
        if self.console is not None:
            for line in render_question(question):
                self.console.print(line)
            self.console.print("> ", end="")
        else:
            text, offered = _question_words(question)
            suffix = f" ({offered})" if offered else ""
            print(f"? {text}{suffix}", file=sys.stderr, flush=True)
        line = await self.stdin.readline()
        return None if line is None else line.rstrip("\r\n")

    async def cancel_on_server(self, client: Any) -> int:
        task_id = self.state.task_id
        if task_id is None:
            self.close_view()
            self.say("interrupted before the server named the task", err=True)
            return EXIT_INTERRUPTED
        if self.view is not None and self.live is not None:
            self.view.notice = "cancelling the task …"
            self.live.refresh()
        try:
            task = await asyncio.wait_for(client.cancel(task_id), 15)
        except (ClientError, A2AError, TimeoutError) as exc:
            self.end_notice()
            self.close_view()
            self.say(f"interrupted; cancelling task {task_id} failed: {exc}", err=True)
            return EXIT_INTERRUPTED
        # The task as the server closed it: its tool-call summary ends the open rows (the
        # runtime fails them with "cancelled"), and its state is the header's.
        self.state.absorb_task(task)
        self.end_notice()
        self.close_view()
        if self.args.json:
            print(json.dumps({"task": task.to_wire()}, separators=(",", ":")), flush=True)
        else:
            self.say(f"interrupted: task {task_id} is {_state_word(task.status.state)}", err=True)
        return EXIT_INTERRUPTED

    # --- output ----------------------------------------------------------------------------

    def print_json(self, event: ClientEvent) -> None:
        if event.raw is not None:
            line = json.dumps(event.raw, separators=(",", ":"), ensure_ascii=False)
            sys.stdout.write(json_for_terminal(line))
            sys.stdout.write("\n")
            sys.stdout.flush()
        elif isinstance(event, Reconnecting):
            print(f"reconnecting ({event.attempt}): {event.reason}", file=sys.stderr, flush=True)

    def print_outcome(self) -> None:
        answer = render_answer(self.state)
        if answer:
            self.console.print()
        for renderable in answer:
            self.console.print(renderable)

    def say(self, text: str, *, err: bool = False) -> None:
        text = text_for_terminal(text)  # it may name the task, or quote the server
        if self.console is not None and not err:
            self.console.print(text, markup=False)
        else:
            print(text, file=sys.stderr, flush=True)

    def error(self, exc: BaseException) -> None:
        code = getattr(exc, "code", None)
        prefix = f"error {int(code)}" if isinstance(code, int) else "error"
        print(f"{prefix}: {text_for_terminal(str(exc))}", file=sys.stderr, flush=True)


def _question_words(question: InputRequest) -> tuple[str, str]:
    """A question's text and its choices (joined by " / "), safe to print."""
    text = text_for_terminal(question.question or "the agent needs input")
    return text, " / ".join(text_for_terminal(choice) for choice in question.choices)


def render_question(question: InputRequest) -> list[Any]:
    """The lines asking ``question``: ``? <question>``, then the choices it offers, dimmed."""
    from rich.text import Text  # plain Text: a question's brackets are not markup

    text, offered = _question_words(question)
    lines = [Text.assemble(("?", "bold"), " ", text)]
    if offered:
        lines.append(Text(f"  ({offered})", style="dim"))
    return lines


def _answer_files(state: RunState) -> list[Part]:
    parts = [part for artifact in state.artifacts.values() for part in artifact.parts]
    if state.message is not None:
        parts += state.message.parts
    return [part for part in parts if part.url is not None]


def _file_line(part: Part) -> Any:
    """``file <name> <url>``; the URL a terminal hyperlink (OSC 8) only when it is http(s)."""
    from rich.style import Style
    from rich.text import Text

    url = part.url or ""
    line = Text.assemble(("file", "bold"), " ")
    if part.filename:
        line.append(f"{text_for_terminal(part.filename, one_line=True)} ")
    # is_web_url admits no control character: the URL goes into the escape sequence as it is.
    shown = text_for_terminal(url, one_line=True)
    line.append(shown, style=Style(link=url) if is_web_url(url) else None)
    return line


def _json_text(value: Any) -> Any:
    """``value`` as indented, highlighted JSON (``console.print_json``'s look), safe to print."""
    from rich.highlighter import JSONHighlighter
    from rich.text import Text

    text = JSONHighlighter()(
        Text(json_for_terminal(json.dumps(value, indent=2, ensure_ascii=False)))
    )
    text.no_wrap = True
    return text


def render_answer(state: RunState) -> list[Any]:
    """The answer, once the task has ended (or the agent replied directly), as rich
    renderables: its text, a line per file, its data parts as JSON; empty before."""
    from rich.text import Text

    if not (state.is_terminal or state.message is not None):
        return []
    lines: list[Any] = []
    if state.answer_text:
        lines.append(Text(text_for_terminal(state.answer_text)))
    lines += [_file_line(part) for part in _answer_files(state)]
    if state.answer_data:
        lines.append(_json_text(state.answer_data))
    return lines


def _state_word(state: TaskState | None) -> str:
    if state is None:
        return "unknown"
    return state.name.lower().replace("_", "-")


def _one_line(value: Any, limit: int = 200) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = text_for_terminal(" ".join(text.split()))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _name(call: ToolInvocation) -> str:
    return text_for_terminal(call.name, one_line=True)


def _seconds(value: float | None) -> str:
    if value is None:
        return ""
    if value < 0.01:
        return f"{value * 1000:.1f} ms"
    if value < 1:
        return f"{value * 1000:.0f} ms"
    return f"{value:.1f} s"


class TimelineView:
    """The live rendering: narration line, one row per tool call, the final state."""

    def __init__(self, state: RunState, *, shown: frozenset[str] = frozenset()) -> None:
        self.state = state
        self.shown = shown
        self.stopped = False
        self.notice = ""
        from rich.spinner import Spinner

        self._spinners: dict[str, Spinner] = {}
        self._main_spinner = Spinner("dots")

    def note(self, event: ClientEvent) -> None:
        if isinstance(event, Reconnecting):
            self.notice = f"connection lost, resuming ({event.attempt}) …"
        elif not isinstance(event, Narration | Finished | DirectMessage):
            return
        else:
            self.notice = ""

    def _spinner(self, call_id: str) -> Any:
        from rich.spinner import Spinner

        spinner = self._spinners.get(call_id)
        if spinner is None:
            spinner = self._spinners[call_id] = Spinner("dots", style="cyan")
        return spinner

    def __rich__(self) -> Any:
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        state = self.state
        header = Table.grid(padding=(0, 1))
        header.add_column(width=2)
        header.add_column()
        running = not (state.is_over or self.stopped)
        line = self.notice or text_for_terminal(state.narration) or ("working" if running else "")
        if running:
            header.add_row(self._main_spinner, self._narration(line, state.percent))
        elif state.is_terminal:
            word = _state_word(state.state)
            style = _STATE_STYLES.get(state.state, "red") if state.state else "red"
            header.add_row(Text("●", style=style), Text(f"task {word}", style=f"bold {style}"))
        elif state.is_interrupted:
            header.add_row(Text("?", style="yellow"), Text("waiting for your answer"))
        elif line:
            header.add_row(Text("·"), Text(line, style="italic"))
        now = time.time()
        calls: list[ToolInvocation] = [
            call for call in state.timeline if call.tool_call_id not in self.shown
        ]
        width = max((len(_name(call)) for call in calls), default=0)
        lines = [self._row(call, now, running, width) for call in calls]
        return Group(header, *lines)

    @staticmethod
    def _narration(line: str, percent: float | None) -> Any:
        """The narration, after a progress bar when the agent reported a percentage."""
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        text = Text(line, style="italic")
        if percent is None:
            return text
        done = min(max(percent, 0.0), 100.0)
        grid = Table.grid(padding=(0, 1))
        grid.add_row(
            ProgressBar(total=100, completed=done, width=_BAR_WIDTH),
            Text(f"{done:3.0f}%", style="bold"),
            text,
        )
        return grid

    def _row(self, call: ToolInvocation, now: float, running: bool, width: int) -> Any:
        from rich.text import Text

        if call.state is ToolState.COMPLETED:
            icon = Text("✓", style="bold green")
            detail = Text(_one_line(call.result), style="dim")
            took = _seconds(call.duration)
        elif call.is_cancelled:
            # Stopped with its task (the runtime's "cancelled" failure): not the tool's fault.
            icon = Text("⊘", style="bright_black")
            detail = Text(_one_line(call.error), style="bright_black")
            took = _seconds(call.duration)
        elif call.state is ToolState.FAILED:
            icon = Text("✗", style="bold red")
            detail = Text(_one_line(call.error or "failed"), style="red")
            took = _seconds(call.duration)
        elif self.state.is_terminal:
            # The task ended and no outcome came for this call (a server that does not close
            # open calls): it is not running any more.
            canceled = self.state.state is TaskState.CANCELED
            icon = Text("⊘", style="bright_black")
            detail = Text("cancelled" if canceled else "no outcome", style="bright_black")
            took = ""
        else:
            frame = self._spinner(call.tool_call_id).render(now) if running else "…"
            icon = frame if isinstance(frame, Text) else Text(str(frame), style="cyan")
            detail = Text(_one_line(call.args) if call.args else "running", style="dim")
            took = _seconds(now - call.started_at) if call.started_at and running else ""
        line = Text.assemble(
            icon,
            " ",
            Text(_name(call).ljust(width), style="bold"),
            " ",
            Text(took.rjust(7), style="dim"),
            " ",
            detail,
        )
        line.no_wrap = True
        line.overflow = "ellipsis"
        return line
