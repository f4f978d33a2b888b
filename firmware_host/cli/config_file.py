"""The daemon's TOML config file (``run --config FILE``, ``config check``): docs/config.md.

A key of the file is an option of ``run``: it names the option's ``dest``,
and its value is checked by that option's own argparse ``type``,
``choices`` or action, so the bounds live in one place (:mod:`.args`).
The checked values become the parser's defaults, so an option given on the
command line overrides the file, and an option in neither has its usual
default.  A key the parser does not have (``[table] id``) brings its own
check.  Every problem is a :class:`ConfigError`: one line naming the file,
the key, the value and what is wrong.

>>> [k.qualified for k in KEYS[:2]]
['link.port', 'link.baud']
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..files import read_small
from .args import RULES_SWITCHES, RULES_THRESHOLDS

SECRET_SHOWN = "***"
MAX_BYTES = 1 << 20  # a config file is a few kB


class ConfigError(Exception):
    """An unusable config file: one line, exit status 2 (EVENTS.md)."""


@dataclass(frozen=True)
class Key:
    """One key of the file: ``[section] name``, stored in the namespace as ``dest``.

    ``check`` is for a key no option carries (it takes the TOML value and
    returns the setting, or raises ``argparse.ArgumentTypeError``); without
    it the option with this ``dest`` checks the value.  ``secret``: shown as
    ``***`` by ``config check`` (``[referee] token``).  ``example``:
    TOML text for ``config example`` where the setting has no default.
    """

    section: str
    name: str
    dest: str
    check: Callable[[Any], Any] | None = None
    help: str = ""
    secret: bool = False
    example: str | None = None

    @property
    def qualified(self) -> str:
        return f"{self.section}.{self.name}"


KEYS: tuple[Key, ...] = (
    Key(
        "link",
        "port",
        "port",
        help="the hub's serial device or a pyserial URL; required (firmware-host ports lists "
        "the devices; a /dev/serial/by-id/ name survives a replug)",
        example='"/dev/serial/by-id/usb-FTDI_FT232R_USB_UART_A10KXYZ-if00-port0"',
    ),
    Key("link", "baud", "baud"),
    Key("rules", "discipline", "discipline"),
    *(Key("rules", dest, dest) for _, dest, _, _ in RULES_THRESHOLDS),
    *(Key("rules", dest, dest) for _, dest, _ in RULES_SWITCHES),
    Key("recording", "dir", "record", example='"recordings/"'),
    Key("recording", "part_mb", "record_part_mb", example="512"),
    Key("recording", "keep_days", "record_keep_days", example="30"),
    Key("recording", "keep_gb", "record_keep_gb", example="20"),
    Key("web", "address", "web", example='"0.0.0.0:8080"'),
    Key("referee", "token", "referee_token", secret=True, example='"change-me-to-a-secret"'),
    Key("service", "status", "status", example='"/var/lib/firmware-host/status.json"'),
    Key("virtual", "scenario", "scenario", example='"double_hit"'),
    Key("virtual", "seed", "seed"),
    Key("virtual", "minutes", "minutes"),
    Key("virtual", "speed", "speed"),
    Key("virtual", "sensors", "sensors"),
    Key("table", "id", "table_id", example='"t1"'),
    Key(
        "signing",
        "key_file",
        "key_file",
        help="the table's key for signed frames (ICD §9; firmware-host keys new; mode 0600): "
        "sent to the hub with SETUP_SIGNING at connect, never printed",
        example='"/etc/firmware-host/table.key"',
    ),
    Key("signing", "require", "require", example='"cue,keypad"'),
    Key("mqtt", "url", "mqtt", example='"mqtts://broker.hall"'),
    Key(
        "mqtt",
        "username",
        "mqtt_username",
        help="the broker user; default: the table id, which the club's ACL needs "
        "(docs/club/mosquitto.acl lets a table's user write only club/<user>/...)",
        example='"t1"',
    ),
    Key("mqtt", "password", "mqtt_password", secret=True, example='"..."'),
    Key("mqtt", "ca", "mqtt_ca", example='"/etc/firmware-host/club-ca.crt"'),
    Key("mqtt", "cert", "mqtt_cert", example='"/etc/firmware-host/t1.crt"'),
    Key("mqtt", "key", "mqtt_key", example='"/etc/firmware-host/t1.key"'),
    Key("mqtt", "spool", "mqtt_spool", example='"/var/lib/firmware-host/mqtt.sqlite"'),
    Key("mqtt", "spool_max", "mqtt_spool_max"),
)


def sections(keys: Iterable[Key] = KEYS) -> dict[str, dict[str, Key]]:
    """``{section: {name: key}}`` in the order of ``keys``."""
    found: dict[str, dict[str, Key]] = {}
    for key in keys:
        found.setdefault(key.section, {})[key.name] = key
    return found


# -- reading -----------------------------------------------------------------------


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return "a date or time"


def toml_value(value: Any) -> str:
    """A setting as TOML writes it: ``"x"``, ``1.5``, ``true``.

    >>> toml_value("a"), toml_value(1.5), toml_value(False)
    ('"a"', '1.5', 'false')
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, str | int | float):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, tuple):  # --web's (host, port), written back as "host:port"
        return json.dumps(":".join(map(str, value)))
    if isinstance(value, dict):
        return "{...}"
    if isinstance(value, list):
        return "[...]"
    return str(value)


