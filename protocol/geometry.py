"""Table geometry and coordinates (ICD §6), pure Python.

Origin at the front-left cushion noses; x runs along the table from the
front (head) cushion to the back (foot) cushion, y across from the left
cushion.  Units are millimetres.  The HELLO frame carries the real table's
size; :data:`DEFAULT_TABLE` is the ICD's 12-ft table.
"""

from __future__ import annotations

from dataclasses import dataclass

CUSHION_NAMES = ("front", "left-front", "left-back", "back", "right-back", "right-front")
POCKET_NAMES = (
    "front-left",
    "left-middle",
    "back-left",
    "back-right",
    "right-middle",
    "front-right",
)
LINE_NAMES = ("centre", "house")


@dataclass(frozen=True)
class Table:
    """A table's playing surface, ball size and pocket openings.

    The ICD gives no pocket openings; the defaults are a pyramid table's (the
    opening between the jaws: corner 72.5 mm, middle 82.5 mm), which the virtual
    table plays and the fusion uses to know where a cushion's nose ends.
    """

    length_mm: float = 3569.0
    width_mm: float = 1778.0
    ball_mm: float = 68.0
    corner_mm: float = 72.5
    middle_mm: float = 82.5

    @property
    def house_line_x(self) -> float:
        return self.length_mm / 4

    @property
    def centre_line_x(self) -> float:
        return self.length_mm / 2

    @property
    def back_mark(self) -> tuple[float, float]:
        return (3 * self.length_mm / 4, self.width_mm / 2)

    def in_house(self, x: float) -> bool:
        """Items 9-10: the centre decides, and a centre on the line is outside."""
        return x < self.house_line_x

    def pocket_xy(self, pocket: int) -> tuple[float, float]:
        L, W = self.length_mm, self.width_mm
        return ((0, 0), (L / 2, 0), (L, 0), (L, W), (L / 2, W), (0, W))[pocket]

    def cushion_of(self, x: float, y: float) -> int:
        """The cushion piece whose nose is nearest to a point on the table."""
        return min(
            range(6),
            key=lambda c: self.cushion_gap(c, x, y) if self.on_piece(c, x) else float("inf"),
        )

    def cushion_gap(self, cushion: int, x: float, y: float) -> float:
        """Distance from a ball's surface to a cushion's nose (negative: overlap)."""
        L, W = self.length_mm, self.width_mm
        centre_gap = (x, y, y, L - x, W - y, W - y)[cushion]
        return centre_gap - self.ball_mm / 2

    def on_piece(self, cushion: int, x: float) -> bool:
        """The middle pockets split each long side: a piece covers one half of x."""
        if cushion in (0, 3):
            return True
        front_half = cushion in (1, 5)
        return (x < self.length_mm / 2) == front_half


DEFAULT_TABLE = Table()
