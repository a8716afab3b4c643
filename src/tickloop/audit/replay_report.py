"""What ``tickloop audit replay`` found: each disagreement, the per-run table, and the summary line."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tickloop.protocol.ledger import MAX_REPORTED
from tickloop.protocol.verify import VerifyReport


@dataclass(frozen=True, slots=True)
class Disagreement:
    """One place where the ledger and the transcript disagree: which file, which line, what."""

    path: Path
    line: int
    message: str

    def render(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass(slots=True)
class RunRow:
    """One line of the per-run table."""

    run_id: str
    policy_id: str
    requested: Any
    enqueued: int
    matched: int
    closed: str
    disagreements: int


@dataclass(slots=True)
class ReplayReport:
    """The per-run table, every disagreement (the first ``max_reported`` kept), and the ledger's own check."""

    ledger: Path
    transcript: Path
    rows: list[RunRow] = field(default_factory=list)
    disagreements: list[Disagreement] = field(default_factory=list)
    disagreement_count: int = 0
    records: int = 0
    turns: int = 0
    verify: VerifyReport | None = None
    max_reported: int = MAX_REPORTED
    runs: int = 0  #: every run; ``rows`` keeps the first ``max_reported``
    steps_matched: int = 0

    @property
    def ok(self) -> bool:
        return self.disagreement_count == 0

    def add(self, item: Disagreement) -> None:
        self.disagreement_count += 1
        if len(self.disagreements) < self.max_reported:
            self.disagreements.append(item)

    def add_row(self, row: RunRow) -> None:
        self.runs += 1
        self.steps_matched += row.matched
        if len(self.rows) < self.max_reported:
            self.rows.append(row)

    def table(self) -> list[str]:
        head = ("run", "policy", "requested", "enqueued", "in transcript", "closed", "disagreements")
        rows = [head] + [
            (
                r.run_id[:12],
                r.policy_id[:24],
                str(r.requested)[:12],
                str(r.enqueued),
                str(r.matched),
                r.closed[:40],
                str(r.disagreements),
            )
            for r in self.rows
        ]
        widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
        lines = [
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
            for row in rows
        ]
        if self.runs > len(self.rows):
            lines.append(
                f"... and {self.runs - len(self.rows)} more run(s) (the first {len(self.rows)} are listed)"
            )
        return lines

    def summary(self) -> str:
        state = "replay ok" if self.ok else f"{self.disagreement_count} disagreement(s)"
        counts = f"{self.records} ledger records, {self.turns} transcript turns, {self.runs} runs"
        return f"{state}: {self._ledger_said()}{counts}, {self.steps_matched} steps matched"

    def _ledger_said(self) -> str:
        """The session the ledger names, and what its verification said of its chain and macs."""
        if self.verify is None or self.verify.session is None:
            return ""
        notes = f" ({'; '.join(self.verify.notes)})" if self.verify.notes else ""
        return f"session {self.verify.session[:80]!r}{notes}, "
