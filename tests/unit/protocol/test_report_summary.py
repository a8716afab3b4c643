"""The one summary line ``tickloop audit verify`` prints, word for word.

A mutation run found its wording pinned by no in-process test: the open-run plural, the session's
80-character cut, the seal note and the violation count were each free to change.
"""

from __future__ import annotations

import pytest

from tickloop.protocol.ledger import Seal
from tickloop.protocol.report import VerifyReport, Violation

DIGEST = "ab" * 32


def test_a_clean_file_says_ok_and_its_counts() -> None:
    report = VerifyReport(records=7, runs=2, enqueued=3)
    assert report.summary() == "ok: 7 records, 2 runs, 3 time steps enqueued"


@pytest.mark.parametrize(
    ("open_runs", "said"),
    [(["r1"], "1 open run"), (["r1", "r2"], "2 open runs"), (["a", "b", "c"], "3 open runs")],
)
def test_open_runs_are_counted_with_the_right_plural(open_runs: list[str], said: str) -> None:
    report = VerifyReport(records=4, runs=1, enqueued=1, open_runs=open_runs)
    assert report.summary() == f"ok: 4 records, 1 runs, 1 time steps enqueued, {said}"


def test_the_session_is_named_cut_to_80_characters_then_the_notes_and_the_seal() -> None:
    session = "s" * 80 + "TAIL"
    report = VerifyReport(records=5, runs=1, enqueued=2, session=session, notes=["chain holds"])
    report.sealed = Seal(5, DIGEST)
    assert report.summary() == (
        f"ok: 5 records, 1 runs, 2 time steps enqueued, session {'s' * 80!r}, chain holds, "
        "seal of 5 records matches"
    )


def test_violations_are_counted_and_a_broken_file_claims_no_seal() -> None:
    report = VerifyReport(records=5, runs=1, enqueued=2, sealed=Seal(5, DIGEST))
    report.add(Violation(3, "verify.seq_gap", "seq 4 follows 2"))
    report.add(Violation(4, "verify.seq_gap", "seq 6 follows 4"))
    assert report.summary() == "2 violation(s): 5 records, 1 runs, 2 time steps enqueued"
