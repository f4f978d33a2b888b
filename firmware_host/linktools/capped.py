"""What a ``stats`` report lists of a finding, bounded: the first :data:`LISTED` of its
offsets and a count of all, and a node's seq gaps with only a recent tail kept for resends.

A hostile file can hold millions of bad frames, gaps or reboots; each costs a count here,
never a row (issue 29: 5 M bad frames of garbage once made a 171 MB report).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from protocol.seqwindow import GAP, LATE, SEQ_MOD, WINDOW

#: offsets (and their times, missing) a finding lists in --json and in what ``stats`` keeps;
#: its count is of all.  A thousand is more than anyone reads, and bounds a hostile file's
#: report (5 M bad frames of garbage once made a 171 MB report and 919 MB of RSS, issue 29)
LISTED = 1000
#: drift windows a node's clock entry lists and is figured from; all are counted.  Ten
#: thousand minutes is a week of recording, yet a forged reboot with eight CLOCK_SYNCs
#: made a window each (8 MB of them: 40 000 windows, a 2 MB report)
WINDOWS_LISTED = 10_000
#: gaps a late resend may fill, the latest of its node's: a resend is LATE only within
#: the decoder's seq window (``WINDOW`` seq values behind the newest) and each gap after
#: the one it falls in takes two seq values or more, so that gap is among the last
#: ``WINDOW // 2`` unless the node restarted its counter since; the rest are final
FILL_REACH = WINDOW


def listed_key(listed: int, total: int) -> dict[str, int]:
    """``{"listed": n}`` for an entry that lists fewer offsets than it has, else nothing (a
    report under the cap stays as it was)."""
    return {"listed": listed} if listed < total else {}


def count_keys(name: str, listed: int, total: int) -> dict[str, int]:
    """``{name_count, name_listed}`` beside a list with no room for keys of its own, when it
    lists fewer than it has, else nothing (a report under the cap stays as it was)."""
    return {f"{name}_count": total, f"{name}_listed": listed} if listed < total else {}


class Listing:
    """A finding's count and its first :data:`LISTED` rows (offset, time, ...), the rest
    counted and dropped: what is kept stays bounded whatever the capture holds."""

    def __init__(self) -> None:
        self.count = 0
        self.rows: list[tuple[Any, ...]] = []

    @classmethod
    def of(cls, *columns: np.ndarray) -> Listing:
        """A listing of these rows (given as columns of equal length)."""
        listing = cls()
        listing.extend(*columns)
        return listing

    def extend(self, *columns: np.ndarray) -> None:
        """Rows given as columns of equal length, after those there are."""
        room = LISTED - len(self.rows)
        if room > 0:
            self.rows += zip(*(c[:room].tolist() for c in columns))
        self.count += len(columns[0])

    def column(self, i: int) -> list[Any]:
        """The listed rows' ``i``-th values."""
        return [row[i] for row in self.rows]

    def entry(self, *names: str) -> dict[str, Any]:
        """The report's entry: the count, the listed rows' columns by these names, and
        ``listed`` when fewer are listed than counted."""
        columns = {name: self.column(i) for i, name in enumerate(names)}
        return {"count": self.count, **columns, **listed_key(len(self.rows), self.count)}


def take_seq_marks(
    gaps: dict[int, SeqGaps], good: np.ndarray, t_s: np.ndarray, joined_until_s: float
) -> None:
    """The decoder's marks (:mod:`protocol.seqwindow`) of good frames into their node's gaps:
    a GAP frame follows ``seq_gap`` missing ones; a LATE resend (ICD §3) fills one."""
    marks = good["seq_mark"]
    for i in np.flatnonzero((marks == GAP) | (marks == LATE)).tolist():
        f = good[i]
        mine = gaps.setdefault(int(f["node"]), SeqGaps(joined_until_s))
        if marks[i] == GAP:
            mine.open(int(f["offset"]), float(t_s[i]), int(f["seq"]), int(f["seq_gap"]))
        else:
            mine.fill(int(f["seq"]))


#: a node's losses in the report (``count``, ``offsets``, ``times_s``, ``missing``; and
#: ``listed``, ``gaps`` when it has more gaps than it lists), and how many were lost at a join
Lost = tuple[dict[str, Any], int]


class SeqGaps:
    """A node's seq gaps: each one's offset and time (of the frame after it), its seq, size
    and how many of it are still missing (a late resend fills one).

    The latest :data:`FILL_REACH` gaps are kept for resends to fill; an older one is final:
    counted (at the join if its time is not after ``joined_until_s``: nobody read then),
    and listed while fewer than :data:`LISTED` are.  A hostile node with random seqs opens
    a gap a frame: this keeps a bounded tail and the listing, never every gap.
    """

    def __init__(self, joined_until_s: float = -np.inf) -> None:
        self.joined_until_s = joined_until_s
        self.rows = np.empty((2 * FILL_REACH, 4), np.int64)  # offset, seq, gap, missing
        self.times = np.empty(2 * FILL_REACH)
        self.n = 0  # rows kept
        self.listing = Listing()  # final gaps after the join: offset, time, missing
        self.missing = self.at_join = 0  # frames missing in final gaps, after / at the join

    def open(self, offset: int, t_s: float, seq: int, gap: int) -> None:
        if self.n == len(self.rows):
            self._final(FILL_REACH)
        self.rows[self.n] = offset, seq, gap, gap
        self.times[self.n] = t_s
        self.n += 1

    def fill(self, seq: int) -> None:
        """A late resend of ``seq``: one fewer missing in the nearest gap before it, of the
        latest :data:`FILL_REACH`, that covers it (none if that one is filled already)."""
        start = max(self.n - FILL_REACH, 0)
        _, after, gap, _ = self.rows[start : self.n].T
        covers = np.flatnonzero((seq - (after - gap)) % SEQ_MOD < gap)
        if len(covers):
            row = self.rows[start + covers[-1]]
            row[3] -= 1 if row[3] else 0

    def _final(self, n: int) -> None:
        """The oldest ``n`` gaps kept are past any resend: counted and listed, dropped."""
        offset, missing, t_s = self.rows[:n, 0], self.rows[:n, 3], self.times[:n]
        after = (missing > 0) & (t_s > self.joined_until_s)
        self.at_join += int(missing[t_s <= self.joined_until_s].sum())
        self.missing += int(missing[after].sum())
        self.listing.extend(offset[after], t_s[after], missing[after])
        self.rows[: self.n - n] = self.rows[n : self.n]
        self.times[: self.n - n] = self.times[n : self.n]
        self.n -= n

    def lost(self) -> Lost | None:
        """The report's entry and the count at the join; None: no gap is missing a frame."""
        self._final(self.n)
        if not self.missing and not self.at_join:
            return None
        entry = {**self.listing.entry("offsets", "times_s", "missing"), "count": self.missing}
        if "listed" in entry:  # the count is of frames: the gaps' own count beside it
            entry["gaps"] = self.listing.count
        return entry, self.at_join


def losses(gaps: dict[int, SeqGaps]) -> dict[int, Lost]:
    """Per node that is missing frames, its report entry and its count at the join."""
    return {node: lost for node in sorted(gaps) if (lost := gaps[node].lost())}
