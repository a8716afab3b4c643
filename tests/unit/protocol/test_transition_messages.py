"""The run machine's violations (``protocol/transitions.py``) by line, rule and words, case by case.

These are the lines ``tickloop audit verify`` prints about a run: a developer reading one must learn
which record broke which rule and how. A mutation run of the machine found the messages free to
change, and some guards unpinned (the contradictions of a refusal, the resume boundary's promises,
the usage fields of a terminal). Each row is a ledger one record away from clean and everything
verify says of it; the time slacks are pinned at their boundary.
"""

from __future__ import annotations

from typing import Any

import pytest
from test_verify_table import ARMED, R, build, rec

from tickloop.protocol.ledger import canonical, decode
from tickloop.protocol.verify import verify

S1 = rec(R.TICK_SCHEDULED, step=1, rule="next.ok")
E1 = rec(R.TICK_ENQUEUED, step=1)
T1 = rec(R.TICK_TERMINAL, step=1, status="completed")
ONE = {"toolResultSha256s": ["b" * 64]}  #: the digest of one tool result
COMPLETE = rec(R.LOOP_COMPLETE, rule="next.target_reached")
STOP = rec(R.LOOP_STOPPED, rule="stop.user")
RESUMED = {
    **ARMED,
    "resume": True,
    "resumeBoundary": True,
    "rule": "admit.resume_boundary",
    "next": "next.resume_boundary",
}
BOUNDARY = "the resume boundary is crossed only before step 1 of a resumed run"
REQUESTED = "loop_armed must carry requested in 1..256, not "
STOP_BY = "loop_stopped by {} cannot happen while {}"
NATURAL = "refused as {} after a run was armed, which needed a closed natural turn"
CARRY = "{} is not a rule a {} record can carry"
USAGE = "usage must be {inputTokens, outputTokens} with non-negative integers"
SHOWN_AS = "usageReported appears only as false, on a completed terminal"

