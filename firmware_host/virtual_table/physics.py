"""Event-driven 2-D physics of a Russian pyramid table.

Why event-driven: the sensor model stamps every impact with the time of a
real clock, so an impact must happen at its exact time, not at the next
tick of a fixed step.  Between events every ball follows a closed-form
parabola (constant acceleration), so the time of the next event is the
first root of a polynomial (quadratic for a line, quartic for a pair of
balls or a ball and a pocket jaw), found by isolating the roots of its
derivatives and bisecting the monotone pieces.  The pair search is the hot
loop and runs in numba.

Units inside: millimetres, seconds, mm/s.  Ball state: centre ``p``,
velocity ``v``, ``s`` the velocity the ball's rolling spin would give it
(``s == v`` is rolling without slip; ``s == 0`` a stun), and ``wz`` the spin
about the vertical (rad/s) that keeps a stopped ball "moving" (item 14.1).
Friction: a sliding ball decelerates at ``mu_slide * g`` against its slip,
which closes the slip at 7/2 of that rate (solid sphere), so a ball struck
without spin rolls after ``2 v / (7 mu g)`` at 5/7 of its speed; a rolling
ball decelerates at ``mu_roll * g``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

import numba
import numpy as np

from protocol.geometry import DEFAULT_TABLE, Table

from .truth import N_BALLS

G_MM_S2 = 9810.0
EPS_V = 1e-7  # mm/s: below this a velocity or slip is zero
MIN_CLOSING = 1.0  # mm/s: the least parting speed of a contact

# raw event kinds of the engine
EV_BALL, EV_CUSHION, EV_JAW, EV_POCKET, EV_ROLL, EV_STOP, EV_SPIN_STOP, EV_IMPULSE = range(1, 9)

# ball phases
REST, SLIDING, ROLLING = 0, 1, 2


@dataclass(frozen=True)
class PhysicsConfig:
    """Material constants; the defaults are the issue's figures."""

    mass_kg: float = 0.285
    mu_slide: float = 0.2
    mu_roll: float = 0.01
    spin_decel_rad_s2: float = 10.9  # decay of spin about the vertical
    e_ball: float = 0.93
    e_cushion: float = 0.55
    corner_mm: float = DEFAULT_TABLE.corner_mm  # opening between the jaws of a corner pocket
    middle_mm: float = DEFAULT_TABLE.middle_mm  # opening between the jaws of a middle pocket
    freeze_mps: float = 0.02  # rebound slower than this leaves the ball against the cushion
    max_events: int = 200_000  # a shot with more events is a numerical runaway


DEFAULT_CONFIG = PhysicsConfig()


