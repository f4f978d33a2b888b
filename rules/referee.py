"""The match referee: ordered events in, verdicts and notices out (EVENTS.md).

One :class:`Referee` per match.  The daemon calls :meth:`Referee.feed` with
every ordered event as it is released and :meth:`Referee.finish` at the end
of the input; ``judge`` and ``replay`` do the same from a file, so a verdict
never depends on how the events arrived.

>>> ref = Referee()
>>> ref.feed({"t_us": 0, "type": "boot", "nodes": ["hub", "rails", "pockets", "cue"]})
[]
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from protocol.geometry import DEFAULT_TABLE, Table

from . import catalogue  # the event types, as the handlers read them
from .catalogue import NEEDED_KEYS  # the keys the engine needs beyond t_us and type
from .config import SENSOR_NODES, RulesConfig, SensorSet
from .paths import moved_findings
from .rack import MAX_BALLS, RackCheck, check_rack
from .result import result_findings
from .shot import Event, Finding, Shot, ball_name, positions_of
from .stroke import early_fouls, stroke_findings

Line = dict[str, Any]


def missing_keys(event: Event) -> list[str]:
    """The keys an event lacks for the engine to use it (t_us and type first)."""
    need = ("t_us", "type", *NEEDED_KEYS.get(event.get("type"), ()))  # type: ignore[arg-type]
    missing = [key for key in need if key not in event]
    if (
        not missing
        and event["type"] == "ball_contact"
        and not (isinstance(event["balls"], list) and len(event["balls"]) == 2)
    ):
        missing.append("two balls")
    return missing


TWELVE_TWO = {
    "accept": "12.2(1): the opponent accepts the position and plays on",
    "offender_continues": "12.2(2): the opponent accepts the position, the offender plays on",
    "rerack_i_break": "12.2(3): re-rack, the opponent breaks",
    "rerack_offender_breaks": "12.2(4): re-rack, the offender breaks again",
}


def other(player: int) -> int:
    return 3 - player


@dataclass
class MatchState:
    """Items 12.2 and 13 as far as the rules reach: frames, breaks, turns, balls."""

    frame: int = 1
    to_play: int = 1
    breakers: dict[int, int] = field(default_factory=dict)  # frame -> who broke it (last break)
    pocketed: dict[int, list[int | None]] = field(
        default_factory=lambda: {1: [], 2: []}
    )  # this frame
    penalties: dict[int, int] = field(default_factory=lambda: {1: 0, 2: 0})  # balls gained by fouls
    break_pending: str | None = "boot"  # "boot": a break if it looks like one; "keypad": a break
    awaiting_choice: int | None = None  # the offender of an illegal break, until 12.2 is chosen
    rack_n: int = MAX_BALLS
    warned_11_3: int | None = None  # t_us of the 11.3 warning
    hand_moves_ok: bool = False  # after a foul, until the next shot

    @staticmethod
    def frame_breaker(frame: int) -> int:
        """Item 13: player 1 breaks the odd frames, player 2 the even ones."""
        return 1 if frame % 2 else 2

    def balls_off(self) -> int:
        return sum(len(b) for b in self.pocketed.values()) + sum(self.penalties.values())


@dataclass(frozen=True)
class _Decided:
    """The last verdict and the match state before it, for REFEREE_FOUL / REFEREE_CLEAR."""

    line: Line
    shot: int | None  # the shot the verdict was about, None outside any shot
    player: int
    is_break: bool
    pocketed: list[int | None] | None  # None: a verdict outside any shot
    before: MatchState


class Referee:
    """Referees one match from its ordered events.

    ``feed(event)`` returns the verdict and notice lines the event decides
    (often none); ``finish()`` judges a shot the input left open.  The sensor
    set comes from the ``boot`` event's ``nodes`` (all eight until one
    arrives) minus nodes a ``node_status`` reports not online.
    """

    def __init__(self, table: Table = DEFAULT_TABLE, config: RulesConfig = RulesConfig()) -> None:  # noqa: B008 - frozen
        self.table = table
        self.config = config
        self.state = MatchState()
        self._nodes: frozenset[str] = frozenset(SENSOR_NODES)
        self._down: set[str] = set()
        self.shot: Shot | None = None
        self._declared: set[int | str | None] = set()  # DECLARE_FROZEN args, as shot.declared
        self._early_tips: list[Event] = []
        self._interrupted: Event | None = None  # the end a new tip contact cut short (14.2)
        self._estimated_end: Event | None = None  # the last shot_end, if only an estimate
        self._played = False
        self._last: _Decided | None = None
        self._rack_notice = ""
        #: items whose fouls the running (or next) shot leaves to the referee: a node whose
        #: frames decide them had its seq claimed twice (a forger, :meth:`doubt`)
        self._doubted: set[str] = set()

    @property
    def sensors(self) -> SensorSet:
        return SensorSet(self._nodes - self._down)

    def feed(self, event: Event) -> list[Line]:
        missing = missing_keys(event)
        if missing:  # errors as values: the live path never dies of one bad event
            return [
                _notice(
                    event, "", f"{event.get('type')} event without {', '.join(missing)}: ignored"
                )
            ]
        handler: Callable[[Event], list[Line]] | None = getattr(self, f"_on_{event['type']}", None)
        return handler(event) if handler else []

    def finish(self) -> list[Line]:
        if self.shot is None:
            return []
        return self._close(self.shot, " (the input ended before every ball stopped)")

    # ------------------------------------------------------------ sensors and table

    def _on_boot(self, ev: catalogue.BootEvent) -> list[Line]:
        out = self.finish()
        self._nodes = frozenset(ev.get("nodes") or SENSOR_NODES)
        self._down.clear()
        size = ev.get("table")
        if size:  # null or {}: the default table
            self.table = Table(
                float(size["length_mm"]), float(size["width_mm"]), float(size["ball_mm"])
            )
        if self.state.break_pending is None:
            self.state.break_pending = "boot"
        return out

    def _on_node_status(self, ev: catalogue.NodeStatusEvent) -> list[Line]:
        node = ev.get("node")
        name = str(
            SENSOR_NODES[node] if isinstance(node, int) and 0 <= node < len(SENSOR_NODES) else node
        )
        (self._down.discard if ev.get("status") == "online" else self._down.add)(name)
        return []

    # ------------------------------------------------------------ a shot

    def _on_shot_start(self, ev: catalogue.ShotStartEvent) -> list[Line]:
        out = []
        if self.shot is not None:  # no shot_end: the new tip contact interrupted it
            self._interrupted = ev | {"certain": self.sensors.tracker}
            self.shot.cut_short = True
            out += self._close(self.shot)
        elif self._estimated_end is not None and self._estimated_end["t_us"] == ev["t_us"]:
            # No tracker: the fusion ended the last shot at this tip contact, its own end
            # estimate not reached yet; whether every ball had stopped is unknown.
            self._interrupted = self._estimated_end
        self._estimated_end = None
        st = self.state
        pos = positions_of(ev.get("balls"))
        seen = self.sensors.tracker and bool(pos)
        check = self._check_rack(pos)
        is_break = st.break_pending == "keypad"
        if st.break_pending == "boot":
            # After a boot the layout tells a break from a frame in progress, where it can.
            # Mid-frame it does not: a soft illegal break accepted under 12.2 (1)/(2) still
            # looks racked.
            is_break = not seen or check.looks_racked
            if is_break and self._played:
                self._new_frame()
        if is_break:
            if seen:
                out += self._rack_notice_for(ev, check)
            st.breakers[st.frame] = st.to_play
        shot = Shot(ev.get("shot"), st.to_play, is_break, ev, table=self.table)
        shot.declared = {
            self._nearest(pos, ev.get("cue_ball")) if b is None else b for b in self._declared
        }
        shot.events += [e for e in self._early_tips if e.get("shot") == ev.get("shot")]
        if self._interrupted is not None:
            shot_14_2(shot, self._interrupted, self.sensors)
        cue_xy = pos.get(0)
        if (
            is_break
            and st.warned_11_3 is not None
            and cue_xy
            and not self.table.in_house(cue_xy[0])
        ):
            shot.fouls.append(
                Finding(
                    "11.3",
                    f"the coloured ball was played from outside the house (x = {cue_xy[0]:.0f} mm) "
                    "after the warning",
                    (st.warned_11_3, ev["t_us"]),
                )
            )
        self.shot, self._played = shot, True
        self._declared, self._early_tips, self._interrupted = set(), [], None
        st.break_pending, st.warned_11_3, st.hand_moves_ok = None, None, False
        return out

    def _nearest(self, pos: dict[int, tuple[float, float]], cue: int | None) -> int | None:
        """DECLARE_FROZEN 255: the ball nearest the cue ball, if the tracker says where."""
        if cue not in pos:
            return None
        others = [b for b in pos if b != cue]
        return min(others, key=lambda b: math.dist(pos[b], pos[cue])) if others else None

    def _collect(self, ev: catalogue.InShotEvent) -> list[Line]:
        # A tip contact of the next shot may come before that shot's shot_start at the same t_us.
        next_tip = ev["type"] == "cue_contact" and (
            self.shot is None or ev.get("shot") not in (None, self.shot.number)
        )
        if next_tip:
            self._early_tips.append(ev)
        elif self.shot is not None:
            self.shot.events.append(ev)
            if ev["type"] in ("cue_contact", "ball_contact"):
                return self._early(self.shot, ev)
        return []

    def _early(self, shot: Shot, ev: Event) -> list[Line]:
        """A double hit or push lights the lamp now; the shot's verdict repeats it."""
        fresh = [
            f
            for f in early_fouls(shot, self.sensors, self.config)
            if f.rule not in shot.announced and _item(f.rule) not in self._doubted
        ]
        if not fresh:
            return []
        shot.announced.update(f.rule for f in fresh)
        return [_shot_line(shot, ev["t_us"]) | _lines("foul", fresh) | {"early": True}]

    _on_cue_contact = _on_ball_contact = _on_cushion = _on_pocket = _on_line_cross = _collect

    def _on_shot_end(self, ev: catalogue.ShotEndEvent) -> list[Line]:
        if self.shot is None:
            return []
        self.shot.end = ev
        if ev.get("interrupted"):
            self._interrupted = ev
            self.shot.cut_short = True
        elif ev.get("certain") is False:
            self._estimated_end = ev
        return self._close(self.shot)

    def _close(self, shot: Shot, note: str = "") -> list[Line]:
        self.shot = None
        stroke = stroke_findings(shot, self.sensors, self.config)
        result = result_findings(shot, self.sensors, self.config)
        moved = moved_findings(shot, self.config)
        fouls = shot.fouls + moved.fouls + stroke.fouls + result.fouls
        still_open = shot.open + moved.open + stroke.open + result.open
        if self._doubted:
            doubted = [f for f in fouls if _item(f.rule) in self._doubted]
            fouls = [f for f in fouls if f not in doubted]
            still_open += [replace(f, reason=f"{f.reason}{DOUBT_NOTE}") for f in doubted]
            self._doubted = set()
        line = _shot_line(shot, shot.t_us)
        if fouls:
            line |= _lines("foul", fouls)
            if still_open:
                line["open"] = _rules(still_open)
        elif still_open:
            line |= _lines("referee", still_open)
        else:
            assert result.satisfied is not None
            # the reason also names the clauses that excused the stroke (19.2(1), (2), note)
            line |= _lines("legal", [*stroke.notes, *result.notes, result.satisfied]) | {
                "rules": [],
                "satisfied": result.satisfied.rule,
            }
        line["reason"] += note
        self._last = _Decided(
            line,
            shot.number,
            shot.player,
            shot.is_break,
            result.pocketed,
            copy.deepcopy(self.state),
        )
        if line["verdict"] == "foul":
            self._foul(shot.player, shot.is_break)
        else:
            self._credit(shot.player, result.pocketed)
        return [line]

    def _credit(self, player: int, pocketed: list[int | None]) -> None:
        """A legal shot (or a referee one, until the referee says otherwise): pots stay, turn follows them."""
        st = self.state
        st.pocketed[player] += pocketed
        st.to_play = player if pocketed else other(player)

    def _foul(self, player: int, was_break: bool) -> None:
        st = self.state
        st.to_play = other(player)
        if self.config.penalty_ball:
            st.penalties[other(player)] += 1
        st.hand_moves_ok = self.config.hand_moves_after_foul
        if was_break:
            st.awaiting_choice = player

    # ------------------------------------------------------------ between shots

    def _on_ball_moved(self, ev: catalogue.BallMovedEvent) -> list[Line]:
        reason = f"{ball_name(ev.get('ball'))} was touched and moved"
        if self.shot is not None:
            self.shot.moved.append(ev)  # judged at the shot's end, against the balls' paths
            return []
        st = self.state
        if st.break_pending or st.awaiting_choice or st.hand_moves_ok:
            return []  # racking (11.5), or the penalty ball being taken
        player = st.to_play
        line = _between(
            "foul", player, ev, [Finding("17", reason + " between shots", (ev["t_us"],))]
        )
        self._last = _Decided(line, None, player, False, None, copy.deepcopy(st))
        self._foul(player, False)
        return [line]

    def _on_rest(self, ev: catalogue.RestEvent) -> list[Line]:
        """Before a break: the rack check (8) and the 11.3 warning.  After a boot a break is
        expected only if the balls look racked (else the host restarted mid-frame)."""
        st = self.state
        if not st.break_pending or not self.sensors.tracker:
            return []
        pos = positions_of(ev.get("balls"))
        check = self._check_rack(pos)
        if st.break_pending == "boot" and not check.looks_racked:
            return []
        out = self._rack_notice_for(ev, check)
        cue_xy = pos.get(0)
        if cue_xy is None or self.table.in_house(cue_xy[0]):
            st.warned_11_3 = None
        elif st.warned_11_3 is None:
            st.warned_11_3 = ev["t_us"]
            out.append(
                _notice(
                    ev,
                    "11.3",
                    f"the coloured ball is outside the house (x = {cue_xy[0]:.0f} mm, "
                    f"house line at {self.table.house_line_x:.0f} mm)",
                )
            )
        return out

    def _check_rack(self, pos: dict[int, tuple[float, float]]) -> RackCheck:
        """Item 8 against the rack expected: after NEW_FRAME 15 balls, after a 12.2
        re-rack the balls left; after a boot the count is not known (a frame may be
        re-racked with an incomplete pyramid, the note to 8.2), so any count racked
        correctly for itself is no misplacement."""
        expected = None if self.state.break_pending == "boot" else self.state.rack_n
        return check_rack(pos, expected, self.table, self.config.rack_tolerance_mm)

    def _rack_notice_for(self, ev: Event, check: RackCheck) -> list[Line]:
        text = check.describe()
        if check.ok or text == self._rack_notice:
            return []
        self._rack_notice = text
        return [_notice(ev, "8", text)]

    def _new_frame(self) -> None:
        st = self.state
        st.frame += 1
        st.to_play = st.frame_breaker(st.frame)
        st.pocketed, st.penalties = {1: [], 2: []}, {1: 0, 2: 0}
        st.awaiting_choice, st.rack_n, st.warned_11_3 = None, MAX_BALLS, None
        st.break_pending = "keypad"
        self._rack_notice = ""
        self._last = None  # a new frame settles the last one's verdicts

    def _on_keypad(self, ev: catalogue.KeypadEvent) -> list[Line]:
        key, arg = ev.get("key"), ev.get("arg")
        st = self.state
        if key in TWELVE_TWO:
            return self._twelve_two(ev, key)
        if key == "new_frame":
            self._new_frame()
            return [_notice(ev, "13", f"frame {st.frame}: player {st.to_play} breaks")]
        if key == "declare_frozen":
            if self.shot is not None:
                return [
                    _notice(
                        ev,
                        "20",
                        "a ball declared frozen after the stroke does not count (20 note 2)",
                    )
                ]
            self._declared.add(None if arg == 255 else arg)
            return []
        if key == "referee_foul":
            return self._referee_foul(ev, str(arg))
        if key == "referee_clear":
            return self._referee_clear(ev)
        return []

    def _twelve_two(self, ev: catalogue.KeypadEvent, key: str) -> list[Line]:
        st = self.state
        offender = st.awaiting_choice
        if offender is None:
            return [
                _notice(
                    ev, "12.2", f"{TWELVE_TWO[key]} — but no illegal break awaits a choice; ignored"
                )
            ]
        st.awaiting_choice, self._last = None, None  # the choice settles the break's verdict
        player = (
            offender if key in ("offender_continues", "rerack_offender_breaks") else other(offender)
        )
        st.to_play = player
        text = f"{TWELVE_TWO[key]}; player {player} plays"
        if key.startswith("rerack"):
            st.break_pending = "keypad"
            st.rack_n = MAX_BALLS - st.balls_off()
            self._rack_notice = ""
            text += f"; re-rack {st.rack_n} balls (incomplete pyramid, item 8)"
        return [_notice(ev, "12.2", text)]

    def _referee_foul(self, ev: catalogue.KeypadEvent, rule: str) -> list[Line]:
        """A foul no sensor sees: in a shot, one more of its fouls; after it, that verdict becomes a foul."""
        finding = Finding(rule, f"the referee called a foul under item {rule}", (ev["t_us"],))
        if self.shot is not None:
            self.shot.fouls.append(finding)
            return []
        last = self._last
        if last is None:
            last = _Decided({}, None, self.state.to_play, False, None, copy.deepcopy(self.state))
        line = _between("foul", last.player, ev, [finding])
        self.state = copy.deepcopy(last.before)
        self._foul(last.player, last.is_break)
        self._last = replace(last, line=line)
        return [line]

    def doubt(self, node: str, t_us: int, frames: str) -> list[Line]:
        """Two frames of ``node`` claimed one ``seq`` with different content: one was forged
        (issue 29; ``frames`` describes both).  Evidence before verdicts: the fouls that
        rest on that node's items are the referee's -- in the last verdict (overruled: to
        ``referee`` if nothing else made it a foul, the match going on as if it were legal
        until the referee rules; else a foul on the rest, those items ``open``) and in the
        shot running now or next.  A notice says why, whatever it changes."""
        items = DOUBTED_ITEMS.get(node, ())
        here = {"t_us": t_us}
        lines = [_notice(here, "", f"{node}: one seq, two frames ({frames}): a forged frame?")]
        self._doubted |= set(items)
        last = self._last
        if last is None or last.line.get("verdict") != "foul":
            return lines
        rules = last.line.get("rules", [])
        if not any(_item(rule) in items for rule in rules):
            return lines
        kept = [rule for rule in rules if _item(rule) not in items]
        line = last.line | {
            "t_us": t_us,
            "reason": f"{last.line['reason']}{DOUBT_NOTE}",
            "overrules": last.shot,
        }
        if kept:  # still a foul, on what no forger touched; the rest is the referee's
            line |= {"rules": kept, "open": [r for r in rules if r not in kept]}
        else:
            self.state = copy.deepcopy(last.before)
            if last.pocketed is not None:
                self._credit(last.player, last.pocketed)
            line["verdict"] = "referee"
        self._last = replace(last, line=line)
        return [*lines, line]

    def _referee_clear(self, ev: catalogue.KeypadEvent) -> list[Line]:
        """Overrule the last verdict: the match goes on as if it had been legal."""
        last = self._last
        if last is None:
            return [_notice(ev, "", "referee clear with no verdict to overrule; ignored")]
        self.state = copy.deepcopy(last.before)
        if last.pocketed is not None:
            self._credit(last.player, last.pocketed)
        was = ", ".join(last.line["rules"]) or last.line.get("satisfied")
        shot = last.shot
        what = "the call" if shot is None else f"shot {shot}"
        line = _between("legal", last.player, ev, []) | {
            "reason": f"the referee cleared {what} (was {last.line['verdict']}: {was})",
            "evidence": [ev["t_us"]],
            "satisfied": None,
            "overrules": shot,
        }
        self._last = replace(last, line=line)
        return [line]