Said = list[tuple[int, str, str]]
#: name -> (the ledger's records, every violation verify reports of them)
CASES: dict[str, tuple[list[dict[str, Any]], Said]] = {
    "resumeBoundary on a schedule": (
        [ARMED, {**S1, "resumeBoundary": True}],
        [(2, "verify.resume_misuse", "resumeBoundary appears only on loop_armed")],
    ),
    "no active run, refused while one is": (
        [ARMED, rec(R.COMMAND_REJECTED, rule="stop.no_active_run")],
        [(2, "verify.refusal_contradicts_state", "refused as 'no active run' while run r is active")],
    ),
    "no natural context, refused after a run was armed": (
        [ARMED, STOP, rec(R.COMMAND_REJECTED, rule="admit.natural_context")],
        [
            (3, "verify.refusal_contradicts_state", NATURAL.format("admit.natural_context")),
        ],
    ),
    "no closed turn, refused after a run was armed": (
        [ARMED, STOP, rec(R.COMMAND_REJECTED, rule="admit.no_closed_turn")],
        [
            (3, "verify.refusal_contradicts_state", NATURAL.format("admit.no_closed_turn")),
        ],
    ),
    "a run is active, refused while one is": ([ARMED, rec(R.COMMAND_REJECTED, rule="admit.run_active")], []),
    "no active run, refused after the close": (
        [ARMED, STOP, rec(R.COMMAND_REJECTED, rule="stop.no_active_run")],
        [],
    ),
    "requested 0": ([{**ARMED, "requested": 0}], [(1, "verify.bad_field", REQUESTED + "'0'")]),
    "requested 257": ([{**ARMED, "requested": 257}], [(1, "verify.bad_field", REQUESTED + "'257'")]),
    "requested 256": ([{**ARMED, "requested": 256}, STOP], []),
    "requested true": ([{**ARMED, "requested": True}], [(1, "verify.bad_field", REQUESTED + "'True'")]),
    "requested as 60 characters": (
        [{**ARMED, "requested": "x" * 60}],
        [(1, "verify.bad_field", REQUESTED + repr("x" * 40))],
    ),
    "requested as 60 characters, named by its first 40 when the run completes": (
        [{**ARMED, "requested": "x" * 60}, S1, E1, T1, COMPLETE],
        [
            (1, "verify.bad_field", REQUESTED + repr("x" * 40)),
            (5, "verify.complete_short", f"loop_complete after 1 of {'x' * 40} steps"),
        ],
    ),
    "resume not a boolean": (
        [{**ARMED, "resume": "yes"}],
        [(1, "verify.bad_field", "resume must be true or false")],
    ),
    "resumeBoundary false": (
        [{**ARMED, "resumeBoundary": False}],
        [(1, "verify.bad_field", "resumeBoundary, when present, must be true")],
    ),
    "a boundary without --resume": (
        [{**ARMED, "resumeBoundary": True}],
        [(1, "verify.resume_misuse", "a resume boundary without --resume and its admit rule")],
    ),
    "a boundary with --resume and its rule": ([RESUMED, {**S1, "rule": "next.resume_boundary"}], []),
    "a boundary admitted by admit.ok": (
        [{**RESUMED, "rule": "admit.ok"}],
        [
            (1, "verify.resume_misuse", "a resume boundary without --resume and its admit rule"),
            (1, "verify.unknown_rule", "next 'next.resume_boundary' cannot follow this admission"),
        ],
    ),
    "admitted across a boundary it does not record": (
        [{**ARMED, "resume": True, "rule": "admit.resume_boundary"}],
        [
            (1, "verify.resume_misuse", "admitted across a resume boundary it does not record"),
            (1, "verify.unknown_rule", "next 'next.ok' cannot follow this admission"),
        ],
    ),
    "next that no admission promises": (
        [{**ARMED, "next": "next.target_reached"}],
        [(1, "verify.unknown_rule", "next 'next.target_reached' cannot follow this admission")],
    ),
    "step 3 scheduled first": (
        [ARMED, {**S1, "step": 3}],
        [(2, "verify.step_order", "step 3 scheduled after step 0")],
    ),
    "a step written as text": (
        [ARMED, {**S1, "step": "1"}],
        [(2, "verify.step_order", "step '1' scheduled after step 0")],
    ),
    "an enqueue of the step scheduled out of order": (  # the run goes on from the step it names
        [ARMED, {**S1, "step": 3}, {**E1, "step": 3}],
        [(2, "verify.step_order", "step 3 scheduled after step 0")],
    ),
    "an enqueue of step 1 after its schedule wrote it as text": (  # the run goes on from step 1
        [ARMED, {**S1, "step": "1"}, E1],
        [(2, "verify.step_order", "step '1' scheduled after step 0")],
    ),
    "a step beyond the requested": (
        [{**ARMED, "requested": 1}, S1, E1, T1, rec(R.TICK_SCHEDULED, step=2, rule="next.ok")],
        [(5, "verify.enqueue_beyond_target", "step 2 exceeds the 1 requested")],
    ),
    "the boundary crossed at step 2": (
        [RESUMED, {**S1, "rule": "next.resume_boundary"}, E1, T1,
         rec(R.TICK_SCHEDULED, step=2, rule="next.resume_boundary")],
        [(5, "verify.resume_misuse", BOUNDARY)],
    ),
    "the boundary crossed by a run armed without one": (
        [ARMED, {**S1, "rule": "next.resume_boundary"}],
        [(2, "verify.resume_misuse", BOUNDARY)],
    ),
    "a schedule breaking loop_armed's promise": (
        [RESUMED, S1],
        [(2, "verify.resume_misuse", "loop_armed promised next.resume_boundary, the schedule says next.ok")],
    ),
    "a schedule with a rule no schedule carries": (
        [ARMED, {**S1, "rule": "next.target_reached"}],
        [
            (2, "verify.unknown_rule", CARRY.format("'next.target_reached'", "tick_scheduled")),
            (2, "verify.resume_misuse", "loop_armed promised next.ok, the schedule says next.target_reached"),
        ],
    ),
    "dueAt not a time": (
        [ARMED, {**S1, "dueAt": "soon"}],
        [(2, "verify.bad_field", "dueAt is not YYYY-MM-DDTHH:MM:SS.mmmZ")],
    ),
    "dueAt a minute before the schedule": (
        [ARMED, {**S1, "dueAt": "2026-11-30T08:59:00.000Z"}],
        [(2, "verify.time_order", "dueAt 2026-11-30T08:59:00.000Z is before the step was scheduled")],
    ),
    "an enqueue a minute before its dueAt": (
        [ARMED, {**S1, "dueAt": "2026-11-30T09:01:00.000Z"}, E1],
        [(3, "verify.time_order", "step 1 enqueued before it was due")],
    ),
    "dueAt 100 ms early (the slack)": ([ARMED, {**S1, "dueAt": "2026-11-30T09:00:00.900Z"}], []),
    "dueAt 101 ms before the schedule": (
        [ARMED, {**S1, "dueAt": "2026-11-30T09:00:00.899Z"}],
        [(2, "verify.time_order", "dueAt 2026-11-30T09:00:00.899Z is before the step was scheduled")],
    ),
    "an enqueue 100 ms before its dueAt (the slack)": (
        [ARMED, {**S1, "dueAt": "2026-11-30T09:00:02.100Z"}, E1],
        [],
    ),
    "an enqueue 101 ms before its dueAt": (
        [ARMED, {**S1, "dueAt": "2026-11-30T09:00:02.101Z"}, E1],
        [(3, "verify.time_order", "step 1 enqueued before it was due")],
    ),
    "an enqueue of another step": (
        [ARMED, S1, {**E1, "step": 2}],
        [(3, "verify.step_order", "enqueued step 2 but step 1 is pending")],
    ),
    "a cancel of another step": (
        [ARMED, S1, rec(R.TICK_CANCELLED, step=2, rule="cancel.state_changed")],
        [(3, "verify.step_order", "cancelled step 2 but step 1 is pending")],
    ),
    "a cancel whose rule is not text": (
        [ARMED, S1, rec(R.TICK_CANCELLED, step=1, rule=5)],
        [(3, "verify.missing_rule", "tick_cancelled_before_enqueue must name the rule that caused it")],
    ),
    "a terminal status no turn ends with": (
        [ARMED, S1, E1, {**T1, "status": "done"}],
        [(4, "verify.bad_field", "status 'done' is not a terminal status")],
    ),
    "negative usage": (
        [ARMED, S1, E1, {**T1, "usage": {"inputTokens": -1, "outputTokens": 1}}],
        [(4, "verify.bad_field", "usage must be {inputTokens, outputTokens} with non-negative integers")],
    ),
    "usage and usageReported both": (
        [ARMED, S1, E1, {**T1, "usage": {"inputTokens": 1, "outputTokens": 1}, "usageReported": False}],
        [(4, "verify.bad_field", "usage and usageReported are exclusive")],
    ),
    "usageReported true": (
        [ARMED, S1, E1, {**T1, "usageReported": True}],
        [(4, "verify.bad_field", SHOWN_AS)],
    ),
    "usageReported on an error": (
        [ARMED, S1, E1, {**T1, "status": "error", "usageReported": False}],
        [(4, "verify.bad_field", SHOWN_AS)],
    ),
    "negative toolCalls": (
        [ARMED, S1, E1, {**T1, "toolCalls": -1}],
        [(4, "verify.bad_field", "toolCalls must be a non-negative integer")],
    ),
    "toolErrors true": (
        [ARMED, S1, E1, {**T1, "toolErrors": True}],
        [(4, "verify.bad_field", "toolErrors must be a non-negative integer")],
    ),
    "loop_complete after an error": (
        [{**ARMED, "requested": 1}, S1, E1, {**T1, "status": "error"},
         rec(R.LOOP_COMPLETE, rule="next.target_reached")],
        [(5, "verify.complete_short", "loop_complete after an error terminal")],
    ),
    "loop_complete after an unknown": (
        [{**ARMED, "requested": 1}, S1, E1, {**T1, "status": "unknown"},
         rec(R.LOOP_COMPLETE, rule="next.target_reached")],
        [(5, "verify.complete_short", "loop_complete after an unknown terminal")],
    ),
    "stop.inconsistent_turn while armed": (
        [ARMED, rec(R.LOOP_STOPPED, rule="stop.inconsistent_turn")],
        [(2, "verify.stop_rule_mismatch", STOP_BY.format("stop.inconsistent_turn", "armed"))],
    ),
    "stop.user while scheduled": (
        [ARMED, S1, STOP],
        [(3, "verify.stop_rule_mismatch", STOP_BY.format("stop.user", "scheduled"))],
    ),
    "a stop repeating another rule than the cancel's": (
        [ARMED, S1, rec(R.TICK_CANCELLED, step=1, rule="cancel.state_changed"),
         rec(R.LOOP_STOPPED, rule="cancel.person_message")],
        [(4, "verify.stop_rule_mismatch", STOP_BY.format("cancel.person_message", "cancelled"))],
    ),
    "stop.user after the last step": (
        [{**ARMED, "requested": 1}, S1, E1, T1, STOP],
        [(5, "verify.stop_rule_mismatch", STOP_BY.format("stop.user", "ended"))],
    ),
    "stop.user between steps": ([ARMED, S1, E1, T1, STOP], []),
    "stop.user after an error": (
        [ARMED, S1, E1, {**T1, "status": "error"}, STOP],
        [(5, "verify.stop_rule_mismatch", STOP_BY.format("stop.user", "ended"))],
    ),
    "a rule on a record that carries none": (
        [ARMED, S1, {**E1, "rule": "next.ok"}],
        [(3, "verify.unknown_rule", CARRY.format("'next.ok'", "tick_enqueued"))],
    ),
    "a schedule after a next that was refused": (
        [{**ARMED, "next": "next.target_reached"}, S1],
        [(1, "verify.unknown_rule", "next 'next.target_reached' cannot follow this admission")],
    ),
    "a step that is true": (
        [ARMED, {**S1, "step": True}],
        [(2, "verify.step_order", "step True scheduled after step 0")],
    ),
    "step 2 of a resumed run, scheduled by next.ok": (
        [RESUMED, {**S1, "rule": "next.resume_boundary"}, E1, T1, {**S1, "step": 2}],
        [],
    ),
    "zero tokens, zero tool calls": (
        [ARMED, S1, E1, {**T1, "usage": {"inputTokens": 0, "outputTokens": 0}, "toolCalls": 0}],
        [],
    ),
    "usage as a list": ([ARMED, S1, E1, {**T1, "usage": [1, 2]}], [(4, "verify.bad_field", USAGE)]),
    "usage with a third count": (
        [ARMED, S1, E1, {**T1, "usage": {"inputTokens": 1, "outputTokens": 1, "cachedTokens": 1}}],
        [(4, "verify.bad_field", USAGE)],
    ),
    "usage counted as true": (
        [ARMED, S1, E1, {**T1, "usage": {"inputTokens": True, "outputTokens": 1}}],
        [(4, "verify.bad_field", USAGE)],
    ),
    "a reply digest in capitals": (
        [ARMED, S1, E1, {**T1, "replySha256": "A" * 64}],
        [(4, "verify.bad_field", "replySha256 must be 64 lowercase hex digits")],
    ),
    "a tool result digest that is short": (
        [ARMED, S1, E1, {**T1, "toolResultSha256s": ["a" * 63]}],
        [(4, "verify.bad_field", "toolResultSha256s must be a non-empty list of 64-hex-digit digests")],
    ),
    "a tool result digest that is not text": (
        [ARMED, S1, E1, {**T1, "toolResultSha256s": ["a" * 64, 5]}],
        [(4, "verify.bad_field", "toolResultSha256s must be a non-empty list of 64-hex-digit digests")],
    ),
    "digests of a reply and one tool call": (
        [ARMED, S1, E1, {**T1, "replySha256": "a" * 64, "toolCalls": 1, "toolErrors": 0, **ONE}],
        [],
    ),
    "loop_complete after a status that is not text": (
        [{**ARMED, "requested": 1}, S1, E1, {**T1, "status": 5}, COMPLETE],
        [
            (4, "verify.bad_field", "status 5 is not a terminal status"),
            (5, "verify.complete_short", "loop_complete after no valid terminal"),
        ],
    ),
    "steps as enqueued": ([ARMED, S1, E1, T1, {**STOP, "steps": 1}], []),
    "steps one more than enqueued": (
        [ARMED, S1, E1, T1, {**STOP, "steps": 2}],
        [(5, "verify.steps_mismatch", "closes after 2 steps; 1 were enqueued")],
    ),
    "a run armed again after its close": (
        [ARMED, STOP, ARMED],
        [(3, "verify.run_rearmed", "run r armed twice")],
    ),
    "a cancel without its rule, then a stop with an empty one": (  # one violation per record, no cascade
        [ARMED, S1, rec(R.TICK_CANCELLED, step=1, rule=5), rec(R.LOOP_STOPPED, rule="")],
        [
            (3, "verify.missing_rule", "tick_cancelled_before_enqueue must name the rule that caused it"),
            (4, "verify.unknown_rule", CARRY.format("''", "loop_stopped")),
        ],
    ),
    "steps written as text": (
        [ARMED, {**STOP, "steps": "0"}],
        [(2, "verify.steps_mismatch", "closes after '0' steps; 0 were enqueued")],
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_run_violation_says_exactly_this_on_its_line(name: str) -> None:
    items, said = CASES[name]
    report = verify(build(items))
    assert [(v.line, v.rule, v.message) for v in report.violations] == said


@pytest.mark.parametrize("run_id", ["", 7, None])
def test_a_run_record_without_a_run_id_names_its_type(run_id: object) -> None:
    """An empty, non-text or absent runId is refused on its line, and the record moves no run."""
    lines = build([ARMED, S1])
    fields = {k: v for k, v in decode(lines[1][1]).items() if k != "runId"}
    lines[1] = (2, canonical(fields if run_id is None else {**fields, "runId": run_id}))
    report = verify(lines)
    said = [(v.line, v.rule, v.message) for v in report.violations]
    assert said == [(2, "verify.missing_run_id", "tick_scheduled must carry runId")]


@pytest.mark.parametrize(
    ("field", "value"), [("policyId", "terse"), ("timeStepSha256", "c" * 64), ("timeStepBytes", 5)]
)
def test_each_policy_field_changed_within_a_run_is_named_on_its_line(field: str, value: object) -> None:
    """Any of the three policy fields changing mid-run is policy_changed (a new text for the same id is
    also a policy_conflict, verify's own check)."""
    lines = build([ARMED, S1])
    lines[1] = (2, canonical({**decode(lines[1][1]), field: value}))
    found = [(v.line, v.rule) for v in verify(lines).violations]
    assert found[-1:] == [(2, "verify.policy_changed")]
    assert verify(lines).violations[-1].message == "policy fields changed within run r"
