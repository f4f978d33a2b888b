"""The terminal view of a :class:`~.tally.LinkTally`: rich's Live, keys read on a thread.

Drawing runs on the main thread a few times a second from a snapshot; the
reader runs on its own thread and only ever waits for the snapshot's copy.
Keys come from the terminal in cbreak mode (one key, no Enter) on a third
thread, so a slow draw never loses a key and a key never waits for a draw.
Every flag is a printed mark (``!``) as well as a colour, so the screen
reads the same in a terminal without colour (and in ``tmux capture-pane``).
"""

from __future__ import annotations

import collections
import logging
import os
import queue
import select
import sys
import termios
import threading
import tty
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Self

from rich import box
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from protocol.catalogue import NODE_NAMES

from ..cli.frame_text import field_text
from .tally import NodeHealth, Row, Snapshot

REFRESH_HZ = 4
HIGHLIGHT_S = 2.0  # a changed field stays highlighted this long (source clock)
RECENT_S = 5.0  # "only rows that changed recently"
HEX_FRAMES = 8  # frames in the raw hex pane
SORTS = ("node", "type", "rate", "count", "age")
KEYS_HELP = "p pause  / filter  s sort  c changed only  x hex  q quit"
_ENTER, _ESC, _BACKSPACE = ("\r", "\n"), "\x1b", ("\x7f", "\b")
_SORT_KEYS: dict[str, Callable[[Row], Any]] = {
    "node": lambda r: (r.node, r.name),
    "type": lambda r: (r.name, r.node),
    "rate": lambda r: -(r.rate_hz or 0.0),
    "count": lambda r: -r.count,
    "age": lambda r: r.age_s,
}


def node_name(node: int) -> str:
    return NODE_NAMES.get(node, str(node))


@dataclass
class ViewState:
    """What the person chose: pause, filters, sort, panes."""

    source: str
    nodes: frozenset[int] | None = None  # --node
    types: frozenset[str] | None = None  # --type
    text_filter: str = ""  # --filter, or typed after '/'
    typing: str | None = None  # the filter being typed, None when not typing
    sort: str = "node"
    paused: bool = False
    hex_pane: bool = False
    recent_only: bool = False

    def key(self, ch: str) -> str | None:
        """Apply one key; returns "quit" or "pause" when the caller must act on it."""
        if self.typing is not None:
            if ch in _ENTER:
                self.text_filter, self.typing = self.typing.strip(), None
            elif ch == _ESC:
                self.typing = None
            elif ch in _BACKSPACE:
                self.typing = self.typing[:-1]
            elif ch.isprintable():
                self.typing += ch
            return None
        if ch in ("q", "Q"):
            return "quit"
        if ch in ("p", " "):
            return "pause"
        if ch == "/":
            self.typing = ""
        elif ch == "s":
            self.sort = SORTS[(SORTS.index(self.sort) + 1) % len(SORTS)]
        elif ch == "c":
            self.recent_only = not self.recent_only
        elif ch == "x":
            self.hex_pane = not self.hex_pane
        return None

    def shows(self, row: Row) -> bool:
        if self.nodes is not None and row.node not in self.nodes:
            return False
        if self.types is not None and row.name not in self.types:
            return False
        if self.recent_only and (row.changed_age_s is None or row.changed_age_s > RECENT_S):
            return False
        label = f"{node_name(row.node)} {row.name}".lower()
        return all(term in label for term in self.text_filter.lower().split())


def _values(row: Row) -> Text:
    fresh = row.changed_age_s is not None and row.changed_age_s <= HIGHLIGHT_S
    text = Text()
    for i, (name, value) in enumerate(row.fields.items()):
        if i:
            text.append(" ")
        changed = fresh and name in row.changed
        text.append(field_text(name, value), style="bold black on yellow" if changed else "")
    return text


def _rate(hz: float | None) -> str:
    """Two decimals, or two significant digits below 1 Hz (a key press a minute is 0.017,
    not 0.00); "-" before a row's second frame."""
    if hz is None:
        return "-"
    return f"{hz:.2f}" if hz >= 1 or hz == 0 else f"{hz:.2g}"


