"""verify's own line checks at their boundaries, in the words it prints.

A wall clock may step back up to ``TIME_SLACK_MS`` (1 s) and a record may lie up to
``FUTURE_SKEW_MS`` (300 s) past the moment of verification: both limits are allowed, one
millisecond more is not. Also pinned: a malformed recordedAt shown cut to 40 characters, the
session file name checked or noted, and a sealed line too large to hash.
"""

from __future__ import annotations

import pytest
from test_verify_table import ARMED, R, build, rec

from tickloop.protocol.ledger import Oversized, Seal, canonical, decode
from tickloop.protocol.report import VerifyReport
from tickloop.protocol.transitions import ms
from tickloop.protocol.verify import Checks, Verifier, verify

CANCELLED = [
    ARMED,
    rec(R.TICK_SCHEDULED, step=1, rule="next.ok"),  # recorded at 09:00:01.000
    rec(R.TICK_CANCELLED, step=1, rule="cancel.state_changed"),
    rec(R.LOOP_STOPPED, rule="cancel.state_changed"),
]
BACK = "recordedAt {} is before the previous {}"
STOPPED = [ARMED, rec(R.LOOP_STOPPED, rule="stop.user")]  # line 2 recorded at 09:00:01.000


def _said(report: VerifyReport) -> list[tuple[int, str, str]]:
    return [(v.line, v.rule, v.message) for v in report.violations]


def _recorded(items: list[dict[str, object]], line: int, at: str) -> list[tuple[int, bytes]]:
    lines = build(items)
    lines[line - 1] = (line, canonical({**decode(lines[line - 1][1]), "recordedAt": at}))
    return lines


@pytest.mark.parametrize(
    ("at", "said"),
    [
        ("2026-11-30T09:00:00.000Z", []),  # 1 s back: the slack
        (
            "2026-11-30T08:59:59.999Z",
            [
                (3, "verify.time_order", BACK.format("2026-11-30T08:59:59.999Z", "2026-11-30T09:00:01.000Z")),
            ],
        ),
    ],
)  # fmt: skip
def test_a_time_may_step_back_one_second_and_no_more(at: str, said: list[tuple[int, str, str]]) -> None:
    assert _said(verify(_recorded(CANCELLED, 3, at))) == said


@pytest.mark.parametrize(("ahead_ms", "refused"), [(300_000, False), (300_001, True)])
def test_a_time_may_lie_300_seconds_past_the_moment_of_verification(ahead_ms: int, refused: bool) -> None:
    now = ms("2026-11-30T09:00:01.000Z") - ahead_ms
    said = _said(verify(build(STOPPED), Checks(now_ms=now)))
    future = "recordedAt 2026-11-30T09:00:01.000Z is after the moment of verification (+300 s skew)"
    assert said == ([(2, "verify.future_time", future)] if refused else [])


def test_a_malformed_recorded_at_is_shown_cut_to_40_characters() -> None:
    lines = _recorded(STOPPED, 2, "2026-11-30 09:00:01" + "x" * 50)
    shown = repr("2026-11-30 09:00:01" + "x" * 21)
    assert _said(verify(lines)) == [
        (2, "verify.bad_field", f"recordedAt {shown} is not YYYY-MM-DDTHH:MM:SS.mmmZ")
    ]


def test_a_session_file_name_is_checked_and_any_other_name_is_noted() -> None:
    right = verify(build(STOPPED), Checks(file_name="session-t.jsonl"))
    assert (right.ok, right.name_checked) == (True, True)
    wrong = verify(build(STOPPED), Checks(file_name="session-r.jsonl"))
    said = "session-r.jsonl holds the ledger of session 't', whose file is session-t.jsonl"
    assert _said(wrong) == [(1, "verify.session_file", said)]
    other = verify(build(STOPPED), Checks(file_name="notes.jsonl"))
    assert (other.ok, other.name_checked) == (True, False)
    assert other.notes == ["no hash chain", "no macs", "file name not checked (not a session file name)"]


def test_a_sealed_line_too_large_to_hash_breaks_the_seal_on_its_line() -> None:
    verifier = Verifier(Checks(seal=Seal(records=2, sha256="0" * 64)))
    verifier.feed(1, build(STOPPED)[0][1])
    verifier.feed(2, Oversized(5000, 100))
    assert _said(verifier.finish()) == [
        (2, "verify.seal_mismatch", "a sealed line is too large to hash"),
        (2, "verify.record_too_large", "a record of 5000 bytes or more exceeds the 100-byte cap (not read)"),
    ]