@dataclass(frozen=True)
class Geometry:
    """The table as arrays the kernels read: cushion lines, jaws, pocket mouths."""

    table: Table
    radius: float
    # cushion c: centre coordinate `axis` reaches `limit` moving in direction `sign`,
    # valid while the other coordinate lies in [lo, hi]
    cush_axis: np.ndarray
    cush_limit: np.ndarray
    cush_sign: np.ndarray
    cush_lo: np.ndarray
    cush_hi: np.ndarray
    jaw_xy: np.ndarray  # (12, 2) the cushion-nose ends at the pockets
    jaw_cushion: np.ndarray  # (12,) the cushion piece each jaw ends
    mouth_a: np.ndarray  # (6, 2) jaw points of each pocket
    mouth_b: np.ndarray
    mouth_n: np.ndarray  # (6, 2) unit normal pointing out of the table

    def cushions(self) -> Cushions:
        """The cushion lines as the kernels take them."""
        return Cushions(self.cush_axis, self.cush_limit, self.cush_sign, self.cush_lo, self.cush_hi)

    def pockets(self) -> Pockets:
        """The jaws and mouths as the kernels take them."""
        return Pockets(self.jaw_xy, self.mouth_a, self.mouth_b, self.mouth_n)

    @classmethod
    def of(cls, table: Table, config: PhysicsConfig) -> Geometry:
        L, W, R = table.length_mm, table.width_mm, table.ball_mm / 2
        a = config.corner_mm / math.sqrt(2.0)  # corner jaws sit a from the corner on each nose
        m = config.middle_mm / 2
        front, back = (a, W - a), (a, W - a)
        lfront, lback = (a, L / 2 - m), (L / 2 + m, L - a)
        cush = [  # axis, limit, sign, lo, hi -- in cushion order 0..5 (ICD §6)
            (0, R, -1, *front),
            (1, R, -1, *lfront),
            (1, R, -1, *lback),
            (0, L - R, 1, *back),
            (1, W - R, 1, *lback),
            (1, W - R, 1, *lfront),
        ]
        mouths = [  # (jaw a, cushion of a), (jaw b, cushion of b), per pocket 0..5
            (((0, a), 0), ((a, 0), 1)),
            (((L / 2 - m, 0), 1), ((L / 2 + m, 0), 2)),
            (((L - a, 0), 2), ((L, a), 3)),
            (((L, W - a), 3), ((L - a, W), 4)),
            (((L / 2 + m, W), 4), ((L / 2 - m, W), 5)),
            (((a, W), 5), ((0, W - a), 0)),
        ]
        jaw_xy = np.array([j[0] for mo in mouths for j in mo], dtype=np.float64)
        jaw_cushion = np.array([j[1] for mo in mouths for j in mo], dtype=np.int64)
        ma, mb = jaw_xy[0::2].copy(), jaw_xy[1::2].copy()
        pocket = np.array([table.pocket_xy(k) for k in range(6)], dtype=np.float64)
        mid = (ma + mb) / 2
        d = mb - ma
        n = np.stack([d[:, 1], -d[:, 0]], axis=1)
        n /= np.linalg.norm(n, axis=1)[:, None]
        n *= np.sign(np.einsum("ij,ij->i", n, pocket - mid) + 1e-300)[:, None]  # towards the pocket
        # middle pockets: the corner point equals the mouth centre, push outwards explicitly
        n[1] = (0.0, -1.0)
        n[4] = (0.0, 1.0)
        c = np.array(cush, dtype=np.float64)
        return cls(
            table,
            R,
            c[:, 0].astype(np.int64),
            c[:, 1].copy(),
            c[:, 2].copy(),
            c[:, 3].copy(),
            c[:, 4].copy(),
            jaw_xy,
            jaw_cushion,
            ma,
            mb,
            n,
        )


# ---------------------------------------------------------------- kernel state


class Balls(NamedTuple):
    """The balls' state, one row per ball (``N_BALLS``); the kernels change it in place.

    ``p`` float64 (n, 2): centre, mm.  ``v`` float64 (n, 2): velocity, mm/s.
    ``s`` float64 (n, 2): the velocity the ball's rolling spin would give it
    (``s == v`` rolling, ``s == 0`` a stun).  ``wz`` float64 (n,): spin about
    the vertical, rad/s.  ``present`` bool (n,): on the table.
    """

    p: np.ndarray
    v: np.ndarray
    s: np.ndarray
    wz: np.ndarray
    present: np.ndarray


class Motion(NamedTuple):
    """What each ball does until something happens to it, from :func:`_motion`.

    ``accel`` float64 (n, 2): its constant acceleration, mm/s².  ``phase``
    int64 (n,): REST, SLIDING or ROLLING.  ``own_dt`` float64 (n,): time to
    its own next transition (inf: none).  ``own_kind`` int64 (n,): that
    transition, EV_ROLL, EV_STOP or EV_SPIN_STOP (0: none).
    """

    accel: np.ndarray
    phase: np.ndarray
    own_dt: np.ndarray
    own_kind: np.ndarray


class Friction(NamedTuple):
    """The decelerations of the cloth: sliding and rolling in mm/s², spin in rad/s²."""

    slide_decel: float
    roll_decel: float
    spin_decel: float


class Cushions(NamedTuple):
    """The six cushion noses as lines the ball's centre reaches, in ICD §6 order.

    Cushion k: centre coordinate ``axis[k]`` (int64, 0 = x, 1 = y) reaches
    ``limit[k]`` (mm) moving in direction ``sign[k]`` (±1), valid while the
    other coordinate lies in [``lo[k]``, ``hi[k]``] (float64 (6,) each).
    """

    axis: np.ndarray
    limit: np.ndarray
    sign: np.ndarray
    lo: np.ndarray
    hi: np.ndarray


class Pockets(NamedTuple):
    """The pockets as the kernels see them: the jaws a ball can hit and the mouths it falls through.

    ``jaw_xy`` float64 (12, 2): the cushion-nose ends at the pockets.
    ``mouth_a``, ``mouth_b`` float64 (6, 2): the jaw points of each pocket;
    ``mouth_n`` float64 (6, 2): the mouth's unit normal out of the table.
    """

    jaw_xy: np.ndarray
    mouth_a: np.ndarray
    mouth_b: np.ndarray
    mouth_n: np.ndarray