def read(path: str) -> dict[str, Any]:
    """The file as TOML; a missing file, one that is not a regular file of at most
    ``MAX_BYTES`` (a FIFO, ``/dev/zero``), non-UTF-8 text, a syntax error or nesting
    deeper than Python's recursion is a ConfigError."""
    try:
        data = read_small(path, MAX_BYTES)
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{path}:{line}: not UTF-8 text (byte {exc.start})") from None
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise ConfigError(f"{path}: TOML nested too deeply to be a config file") from None
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        at = re.search(r"\s*\(at line (\d+), column (\d+)\)$", message)
        if at:
            where = f"{path}:{at[1]}"
            message = f"{message[: at.start()]} (column {at[2]})"
        else:  # "(at end of document)"
            where = f"{path}:{text.count(chr(10)) + 1}"
            message = message.replace(" (at end of document)", " at the end of the file")
        raise ConfigError(f"{where}: TOML syntax error: {message}") from None


def _closest(word: str, choices: Iterable[str]) -> str | None:
    found = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return found[0] if found else None


def _actions(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {a.dest: a for a in parser._actions if a.option_strings}


def _check_option(action: argparse.Action, value: Any) -> Any:
    """The TOML value through the option's own checks: what the command line would give."""
    if action.nargs == 0:  # a switch (--penalty-ball/--no-penalty-ball)
        if not isinstance(value, bool):
            raise argparse.ArgumentTypeError(f"must be true or false, not {_kind(value)}")
        return value
    if action.choices is not None:
        choices = ", ".join(f'"{c}"' for c in action.choices)
        if not isinstance(value, str) or value not in action.choices:
            raise argparse.ArgumentTypeError(f"must be one of {choices}")
        return value
    if action.type is None:
        if not isinstance(value, str):
            raise argparse.ArgumentTypeError(f"must be a string, not {_kind(value)}")
        if not value:
            raise argparse.ArgumentTypeError("must not be empty")
        return value
    if getattr(action.type, "takes_text", False):  # a string with a form (--web HOST:PORT)
        if not isinstance(value, str):
            raise argparse.ArgumentTypeError(f"must be a string, not {_kind(value)}")
        text = value
    elif isinstance(value, bool) or not isinstance(value, int | float):
        raise argparse.ArgumentTypeError(f"must be a number, not {_kind(value)}")
    else:
        text = toml_value(value)
    try:
        return action.type(text)  # type: ignore[misc,operator]
    except argparse.ArgumentTypeError as exc:  # "-1.0: must be >= 0": the value is named already
        message = str(exc).removeprefix(f"{text}: ").removeprefix(f"{text!r}: ")
        raise argparse.ArgumentTypeError(message) from None


def settings(
    document: Mapping[str, Any],
    parser: argparse.ArgumentParser,
    path: str,
    keys: Iterable[Key] = KEYS,
) -> dict[str, Any]:
    """``{dest: value}`` for every key the file sets, each checked; else a ConfigError."""
    known = sections(keys)
    actions = _actions(parser)
    values: dict[str, Any] = {}
    for section, table in document.items():
        if section not in known:
            home = [s for s, names in known.items() if section in names]
            if home and not isinstance(table, dict):
                raise ConfigError(
                    f"{path}: {section} = {toml_value(table)}: a key outside any section "
                    f"(it belongs in [{home[0]}])"
                )
            near = _closest(section, known)
            hint = f" (did you mean [{near}]?)" if near else f" (sections: {', '.join(known)})"
            raise ConfigError(f"{path}: [{section}]: unknown section{hint}")
        if not isinstance(table, dict):
            raise ConfigError(
                f"{path}: {section} = {toml_value(table)}: must be a section [{section}], "
                f"not {_kind(table)}"
            )
        for name, value in table.items():
            key = known[section].get(name)
            if key is None:
                raise ConfigError(
                    f"{path}: [{section}] {name}: unknown key{_hint(name, known, section)}"
                )
            try:
                if key.check is not None:
                    values[key.dest] = key.check(value)
                else:
                    values[key.dest] = _check_option(actions[key.dest], value)
            except argparse.ArgumentTypeError as exc:
                shown = SECRET_SHOWN if key.secret else toml_value(value)
                raise ConfigError(f"{path}: [{section}] {name} = {shown}: {exc}") from None
    return values


def _hint(name: str, known: dict[str, dict[str, Key]], section: str) -> str:
    near = _closest(name, known[section])
    if near:
        return f" (did you mean {near}?)"
    for other, names in known.items():
        if name in names:
            return f" (it belongs in [{other}])"
    return f" (keys of [{section}]: {', '.join(known[section])})"


def load(path: str, parser: argparse.ArgumentParser) -> dict[str, Any]:
    """Read and check ``path`` against ``parser``'s options: ``{dest: value}``."""
    return settings(read(path), parser, path)


# -- writing -----------------------------------------------------------------------


def effective(args: argparse.Namespace, keys: Iterable[Key] = KEYS) -> list[str]:
    """One ``section.key = value`` line per key (file, command line, defaults merged).

    The lines are TOML (dotted keys), so they can be saved as a config file;
    a key with no value is a comment, a secret one is shown as ``***``.
    """
    lines = []
    for key in keys:
        value = getattr(args, key.dest, None)
        if value is None:
            lines.append(f"# {key.qualified} (not set)")
        elif key.secret:
            lines.append(f"{key.qualified} = {SECRET_SHOWN}")
        else:
            lines.append(f"{key.qualified} = {toml_value(value)}")
    return lines


def example(parser: argparse.ArgumentParser, keys: Iterable[Key] = KEYS) -> str:
    """A commented config file with every key: its help, and its default or an example."""
    from .help import plain

    actions = _actions(parser)
    out = [
        "# firmware-host run --config FILE (docs/config.md). Options on the command line",
        "# override this file; a key left out keeps its default. Check: firmware-host config check FILE",
    ]
    for section, names in sections(keys).items():
        out.append(f"\n[{section}]")
        for name, key in names.items():
            action = actions.get(key.dest)
            text = key.help or plain(action.help or "") if action else key.help
            text = text.replace("%(default)s", str(getattr(action, "default", "")))
            if action is not None and action.option_strings:
                text = f"{text} [{action.option_strings[0]}]"
            out.append(f"# {' '.join(text.split())}")
            default = None if action is None else action.default
            if default is None:
                out.append(f"# {name} = {key.example or '...'}")
            else:
                out.append(f"{name} = {toml_value(default)}")
    return "\n".join(out) + "\n"
