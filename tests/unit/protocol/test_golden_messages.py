"""Each golden ledger's violation in the words a person reads: its line, its rule and its message.

``test_ledger.py`` checks that each golden file breaks exactly its rule; a mutation run of the run
machine (``protocol/transitions.py``) found every message free to change, even to ``None``. These are
the lines ``tickloop audit verify`` prints, so each is pinned word for word (``malformed`` by its
prefix: the rest is the JSON decoder's own words).
"""

from __future__ import annotations

import pytest
from test_ledger import GOLDEN, OPTIONS, VIOLATIONS

from tickloop.audit import verify_file

#: golden file -> (line, message) of its one violation, whose rule is ``verify.<file>``.
SAYS: dict[str, tuple[int, str]] = {
    "bad_field": (4, "usage must be {inputTokens, outputTokens} with non-negative integers"),
    "cancel_out_of_order": (17, "tick_cancelled_before_enqueue is not allowed while run B is ended"),
    "chain_broken": (5, "prev does not match the previous line"),
    "complete_short": (8, "loop_complete after 2 of 3 steps"),
    "concurrent_runs": (4, "run C armed while run A is still active"),
    "empty": (1, "the file holds no record: nothing was verified"),
    "enqueue_after_cancel": (16, "tick_enqueued is not allowed while run B is cancelled"),
    "enqueue_beyond_target": (17, "step 2 exceeds the 1 requested"),
    "enqueue_without_schedule": (5, "tick_enqueued is not allowed while run A is ended"),
    "future_time": (
        17,
        "recordedAt 2099-01-01T00:00:00.000Z is after the moment of verification (+300 s skew)",
    ),
    "mac_mismatch": (17, "the mac does not match this record under the key"),
    "malformed": (12, "not JSON: "),
    "missing_rule": (17, "loop_stopped must name the rule that caused it"),
    "missing_run_id": (12, "tick_terminal must carry runId"),
    "noncanonical": (4, "not byte-equal to its canonical JSON (spacing, key order, number form or escapes)"),
    "open_run": (13, "run B is still ended at the end"),
    "policy_changed": (6, "policy fields changed within run A"),
    "policy_conflict": (13, "policy 'default' has sha256 0b7f8f61f2c0 here, 55a4bc5be68e on line 1"),
    "record_after_close": (12, "loop_stopped after run A closed"),
    "record_too_large": (12, "a record of 4350 bytes or more exceeds the 2048-byte cap (not read)"),
    "refusal_contradicts_state": (12, "refused as 'a run is active' while no run is active"),
    "resume_misuse": (1, "a resume boundary without --resume and its admit rule"),
    "run_rearmed": (13, "run A armed twice"),
    "schedule_out_of_order": (3, "tick_scheduled is not allowed while run A is scheduled"),
    "schedule_without_completed_terminal": (5, "step 2 scheduled after step 1 ended error"),
    "seal_mismatch": (17, "the file has 16 lines; the seal covers 17"),
    "seq_order": (6, "seq 7 follows 5"),
    "session_file": (
        1,
        "session-other.jsonl holds the ledger of session 'golden', whose file is session-golden.jsonl",
    ),
    "session_mixed": (5, "sessionId 'other' in a ledger of 'golden'"),
    "step_order": (6, "enqueued step 3 but step 2 is pending"),
    "steps_mismatch": (11, "closes after 2 steps; 3 were enqueued"),
    "stop_rule_mismatch": (17, "loop_stopped by stop.inconsistent_turn cannot happen while ended"),
    "terminal_out_of_order": (4, "terminal for step 3 but step 1 is pending"),
    "time_order": (11, "recordedAt 2026-11-30T08:00:00.000Z is before the previous 2026-11-30T09:00:09.000Z"),
    "torn_tail": (18, "the last line is incomplete (no newline)"),
    "unchained": (1, "--require-chain: the records from here have no hash chain"),
    "unkeyed": (1, "--require-key: no mac from this line on"),
    "unknown_rule": (11, "'next.target_reachee' is not a rule a loop_complete record can carry"),
    "unknown_run": (12, "tick_terminal for run Z that was never armed"),
}


def test_every_golden_violation_has_its_words_here() -> None:
    assert sorted(SAYS) == VIOLATIONS


@pytest.mark.parametrize("name", VIOLATIONS)
def test_each_golden_violation_says_exactly_this_on_its_line(name: str) -> None:
    report, _ = verify_file(GOLDEN / f"{name}.jsonl", **OPTIONS.get(name, {}))
    (found,) = report.violations
    line, message = SAYS[name]
    assert (found.line, found.rule) == (line, f"verify.{name}")
    if name == "malformed":
        assert found.message.startswith(message), found.message
    else:
        assert found.message == message