# ---------------------------------------------------------------- polynomial roots


@numba.njit(cache=True)
def _peval(coeffs: np.ndarray, degree: int, point: float) -> float:
    """The polynomial of ``degree`` with ascending ``coeffs`` at ``point`` (Horner: one rounding a
    step)."""
    r = 0.0
    for k in range(degree, -1, -1):
        r = r * point + coeffs[k]
    return r


@numba.njit(cache=True)
def _bisect(coeffs: np.ndarray, degree: int, low: float, high: float) -> float:
    """A root of the polynomial in [``low``, ``high``] where it changes sign; returns the far side."""
    flo = _peval(coeffs, degree, low)
    for _ in range(200):
        mid = 0.5 * (low + high)
        if mid <= low or mid >= high:
            break
        fm = _peval(coeffs, degree, mid)
        if (fm > 0.0) == (flo > 0.0):
            low, flo = mid, fm
        else:
            high = mid
    return high


@numba.njit(cache=True)
def _roots_in(coeffs: np.ndarray, degree: int, horizon: float, out: np.ndarray) -> int:
    """Real roots in (0, ``horizon``) of a polynomial of degree <= 4 (ascending ``coeffs``), into
    ``out``, sorted; returns how many.

    Why by derivatives: between consecutive roots of the derivative the
    polynomial is monotone, so one sign test and a bisection find its root
    robustly, with no ill-conditioned closed form for the quartic.
    """
    ders = np.zeros((5, 5))
    for k in range(degree + 1):
        ders[0, k] = coeffs[k]
    for d in range(1, degree + 1):
        for k in range(degree - d + 1):
            ders[d, k] = ders[d - 1, k + 1] * (k + 1)
    cnt = 0
    crit = np.empty(6)
    for d in range(degree - 1, -1, -1):  # from the linear derivative down to the polynomial
        deg = degree - d
        row = ders[d]
        m = 0
        crit[m] = 0.0
        m += 1
        for k in range(cnt):
            crit[m] = out[k]
            m += 1
        crit[m] = horizon
        m += 1
        cnt = 0
        flo = _peval(row, deg, crit[0])
        for k in range(m - 1):
            fhi = _peval(row, deg, crit[k + 1])
            if (flo > 0.0) != (fhi > 0.0) and crit[k + 1] > crit[k]:
                out[cnt] = _bisect(row, deg, crit[k], crit[k + 1])
                cnt += 1
            flo = fhi
    return cnt


@numba.njit(cache=True)
def _first_entry(
    coeffs: np.ndarray, degree: int, horizon: float, tol: float, work: np.ndarray
) -> float:
    """First time in [0, ``horizon``] at which f (>= 0 outside contact) falls to <= 0; inf if none.

    A contact at t = 0 counts only when the pair is approaching (f' < 0),
    so a contact just resolved is not found again.
    """
    if coeffs[0] <= tol and (coeffs[1] < -tol or (coeffs[1] <= tol and coeffs[2] < 0.0)):
        return 0.0  # touching and approaching, or pressed together by friction
    dc = np.empty(5)
    for k in range(degree):
        dc[k] = coeffs[k + 1] * (k + 1)
    cnt = _roots_in(dc, degree - 1, horizon, work) if degree > 1 else 0
    lo = 0.0
    flo = coeffs[0]
    for k in range(cnt + 1):
        hi = work[k] if k < cnt else horizon
        fhi = _peval(coeffs, degree, hi)
        if flo > 0.0 and fhi <= 0.0:
            return _bisect(coeffs, degree, lo, hi)
        lo, flo = hi, fhi
    return np.inf


@numba.njit(cache=True)
def _contact_coeffs(dpx, dpy, dvx, dvy, dax, day, dist, coeffs):
    """|dp + dv t + da t^2/2|^2 - dist^2 as ascending coefficients, into ``coeffs``."""
    coeffs[4] = 0.25 * (dax * dax + day * day)
    coeffs[3] = dvx * dax + dvy * day
    coeffs[2] = dvx * dvx + dvy * dvy + dpx * dax + dpy * day
    coeffs[1] = 2.0 * (dpx * dvx + dpy * dvy)
    coeffs[0] = dpx * dpx + dpy * dpy - dist * dist


