"""What ``verify`` found: each violation with its line and rule, and the counts of the summary."""

from __future__ import annotations

from dataclasses import dataclass, field

from tickloop.protocol.ledger import MAX_REPORTED, Seal


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken invariant, with the 1-based line it was found on."""

    line: int
    rule: str
    message: str


@dataclass(slots=True)
class VerifyReport:
    """What ``verify`` found: the first violations, their count, and counts for the summary."""

    violations: list[Violation] = field(default_factory=list)
    violation_count: int = 0
    records: int = 0
    runs: int = 0
    enqueued: int = 0
    chained: bool = False  #: every record is in a chained part
    keyed: bool = False  #: every record is in a keyed part, and its mac was checked against the key
    sealed: Seal | None = None  #: the seal the file was checked against
    open_runs: list[str] = field(default_factory=list)
    max_reported: int = MAX_REPORTED
    session: str | None = None  #: the session the records name
    name_checked: bool | None = None  #: the file name was compared with the session's (None: no name given)
    notes: list[str] = field(
        default_factory=list
    )  #: what the chain and macs showed, and what was not checked

    @property
    def ok(self) -> bool:
        return self.violation_count == 0

    def add(self, violation: Violation) -> None:
        self.violation_count += 1
        if len(self.violations) < self.max_reported:
            self.violations.append(violation)

    def summary(self) -> str:
        extras = []
        if self.session is not None:
            extras.append(f"session {self.session[:80]!r}")
        if self.open_runs:
            extras.append(f"{len(self.open_runs)} open run{'s' if len(self.open_runs) > 1 else ''}")
        extras += self.notes
        if self.sealed is not None and self.ok:
            count = self.sealed.records
            extras.append(f"seal of {count} record{'s' if count != 1 else ''} matches")
        state = "ok" if self.ok else f"{self.violation_count} violation(s)"
        tail = "".join(f", {extra}" for extra in extras)
        return f"{state}: {self.records} records, {self.runs} runs, {self.enqueued} time steps enqueued{tail}"
