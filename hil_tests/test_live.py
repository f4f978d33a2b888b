"""The live rig: run only with ``--hil-port URL`` (a table, or ``firmware-host simulate --pty``).

Without a port every test here skips (the ``hil_port`` fixture), so CI runs
the corpus alone.  Each test listens ``--hil-seconds`` (default 30).  The
live-equals-replay test must compare at least one verdict (``--hil-verdicts
N``: exactly N), because two empty lists are equal and prove nothing.
"""

from __future__ import annotations

import threading
from pathlib import Path

from firmware_host.link.command_link import CommandLink, Outcome
from firmware_host.link.transport import Chunk, SerialTransport
from firmware_host.live.daemon import Daemon
from firmware_host.pipeline import replay
from hil_tests.verdicts import compare, decided, final_verdicts
from protocol.decoder import StreamDecoder, decode_capture

OPEN_S = 5.0  # a port that does not open, or a hub that says nothing valid, in this long: fail
COMMAND_S = 2.0  # an outcome comes within 4 x 50 ms of sending (ICD §5); this is a guard


def listen(url: str, baud: int, seconds: float) -> bytes:
    """Every byte the table sends for ``seconds``."""
    got: list[bytes] = []
    with SerialTransport(url, baudrate=baud, on_chunk=lambda chunk: got.append(chunk.data)) as link:
        assert link.wait_open(OPEN_S), f"{url}: did not open within {OPEN_S:g} s"
        threading.Event().wait(seconds)
    return b"".join(got)


def test_hub_acknowledges_ping_and_set_indicator(hil_port: str, hil_baud: int) -> None:
    decoder = StreamDecoder()
    heard = threading.Event()

    def on_chunk(chunk: Chunk) -> None:
        decoded = decoder.feed(chunk.data)
        if decoded.tables:  # a whole good frame: the hub is talking
            heard.set()
        for ack in decoded.tables.get("ACK", ()):
            commands.on_ack(int(ack["acked_seq"]), int(ack["acked_type"]), int(ack["status"]))

    transport = SerialTransport(hil_port, baudrate=hil_baud, on_chunk=on_chunk)
    commands = CommandLink(transport.write)
    with transport, commands:
        assert transport.wait_open(OPEN_S), f"{hil_port}: did not open within {OPEN_S:g} s"
        assert heard.wait(OPEN_S), f"{hil_port}: no valid frame within {OPEN_S:g} s"
        results = [
            commands.call("PING", token=0xC0DE, timeout_s=COMMAND_S),
            commands.set_indicator("referee", rule=20).result(COMMAND_S),
            commands.set_indicator("off").result(COMMAND_S),
        ]
    for result in results:
        assert result.outcome is Outcome.ACKED, (
            f"{result.name}: {result.outcome.value} after {result.transmissions} transmissions"
        )


def test_frames_decode_with_no_bad_frames(hil_port: str, hil_baud: int, hil_seconds: float) -> None:
    data = listen(hil_port, hil_baud, hil_seconds)
    # joined mid-stream: the bytes before the first delimiter end a frame we never saw begin
    start = data.find(b"\x00") + 1
    assert start, f"{hil_port}: {len(data)} bytes in {hil_seconds:g} s and no frame delimiter"
    stats = decode_capture(data[start:]).stats
    assert stats is not None
    assert stats.frames > 0, f"{hil_port}: no frame in {hil_seconds:g} s"
    assert stats.bad == {}, (
        f"{stats.bad_total} bad of {stats.frames} frames: {stats.bad}; seq gaps {stats.lost}"
    )


def test_live_verdicts_equal_a_replay_of_the_recording(
    hil_port: str,
    hil_baud: int,
    hil_seconds: float,
    hil_verdicts: int | None,
    hil_summary: list[str],
    tmp_path: Path,
) -> None:
    lines: list[dict] = []
    stop = threading.Event()
    daemon = Daemon(hil_port, baud=hil_baud, record_dir=tmp_path, on_line=lines.append)
    runner = threading.Thread(target=daemon.run, args=(stop,), name="hil daemon")
    runner.start()
    stop.wait(hil_seconds)
    stop.set()
    runner.join(10.0)
    assert not runner.is_alive(), "the daemon did not stop within 10 s"
    assert daemon.stats.bytes > 0, f"{hil_port}: nothing received in {hil_seconds:g} s"
    recorded = b"".join(part.read_bytes() for part in sorted(tmp_path.glob("*.bin")))
    assert len(recorded) == daemon.stats.bytes, "the recording lost bytes"
    live = [decided(line) for line in final_verdicts(lines)]
    comparison = compare(live, replay(recorded).lines)
    assert comparison.ok, f"live (expected) vs replay (got):\n{comparison.table()}"
    compared = len(comparison.rows)
    wanted = "at least 1" if hil_verdicts is None else str(hil_verdicts)
    enough = compared >= 1 if hil_verdicts is None else compared == hil_verdicts
    assert enough, (
        f"{compared} verdicts were compared in {hil_seconds:g} s, {wanted} wanted: "
        "the table played no (or not every) shot in the window; give a longer --hil-seconds "
        "or a faster virtual table (docs/hil.md)"
    )
    hil_summary.append(f"live equals replay: {compared} verdicts compared in {hil_seconds:g} s")