@numba.njit(cache=True)
def _motion(balls: Balls, friction: Friction, motion: Motion) -> None:
    """Per ball: acceleration, phase and the time and kind of its next own transition.

    Between events a ball's acceleration is constant and fixed by its phase:
    friction against the slip while sliding, rolling resistance while
    rolling, none at rest.  So besides contacts the engine only needs when
    each ball changes phase on its own: the slip closes (EV_ROLL), it stops
    (EV_STOP) or its vertical spin dies (EV_SPIN_STOP).
    """
    v, s, wz, present = balls.v, balls.s, balls.wz, balls.present
    a, phase, horizon, hkind = motion
    mu_s_g, mu_r_g, spin_decel = friction
    for i in range(v.shape[0]):
        a[i, 0] = 0.0
        a[i, 1] = 0.0
        phase[i] = REST
        horizon[i] = np.inf
        hkind[i] = 0
        if not present[i]:
            continue
        ux = v[i, 0] - s[i, 0]
        uy = v[i, 1] - s[i, 1]
        un = math.hypot(ux, uy)
        vn = math.hypot(v[i, 0], v[i, 1])
        if un > EPS_V:
            a[i, 0] = -mu_s_g * ux / un
            a[i, 1] = -mu_s_g * uy / un
            phase[i] = SLIDING
            horizon[i] = 2.0 * un / (7.0 * mu_s_g)
            hkind[i] = EV_ROLL
        elif vn > EPS_V:
            a[i, 0] = -mu_r_g * v[i, 0] / vn
            a[i, 1] = -mu_r_g * v[i, 1] / vn
            phase[i] = ROLLING
            horizon[i] = vn / mu_r_g
            hkind[i] = EV_STOP
        if wz[i] != 0.0:
            ts = abs(wz[i]) / spin_decel
            if ts < horizon[i]:
                horizon[i] = ts
                hkind[i] = EV_SPIN_STOP


@numba.njit(cache=True)
def _advance(balls: Balls, motion: Motion, dt_s: float, spin_decel: float) -> None:
    """Carry every ball ``dt_s`` seconds along its parabola; nothing happens on the way.

    The caller chose ``dt_s`` as the time of the next event, so no ball changes
    phase or touches anything before it: the closed form is exact.  A
    sliding ball's spin velocity gains 5/2 of what friction takes from its
    velocity (a solid sphere); a rolling ball's spin stays equal to it.
    """
    p, v, s, wz, present = balls
    a, phase = motion.accel, motion.phase
    for i in range(p.shape[0]):
        if not present[i]:
            continue
        if phase[i] != REST:
            p[i, 0] += v[i, 0] * dt_s + 0.5 * a[i, 0] * dt_s * dt_s
            p[i, 1] += v[i, 1] * dt_s + 0.5 * a[i, 1] * dt_s * dt_s
            v[i, 0] += a[i, 0] * dt_s
            v[i, 1] += a[i, 1] * dt_s
            if phase[i] == SLIDING:
                s[i, 0] -= 2.5 * a[i, 0] * dt_s
                s[i, 1] -= 2.5 * a[i, 1] * dt_s
            else:
                s[i, 0] = v[i, 0]
                s[i, 1] = v[i, 1]
        if wz[i] != 0.0:
            dw = spin_decel * dt_s
            if abs(wz[i]) <= dw:
                wz[i] = 0.0
            elif wz[i] > 0.0:
                wz[i] -= dw
            else:
                wz[i] += dw


