"""The result: 12.1 (the break) and 20 (a shot after it) over the events after the cue
ball's first contact: a ball pocketed, or the clause's cushions and crossings, each
finding citing the events it rests on; touches only the tracker's paths allow leave
the foul to the referee."""

from __future__ import annotations

from dataclasses import dataclass

from .config import RulesConfig, SensorSet
from .paths import closest_pass, unreported
from .shot import (
    Event,
    Finding,
    Outcome,
    Shot,
    ball_name,
    is_centre_cross,
    ms_text,
    resting_against,
)
from .stroke import first_contact, played_away


def result_findings(shot: Shot, sensors: SensorSet, config: RulesConfig) -> Outcome:
    """12.1 or item 20 over the shot's events.

    14.2: a shot a new stroke cut short is judged on its events until then; a
    clause already completed makes it legal, but a result foul is not certain
    yet (the balls still rolled), so it is left to the referee.
    """
    out = _result(shot, sensors, config)
    if shot.cut_short and out.satisfied is None:
        out.open += [
            Finding(f.rule, f"{f.reason}, before the next stroke cut the shot short", f.evidence)
            for f in out.fouls
        ]
        out.fouls = []
    return out


def _result(shot: Shot, sensors: SensorSet, config: RulesConfig) -> Outcome:
    item = "12.1" if shot.is_break else "20"
    out = Outcome()
    if not sensors.contact_times:
        # Counted as if legal until the referee rules: the turn then follows the pots.
        out.pocketed = [e.get("ball") for e in shot.events if e["type"] == "pocket"]
        out.open.append(
            Finding(item, "without a ball-contact time the result needs the referee", (shot.t0,))
        )
        return out
    away = played_away(shot, config) if sensors.tracker else set()
    first = first_contact(shot, sensors, config, away)
    if away:
        balls = ", ".join(ball_name(b) for b in sorted(away))
        out.notes.append(
            Finding(
                "19.2 note",
                f"{ball_name(shot.cue_ball)} was played away from {balls} touching it, "
                "which did not move: no collision",
                (shot.t0,),
            )
        )
    if first is None:
        cue = "the cue ball" if shot.cue_ball is None else ball_name(shot.cue_ball)
        passed = None if away or not sensors.tracker else closest_pass(shot, config)
        if passed is not None:
            ball, t, gap = passed
            out.open.append(
                Finding(
                    item,
                    f"no sensor names a contact of {cue}, yet its path came within {gap:.0f} mm "
                    f"of {ball_name(ball)}",
                    (shot.t0, t),
                )
            )
            return out
        why = f" (played away from touching {balls}: 19.2 note)" if away else ""
        out.fouls.append(Finding(item, f"{cue} touched no object ball{why}", (shot.t0,)))
        return out
    i0, ev0 = first
    after = shot.events[i0 + 1 :]
    out.pocketed = [e.get("ball") for e in after if e["type"] == "pocket"]
    if not sensors.tracker:
        pot = next((e for e in after if e["type"] == "pocket"), None)
        if pot is not None:
            out.satisfied = _pot(item, ev0, pot)
        else:
            out.open.append(
                Finding(item, "which ball hit which cushion needs the tracker", (ev0["t_us"],))
            )
        return out
    scan = _BreakScan(shot, ev0) if shot.is_break else _Item20Scan(shot, ev0, config)
    for ev in after:
        if ev["type"] == "pocket":
            out.satisfied = _pot(item, ev0, ev)
        elif not (ev["type"] in ("cushion", "ball_contact") or is_centre_cross(ev)):
            continue
        # certain: false -- a crossing neither the curtain nor the tracker settles (fusion)
        elif ev.get("ball", 0) is None or None in ev.get("balls", ()) or ev.get("certain") is False:
            scan.unknown.append(ev)
        else:
            out.satisfied = scan.feed(ev)
        if out.satisfied is not None:
            return out
    out.satisfied = scan.best()
    if out.satisfied is not None:
        return out
    if scan.unknown:
        out.open.append(
            Finding(item, _unsettled(scan.unknown), tuple(e["t_us"] for e in scan.unknown))
        )
    else:
        failure = scan.failure()
        allowed = _allowed_by_paths(shot, config, ev0, after)
        if allowed is None:
            out.fouls.append(failure)
        else:
            clause, extra = allowed
            said = "; ".join(f"{_describe(e)} at {ms_text(e['t_us'] - shot.t0)}" for e in extra)
            out.open.append(
                Finding(
                    item,
                    f"{failure.reason}, unless {said}: the tracker's paths allow it and no "
                    f"sensor reported it, and {clause.rule} would then hold",
                    (*failure.evidence, *(e["t_us"] for e in extra)),
                )
            )
    return out