def _age(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 100 else f"{seconds / 60:.0f} min"


def _messages(snap: Snapshot, state: ViewState) -> Table:
    table = Table(title="messages", title_justify="left", expand=True, box=box.SIMPLE_HEAD)
    for name, justify in (("node", "left"), ("type", "left"), ("count", "right")):
        table.add_column(name, justify=justify, no_wrap=True)
    table.add_column("rate Hz", justify="right", no_wrap=True)
    table.add_column("last", justify="right", no_wrap=True)
    table.add_column("values (changed: highlighted)", no_wrap=True, overflow="ellipsis", ratio=1)
    rows = sorted(filter(state.shows, snap.rows), key=_SORT_KEYS[state.sort])
    for row in rows:
        table.add_row(
            node_name(row.node),
            row.name,
            str(row.count),
            _rate(row.rate_hz),
            _age(row.age_s),
            _values(row),
        )
    return table


def _flag(value: float | None, fmt: str, flagged: bool) -> Text:
    if value is None:
        return Text("-")
    return Text(fmt.format(value) + (" !" if flagged else ""), style="bold red" if flagged else "")


def _drift(h: NodeHealth) -> Text:
    """The drift with how far it may be off (the fit's slope error), flagged outside the
    datasheet."""
    unc = "" if h.drift_uncertainty_ppm is None else f" ±{h.drift_uncertainty_ppm:.1f}"
    return _flag(h.drift_ppm, "{:+.1f}" + unc, h.drift_flagged)


def _nodes(nodes: list[NodeHealth]) -> Table:
    table = Table(
        title="nodes (! = outside the ICD §7 datasheet)", title_justify="left", box=box.SIMPLE_HEAD
    )
    for name in ("node", "lost", "retx", "offset to hub ms", "drift ppm", "uncertainty µs"):
        table.add_column(name, justify="left" if name == "node" else "right", no_wrap=True)
    for h in nodes:
        table.add_row(
            node_name(h.node),
            _flag(h.lost, "{}", h.lost > 0),
            str(h.retransmissions),
            _flag(None if h.offset_us is None else h.offset_us / 1000, "{:.3f}", False),
            _drift(h),
            _flag(h.uncertainty_us, "{:.1f}", h.uncertainty_flagged),
        )
    return table


def _hex_pane(raw: bytes, width: int) -> Text:
    """The last frames as they came on the wire (delimiters split them)."""
    frames = [f for f in raw.split(b"\x00") if f][-HEX_FRAMES:]
    text = Text(f"raw: the last {len(frames)} frames (COBS, delimiters left out)\n", style="bold")
    for frame in frames:
        line = f"{len(frame):>4} B  {frame.hex(' ')}"
        text.append((line if len(line) <= width else line[: width - 1] + "…") + "\n")
    return text


def _header(snap: Snapshot, state: ViewState) -> Text:
    text = Text(f"firmware-host monitor  {state.source}", style="bold")
    if snap.link:
        text.append(f"  {snap.link}")
    text.append(f"  {snap.bytes_per_s / 1000:.1f} kB/s  {snap.bytes_total} bytes")
    text.append(f"  {snap.frames} frames  lamp {snap.lamp or '-'}")
    if state.paused:
        text.append("  PAUSED", style="bold reverse")
    text.append(f"\nsort {state.sort}")
    if state.text_filter:
        text.append(f"  filter '{state.text_filter}'")
    if state.recent_only:
        text.append(f"  only rows changed in the last {RECENT_S:g} s")
    bad = ", ".join(f"{reason} {n}" for reason, n in snap.bad.items()) or "none"
    text.append(f"\nbad frames: {bad}", style="bold red" if snap.bad else "")
    text.append(f"  unknown {snap.unknown}  duplicates {snap.duplicates}  reboots {snap.reboots}")
    if snap.joined_bytes:
        text.append(f"  joined mid-frame: the first {snap.joined_bytes} bytes were no frame")
    return text


def render(snap: Snapshot, state: ViewState, width: int) -> Group:
    """The whole screen for one snapshot (pure: the tests can call it too)."""
    parts: list[Any] = [_header(snap, state), _messages(snap, state), _nodes(snap.nodes)]
    parts += [Text(note, style="yellow") for note in snap.notes]
    if state.hex_pane:
        parts.append(_hex_pane(snap.raw_tail, width))
    if state.typing is not None:
        parts.append(Text(f"filter: {state.typing}_  (Enter: apply, Esc: cancel)", style="bold"))
    else:
        parts.append(Text(KEYS_HELP, style="dim"))
    return Group(*parts)


class KeyReader:
    """Keys from the terminal in cbreak mode, on a thread; the terminal is restored on exit."""

    def __init__(self, fd: int | None = None) -> None:
        self.fd = sys.stdin.fileno() if fd is None else fd
        self.keys: queue.SimpleQueue[str] = queue.SimpleQueue()
        self._saved: list[Any] | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, name="keys", daemon=True)

    def __enter__(self) -> Self:
        if os.isatty(self.fd):
            self._saved = termios.tcgetattr(self.fd)
            tty.setcbreak(self.fd)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._saved is not None:
            termios.tcsetattr(self.fd, termios.TCSADRAIN, self._saved)

    def _read(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self.fd], [], [], 0.1)
            if ready:
                data = os.read(self.fd, 64)
                if not data:
                    return
                for ch in data.decode("utf-8", errors="ignore"):
                    self.keys.put(ch)