@numba.njit(cache=True)
def _next_event(
    balls: Balls,
    motion: Motion,
    cushions: Cushions,
    pockets: Pockets,
    radius: float,
    h_limit: float,
) -> tuple[float, int, int, int]:
    """The earliest event within h_limit: (dt, kind, i, j); kind 0 when none.

    The driver: the balls' own transitions first, then for every moving ball
    the first contact with another ball, a cushion line, a jaw and a pocket
    mouth, each step in turn.  A step gets the earliest time found so far
    and returns an earlier one with its partner, or that time and -1: so
    each search is bounded by the best so far, and on a tie the first found
    wins (ball, cushion, jaw, mouth; lower indices first).  ``i`` is the
    ball; ``j`` the other ball, the cushion, the jaw or the pocket.
    """
    p, v, _s, _wz, present = balls
    a, phase, own_dt, own_kind = motion
    best, kind, bi = _first_transition(present, own_dt, own_kind, h_limit)
    bj = -1
    c = np.zeros(5)  # polynomial coefficients, shared scratch of the steps
    work = np.empty(6)
    for i in range(p.shape[0]):
        if not present[i] or phase[i] == REST:
            continue
        t, j = _first_ball_contact(i, p, v, a, phase, present, radius, best, c, work)
        if j >= 0:
            best, kind, bi, bj = t, EV_BALL, i, j
        t, k = _first_cushion(i, p, v, a, cushions, radius, best, c, work)
        if k >= 0:
            best, kind, bi, bj = t, EV_CUSHION, i, k
        t, k = _first_jaw(i, p, v, a, pockets.jaw_xy, radius, best, c, work)
        if k >= 0:
            best, kind, bi, bj = t, EV_JAW, i, k
        t, k = _first_mouth(i, p, v, a, pockets, radius, best, c, work)
        if k >= 0:
            best, kind, bi, bj = t, EV_POCKET, i, k
    return best, kind, bi, bj


@numba.njit(cache=True)
def _first_transition(
    present: np.ndarray, own_dt: np.ndarray, own_kind: np.ndarray, h_limit: float
) -> tuple[float, int, int]:
    """The first own transition (roll, stop, spin stop) before h_limit: (dt, kind, ball).

    (h_limit, 0, -1) when none comes sooner; these need no root finding.
    """
    best = h_limit
    kind, bi = 0, -1
    for i in range(present.shape[0]):
        if present[i] and own_dt[i] < best:
            best, kind, bi = own_dt[i], own_kind[i], i
    return best, kind, bi


@numba.njit(cache=True)
def _reach(speed: float, accel: float, span: float) -> float:
    """How far a relative motion of this speed and acceleration can carry in ``span``: a pruning
    bound."""
    return speed * span + 0.5 * accel * span * span


@numba.njit(cache=True)
def _first_ball_contact(
    ball, centres, velocities, accels, phase, present, radius, best, coeffs, work
):
    """Moving ``ball``'s first touch of another ball before ``best``: (t, other), or (best, -1).

    Each pair is searched once: a moving partner of lower index already
    searched it as its own first member.  A pair too far apart to close the
    gap within best is skipped before the quartic is solved.
    """
    d = 2.0 * radius
    tol = 1e-6 * d
    found = -1
    for j in range(centres.shape[0]):
        if j == ball or not present[j] or (phase[j] != REST and j < ball):
            continue
        dpx = centres[j, 0] - centres[ball, 0]
        dpy = centres[j, 1] - centres[ball, 1]
        dvx = velocities[j, 0] - velocities[ball, 0]
        dvy = velocities[j, 1] - velocities[ball, 1]
        dax = accels[j, 0] - accels[ball, 0]
        day = accels[j, 1] - accels[ball, 1]
        reach = _reach(math.hypot(dvx, dvy), math.hypot(dax, day), best)
        if math.hypot(dpx, dpy) - d > reach + 1e-9:
            continue
        _contact_coeffs(dpx, dpy, dvx, dvy, dax, day, d, coeffs)
        t = _first_entry(coeffs, 4, best, tol * d, work)
        if t < best:
            best, found = t, j
    return best, found


@numba.njit(cache=True)
def _first_cushion(ball, centres, velocities, accels, cushions, radius, best, coeffs, work):
    """``ball``'s first arrival at a cushion line before ``best``: (t, cushion), or (best, -1).

    The centre reaches the line when one coordinate crosses its limit (a
    quadratic); it counts only where the other coordinate is within the
    cushion's straight part (the jaws and mouths cover the rest).
    """
    axis, limit, sign, lo, hi = cushions
    found = -1
    for k in range(6):
        ax = axis[k]
        sg = sign[k]
        coeffs[0] = sg * (limit[k] - centres[ball, ax])
        coeffs[1] = -sg * velocities[ball, ax]
        coeffs[2] = -0.5 * sg * accels[ball, ax]
        if coeffs[0] > radius + 1e-9 and coeffs[1] >= 0.0 and coeffs[2] >= 0.0:
            continue  # away from the line and not turning towards it
        t = _first_entry(coeffs, 2, best, 1e-9, work)
        if t < best:
            ot = 1 - ax
            q = centres[ball, ot] + velocities[ball, ot] * t + 0.5 * accels[ball, ot] * t * t
            if lo[k] <= q <= hi[k]:
                best, found = t, k
    return best, found