def _allowed_by_paths(
    shot: Shot, config: RulesConfig, contact: Event, after: list[Event]
) -> tuple[Finding, list[Event]] | None:
    """The clause that unreported touches (:func:`unreported`) would complete, and those
    of them it needs; None if none would: then the foul stands."""
    extra = unreported(shot, config, int(contact["t_us"]))
    if not extra:
        return None
    scan = _BreakScan(shot, contact) if shot.is_break else _Item20Scan(shot, contact, config)
    told = [e for e in after if e["type"] in ("cushion", "ball_contact") or is_centre_cross(e)]
    found = None
    for ev in sorted(told + extra, key=lambda e: int(e["t_us"])):
        found = scan.feed(ev)
        if found is not None:
            break
    found = found or scan.best()
    if found is None:
        return None
    needed = [e for e in extra if e["t_us"] in found.evidence] or extra
    return found, needed


def _unsettled(unknown: list[Event]) -> str:
    """Why item 20 is left open: events the fusion wrote but could not settle (a foul
    called from their absence could be false)."""
    if not all(e.get("certain") is False for e in unknown):
        return "the tracker lost which ball some events belong to"
    what: list[str] = []
    for e in unknown:
        if e["type"] == "cushion":
            said = (
                f"a touch of cushion {e['cushion']} by {ball_name(e['ball'])} at a pocket's "
                "mouth that the tracker cannot settle"
            )
        else:
            said = "a crossing of the centre line neither the curtain nor the tracker can settle"
        if said not in what:
            what.append(said)
    return "; ".join(what)


def _pot(item: str, contact: Event, pot: Event) -> Finding:
    return Finding(
        f"{item}(1)",
        f"{ball_name(pot.get('ball'))} was pocketed in pocket {pot['pocket']} after the first contact",
        (contact["t_us"], pot["t_us"]),
    )


class _Scan:
    """Shared bookkeeping of the events after the first contact."""

    def __init__(self, shot: Shot, contact: Event) -> None:
        self.shot = shot
        self.contact = contact
        self.unknown: list[Event] = []
        self.seen: list[str] = []

    def note(self, ev: Event) -> None:
        said = _describe(ev)
        if said:
            self.seen.append(said)

    def best(self) -> Finding | None:
        """A clause that holds once every event is read (item 20 stops at the first)."""
        return None

    def history(self) -> str:
        """What happened, as a referee recounts it: what came before the first contact
        does not count (note 1), so it is told apart."""
        a, b = self.contact["balls"]
        if b == self.shot.cue_ball:  # the pair is unordered; the cue ball is the one moving
            a, b = b, a
        head = f"after {ball_name(a)} hit {ball_name(b)}"
        told = f"{head}, {', '.join(self.seen)}" if self.seen else f"{head} nothing followed"
        before = []
        for ev in self.shot.events:
            if ev is self.contact:
                break
            before.append(_describe(ev))
        early = ", ".join(filter(None, before))
        return f"before the first contact {early}; {told}" if early else told


def _describe(ev: Event) -> str | None:
    if ev["type"] == "cushion":
        return f"{ball_name(ev['ball'])} hit cushion {ev['cushion']}"
    if ev["type"] == "ball_contact":  # an unordered pair: which one moved is not known here
        a, b = ev["balls"]
        return f"{ball_name(a)} and {ball_name(b)} touched"
    if is_centre_cross(ev):
        return f"{ball_name(ev['ball'])} crossed the centre line"
    return None


