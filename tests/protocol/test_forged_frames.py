"""A forger on the table's radio (issue 29): a virtual match with and without the key."""

from __future__ import annotations

from functools import cache

import pytest
from proc_util import forked

from firmware_host.pipeline import Pipeline, replay
from firmware_host.virtual_table import scenarios
from firmware_host.virtual_table.faults import FaultPlan
from firmware_host.virtual_table.hub import HubConfig, build_wire
from firmware_host.virtual_table.signer import NodeSigning
from protocol.signing import DEFAULT_REQUIRE, SignatureCheck

KEY = bytes(range(32, 64))
SEED = 3


@cache
def _match():
    return scenarios.random_match(seed=SEED, minutes=1.0)


def _cue_times() -> list[float]:
    return [e["t_s"] for e in _match().events if e["type"] == "cue_contact"]


def _verdicts(attacks: tuple[tuple[str, float], ...], keyed: bool):
    cfg = HubConfig(seed=SEED, faults=FaultPlan(attacks=attacks), firmware=(1, 2, 0))
    signing = NodeSigning(KEY, DEFAULT_REQUIRE) if keyed else None
    data = b"".join(build_wire(_match(), cfg, signing).chunks)
    pipe = Pipeline(signing=SignatureCheck(KEY, DEFAULT_REQUIRE) if keyed else None)
    return replay(data, pipe=pipe).lines, pipe.decoder.stats()


def test_with_the_key_three_attacks_change_no_verdict_and_each_is_named():
    _, second, _ = _cue_times()
    attacks = (
        ("forge-cue", second + 0.05),
        ("forge-keypad", second + 5.0),
        ("replay-old", second + 8.0),
    )
    plain, plain_stats = _verdicts((), keyed=True)
    attacked, stats = _verdicts(attacks, keyed=True)
    assert attacked == plain
    assert plain_stats.refused == {}
    assert stats.refused == {"cue": {"bad_tag": 1, "replayed": 1}, "keypad": {"bad_tag": 1}}
    assert stats.conflicts == {}  # refused frames never reach the seq window


def test_without_the_key_a_forged_double_hit_is_never_a_silent_foul_18():
    """The forger takes the cue's next seq 20 ms after a real contact: the shot shows foul 18
    until the real cue claims that seq; then a notice names both frames and the verdict is
    overruled (referee, or a foul on the rest with 18 open)."""
    _, second, _ = _cue_times()
    plain, _ = _verdicts((), keyed=False)
    attacked, stats = _verdicts((("forge-cue", second + 0.05),), keyed=False)
    assert stats.conflicts == {"cue": 1}
    forged = [v for v in attacked if v.get("kind") == "verdict" and "18" in v.get("rules", [])]
    assert forged, "the forged contact made no foul 18: the test no longer tries anything"
    shot = forged[0]["shot"]
    final = [v for v in attacked if v.get("kind") == "verdict" and v.get("shot") == shot][-1]
    assert final["overrules"] == shot
    assert "18" not in final["rules"] and "18" in final.get("open", ["18"])
    assert final["verdict"] in ("referee", "foul")
    [notice] = [n for n in attacked if n.get("kind") == "notice" and "one seq" in n["reason"]]
    assert notice["reason"].count("CUE_CONTACT") == 2
    # no shot ends on a foul 18 the plain match did not have
    finals = {v["shot"]: v for v in attacked if v.get("kind") == "verdict"}
    plain_finals = {v["shot"]: v for v in plain if v.get("kind") == "verdict"}
    for n, v in finals.items():
        if "18" in v.get("rules", []):
            assert "18" in plain_finals[n].get("rules", []), n


@pytest.mark.parametrize("kind", ["forge-cue@1x", "forge-cue:3@10", "replay-old"])
def test_a_bad_attack_item_is_refused(kind):
    with pytest.raises(ValueError, match="bad fault"):
        FaultPlan.parse(kind)


def test_the_hub_takes_only_signed_host_frames_once_bit_15_is_set():
    """The virtual hub (firmware 1.2) against the host's command scheduler, frame by frame:
    SETUP_SIGNING unsigned, then every host frame signed with the host's own counter, a
    resend with the same tag; an unsigned one is answered 'bad argument'."""
    from firmware_host.link.command_link import CommandScheduler
    from firmware_host.virtual_table.hub import ACK_BAD_ARGUMENT, ACK_OK, HostCommands
    from protocol.framing import encode_frame, parse_frame

    check = SignatureCheck(KEY, DEFAULT_REQUIRE | 1 << 15)
    link = CommandScheduler(sign=check.sign_host)
    hub = HostCommands(signs=True)
    link.submit("SETUP_SIGNING", check.setup_fields(), now_ns=0)
    [setup] = link.poll(now_ns=0).frames
    assert parse_frame(setup[:-1]).signature is None
    assert hub.receive(parse_frame(setup[:-1]), 0.0)[0]["status"] == ACK_OK
    link.on_ack(0, 0x83, 0, now_ns=1)
    link.submit("PING", {"token": 7}, now_ns=2)
    [ping] = link.poll(now_ns=2).frames
    [again] = link.poll(now_ns=2 + link.ack_timeout_ns).frames  # no ACK: resent
    first, resent = parse_frame(ping[:-1]), parse_frame(again[:-1])
    assert first.signature == resent.signature and first.signature.sig_ctr == 1
    assert hub.receive(first, 0.1)[0]["status"] == ACK_OK
    unsigned = parse_frame(encode_frame("PING", node=0x80, seq=9, token=1)[:-1])
    assert hub.receive(unsigned, 0.2)[0]["status"] == ACK_BAD_ARGUMENT
    assert HostCommands(signs=False).receive(parse_frame(setup[:-1]), 0.0)[0]["status"] == 1


def test_a_key_file_is_made_0600_never_printed_and_refused_when_others_may_read_it(tmp_path):
    import os
    import subprocess
    import sys

    from firmware_host.keys import KeyFileError, read_key_file

    path = tmp_path / "table.key"

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "firmware_host", *args]
        return forked.run(cmd, check=False, capture_output=True, text=True, timeout=120)

    made = cli("keys", "new", str(path))
    assert made.returncode == 0 and "fingerprint" in made.stdout
    assert os.stat(path).st_mode & 0o777 == 0o600
    key = read_key_file(path)
    assert key.hex() not in made.stdout + made.stderr
    again = cli("keys", "new", str(path))
    assert again.returncode == 2 and "never replaced" in again.stderr
    assert read_key_file(path) == key
    path.chmod(0o640)
    with pytest.raises(KeyFileError, match="others may read"):
        read_key_file(path)
    (tmp_path / "short.key").write_text("abcd\n")
    (tmp_path / "short.key").chmod(0o600)
    with pytest.raises(KeyFileError, match="not a key file"):
        read_key_file(tmp_path / "short.key")