@numba.njit(cache=True)
def _first_jaw(ball, centres, velocities, accels, jaw_xy, radius, best, coeffs, work):
    """``ball``'s first touch of a pocket jaw (a cushion-nose end) before ``best``: (t, jaw), or
    (best, -1).

    A jaw is a point, so the contact is the ball's distance to it falling to
    one radius (a quartic); jaws out of reach within best are skipped.
    """
    tol = 1e-6 * (2.0 * radius)
    found = -1
    for k in range(jaw_xy.shape[0]):
        dpx = centres[ball, 0] - jaw_xy[k, 0]
        dpy = centres[ball, 1] - jaw_xy[k, 1]
        reach = _reach(
            math.hypot(velocities[ball, 0], velocities[ball, 1]),
            math.hypot(accels[ball, 0], accels[ball, 1]),
            best,
        )
        if math.hypot(dpx, dpy) - radius > reach + 1e-9:
            continue
        _contact_coeffs(
            dpx,
            dpy,
            velocities[ball, 0],
            velocities[ball, 1],
            accels[ball, 0],
            accels[ball, 1],
            radius,
            coeffs,
        )
        t = _first_entry(coeffs, 4, best, tol * radius, work)
        if t < best:
            best, found = t, k
    return best, found


@numba.njit(cache=True)
def _first_mouth(ball, centres, velocities, accels, pockets, radius, best, coeffs, work):
    """``ball``'s centre first crossing a pocket mouth before ``best``: (t, pocket), or (best, -1).

    The centre crossing the mouth line between the pocket's two jaw points
    is the ball falling in (EV_POCKET).  Mouths farther than the ball can
    travel within best (plus three radii) are skipped.
    """
    mouth_a, mouth_b, mouth_n = pockets.mouth_a, pockets.mouth_b, pockets.mouth_n
    found = -1
    for k in range(6):
        nx = mouth_n[k, 0]
        ny = mouth_n[k, 1]
        coeffs[0] = -(
            nx * (centres[ball, 0] - mouth_a[k, 0]) + ny * (centres[ball, 1] - mouth_a[k, 1])
        )
        if (
            coeffs[0]
            > 3.0 * radius
            + math.hypot(velocities[ball, 0], velocities[ball, 1]) * best
            + 1e-9
            + 0.5 * math.hypot(accels[ball, 0], accels[ball, 1]) * best * best
        ):
            continue
        coeffs[1] = -(nx * velocities[ball, 0] + ny * velocities[ball, 1])
        coeffs[2] = -0.5 * (nx * accels[ball, 0] + ny * accels[ball, 1])
        t = _first_entry(coeffs, 2, best, 1e-9, work)
        if t < best:
            qx = centres[ball, 0] + velocities[ball, 0] * t + 0.5 * accels[ball, 0] * t * t
            qy = centres[ball, 1] + velocities[ball, 1] * t + 0.5 * accels[ball, 1] * t * t
            ex = mouth_b[k, 0] - mouth_a[k, 0]
            ey = mouth_b[k, 1] - mouth_a[k, 1]
            u = ((qx - mouth_a[k, 0]) * ex + (qy - mouth_a[k, 1]) * ey) / (ex * ex + ey * ey)
            if 0.0 <= u <= 1.0:
                best, found = t, k
    return best, found


# ---------------------------------------------------------------- engine


@dataclass(frozen=True)
class Impulse:
    """Something outside the balls sets a ball moving at time t_s.

    ``cue`` impulses are tip contacts (they start shots); the others are a
    hand or a sleeve nudging a ball (item 17).  ``v``/``s`` are mm/s,
    ``wz`` rad/s; they replace the ball's velocity and spin.
    """

    t_s: float
    ball: int
    v: tuple[float, float]
    s: tuple[float, float] = (0.0, 0.0)
    wz: float = 0.0
    cue: bool = True
    duration_s: float = 0.0015
    add: bool = False  # add to the ball's motion (a second tip contact) instead of replacing it
    drive: bool = True  # the cue follows through: a ball met during the contact is pushed through


