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
from operator import attrgetter
from statistics import median

import msgspec
from markupsafe import Markup, escape

from tickloop.operator.domain import Outcome, ProgressRow, TickKind
from tickloop.web.rows import whens

#: drawing area, in SVG user units (the SVG scales to the page width)
WIDTH = 960
LANE = 26
LEFT = 96
TOP = 8
#: a gap is at least this long, and at least GAP_FACTOR times the median spacing
MIN_GAP = timedelta(minutes=5)
GAP_FACTOR = 4
LANES = [k.value for k in TickKind]


class Mark(msgspec.Struct, frozen=True, gc=False):
    """One row's mark (a struct, not a dataclass: built 2,000 times a page, at a tenth of the cost)."""

    x: float
    y: float
    w: float
    outcome: Outcome
    kind: str  #: the row's tick kind, a store value: escaped wherever it is drawn
    at: str  #: when it started, "YYYY-MM-DD HH:MM:SS" (the mark's title, in ``marks_svg``)


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
        """One ``<rect>`` per mark, as the template drew them. The kind and the outcome are escaped (once
        per distinct value: a chart has a few); the rest is numbers and a time of our own."""
        height = self.lane - 8
        distinct = {m.kind for m in self.marks} | {m.outcome for m in self.marks}
        safe = {v: escape(v) for v in distinct}
        tops = {y: str(y) for y in {m.y for m in self.marks}}  # a y per lane: written once each
        return Markup(  # noqa: S704  (every untrusted part escaped here)
            "\n".join(
                [
                    f'<rect class="m o-{safe[m.outcome]}" x="{m.x:.2f}" y="{tops[m.y]}" width="{m.w:.2f}" '
                    f'height="{height}">'
                    f"<title>{safe[m.kind]} {safe[m.outcome]} at {m.at}</title></rect>"
                    for m in self.marks
                ]
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
    ordered = sorted(rows, key=attrgetter("started_at", "id"))
    start = ordered[0].started_at
    end: datetime = max(*map(attrgetter("ended_at"), ordered), now or start)
    total = max((end - start).total_seconds(), 1.0)
    scale = (WIDTH - LEFT - 8) / total

    def x(at: datetime) -> float:
        return round(LEFT + (at - start).total_seconds() * scale, 2)

    return Chart(
        WIDTH,
        height,
        LEFT,
        LANE,
        lanes,
        _marks(ordered, start, scale, lanes),
        _gaps(ordered, end, x),
        f"{start:%Y-%m-%d %H:%M}",
        f"{end:%Y-%m-%d %H:%M}",
        empty=False,
    )


def _marks(
    ordered: list[ProgressRow], start: datetime, scale: float, lanes: list[tuple[str, float]]
) -> list[Mark]:
    """One mark per row, x and width from the times as floats (2,000 marks, a few operations each; the
    SVG writes them to two decimals, so they are not rounded here)."""
    lane_y, bottom = dict(lanes), lanes[-1][1]
    origin = start.timestamp()
    marks = []
    for r, at in zip(ordered, whens([r.started_at for r in ordered]), strict=True):
        began = r.started_at.timestamp()
        x = LEFT + (began - origin) * scale
        w = max((r.ended_at.timestamp() - began) * scale, 2.0)
        marks.append(Mark(x, lane_y.get(r.tick_kind, bottom) + 4, w, r.outcome, r.tick_kind, at))
    return marks


def _gaps(ordered: list[ProgressRow], end: datetime, to_x: Callable[[datetime], float]) -> list[Gap]:
    starts = [r.started_at for r in ordered]
    spacing = [(b - a).total_seconds() for a, b in pairwise(starts)]
    usual = timedelta(seconds=median(spacing)) if spacing else timedelta(0)
    threshold = max(MIN_GAP, usual * GAP_FACTOR)
    gaps = []
    last_end = ordered[0].ended_at
    for row, following in zip(ordered, [*starts[1:], end], strict=True):
        if row.ended_at > last_end:  # noqa: PLR1730  (not max(): a call for each of 2,000 rows)
            last_end = row.ended_at
        if following - last_end >= threshold:
            left = to_x(last_end)
            gaps.append(
                Gap(left, round(to_x(following) - left, 2), f"no tick for {_span(following - last_end)}")
            )
    return gaps
