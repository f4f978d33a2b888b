"""Add a recording to a corpus: the capture, and a draft expectation a person reviews.

A lab's recording has no ground truth, so its draft expectation is what the
pipeline says today (:func:`firmware_host.pipeline.replay`): a person must
check every shot against what happened at the table before committing it,
or the corpus only pins today's behaviour down, mistakes included.

A full-set recording can also stand in for the smaller sets
(``--sensors middle,minimum``): the frames of the nodes a set lacks are
removed (HELLO's ``nodes_present`` says so too), and the expectation is
derived from the full set's verdicts and events by RULES.md's sensor table
(:func:`hil_tests.make_corpus.expected_verdicts`), exactly as the generated
corpus derives its own.  The rules engine is not asked for those.

>>> written = add(Path("lab/break.bin"), Path("hil_tests/corpus"), ["full", "middle"])  # doctest: +SKIP
"""

from __future__ import annotations

import shutil
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from firmware_host.virtual_table.mutate import join, msg_type, node, seal, split
from firmware_host.virtual_table.sensors import SENSOR_SETS
from protocol.catalogue import BY_NAME

from .make_corpus import dump, expected_verdicts
from .verdicts import Line, decided, final_verdicts

EXPECT_SUFFIX = ".expect.json"
_HELLO = BY_NAME["HELLO"].msg_type
_NODES_PRESENT = slice(-6, -4)  # HELLO's last field, just before the CRC (ICD §3)

CHECKLIST = """\
Before committing, check every shot of {names} against what happened at the table:
  * one verdict per shot, in order, and no shot missing (a shot the pipeline did not
    see is missing here too);
  * each verdict and its rules; for a legal shot, the clause it satisfied;
  * "referee" only where the sensor set cannot decide (docs/hil.md);
  * the derived middle/minimum verdicts follow RULES.md's sensor table from the
    full set's verdicts: if a full verdict is wrong, fix it and run `hil add` again.
Then run `pytest hil_tests --hil-corpus {corpus}` and commit the .bin and .expect.json together.
"""


class AddError(ValueError):
    """The capture cannot be added (no HELLO, a set it cannot stand in for, a file in the way)."""


@dataclass(frozen=True)
class Added:
    capture: Path
    expectation: Path
    verdicts: int


def sensor_set(bodies: list[bytes]) -> str:
    """The sensor set the first HELLO announces."""
    for body in bodies:
        if len(body) > 6 and msg_type(body) == _HELLO:
            present = int.from_bytes(body[_NODES_PRESENT], "little")
            for name, nodes in SENSOR_SETS.items():
                if present == sum(1 << n for n in nodes):
                    return name
            raise AddError(f"HELLO announces nodes {present:#06x}, which is no known sensor set")
    raise AddError("no HELLO in the capture: its sensor set is unknown")


def narrowed(bodies: list[bytes], sensors: str) -> bytes:
    """The capture as ``sensors`` would have sent it: other nodes' frames gone, HELLO says so."""
    keep = SENSOR_SETS[sensors]
    present = struct.pack("<H", sum(1 << n for n in keep))
    out = []
    for body in bodies:
        if node(body) not in keep:
            continue
        if msg_type(body) == _HELLO:
            body = seal(body[: _NODES_PRESENT.start] + present + body[_NODES_PRESENT.stop :])
        out.append(body)
    return join(out)


def _truth(data: bytes) -> tuple[list[Line], list[Line]]:
    """A replay's final verdicts, and its events and verdicts in time order (the derivation's truth)."""
    from firmware_host.pipeline import replay

    result = replay(data)
    verdicts = final_verdicts(result.lines)
    timeline = sorted(result.events + verdicts, key=lambda x: (x["t_us"], "kind" in x))
    return [decided(v) for v in verdicts], timeline


def add(
    capture: Path, corpus: Path, sensors: list[str] | None = None, force: bool = False
) -> list[Added]:
    """Write ``NAME.SET.bin`` and ``NAME.SET.expect.json`` into ``corpus`` for every set asked.

    ``sensors``: the sets to write; the capture's own set when None.  A set
    other than the capture's own needs a full-set capture to derive from.
    """
    data = capture.read_bytes()
    bodies = split(data)
    own = sensor_set(bodies)
    wanted = sensors or [own]
    for name in wanted:
        if name not in SENSOR_SETS:
            raise AddError(f"{name}: no such sensor set (one of: {', '.join(SENSOR_SETS)})")
        if name != own and own != "full":
            raise AddError(f"a {own}-set capture cannot stand in for the {name} set; record full")
    stem = capture.name.removesuffix(".bin").removesuffix(f".{own}")
    targets = {name: corpus / f"{stem}.{name}.bin" for name in wanted}
    for path in targets.values():
        for existing in (path, path.with_name(path.name.removesuffix(".bin") + EXPECT_SUFFIX)):
            if existing.exists() and not force:
                raise AddError(f"{existing}: exists (--force replaces it)")
    own_verdicts, timeline = _truth(data)
    corpus.mkdir(parents=True, exist_ok=True)
    added = []
    for name, path in targets.items():
        if name == own:
            if path.resolve() != capture.resolve():
                shutil.copyfile(capture, path)
            verdicts = own_verdicts
        else:
            path.write_bytes(narrowed(bodies, name))
            verdicts = expected_verdicts(timeline, name)
        added.append(_write(path, name, own, capture.name, verdicts))
    return added


def _write(path: Path, sensors: str, own: str, source: str, verdicts: list[Line]) -> Added:
    how = "replay" if sensors == own else f"derived from the {own} set's replay (RULES.md's table)"
    expectation: dict[str, Any] = {
        "capture": path.name,
        "sensors": sensors,
        "recorded": source,
        "verdicts_from": how,
        "verdicts": verdicts,
    }
    out = path.with_name(path.name.removesuffix(".bin") + EXPECT_SUFFIX)
    out.write_text(dump(expectation), encoding="utf-8")
    return Added(path, out, len(verdicts))


def checklist(added: list[Added], corpus: Path) -> str:
    """What a person must check before committing (the draft is today's pipeline, not truth)."""
    names = ", ".join(a.expectation.name for a in added)
    return CHECKLIST.format(names=names, corpus=corpus)