def shot_14_2(shot: Shot, end: Event, sensors: SensorSet) -> None:
    """14.2 on the shot whose stroke cut the previous one short.  Only a tracker
    sees every ball stop; without one the end is an estimate, so it is the referee's."""
    times = (int(end["t_us"]), shot.t0)
    if sensors.tracker and end.get("certain", True):
        shot.fouls.append(
            Finding(
                "14.2", "the tip struck before every ball of the previous shot had stopped", times
            )
        )
    else:
        shot.open.append(
            Finding(
                "14.2",
                "the tip struck before the previous shot's estimated end; without a tracker "
                "nobody saw whether every ball had stopped",
                times,
            )
        )


def _rule_order(rule: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", rule))


#: The items a node's frames decide: a seq of that node claimed twice leaves them to the
#: referee (``Referee.doubt``).  The cue: the double hit and the push; the keypad: the
#: fouls only a referee calls.
DOUBTED_ITEMS: dict[str, tuple[str, ...]] = {"cue": ("18", "19"), "keypad": ("15", "16", "17")}
DOUBT_NOTE = (
    " (rests on a frame whose seq another frame claimed: a forged frame? the referee decides)"
)


def _item(rule: str) -> str:
    """The rules item a clause belongs to: ``19.2(1)`` -> ``19``."""
    return rule.split(".")[0].split("(")[0]


def _rules(findings: list[Finding]) -> list[str]:
    """The rules of the findings, each once, in the order of the rules text."""
    return sorted(dict.fromkeys(f.rule for f in findings), key=_rule_order)


def _lines(verdict: str, findings: list[Finding]) -> Line:
    return {
        "verdict": verdict,
        "rules": _rules(findings),
        "reason": "; ".join(f.text for f in sorted(findings, key=lambda f: _rule_order(f.rule))),
        "evidence": sorted({t for f in findings for t in f.evidence}),
    }


def _shot_line(shot: Shot, t_us: int) -> Line:
    return {
        "kind": "verdict",
        "shot": shot.number,
        "player": shot.player,
        "t_us": t_us,
        "break": shot.is_break,
    }


def _between(verdict: str, player: int, ev: Event, findings: list[Finding]) -> Line:
    """A verdict outside any shot: a ball touched between shots, a referee call."""
    return {
        "kind": "verdict",
        "shot": None,
        "player": player,
        "t_us": ev["t_us"],
        "break": False,
    } | _lines(verdict, findings)


def _notice(ev: Event, rule: str, reason: str) -> Line:
    return {
        "kind": "notice",
        "t_us": ev.get("t_us"),
        "rules": [rule] if rule else [],
        "reason": reason,
    }
