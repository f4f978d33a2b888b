"""Help for a newcomer, checked for every subcommand (and every nested one, like `hil add`).

Each row is one command's parser as `firmware-host COMMAND --help` shows it:
plain text without reST markup, an upper-case name for each argument, every
option's default in its help, an example in the epilog, and `-v` accepted
after the command.  An error names the command it belongs to.
"""

from __future__ import annotations

import argparse
import re

import pytest

from firmware_host.cli.main import build_parser, main, named_command

MARKUP = re.compile(r"``|:[a-z]+:`")


def commands() -> dict[str, tuple[list[str], argparse.ArgumentParser]]:
    """Every leaf command: its words on the command line, and its parser."""
    found: dict[str, tuple[list[str], argparse.ArgumentParser]] = {}

    def walk(words: list[str], parser: argparse.ArgumentParser) -> None:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if words and not subs:
            found[" ".join(words)] = (words, parser)
        for sub in subs:
            for name, nested in sub.choices.items():
                walk([*words, name], nested)

    walk([], build_parser())
    return found


COMMANDS = commands()


def minimal(words: list[str], parser: argparse.ArgumentParser) -> list[str]:
    """The command with a value for each positional argument: enough to parse."""
    return [*words, *("3" for a in parser._actions if not a.option_strings and a.required)]


def options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.option_strings and a.dest not in ("help", "verbose")]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_is_plain_text_with_names_defaults_and_an_example(name: str) -> None:
    parser = COMMANDS[name][1]
    text = parser.format_help()
    assert not MARKUP.search(text), MARKUP.search(text)
    for action in parser._actions:
        if not action.option_strings:
            assert action.metavar and action.metavar.isupper(), f"{action.dest}: {action.metavar}"
    formatter = parser._get_formatter()
    for action in options(parser):
        shown = formatter._expand_help(action) if action.help else ""
        assert shown, f"{action.option_strings[0]} has no help"
        if action.default not in (None, False, "", argparse.SUPPRESS):
            default = action.default
            values = (
                {str(default), f"{default:g}"} if isinstance(default, float) else {str(default)}
            )
            assert "default" in shown and any(v in shown for v in values), (
                f"{action.option_strings[0]}: default {default!r} not in {shown!r}"
            )
    example = text.partition("\nexample:\n")[2]
    assert re.search(rf"^  firmware-host {name}\b", example, re.MULTILINE), text


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_verbose_is_accepted_before_and_after_the_command(name: str) -> None:
    words, parser = COMMANDS[name]
    argv = minimal(words, parser)
    assert build_parser().parse_args([*argv, "-v"]).verbose == 1
    assert build_parser().parse_args(["-v", *argv]).verbose == 1
    assert build_parser().parse_args(argv).verbose == 0


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        *(
            (minimal(*COMMANDS[name]) + ["--bogus"], f"firmware-host {name}: unrecognized arguments: --bogus")
            for name in sorted(COMMANDS)
        ),
        (["run", "--scenario", "bogus"], "firmware-host run: --scenario bogus: unknown (one of: "),
        (["rack", "0"], "firmware-host rack: argument N: 0: must be from 1 to 15"),
        (["frobnicate"], "firmware-host: argument COMMAND: invalid choice: 'frobnicate'"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else None,
)  # fmt: skip
def test_an_error_is_one_line_naming_the_command(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(says) and err.count("\n") == 1, err


@pytest.mark.parametrize("name", sorted({words[0] for words, _ in COMMANDS.values()}))
def test_a_command_line_naming_its_command_parses_as_with_every_command(name: str) -> None:
    """`firmware-host events …` builds the events parser alone (docs/speed.md): the same
    help, the same parse, and -v before the command still counted."""
    full = build_parser()._subparsers._group_actions[0].choices[name]  # type: ignore[union-attr]
    alone = build_parser(named_command([name]))
    assert list(alone._subparsers._group_actions[0].choices) == [name]  # type: ignore[union-attr]
    assert alone._subparsers._group_actions[0].choices[name].format_help() == full.format_help()  # type: ignore[union-attr]
    for words, parser in (v for v in COMMANDS.values() if v[0][0] == name):
        argv = ["-v", *minimal(words, parser)]
        assert named_command(argv) == name
        assert vars(alone.parse_args(argv)) == vars(build_parser().parse_args(argv))


@pytest.mark.parametrize(
    "argv", [["--help", "events"], ["--version"], ["evnts", "x"], ["-vx", "events"], []]
)
def test_help_version_and_a_misspelt_command_get_every_command(argv: list[str]) -> None:
    assert named_command(argv) is None