def _follow_terminal(console: Console) -> None:
    """Size the view to the terminal as it is now: rich would take COLUMNS and LINES from the
    environment first, and those are stale after a resize (or set by a parent at 80 x 24)."""
    try:
        console.size = os.get_terminal_size(sys.stdout.fileno())
    except (OSError, ValueError):
        pass  # not a terminal: rich's own guess


HELD_LOG_LINES = 1000  # log lines kept while the view shows; the oldest go first


class _Held(logging.Handler):
    """The log's records while the full-screen view is up, newest HELD_LOG_LINES."""

    def __init__(self) -> None:
        super().__init__()
        self.records: collections.deque[logging.LogRecord] = collections.deque(
            maxlen=HELD_LOG_LINES
        )

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextmanager
def _log_after_view() -> Iterator[None]:
    """A log line written into the full-screen view scrolls it (its header and the bad-frame
    count go off the top) until the next redraw fails to bring them back: the lines the log
    gives while the view is up (a vanished port's reconnect warnings) are held, and written
    in order once it ends."""
    root = logging.getLogger()
    handlers, held = root.handlers[:], _Held()
    root.handlers = [held]
    try:
        yield
    finally:
        root.handlers = handlers
        for record in held.records:
            root.callHandlers(record)


def run_view(
    snapshot: Callable[[], Snapshot],
    state: ViewState,
    on_pause: Callable[[bool], None] = lambda paused: None,
) -> None:
    """Draw until 'q' (or Ctrl-C); ``on_pause`` lets a capture player stop its clock.

    The last view is printed again on the normal screen as it ends: what the
    link looked like stays in the terminal (and is the output when stdout is
    not a terminal at all, e.g. piped into a file).
    """
    console = Console()
    snap = snapshot()
    try:
        with (
            _log_after_view(),
            KeyReader() as reader,
            Live(console=console, screen=True, auto_refresh=False) as live,
        ):
            while True:
                try:
                    keys = [reader.keys.get(timeout=1 / REFRESH_HZ)]
                    while not reader.keys.empty():
                        keys.append(reader.keys.get())
                except queue.Empty:
                    keys = []
                for ch in keys:
                    action = state.key(ch)
                    if action == "quit":
                        return
                    if action == "pause":
                        state.paused = not state.paused
                        on_pause(state.paused)
                if not state.paused:
                    snap = snapshot()
                _follow_terminal(console)
                live.update(render(snap, state, console.size.width), refresh=True)
    finally:
        console.print(render(snapshot() if not state.paused else snap, state, console.size.width))
