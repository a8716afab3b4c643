"""Replay's check of a step's delay: a person's message written while a step waited for its due time
needed a cancel, yet the ledger enqueued the step.

Both sides arrive as replay reads the two files in step: the window ``(scheduled, due)`` of each step
once it is paired with its turn, and each person's turn with the time it started. Each is checked
against what the other side has shown so far, and kept only while the other side could still show
something it overlaps: both files are in time order (the ledger's times are verified; a transcript
turn that starts more than the slack before an earlier one is a disagreement of its own), so a window
is dropped once the transcript is past its due time by more than the slack, and a person's turn once
the ledger is past it by more than the slack. Memory stays bounded by how far the two files are read
apart in time, not by their length.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from operator import itemgetter
from typing import Any

from tickloop.protocol.ledger import TIME_FORMAT, TIME_SLACK_MS
from tickloop.protocol.transitions import ms
from tickloop.protocol.verify import iso_ms

_PRUNE_AT = 1024  #: entries on one side before those out of reach are dropped
_START = itemgetter(0)

Says = Callable[[int, str, Any], None]
Clock = Callable[[], str]


class DelayCheck:
    """``window`` per paired step, ``human`` per person's turn; ``says(line, message, run)`` reports."""

    def __init__(self, says: Says, *, transcript_time: Clock, ledger_time: Clock) -> None:
        self.says = says
        self.transcript_time = transcript_time
        self.ledger_time = ledger_time
        self.windows: list[list[Any]] = []  #: [scheduled, due, what, run, reported], by scheduled
        self.humans: list[tuple[str, int, int]] = []  #: (at, turn number, transcript line), by time
        self.transcript_done = self.ledger_done = False

    def window(self, scheduled: str, due: str, what: str, run: Any) -> None:
        entry = [scheduled, due, what, run, False]
        index = bisect.bisect_right(self.humans, scheduled, key=_START)  # the first after it
        if index < len(self.humans) and self.humans[index][0] < due:
            self._report(entry, *self.humans[index])
        if self.transcript_done:
            return  # no person's turn is still to come
        if self.windows and scheduled < self.windows[-1][0]:
            bisect.insort(self.windows, entry, key=_START)
        else:
            self.windows.append(entry)
        if len(self.windows) > _PRUNE_AT:
            floor = _floor(self.transcript_time())
            self.windows = [w for w in self.windows if w[1] >= floor]

    def human(self, at: str, number: int, line: int) -> None:
        index = bisect.bisect_left(self.windows, at, key=_START)
        if index:
            entry = self.windows[index - 1]
            if at < entry[1] and not entry[4]:
                self._report(entry, at, number, line)
        if self.ledger_done:
            return  # no step is still to be paired
        if self.humans and at < self.humans[-1][0]:
            bisect.insort(self.humans, (at, number, line), key=_START)
        else:
            self.humans.append((at, number, line))
        if len(self.humans) > _PRUNE_AT:
            floor = _floor(self.ledger_time())
            self.humans = [h for h in self.humans if h[0] >= floor]

    def transcript_ended(self) -> None:
        self.transcript_done, self.windows = True, []

    def ledger_ended(self) -> None:
        self.ledger_done, self.humans = True, []

    def _report(self, entry: list[Any], at: str, number: int, line: int) -> None:
        entry[4] = True
        self.says(
            line,
            f"turn {number} (a human message at {at}) came while {entry[2]} waited for {entry[1]}, "
            "and the ledger enqueued it instead of cancelling",
            entry[3],
        )


def _floor(latest: str) -> str:
    """The earliest time the other file can still show, given it has reached ``latest``."""
    if TIME_FORMAT.fullmatch(latest) is None:
        return ""
    return iso_ms(ms(latest) - TIME_SLACK_MS)
