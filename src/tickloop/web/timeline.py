"""The timeline chart's geometry: one lane per tick kind, one mark per progress row, gaps shaded.

Pure: rows in, numbers out. The template draws the SVG from these numbers (autoescaped like any
other page), so the chart needs no script and no library. A gap is a stretch with no tick of any
kind that is much longer than the loop's usual spacing (a SILENT loop); the stretch from the newest
row to ``now`` counts too, so a loop that is down right now shows as a gap at the right edge.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import pairwise
from statistics import median

from markupsafe import Markup, escape

from tickloop.operator.domain import ProgressRow, TickKind

#: drawing area, in SVG user units (the SVG scales to the page width)
WIDTH = 960
LANE = 26
LEFT = 96
TOP = 8
#: a gap is at least this long, and at least GAP_FACTOR times the median spacing
MIN_GAP = timedelta(minutes=5)
GAP_FACTOR = 4
LANES = [k.value for k in TickKind]


@dataclass(frozen=True, slots=True)
class Mark:
    x: float
    y: float
    w: float
    outcome: str
    title: str


@dataclass(frozen=True, slots=True)
class Gap:
    x: float
    w: float
    label: str


@dataclass(frozen=True, slots=True)
class Chart:
    """What the template draws; ``empty`` when there are no rows. ``marks_svg`` is the marks already
    drawn (up to 2,000 of them, the page's largest part: a Jinja loop cost several times the reads)."""

    width: int
    height: int
    left: int
    lane: int
    lanes: list[tuple[str, float]]  #: (kind, y of the lane's top)
    marks: list[Mark]
    gaps: list[Gap]
    start: str
    end: str
    empty: bool

    @property
    def marks_svg(self) -> Markup:
        """One ``<rect>`` per mark, as the template drew them; the title (it names a store value) is
        escaped, every other part is a number or an outcome of our own."""
        height = self.lane - 8
        return Markup(  # noqa: S704  (every untrusted part escaped here)
            "\n".join(
                f'<rect class="m o-{m.outcome}" x="{m.x}" y="{m.y}" width="{m.w}" height="{height}">'
                f"<title>{escape(m.title)}</title></rect>"
                for m in self.marks
            )
        )


def _span(delta: timedelta) -> str:
    minutes = int(delta.total_seconds() // 60)
    days, rest = divmod(minutes, 24 * 60)
    hours, mins = divmod(rest, 60)
    return " ".join(p for p in (f"{days}d" if days else "", f"{hours}h" if hours else "", f"{mins}m") if p)


def chart(rows: list[ProgressRow], *, now: datetime | None = None) -> Chart:
    """The chart of ``rows`` (any order), from the oldest row to ``now`` (or the newest row)."""
    lanes = [(kind, float(TOP + i * LANE)) for i, kind in enumerate(LANES)]
    height = TOP * 2 + LANE * len(LANES) + 16
    if not rows:
        return Chart(WIDTH, height, LEFT, LANE, lanes, [], [], "", "", empty=True)
    ordered = sorted(rows, key=lambda r: (r.started_at, r.id))
    start = ordered[0].started_at
    end = max(*(r.ended_at for r in ordered), now or start)
    total = max((end - start).total_seconds(), 1.0)
    scale = (WIDTH - LEFT - 8) / total

    def x(at: datetime) -> float:
        return round(LEFT + (at - start).total_seconds() * scale, 2)

    lane_y = dict(lanes)
    marks = [
        Mark(
            x(r.started_at),
            lane_y.get(r.tick_kind, lanes[-1][1]) + 4,
            max(round((r.ended_at - r.started_at).total_seconds() * scale, 2), 2.0),
            r.outcome.value,
            # isoformat, not strftime: the same 19 characters, for 2,000 marks a fifth of the cost
            f"{r.tick_kind} {r.outcome.value} at {r.started_at.isoformat(' ', 'seconds')[:19]}",
        )
        for r in ordered
    ]
    return Chart(
        WIDTH,
        height,
        LEFT,
        LANE,
        lanes,
        marks,
        _gaps(ordered, end, x),
        f"{start:%Y-%m-%d %H:%M}",
        f"{end:%Y-%m-%d %H:%M}",
        empty=False,
    )


def _gaps(ordered: list[ProgressRow], end: datetime, to_x: Callable[[datetime], float]) -> list[Gap]:
    spacing = [b.started_at - a.started_at for a, b in pairwise(ordered)]
    usual = timedelta(seconds=median(d.total_seconds() for d in spacing)) if spacing else timedelta(0)
    threshold = max(MIN_GAP, usual * GAP_FACTOR)
    gaps = []
    last_end = ordered[0].ended_at
    for row, nxt in zip(ordered, [*ordered[1:], None], strict=True):
        last_end = max(last_end, row.ended_at)
        following = end if nxt is None else nxt.started_at
        if following - last_end >= threshold:
            left = to_x(last_end)
            gaps.append(
                Gap(left, round(to_x(following) - left, 2), f"no tick for {_span(following - last_end)}")
            )
    return gaps
