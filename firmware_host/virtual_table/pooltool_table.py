"""A second physics for the virtual table: pooltool's event-based engine behind ``Table2D``.

Why: the project's fusion and rules were tuned on the virtual table's own
physics; an engine written by others (pooltool-billiards 0.3.3: sliding,
rolling and spinning with spin transfer, its own ball-ball and cushion
models) finds what that tuning hides (issue 28: a break's burst of contacts,
a frozen cluster's struck ball).  The engine plays each stroke to rest; its
events and each ball's piecewise-parabolic history become the same
``events`` and ``segments`` the sensor model and the truth judge read, so a
match built on it goes through the ICD's sensor model unchanged.

Optional: ``pip install -e '.[pooltool]'`` (0.6.0 pins a panda3d build the
package index lacks; 0.3.3 runs headless).  Coordinates: pooltool's table is
long along its y axis, so ours are its rotated by 90° (x = its y,
y = W - its x), which keeps spin's handedness.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from protocol.geometry import DEFAULT_TABLE, Table

from .physics import (
    DEFAULT_CONFIG,
    EV_BALL,
    EV_CUSHION,
    EV_IMPULSE,
    EV_POCKET,
    REST,
    Impulse,
    PhysicsConfig,
    RawEvent,
    Table2D,
)
from .physics_truth import Timeline

# pooltool's motion states (pooltool.constants): stationary, spinning, sliding, rolling, pocketed
PT_SPINNING, PT_POCKETED = 1, 4
# a stroke exactly along an axis makes pooltool 0.3.3 divide by zero (a cushion parallel to the
# motion): strokes that close are turned this far
AXIS_NUDGE_RAD = 1e-6


def _pooltool() -> Any:
    try:
        import pooltool
    except ImportError as exc:  # the optional extra
        raise SystemExit(
            "the second physics needs pooltool-billiards 0.3.3: pip install -e '.[pooltool]'"
        ) from exc
    return pooltool


class PooltoolTable(Table2D):
    """``Table2D`` whose strokes are played by pooltool; placing and removing balls by hand,
    the geometry (pocket mouths for aiming) and the records are the virtual table's."""

    def __init__(
        self, table: Table = DEFAULT_TABLE, config: PhysicsConfig = DEFAULT_CONFIG
    ) -> None:
        super().__init__(table, config)
        pt = _pooltool()
        from pooltool.objects.table.specs import PocketTableSpecs

        self._pt = pt
        specs = PocketTableSpecs(
            l=table.length_mm / 1000,
            w=table.width_mm / 1000,
            corner_pocket_width=table.corner_mm / 1000,
            side_pocket_width=table.middle_mm / 1000,
        )
        self._pt_table = pt.Table.from_table_specs(specs)
        self._spin = np.zeros((len(self.p), 3))  # rad/s, pooltool's axes, set by a stroke

    # ------------------------------------------------------------ the frame change
    def _to_pt(self, x: float, y: float) -> tuple[float, float]:
        return (self.table.width_mm - y) / 1000, x / 1000

    def _from_pt(self, px: float, py: float) -> tuple[float, float]:
        return py * 1000, self.table.width_mm - px * 1000

    # ------------------------------------------------------------ outside actions
    def apply(self, imp: Impulse) -> None:
        """A stroke or a nudge: the ball's velocity and spin, played at the next run."""
        self.run_until(imp.t_s)
        i = imp.ball
        v = np.add(self.v[i], imp.v) if imp.add else np.asarray(imp.v, dtype=float)
        if min(abs(v[0]), abs(v[1])) < 1e-9 * max(abs(v[0]), abs(v[1]), 1e-300):
            c, s = math.cos(AXIS_NUDGE_RAD), math.sin(AXIS_NUDGE_RAD)
            v = np.array([c * v[0] - s * v[1], s * v[0] + c * v[1]])
        self.v[i] = v
        # our roll velocity s (s == v rolls) as spin about the ball's centre, pooltool's frame:
        # rolling along (vx, vy) spins about (-vy, vx) / R; vectors rotate as positions do
        r_m = self.table.ball_mm / 2000
        sx, sy = np.asarray(imp.s, dtype=float) / 1000
        wx, wy = -sy / r_m, sx / r_m
        self._spin[i] = (-wy, wx, imp.wz)
        self.phase[i] = 1
        speed = float(np.hypot(*v)) / 1000
        self.events.append(RawEvent(self.t, EV_IMPULSE, i, -1, speed, imp))
        self._record([i])

    def moving(self) -> np.ndarray:
        return self.present & (self.phase != REST)

    def run_until(self, t_end: float = math.inf) -> None:
        """Play the stroke set by :meth:`apply` to rest (pooltool has no mid-run stop: a
        later ``t_end`` waits after it), or let time pass on a table at rest."""
        if self.moving().any():
            self._play()
        if not math.isinf(t_end):
            if t_end < self.t:
                raise ValueError(f"time runs backwards: {t_end} < {self.t}")
            self.t = t_end

    # ------------------------------------------------------------ one stroke
    def _play(self) -> None:
        pt = self._pt
        r_m = self.table.ball_mm / 2000
        balls = {}
        for b in np.flatnonzero(self.present):
            ball = pt.Ball.create(str(b), xy=self._to_pt(*self.p[b]), R=r_m)
            vx, vy = self.v[b] / 1000
            ball.state.rvw[1] = [-vy, vx, 0.0]
            ball.state.rvw[2] = self._spin[b]
            ball.state.s = 2 if self.phase[b] != REST else 0
            balls[str(b)] = ball
        moving = [k for k, b in balls.items() if b.state.s]
        system = pt.System(
            cue=pt.Cue(cue_ball_id=moving[0]), table=self._pt_table.copy(), balls=balls
        )
        pt.simulate(system, inplace=True)
        t0 = self.t
        self._history(system, t0)
        self._events(system, t0)
        for key, ball in system.balls.items():
            b = int(key)
            final = ball.history[-1] if len(ball.history) else ball.state
            self.p[b] = self._from_pt(final.rvw[0][0], final.rvw[0][1])
            if final.s == PT_POCKETED:
                self.present[b] = False
        self.v[:] = 0.0
        self.s[:] = 0.0
        self.wz[:] = 0.0
        self._spin[:] = 0.0
        self.phase[:] = REST
        self.t = t0 + float(system.t)
        self._update_motion()
        self._record(range(len(self.p)))

    def _history(self, system: Any, t0: float) -> None:
        """Each ball's states at pooltool's events as parabolic segments (constant
        acceleration between events: pooltool's sliding and rolling are exactly that)."""
        for key, ball in system.balls.items():
            b = int(key)
            states = list(ball.history)
            for k, state in enumerate(states):
                t = t0 + float(state.t)
                x, y = self._from_pt(state.rvw[0][0], state.rvw[0][1])
                vx, vy = state.rvw[1][1] * 1000, -state.rvw[1][0] * 1000
                ax = ay = 0.0
                if k + 1 < len(states) and state.s not in (0, PT_SPINNING, PT_POCKETED):
                    dt = float(states[k + 1].t - state.t)
                    if dt > 0:
                        x1, y1 = self._from_pt(states[k + 1].rvw[0][0], states[k + 1].rvw[0][1])
                        ax = 2 * (x1 - x - vx * dt) / (dt * dt)
                        ay = 2 * (y1 - y - vy * dt) / (dt * dt)
                if state.s in (0, PT_SPINNING, PT_POCKETED):
                    vx = vy = 0.0
                bits = 1 if state.s in (2, 3) else (2 if state.s == PT_SPINNING else 0)
                present = state.s != PT_POCKETED
                self.segments.add(
                    b, t, np.array([x, y]), np.array([vx, vy]), np.array([ax, ay]), bits, present
                )

    def _events(self, system: Any, t0: float) -> None:
        """pooltool's collisions as the virtual table's records: ball-ball with the closing
        speed, a cushion (its piece from where the ball is) with the normal speed, a pocket."""
        table = self.table
        for ev in system.events:
            kind = str(ev.event_type.value)
            t = t0 + float(ev.time)
            if kind == "ball_ball":
                a, b = ev.agents[0], ev.agents[1]
                i, j = int(a.id), int(b.id)
                ra, rb = a.initial.state.rvw, b.initial.state.rvw
                n = rb[0][:2] - ra[0][:2]
                n = n / max(float(np.hypot(*n)), 1e-12)
                closing = float((ra[1][:2] - rb[1][:2]) @ n)
                self.events.append(RawEvent(t, EV_BALL, i, j, max(closing, 0.0)))
            elif kind in ("ball_linear_cushion", "ball_circular_cushion"):
                agent = ev.agents[0]
                i = int(agent.id)
                rvw = agent.initial.state.rvw
                x, y = self._from_pt(rvw[0][0], rvw[0][1])
                pieces = [c for c in range(6) if table.on_piece(c, x)]
                piece = min(pieces, key=lambda c: abs(table.cushion_gap(c, x, y)))
                vx, vy = rvw[1][1], -rvw[1][0]
                normal = abs(vx) if piece in (0, 3) else abs(vy)
                self.events.append(RawEvent(t, EV_CUSHION, i, piece, float(normal)))
            elif kind == "ball_pocket":
                agent = ev.agents[0]
                i = int(agent.id)
                rvw = agent.initial.state.rvw
                x, y = self._from_pt(rvw[0][0], rvw[0][1])
                pocket = min(range(6), key=lambda k: math.dist((x, y), table.pocket_xy(k)))
                speed = float(np.hypot(rvw[1][0], rvw[1][1]))
                self.events.append(RawEvent(t, EV_POCKET, i, pocket, speed))


class PooltoolTimeline(Timeline):
    """A :class:`Timeline` played on pooltool (:class:`PooltoolTable`)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.sim = PooltoolTable(self.table, self.config)
