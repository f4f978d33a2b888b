"""Cushion touches the rails did not report, seen in the tracker's frames.

ICD §7 rails: "impacts with normal speed under 0.05 m/s are not reported";
RULES.md counts any touch.  An armed ball (not resting against that
cushion since it last left it) that a frame of the shot shows within
``SOFT_ZONE_MM`` of a cushion's nose, moving, is watched: every frame its
gap to the nose is fitted by an apex (approach, then rebound or none:
:mod:`.touch`), and a touch is written when the fit is decisive: at least
``SOFT_POST_FRAMES`` frames after the apex and ``SOFT_PRE_FRAMES`` before
it, the apex gap within ``SOFT_Z`` standard errors of 0 and
``SOFT_NEAR_Z`` of them under ``SOFT_NEAR_MM``, and an approach ``SOFT_Z``
standard errors faster than a ball rolling to a stop there could have had.
Such a cushion event says ``"source": "tracker"``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .records import EV_CUSHION, O_SHOT, SOURCE_TRACKER, Out, emit
from .state import (
    BALLS,
    CUSHIONS,
    FRAMES_SEEN,
    HISTORY,
    IN_SHOT,
    ON,
    RING_FRAMES,
    RING_SEEN,
    SHOT_NUMBER,
    WATCH_ARMED,
    WATCH_CUSHION,
    WATCH_SHOT,
    WATCH_SINCE,
    WATCH_STILL,
    Cushions,
    Shot,
    Tracker,
    X,
    Y,
)
from .touch import (
    DECISIVE_SIGMAS,
    FT_H,
    FT_IN,
    FT_POST,
    FT_PRE,
    FT_SE_H,
    FT_SE_IN,
    FT_SSR,
    N_FIT,
    TRACK_SIGMA_MM,
    fit_apex,
    nose_gap,
)

SOFT_ZONE_MM = 1.0 + DECISIVE_SIGMAS * TRACK_SIGMA_MM  # 3.8 mm: one frame, 4 σ, plus 1 mm
SOFT_ARM_MM = 6.0  # a frame this far off: the ball has left the cushion, a touch is new again
SOFT_DECIDE_US = 80_000  # decided within this long of the touch or never: the most it holds
SOFT_PRE_US = 120_000  # approach fitted over at most this long (rolling: straight enough)
SOFT_POST_FRAMES = 6  # 50 ms at 120 Hz: a sliding ball curving off 1-2 mm short shows as such
SOFT_PRE_FRAMES = 3
SOFT_Z = 3.0
SOFT_NEAR_MM = 1.0
SOFT_NEAR_Z = 2.0
# a ball rolling to a stop slows by the cloth's rolling resistance (≈ 0.01 g; the ICD has no
# friction figure): the approach must be faster than twice that allows over the fitted span
ROLL_DECEL_MM_PER_MS2 = 2e-4
SOFT_STEP_US = 1_000  # the apex time is searched on this grid
ALL_CUSHIONS = 0b111111


@njit(cache=True, inline="always")
def watching(cushions: Cushions) -> bool:
    """Some ball is watched for a cushion touch too soft for the rails: the soft-touch step
    must run even between shots until each watch is decided."""
    for b in range(BALLS):
        if cushions.watch[b, WATCH_CUSHION] >= 0:
            return True
    return False


@njit(cache=True)
def stop_watching(cushions: Cushions, disarm) -> None:
    """No more touches looked for (a new shot, a boot, the tracker gone); ``disarm``: and
    none until a frame shows each ball off a cushion again."""
    for b in range(BALLS):
        cushions.watch[b, WATCH_CUSHION] = -1
        if disarm:
            cushions.watch[b, WATCH_ARMED] = 0


@njit(cache=True)
def arm_all_but_frozen(table, cushions: Cushions, frozen, layout, tracker: Tracker) -> None:
    """A shot starts: every cushion a ball does not rest against (``frozen`` (16,) bits) is
    armed for it, but not one a ball still rolling from the last shot runs along, within
    ``SOFT_ZONE_MM`` of its nose (``layout``: x, y, on at the tip): a touch needs a path
    that reaches the cushion from off it, and that ball must leave it first (on the
    virtual table's busy hour, a ball that had touched cushion 0 at 0.014 m/s and rolled
    on along it was given a second touch in the next shot, from its frames' noise)."""
    for b in range(BALLS):
        armed = ALL_CUSHIONS & ~frozen[b]
        if layout[b, ON] > 0 and tracker.rest_frames[b] == 0:  # on the table, moving
            for c in range(CUSHIONS):
                if nose_gap(table, c, layout[b, X], layout[b, Y]) <= SOFT_ZONE_MM:
                    armed &= ~(np.int64(1) << c)
        cushions.watch[b, WATCH_ARMED] = armed


@njit(cache=True)
def soft_touches(table, tracker: Tracker, hit_t, shot: Shot, cushions: Cushions, out: Out):
    """After each tracker frame: every ball near a cushion it is armed for is watched.

    Armed: at a shot's start for every cushion the ball is not resting against,
    then for any cushion a frame shows it ``SOFT_ARM_MM`` off; a touch (reported or derived)
    disarms that cushion.  A watch opens when a frame of the shot shows the ball moving
    within ``SOFT_ZONE_MM`` of an armed cushion; it closes when the ball leaves
    (``SOFT_ARM_MM``), has been still for ``SOFT_POST_FRAMES`` frames, is touched, or the
    rails report it; while open it holds ``safe`` at ``WATCH_SINCE`` (at most
    ``SOFT_DECIDE_US`` behind the newest frame).
    """
    ring = tracker.state[RING_SEEN]
    f = (ring - 1) % RING_FRAMES
    k = (tracker.state[FRAMES_SEEN] - 1) % HISTORY
    for b in range(BALLS):
        watch = cushions.watch[b]
        if not tracker.frame_on[k, b]:
            watch[WATCH_CUSHION] = -1  # off the table
            continue
        if not tracker.ring_seen[f, b]:
            continue  # occluded: where it is, is the tracker's guess
        x, y = tracker.ring_xy[f, b, X], tracker.ring_xy[f, b, Y]
        near_c, near_g = -1, SOFT_ZONE_MM
        for c in range(CUSHIONS):
            g = nose_gap(table, c, x, y)
            if g > SOFT_ARM_MM:
                if np.isfinite(g):
                    watch[WATCH_ARMED] |= np.int64(1) << c
                if watch[WATCH_CUSHION] == c:
                    if not np.isfinite(g):
                        _touch_undecided(table, tracker, shot, cushions, out, b, c)
                    watch[WATCH_CUSHION] = -1  # it left the cushion (or the piece)
            elif g < near_g and (watch[WATCH_ARMED] >> c) & 1:
                near_c, near_g = c, g
        watch[WATCH_STILL] = 0 if tracker.frame_moving[k, b] else watch[WATCH_STILL] + 1
        if watch[WATCH_CUSHION] < 0:
            if near_c < 0 or not shot.state[IN_SHOT] or not tracker.frame_moving[k, b] or ring < 2:
                continue
            watch[WATCH_CUSHION] = near_c
            watch[WATCH_SINCE] = tracker.ring_t[(ring - 2) % RING_FRAMES]  # touched since then?
            watch[WATCH_SHOT] = shot.state[SHOT_NUMBER]
        _soft_watch(table, tracker, hit_t, shot, cushions, out, b)
        if watch[WATCH_CUSHION] >= 0 and watch[WATCH_STILL] > SOFT_POST_FRAMES:
            _touch_at_rest(table, tracker, shot, cushions, out, b)
            watch[WATCH_CUSHION] = -1  # still: any touch before it stopped has been judged


@njit(cache=True, inline="always")
def _write_touch(shot: Shot, cushions: Cushions, out: Out, ball, hub_t, uncertain) -> None:
    """A touch of ``ball``'s watched cushion at ``hub_t``, in the shot it was watched in."""
    watch = cushions.watch[ball]
    cushion = watch[WATCH_CUSHION]
    at = emit(out, shot, hub_t, EV_CUSHION, ball, cushion, SOURCE_TRACKER, uncertain, 0, 0)
    if at >= 0:
        out.events[at, O_SHOT] = watch[WATCH_SHOT]


@njit(cache=True)
def _touch_at_rest(table, tracker: Tracker, shot: Shot, cushions: Cushions, out: Out, ball):
    """``ball`` stopped while watched at its cushion, its fits undecided: it touched the
    cushion if its still frames put it against the nose.

    A ball arriving under 0.02 m/s rebounds too slowly to leave and rests against the
    cushion; its approach (under 2 mm in the fit window) is too short for the slope test,
    yet the still frames average to the nose's gap within ``SOFT_Z`` of their standard
    error (σ/√n: 0.26 mm over 7 frames): a ball 1.5 mm short is 5.6 of them off.  Missed,
    such touches were false fouls 20 (0.013 to 0.034 m/s, truth of random matches).
    """
    watch = cushions.watch[ball]
    cushion = watch[WATCH_CUSHION]
    ring = tracker.state[RING_SEEN]
    total, m = 0.0, 0
    for q in range(min(ring, watch[WATCH_STILL], RING_FRAMES)):
        i = (ring - 1 - q) % RING_FRAMES
        if tracker.ring_seen[i, ball]:
            g = nose_gap(table, cushion, tracker.ring_xy[i, ball, X], tracker.ring_xy[i, ball, Y])
            if not np.isfinite(g):
                return
            total += g
            m += 1
    if m < SOFT_POST_FRAMES or total / m > SOFT_Z * TRACK_SIGMA_MM / np.sqrt(m):
        return
    _write_touch(shot, cushions, out, ball, watch[WATCH_SINCE], 0)
    watch[WATCH_ARMED] &= ~(np.int64(1) << cushion)


@njit(cache=True)
def _touch_undecided(
    table, tracker: Tracker, shot: Shot, cushions: Cushions, out: Out, ball, cushion
):
    """``ball``, watched at ``cushion``, ran on into a pocket's mouth (``nose_gap`` has no
    gap there) before its frames could decide whether it touched: a touch that may have been.

    Its last frame on the piece within ``SOFT_ZONE_MM`` of the nose, and a time since
    ``WATCH_SINCE`` the fits have not ruled out, make it a cushion event ``certain: false``:
    the rules leave to the referee a foul that this touch could have made legal, and never
    call one from its absence (a ball touching a cushion at 0.046 m/s 30 mm from a corner
    jaw, then rolling along it into the jaw, was a false foul 20).  It stays armed: back on
    the piece, a decisive touch is written as one.
    """
    watch = cushions.watch[ball]
    ring = tracker.state[RING_SEEN]
    if ring < 2:
        return
    i = (ring - 2) % RING_FRAMES
    if not tracker.ring_seen[i, ball] or watch[WATCH_SINCE] > tracker.ring_t[i]:
        return  # the fits ruled out every time it was watched
    g = nose_gap(table, cushion, tracker.ring_xy[i, ball, X], tracker.ring_xy[i, ball, Y])
    if not g <= SOFT_ZONE_MM:
        return
    _write_touch(shot, cushions, out, ball, watch[WATCH_SINCE], 1)


@njit(cache=True)
def _soft_watch(table, tracker: Tracker, hit_t, shot: Shot, cushions: Cushions, out: Out, ball):
    """``ball``, watched at its cushion: the apex fits over its frames (touch.fit_apex), and
    the touch written if they are decisive (see ``SOFT_*``)."""
    watch = cushions.watch[ball]
    newest_t = tracker.ring_t[(tracker.state[RING_SEEN] - 1) % RING_FRAMES]
    # a touch before the ball's last contact (its motion since is another) or more than
    # SOFT_DECIDE_US ago (events after it are out) is no longer looked for
    since = max(watch[WATCH_SINCE], newest_t - SOFT_DECIDE_US, hit_t[ball])
    watch[WATCH_SINCE] = since
    tau = np.empty(RING_FRAMES)
    gap = np.empty(RING_FRAMES)
    along = np.empty(RING_FRAMES)
    m = _gaps(
        table,
        tracker,
        ball,
        watch[WATCH_CUSHION],
        newest_t,
        max(since - SOFT_PRE_US, hit_t[ball]),
        tau,
        gap,
        along,
    )
    if m < SOFT_PRE_FRAMES + SOFT_POST_FRAMES:
        return
    best = np.empty(N_FIT)
    work = np.empty((3, 3, 3))  # fit_apex's scratch: up to 160 fits a frame, none allocating
    best_tc = _best_apex(tau, gap, m, newest_t, watch, best, work)
    since = watch[WATCH_SINCE]
    if not _decisive(best, best_tc, tau, along, m):
        return  # not decisive (yet)
    # a touch: timed by the fit through gap 0
    fit = np.empty(N_FIT)
    best_ssr, tc_touch = np.inf, best_tc
    tc_us = since
    while tc_us <= newest_t:
        tc = (tc_us - newest_t) / 1000.0
        fit_apex(tau, gap, m, tc, False, fit, work)
        if fit[FT_SSR] < best_ssr:
            best_ssr, tc_touch = fit[FT_SSR], tc
        tc_us += SOFT_STEP_US
    _write_touch(shot, cushions, out, ball, max(since, newest_t + np.int64(tc_touch * 1000.0)), 0)
    watch[WATCH_ARMED] &= ~(np.int64(1) << watch[WATCH_CUSHION])
    watch[WATCH_CUSHION] = -1


@njit(cache=True, inline="always")
def _gaps(table, tracker: Tracker, ball, cushion, newest_t, earliest_t, tau, gap, along):
    """The ball's gaps to the cushion's nose (``gap``, mm) and its place along the cushion
    (``along``, mm) at the ring's frames from ``earliest_t`` on where it was seen, newest
    first (``tau``: ms before ``newest_t``); returns how many."""
    ring = tracker.state[RING_SEEN]
    m = 0
    for q in range(min(ring, RING_FRAMES)):
        i = (ring - 1 - q) % RING_FRAMES
        if tracker.ring_t[i] < earliest_t:
            break
        if tracker.ring_seen[i, ball]:
            g = nose_gap(table, cushion, tracker.ring_xy[i, ball, X], tracker.ring_xy[i, ball, Y])
            if np.isfinite(g):
                tau[m] = (tracker.ring_t[i] - newest_t) / 1000.0  # ms, newest first
                gap[m] = g
                across = cushion == 0 or cushion == 3  # the piece runs along y
                along[m] = tracker.ring_xy[i, ball, Y] if across else tracker.ring_xy[i, ball, X]
                m += 1
    return m


@njit(cache=True, inline="always")
def _best_apex(tau, gap, count, newest_t, watch, best, work):
    """The apex fit with ``h`` free at each time on the grid from ``WATCH_SINCE`` on: the
    best into ``best``, its time (ms before ``newest_t``) returned.  Apexes decisively short
    of the nose from the start are no touch, nor any before them: ``WATCH_SINCE`` moves
    past them (a ball lingering a mm or two off the cushion holds nothing).  ``work``:
    ``fit_apex``'s scratch."""
    fit = np.empty(N_FIT)
    best[FT_SSR] = np.inf
    best_tc = 0.0
    excluding = True
    tc_us = watch[WATCH_SINCE]
    while tc_us <= newest_t:
        tc = (tc_us - newest_t) / 1000.0
        fit_apex(tau, gap, count, tc, True, fit, work)
        if (
            excluding
            and fit[FT_SSR] < np.inf
            and fit[FT_PRE] >= SOFT_PRE_FRAMES
            and fit[FT_H] - SOFT_Z * fit[FT_SE_H] > 0.0
        ):
            watch[WATCH_SINCE] = tc_us + SOFT_STEP_US
        else:
            excluding = False
            if fit[FT_SSR] < best[FT_SSR]:
                best[:] = fit
                best_tc = tc
        tc_us += SOFT_STEP_US
    return best_tc


@njit(cache=True, inline="always")
def _decisive(best, best_tc, tau, along, count) -> bool:
    """The best apex fit shows a touch: enough frames either side, the apex at the nose
    (``SOFT_Z``, ``SOFT_NEAR_Z``) and an approach faster than a ball rolling to a stop.

    A rolling ball runs straight and slows along its path: its approach to the cushion
    slows by the cloth's resistance times the sine of its angle to the cushion.  A ball
    gliding along the cushion (its speed along it shown over the approach, ``along``)
    cannot lose a decisive approach short of the nose without stopping, so only that
    part of the allowance is made: the path's geometry needs the cushion (pooltool seed
    5 shot 5: 0.02 m/s into cushion 4 at 0.25 m/s along it, judged against a ball
    rolling head-on to a stop, was no touch and a false foul 20)."""
    if best[FT_SSR] == np.inf or best[FT_POST] < SOFT_POST_FRAMES or best[FT_PRE] < SOFT_PRE_FRAMES:
        return False
    h, se_h = best[FT_H], best[FT_SE_H]
    a_in = best[FT_IN]
    glide = _along_speed(tau, along, count, best_tc)
    sine = a_in / np.hypot(a_in, glide) if a_in > 0.0 else 1.0
    stopping = ROLL_DECEL_MM_PER_MS2 * (best_tc - tau[count - 1]) / 2 * sine
    return not (
        h - SOFT_Z * se_h > 0.0
        or h + SOFT_NEAR_Z * se_h > SOFT_NEAR_MM
        or a_in < SOFT_Z * best[FT_SE_IN] + stopping
    )


@njit(cache=True, inline="always")
def _along_speed(tau, along, count, apex_ms) -> float:
    """The ball's speed along the cushion (mm/ms) over its frames before the apex, at least:
    the straight-line slope of ``along`` less ``SOFT_Z`` of its standard error (0 when
    that is not decisively above 0)."""
    n = st = sa = 0.0
    for i in range(count):
        if tau[i] <= apex_ms:
            n += 1.0
            st += tau[i]
            sa += along[i]
    if n < SOFT_PRE_FRAMES:
        return 0.0
    mt, ma = st / n, sa / n
    stt = sta = 0.0
    for i in range(count):
        if tau[i] <= apex_ms:
            stt += (tau[i] - mt) ** 2
            sta += (tau[i] - mt) * (along[i] - ma)
    if stt <= 0.0:
        return 0.0
    return max(abs(sta / stt) - SOFT_Z * TRACK_SIGMA_MM / np.sqrt(stt), 0.0)