class _BreakScan(_Scan):
    """12.1 (2) and (3): distinct object balls at cushions, an object ball over the centre line.

    12.1 sets no order among its conditions, so the whole shot is read and the
    first condition of the text that holds is named (a pot is found by the caller).
    """

    def __init__(self, shot: Shot, contact: Event) -> None:
        super().__init__(shot, contact)
        self.cushioned: dict[int, int] = {}
        self.crossed: Event | None = None

    def feed(self, ev: Event) -> Finding | None:
        self.note(ev)
        cue = self.shot.cue_ball
        if ev["type"] == "cushion" and ev["ball"] != cue:
            self.cushioned.setdefault(ev["ball"], ev["t_us"])
        elif is_centre_cross(ev) and ev["ball"] != cue and self.crossed is None:
            self.crossed = ev
        return None

    def best(self) -> Finding | None:
        """(2) before (3); each names the first balls that met it."""
        needed = 3 if len(self.cushioned) >= 3 else 2
        firsts = list(self.cushioned.items())[:needed]
        balls = ", ".join(str(b) for b, _ in firsts)
        times = (self.contact["t_us"], *(t for _, t in firsts))
        if len(self.cushioned) >= 3:
            return Finding("12.1(2)", f"object balls {balls} touched cushions", times)
        if len(self.cushioned) >= 2 and self.crossed is not None:
            return Finding(
                "12.1(3)",
                f"object balls {balls} touched cushions and {ball_name(self.crossed['ball'])} "
                "crossed the centre line",
                (*times, self.crossed["t_us"]),
            )
        return None

    def failure(self) -> Finding:
        return Finding(
            "12.1",
            f"{self.history()}: no pot, too few object balls at cushions",
            (self.contact["t_us"],),
        )


@dataclass
class _Note2:
    """Note 2: the cue ball met ``ball`` resting against ``cushions`` at ``first``."""

    ball: int
    cushions: set[int]
    first: int
    second: int | None = None  # a second, separate collision of the same pair


@dataclass
class _Drive:
    driver: int
    cushions: dict[int, int]  # the driver's cushions before the contact -> t_us
    crossed: int | None  # when the driver crossed the centre line before the contact
    t_us: int


