"""Issue 15: the daemon's TOML config file (docs/config.md).

What a user relies on: every key accepts what its option accepts and
refuses the rest with one line naming the file, the key, the value and the
fault (exit status 2); a misspelt key or section is an error that suggests
the right name; an option on the command line beats the file; `config
example` writes a file `config check` accepts.  In-process through
`firmware_host.cli.main.main`, plus one run as a user would, for the traceback.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import pytest
from proc_util import forked

from firmware_host.cli import config_file
from firmware_host.cli.args import rules_config
from firmware_host.cli.main import _parse, build_parser, main

ROOT = Path(__file__).resolve().parents[2]

# section, key, a good value (TOML), the line config check prints for it,
# a bad value (TOML), what the error says about it.
KEYS = [
    ("link", "port", '"/dev/ttyUSB0"', 'link.port = "/dev/ttyUSB0"', "5", "must be a string, not a number"),
    ("link", "baud", "115200", "link.baud = 115200", "10", "must be from 50 to 12000000"),
    ("rules", "discipline", '"combined"', 'rules.discipline = "combined"', '"snooker"', 'must be one of "free", "combined"'),
    ("rules", "near_gap_mm", "3", "rules.near_gap_mm = 3.0", "-1", "must be >= 0 and <= 1000"),
    ("rules", "near_gap_band_mm", "0.5", "rules.near_gap_band_mm = 0.5", "-0.1", "must be >= 0 and <= 1000"),
    ("rules", "near_contact_us", "2000", "rules.near_contact_us = 2000", "1.5", "'1.5' is not an integer"),
    ("rules", "frozen_gap_mm", "2.5", "rules.frozen_gap_mm = 2.5", "nan", "must be a finite number >= 0 and <= 34"),
    ("rules", "rack_tolerance_mm", "20", "rules.rack_tolerance_mm = 20.0", "1001", "must be >= 0 and <= 1000"),
    ("rules", "path_tolerance_mm", "1", "rules.path_tolerance_mm = 1.0", '"2"', "must be a number, not a string"),
    ("rules", "follow_tolerance_mm", "6", "rules.follow_tolerance_mm = 6.0", "inf", "must be a finite number"),
    ("rules", "stroke_window_us", "20000", "rules.stroke_window_us = 20000", "0", "must be from 1 to 1000000"),
    ("rules", "stroke_angle_band_deg", "4.5", "rules.stroke_angle_band_deg = 4.5", "46", "must be >= 0 and <= 45"),
    ("rules", "penalty_ball", "false", "rules.penalty_ball = false", "0", "must be true or false, not a number"),
    ("rules", "hand_moves_after_foul", "false", "rules.hand_moves_after_foul = false", '"no"', "must be true or false, not a string"),
    ("recording", "dir", '"recordings/"', 'recording.dir = "recordings/"', '""', "must not be empty"),
    ("recording", "part_mb", "512", "recording.part_mb = 512.0", "0.5", "must be >= 1"),
    ("recording", "keep_days", "30", "recording.keep_days = 30.0", "0", "must be > 0"),
    ("recording", "keep_gb", "20", "recording.keep_gb = 20.0", "-1", "must be > 0"),
    ("web", "address", '"127.0.0.1:8080"', 'web.address = "127.0.0.1:8080"', '"eight"', "not [HOST:]PORT"),
    ("referee", "token", '"table-7-secret"', "referee.token = ***", '"short"', "must be at least 6 printable characters"),
    ("service", "status", '"/var/lib/fh/status.json"', 'service.status = "/var/lib/fh/status.json"', "1", "must be a string, not a number"),
    ("virtual", "scenario", '"double_hit"', 'virtual.scenario = "double_hit"', "3", "must be a string, not a number"),
    ("virtual", "seed", "7", "virtual.seed = 7", "-1", "must be from 0 to 4294967295"),
    ("virtual", "minutes", "5", "virtual.minutes = 5.0", "0", "must be > 0"),
    ("virtual", "speed", "1", "virtual.speed = 1.0", "0.001", "must be >= 0.01 and <= 1000"),
    ("virtual", "sensors", '"minimum"', 'virtual.sensors = "minimum"', '"all"', 'must be one of "minimum", "middle", "full"'),
    ("table", "id", '"club-1"', 'table.id = "club-1"', '""', "must be 1 to 64 printable characters"),
    ("table", "id", '"club-1"', 'table.id = "club-1"', "true", "must be a string, not true/false"),
    ("signing", "key_file", '"t.key"', 'signing.key_file = "t.key"', "1", "must be a string, not a number"),
    ("signing", "require", '"cue,keypad"', 'signing.require = "cue,keypad"', "true", "must be a string, not true/false"),
    ("mqtt", "url", '"mqtt://hall:1884"', 'mqtt.url = "mqtt://hall:1884"', '"http://hall"', "not mqtt://HOST[:PORT]"),
    ("mqtt", "username", '"table-1"', 'mqtt.username = "table-1"', "1", "must be a string, not a number"),
    ("mqtt", "password", '"pw"', "mqtt.password = ***", '""', "must not be empty"),
    ("mqtt", "ca", '"ca.crt"', 'mqtt.ca = "ca.crt"', "true", "must be a string, not true/false"),
    ("mqtt", "cert", '"t.crt"', 'mqtt.cert = "t.crt"', "1", "must be a string, not a number"),
    ("mqtt", "key", '"t.key"', 'mqtt.key = "t.key"', "1", "must be a string, not a number"),
    ("mqtt", "spool", '"q.sqlite"', 'mqtt.spool = "q.sqlite"', "1", "must be a string, not a number"),
    ("mqtt", "spool_max", "5000", "mqtt.spool_max = 5000", "10", "must be from 100 to 100000000"),
]  # fmt: skip


def check(
    tmp_path: Path, text: str | bytes, capsys: pytest.CaptureFixture[str], *options: str
) -> tuple[int, str, str]:
    """`firmware-host config check FILE [options]`: (status, stdout, stderr).

    A file that names no port is checked with ``--virtual`` (its other keys are
    what these tests are about); a config for a real table needs one (issue 24,
    tests/service/test_real_table.py).
    """
    path = tmp_path / "table.toml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    raw = text if isinstance(text, bytes) else text.encode()
    virtual = () if re.search(rb"^port\s*=", raw, re.MULTILINE) else ("--virtual",)
    status = main(["config", "check", str(path), *virtual, *options])
    out, err = capsys.readouterr()
    return status, out, err


def refused(status: int, err: str, *says: str) -> None:
    """Exit status 2 and one line on stderr that says all of this."""
    assert status == 2, err
    assert err.count("\n") == 1 and err.startswith("firmware-host config check: "), err
    for part in says:
        assert part in err, err


def test_the_table_covers_every_key() -> None:
    assert {f"{s}.{k}" for s, k, *_ in KEYS} == {k.qualified for k in config_file.KEYS}


@pytest.mark.parametrize(
    ("section", "key", "good", "shown", "bad", "says"), KEYS, ids=[f"{r[0]}.{r[1]}={r[4]}" for r in KEYS]
)  # fmt: skip
def test_every_key_takes_a_good_value_and_names_a_bad_one(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    section: str,
    key: str,
    good: str,
    shown: str,
    bad: str,
    says: str,
) -> None:
    status, out, err = check(tmp_path, f"[{section}]\n{key} = {good}\n", capsys)
    assert status == 0 and err == "", err
    assert shown in out.splitlines()
    status, out, err = check(tmp_path, f"[{section}]\n{key} = {bad}\n", capsys)
    named = "***" if shown.endswith("***") else bad  # a secret is never shown, even when bad
    refused(status, err, "table.toml: ", f"[{section}] {key} = {named}: {says}")
    assert out == ""


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[rules]\nnear_gap = 3\n", "[rules] near_gap: unknown key (did you mean near_gap_mm?)"),
        ("[rules]\nfrozen_gpa_mm = 3\n", "[rules] frozen_gpa_mm: unknown key (did you mean frozen_gap_mm?)"),
        ("[rule]\nnear_gap_mm = 3\n", "[rule]: unknown section (did you mean [rules]?)"),
        ("[broker]\nurl = 'x'\n", "[broker]: unknown section (sections: link, rules, recording, web, referee, service, virtual, table, signing, mqtt)"),
        ("[rules]\nport = 'x'\n", "[rules] port: unknown key (it belongs in [link])"),
        ('port = "/dev/ttyUSB0"\n', 'port = "/dev/ttyUSB0": a key outside any section (it belongs in [link])'),
        ("rules = 3\n", "rules = 3: must be a section [rules], not a number"),
        ("[rules.extra]\nx = 1\n", "[rules] extra: unknown key"),
    ],
    ids=["misspelt", "transposed", "section", "no-such-section", "wrong-section", "top-level", "not-a-table", "nested"],
)  # fmt: skip
def test_a_name_the_file_does_not_have_is_an_error_with_a_suggestion(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, says: str
) -> None:
    status, _, err = check(tmp_path, text, capsys)
    refused(status, err, f"table.toml: {says}")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[link]\nbaud = 9600\n[rules\n", "table.toml:3: TOML syntax error: "),
        ("[link]\nbaud = \n", "table.toml:2: TOML syntax error: Invalid value"),
        ('[link]\nport = "/dev/tty', "table.toml:2: TOML syntax error: Unterminated string at the end of the file"),
        ("[link]\nbaud = 9600\nbaud = 9600\n", "table.toml:3: TOML syntax error: "),
        (b"[table]\nid = '\xff'\n", "table.toml:2: not UTF-8 text"),
    ],
    ids=["table-header", "no-value", "unterminated", "duplicate-key", "not-utf8"],
)  # fmt: skip
def test_a_syntax_error_names_the_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str | bytes, says: str
) -> None:
    status, _, err = check(tmp_path, text, capsys)
    refused(status, err, says)


def test_a_missing_file_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["config", "check", str(tmp_path / "none.toml")])
    refused(status, capsys.readouterr().err, "none.toml: No such file or directory")


def test_an_option_on_the_command_line_overrides_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = "[rules]\nnear_gap_mm = 7\npenalty_ball = true\n[link]\nbaud = 115200\n"
    status, out, _ = check(tmp_path, text, capsys, "--near-gap", "3", "--no-penalty-ball")
    lines = out.splitlines()
    assert status == 0
    assert "rules.near_gap_mm = 3.0" in lines and "rules.penalty_ball = false" in lines
    assert "link.baud = 115200" in lines  # from the file: not overridden
    assert "rules.frozen_gap_mm = 1.5" in lines  # in neither: the default
    # an override is checked as it is without a file
    status, _, err = check(tmp_path, text, capsys, "--near-gap", "-3")
    refused(status, err, "argument --near-gap: -3: must be >= 0")


def test_run_reads_the_file_and_its_options_win(tmp_path: Path) -> None:
    path = tmp_path / "table.toml"
    path.write_text(
        '[link]\nport = "socket://rig:7000"\nbaud = 115200\n'
        '[rules]\ndiscipline = "combined"\nnear_gap_mm = 7\n[table]\nid = "club-1"\n'
    )
    args = _parse(build_parser(), ["run", "--config", str(path), "--baud", "9600"])
    assert (args.port, args.baud, args.table_id) == ("socket://rig:7000", 9600, "club-1")
    rules = rules_config(args)
    assert (rules.discipline, rules.near_gap_mm, rules.frozen_gap_mm) == ("combined", 7.0, 1.5)
    plain = _parse(build_parser(), ["run"])
    assert (plain.port, plain.baud, plain.table_id, plain.near_gap_mm) == (None, 921600, None, 10.0)


def test_run_with_a_bad_file_stops_before_starting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "table.toml"
    path.write_text("[rules]\nnear_gap_mm = -1\n")
    assert main(["run", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err == f"firmware-host run: {path}: [rules] near_gap_mm = -1: must be >= 0 and <= 1000\n"


def test_the_example_is_accepted_and_sets_every_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["config", "example", "--port", "/dev/ttyUSB0"]) == 0
    example = capsys.readouterr().out
    assert example.startswith("#") and "[rules]\n" in example
    assert "\n[link]\n" in example and '\nport = "/dev/ttyUSB0"\n' in example
    status, out, err = check(tmp_path, example, capsys)
    assert status == 0 and err == "", err
    assert main(["config", "check", str(tmp_path / "table.toml")]) == 0
    defaults = capsys.readouterr().out
    empty_status, empty, _ = check(tmp_path, '[link]\nport = "/dev/ttyUSB0"\n', capsys)
    assert empty_status == 0 and empty == defaults == out  # the example states the defaults
    assert main(["config", "example"]) == 0
    example = capsys.readouterr().out  # no port: it is commented out, with an example
    for key in config_file.KEYS:  # every key is in it, set or commented out with an example
        assert f"\n{key.name} = " in example or f"\n# {key.name} = " in example, key.qualified


def test_the_effective_settings_can_be_saved_as_a_config_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, first, _ = check(tmp_path, '[rules]\nnear_gap_mm = 4\n[table]\nid = "t"\n', capsys)
    assert status == 0 and "# link.port (not set)" in first.splitlines()
    status, again, _ = check(tmp_path, first, capsys)
    assert status == 0 and again == first


def test_a_secret_key_is_never_printed() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--token")
    keys = (config_file.Key("web", "token", "token", secret=True),)
    values = config_file.settings({"web": {"token": "hunter2"}}, parser, "f.toml", keys)
    assert config_file.effective(argparse.Namespace(**values), keys) == ["web.token = ***"]
    with pytest.raises(config_file.ConfigError) as bad:
        config_file.settings({"web": {"token": 12345}}, parser, "f.toml", keys)
    assert str(bad.value) == "f.toml: [web] token = ***: must be a string, not a number"


def test_as_a_user_runs_it_one_line_and_status_2(tmp_path: Path) -> None:
    path = tmp_path / "table.toml"
    path.write_text("[rules]\nnear_gapmm = 3\n")
    done = forked.run(
        [sys.executable, "-m", "firmware_host", "config", "check", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        f"firmware-host config check: {path}: [rules] near_gapmm: unknown key "
        "(did you mean near_gap_mm?)\n"
    )