@dataclass
class RawEvent:
    """One elementary event of the engine (before it becomes an EVENTS.md dict)."""

    t_s: float
    kind: int
    ball: int
    other: int = -1  # ball-ball: the other ball; cushion/jaw: cushion piece; pocket: pocket
    speed_mps: float = 0.0
    impulse: Impulse | None = None


@dataclass
class Segments:
    """Per ball, the piecewise-parabolic trajectory: a new row whenever its motion changes.

    Columns: t0, x, y, vx, vy, ax, ay, state (MOVING/SPINNING bits), present.
    """

    rows: list[list[tuple[float, ...]]] = field(
        default_factory=lambda: [[] for _ in range(N_BALLS)]
    )

    def add(
        self,
        ball: int,
        t: float,
        p: np.ndarray,
        v: np.ndarray,
        a: np.ndarray,
        state: int,
        present: bool,
    ) -> None:
        row = (t, p[0], p[1], v[0], v[1], a[0], a[1], float(state), float(present))
        rows = self.rows[ball]
        if rows and rows[-1][0] == t:
            rows[-1] = row
        else:
            rows.append(row)


class Table2D:
    """The balls on one table, advanced event by event.

    Why a stateful object: a match is one continuous physical history
    (racking, shots, a ball nudged between shots) and the trajectory
    segments and elementary events accumulate across all of it.
    """

    def __init__(
        self, table: Table = DEFAULT_TABLE, config: PhysicsConfig = DEFAULT_CONFIG
    ) -> None:
        self.table, self.config = table, config
        self.geo = Geometry.of(table, config)
        n = N_BALLS
        self.p = np.zeros((n, 2))
        self.v = np.zeros((n, 2))
        self.s = np.zeros((n, 2))
        self.wz = np.zeros(n)
        self.present = np.zeros(n, dtype=np.bool_)
        self.a = np.zeros((n, 2))
        self.phase = np.zeros(n, dtype=np.int64)
        self.horizon = np.zeros(n)
        self.hkind = np.zeros(n, dtype=np.int64)
        self.t = 0.0
        self.events: list[RawEvent] = []
        self.segments = Segments()
        self._drives: dict[int, tuple[float, np.ndarray]] = {}  # ball -> (tip contact end, stroke)
        # the kernels' views of the same arrays (updated in place, never rebound)
        self.balls = Balls(self.p, self.v, self.s, self.wz, self.present)
        self.motion = Motion(self.a, self.phase, self.horizon, self.hkind)
        self._cushions, self._pockets = self.geo.cushions(), self.geo.pockets()
        g = G_MM_S2
        self._friction = Friction(config.mu_slide * g, config.mu_roll * g, config.spin_decel_rad_s2)
        self._update_motion()

    # -- state helpers
    def _update_motion(self) -> None:
        _motion(self.balls, self._friction, self.motion)

    def state_bits(self, i: int) -> int:
        if self.phase[i] != REST:
            return 1
        return 2 if self.wz[i] != 0.0 else 0

    def moving(self) -> np.ndarray:
        return self.present & ((self.phase != REST) | (self.wz != 0.0))

    def _record(self, balls) -> None:
        for i in balls:
            self.segments.add(
                i,
                self.t,
                self.p[i],
                self.v[i],
                self.a[i],
                self.state_bits(i),
                bool(self.present[i]),
            )

    # -- outside actions
    def place(self, t_s: float, ball: int, xy: tuple[float, float]) -> None:
        """A hand puts a ball on the table (racking, the coloured ball in the house)."""
        self.run_until(t_s)
        self.p[ball] = xy
        self.v[ball] = self.s[ball] = 0.0
        self.wz[ball] = 0.0
        self.present[ball] = True
        self._update_motion()
        self._record([ball])

    def remove(self, t_s: float, ball: int) -> None:
        self.run_until(t_s)
        self.present[ball] = False
        self.v[ball] = self.s[ball] = 0.0
        self.wz[ball] = 0.0
        self._update_motion()
        self._record([ball])

    def apply(self, imp: Impulse) -> None:
        """Run to the impulse's time and apply it (a tip contact or a nudge)."""
        self.run_until(imp.t_s)
        i = imp.ball
        if imp.add:
            self.v[i] += imp.v
            self.s[i] += imp.s
            self.wz[i] += imp.wz
        else:
            self.v[i] = imp.v
            self.s[i] = imp.s
            self.wz[i] = imp.wz
        speed = float(np.hypot(*self.v[i])) / 1000
        self.events.append(RawEvent(self.t, EV_IMPULSE, i, -1, speed, imp))
        if imp.cue and imp.drive and speed > 0:
            self._drives[i] = (self.t + imp.duration_s, self.v[i].copy())
        self._update_motion()
        self._record([i])

    # -- the event loop
    def run_until(self, t_end: float = math.inf) -> None:
        """Advance to t_end, or until every ball is at rest when t_end is inf."""
        geo = self.geo
        spin = self._friction.spin_decel
        count = 0
        while True:
            h = t_end - self.t
            if h < 0:
                raise ValueError(f"time runs backwards: {t_end} < {self.t}")
            if math.isinf(h) and not self.moving().any():
                return
            dt, kind, i, j = _next_event(
                self.balls,
                self.motion,
                self._cushions,
                self._pockets,
                geo.radius,
                h if not math.isinf(h) else 1e9,
            )
            _advance(self.balls, self.motion, dt, spin)
            self.t += dt
            if kind == 0:
                self.t = t_end
                self._update_motion()
                return
            count += 1
            if count > self.config.max_events:
                raise RuntimeError(f"more than {self.config.max_events} events at t={self.t:.6f} s")
            self._apply_event(kind, i, j)
            phase, a = self.phase.copy(), self.a.copy()
            self._update_motion()
            # a partner may change phase by rounding at the same instant (equal slips close together)
            changed = set(
                np.flatnonzero((phase != self.phase) | (a != self.a).any(axis=1)).tolist()
            )
            self._record(sorted(changed | ({i, j} if kind == EV_BALL else {i})))

    def _drive(self, ball: int) -> None:
        """While the tip is still on a ball it keeps pushing it along the stroke (a push, 19).

        The cue outweighs the ball, so a ball met during the tip contact is
        pushed through: the struck ball's speed along the stroke is restored
        after every contact until the contact ends.
        """
        drive = self._drives.get(ball)
        if drive is None or self.t >= drive[0]:
            return
        stroke = drive[1]
        speed = float(np.hypot(*stroke))
        along = float(self.v[ball] @ stroke) / speed
        if along < speed:
            self.v[ball] += (speed - along) * stroke / speed

    def _apply_event(self, kind: int, i: int, j: int) -> None:
        cfg = self.config
        if kind == EV_ROLL:
            self.s[i] = self.v[i]
            return
        if kind == EV_STOP:
            self.v[i] = self.s[i] = 0.0
            return
        if kind == EV_SPIN_STOP:
            self.wz[i] = 0.0
            return
        if kind == EV_BALL:
            n = self.p[j] - self.p[i]
            n /= np.linalg.norm(n)
            closing = float((self.v[i] - self.v[j]) @ n)
            # balls pressed together by friction part at a floor speed instead of sinking in
            k = 0.5 * (1.0 + cfg.e_ball) * max(closing, MIN_CLOSING)
            self.v[i] -= k * n
            self.v[j] += k * n
            self.events.append(RawEvent(self.t, EV_BALL, i, j, max(closing, 0.0) / 1000))
            for b in (i, j):
                self._drive(b)
            return
        if kind == EV_POCKET:
            speed = float(np.hypot(*self.v[i])) / 1000
            self.present[i] = False
            self.v[i] = self.s[i] = 0.0
            self.wz[i] = 0.0
            self.events.append(RawEvent(self.t, EV_POCKET, i, j, speed))
            return
        # cushion line or jaw: reflect the normal parts of velocity and spin
        if kind == EV_CUSHION:
            n = np.zeros(2)
            n[self.geo.cush_axis[j]] = self.geo.cush_sign[j]
            piece = j
        else:
            n = self.geo.jaw_xy[j] - self.p[i]
            n /= np.linalg.norm(n)
            piece = int(self.geo.jaw_cushion[j])
        vn = float(self.v[i] @ n)
        if vn <= 0.0:
            return
        sn = float(self.s[i] @ n)
        rebound = cfg.e_cushion * vn
        if rebound < cfg.freeze_mps * 1000:
            self.v[i] -= vn * n
            self.s[i] -= sn * n
        else:
            self.v[i] -= (1.0 + cfg.e_cushion) * vn * n
            self.s[i] -= (1.0 + cfg.e_cushion) * sn * n
        self.events.append(RawEvent(self.t, EV_CUSHION, i, piece, vn / 1000))