class _Item20Scan(_Scan):
    """Item 20 (2)-(4) and note 2, in the order note 1 demands: each clause's
    first part must come before its second, and both after the first contact."""

    def __init__(self, shot: Shot, contact: Event, config: RulesConfig) -> None:
        super().__init__(shot, contact)
        self.cushions: dict[int, dict[int, int]] = {}
        self.crossed: dict[int, int] = {}
        self.drives: dict[int, list[_Drive]] = {}
        self.resting = resting_against(shot, config)
        a, b = contact["balls"]
        self.cue = shot.cue_ball if shot.cue_ball is not None else a
        # Note 2: each ball resting against a cushion that the cue ball met, first or later.
        self.note2: dict[int, _Note2] = {}
        self.moved: set[int | None] = {shot.cue_ball}
        self._meets_resting(b if a == self.cue else a, int(contact["t_us"]))
        self.moved |= {a, b}
        self.note2_miss: Finding | None = None

    def feed(self, ev: Event) -> Finding | None:
        self.note(ev)
        t = ev["t_us"]
        if ev["type"] == "cushion":
            return self._cushion(ev["ball"], ev["cushion"], t)
        if is_centre_cross(ev):
            return self._cross(ev["ball"], t)
        if ev["type"] == "ball_contact":
            a, b = ev["balls"]
            return self._contact(a, b, t)
        return None

    def _cushion(self, x: int, c: int, t: int) -> Finding | None:
        """Note 2 first: the cue ball sent on by the ball it hit is that clause, not (2)(b)."""
        if x == self.cue:
            found = self._note2(f"to cushion {c}", t, c)
            if found is not None:
                return found
        return self._cushion_clause(x, c, t)

    def _cushion_clause(self, x: int, c: int, t: int) -> Finding | None:
        mine = self.cushions.setdefault(x, {})
        found = None
        other = _other(mine, c)
        if other is not None:
            found = Finding(
                "20(2)(a)", f"{ball_name(x)} hit cushion {other} then cushion {c}", (mine[other], t)
            )
        elif x in self.crossed:
            found = Finding(
                "20(3)(a)",
                f"{ball_name(x)} crossed the centre line then hit cushion {c}",
                (self.crossed[x], t),
            )
        for drive in self.drives.get(x, ()):
            if found:
                break
            other = _other(drive.cushions, c)
            if other is not None:
                found = Finding(
                    "20(2)(b)",
                    f"{ball_name(drive.driver)} hit cushion {other} then drove {ball_name(x)} to cushion {c}",
                    (drive.cushions[other], drive.t_us, t),
                )
            elif drive.crossed is not None:
                found = Finding(
                    "20(3)(b)",
                    f"{ball_name(drive.driver)} crossed the centre line then drove {ball_name(x)} to cushion {c}",
                    (drive.crossed, drive.t_us, t),
                )
        mine.setdefault(c, t)
        return found

    def _cross(self, x: int, t: int) -> Finding | None:
        if x == self.cue:
            found = self._note2("across the centre line", t)
            if found is not None:
                return found
        found = None
        mine = self.cushions.get(x, {})
        if mine:
            c = next(iter(mine))
            found = Finding(
                "20(4)(a)",
                f"{ball_name(x)} hit cushion {c} then crossed the centre line",
                (mine[c], t),
            )
        for drive in self.drives.get(x, ()):
            if found is None and drive.cushions:
                c = next(iter(drive.cushions))
                found = Finding(
                    "20(4)(b)",
                    f"{ball_name(drive.driver)} hit cushion {c} then rolled {ball_name(x)} across the centre line",
                    (drive.cushions[c], drive.t_us, t),
                )
        self.crossed.setdefault(x, t)
        return found

    def _contact(self, a: int, b: int, t: int) -> Finding | None:
        found = None
        for d, y in ((a, b), (b, a)):
            rest = self.resting.get(y) if y not in self.moved else None
            mine = self.cushions.get(d, {})
            if found is None and rest:
                c1 = next((c for c in mine if rest - {c}), None)
                if c1 is not None:
                    c2 = min(rest - {c1})
                    found = Finding(
                        "20(2)(c)",
                        f"{ball_name(d)} hit cushion {c1} then {ball_name(y)} resting against cushion {c2}",
                        (mine[c1], t),
                    )
                elif d in self.crossed:
                    found = Finding(
                        "20(3)(c)",
                        f"{ball_name(d)} crossed the centre line then hit {ball_name(y)} "
                        f"resting against cushion {min(rest)}",
                        (self.crossed[d], t),
                    )
            self.drives.setdefault(y, []).append(_Drive(d, dict(mine), self.crossed.get(d), t))
        if self.cue in (a, b):
            self._meets_resting(b if a == self.cue else a, t)
        self.moved |= {a, b}
        return found

    def _meets_resting(self, y: int | None, t: int) -> None:
        """The cue ball meets y: a first collision with a ball resting against a cushion
        (note 2), or a second, separate one ("два отдельных соударения"): a contact of
        the same pair at the same t_us is the same collision told twice."""
        seen = self.note2.get(y)  # type: ignore[arg-type]
        if seen is not None:
            if seen.second is None and t != seen.first:
                seen.second = t
        elif y in self.resting and y not in self.moved:
            self.note2[y] = _Note2(y, self.resting[y], t)

    def _note2(self, where: str, t: int, cushion: int | None = None) -> Finding | None:
        """The cue ball reached a cushion (other than the one the ball it met rests
        against) or crossed the centre line, after meeting a resting ball."""
        for met in self.note2.values():
            if cushion in met.cushions:
                continue
            target = met.ball
            head = (
                f"{ball_name(self.cue)} hit {ball_name(target)} resting against cushion "
                f"{min(met.cushions)} and was sent back {where}"
            )
            if met.second is not None:
                return Finding(
                    "20 note 2",
                    f"{head} with two separate collisions",
                    (met.first, met.second, t),
                )
            if target in self.shot.declared or None in self.shot.declared:
                return Finding(
                    "20 note 2", f"{head}, declared frozen before the shot", (met.first, t)
                )
            if self.note2_miss is None:
                self.note2_miss = Finding(
                    "20",
                    f"{head} in a single collision and {ball_name(target)} was not declared frozen",
                    (met.first, t),
                )
        return None

    def failure(self) -> Finding:
        if self.note2_miss is not None:
            return self.note2_miss
        return Finding(
            "20", f"{self.history()} — not in an order item 20 accepts", (self.contact["t_us"],)
        )


def _other(cushions: dict[int, int], c: int) -> int | None:
    return next((k for k in cushions if k != c), None)
