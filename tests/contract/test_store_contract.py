"""One contract, every backend: what the ticks, executor, monitor and CLI rely on from a store."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta

import pytest

from tickloop.errors import ConflictError, NotFoundError, TransitionError, ValidationError
from tickloop.operator.conditions import Flagged
from tickloop.operator.domain import (
    PROGRESS_OUTCOMES,
    DecisionKind,
    GoalStatus,
    IntentOrigin,
    IntentStatus,
    NewIntent,
    NewPlanStep,
    NewProgress,
    Outcome,
    StepStatus,
    TaskStatus,
    Tier,
    Verdict,
)
from tickloop.operator.store import Ending, Store

S = IntentStatus
NOW = datetime(2026, 7, 7, 17, 0, tzinfo=UTC)  # the same moment the fixture created the profiles
LATER = NOW + timedelta(minutes=5)
METACHARS = "Robert'); DROP TABLE intents;-- \" % _ \\ ; /* */ :name %(x)s ?"


def staged(store: Store, verdict: Verdict = Verdict.ALLOWED, *, ready: bool = True, title: str = "t") -> int:
    intent = store.stage_intent("p", NewIntent("note", title, payload={"k": 1}), now=NOW)
    store.record_verdict("p", intent.id, verdict, ["rule.x"], now=NOW)
    if verdict is Verdict.ALLOWED and ready:
        store.mark_ready("p", intent.id, now=NOW)
    return intent.id


# -- profiles and goal models ----------------------------------------------------------------------


def test_profile_names_are_unique(store: Store) -> None:
    """Creating a profile that exists is a conflict, not a silent overwrite."""
    with pytest.raises(ConflictError, match="already exists"):
        store.create_profile("p", now=NOW)
    assert [p.name for p in store.list_profiles()] == ["p", "q"]


def test_unknown_profile_is_not_found(store: Store) -> None:
    """Reading or writing under a profile that does not exist names the profile."""
    with pytest.raises(NotFoundError, match="nobody"):
        store.get_profile("nobody")
    with pytest.raises(NotFoundError, match="nobody"):
        store.add_task("nobody", "x", now=NOW)


def test_goal_models_are_versioned_and_one_is_active(store: Store) -> None:
    """New versions start as drafts; activating one retires the previous active one."""
    first = store.add_goal_model("p", title="ship v1", data={"why": "users"}, now=NOW)
    second = store.add_goal_model("p", title="ship v2", now=NOW)
    assert (first.version, second.version, second.status) == (1, 2, GoalStatus.DRAFT)
    assert store.active_goal_model("p") is None
    store.activate_goal_model("p", 1, now=NOW)
    store.activate_goal_model("p", 2, now=LATER)
    statuses = [g.status for g in store.list_goal_models("p")]
    assert statuses == [GoalStatus.RETIRED, GoalStatus.ACTIVE]
    active = store.active_goal_model("p")
    assert active is not None
    assert (active.version, active.activated_at) == (2, LATER)
    assert store.get_goal_model("p", 1).data == {"why": "users"}


def test_goal_models_are_per_profile(store: Store) -> None:
    """Another profile's goal model is invisible and cannot be activated from here."""
    store.add_goal_model("p", title="mine", now=NOW)
    assert store.add_goal_model("q", title="theirs", now=NOW).version == 1
    with pytest.raises(NotFoundError):
        store.activate_goal_model("q", 2, now=NOW)


# -- board and plan --------------------------------------------------------------------------------


def test_board_orders_by_priority_and_hash_tracks_changes(store: Store) -> None:
    """The board lists high priority first, and its hash changes exactly when the board does."""
    low = store.add_task("p", "low", priority=1, now=NOW)
    high = store.add_task("p", "high", priority=9, now=NOW)
    assert [t.id for t in store.list_tasks("p")] == [high.id, low.id]
    before = store.board_hash("p")
    assert before.startswith("sha256:")
    assert store.board_hash("p") == before
    store.set_task_status("p", low.id, TaskStatus.BLOCKED, now=LATER)
    assert store.board_hash("p") != before


def test_board_hash_golden_vector(store: Store) -> None:
    """The board hash is sha256 over canonical JSON of sorted [id, title, priority, status] rows;
    this vector pins the format, which the stall monitor compares across ticks and versions."""
    task = store.add_task("p", "Write the report", priority=5, now=NOW)
    assert task.id == 1
    # [[1,"Write the report",5,"todo"]]
    assert store.board_hash("p") == "sha256:d498a1d18cef70765170671a40cc697fea2c69fdee99eed2af53669fd4a017ee"


def test_board_hash_is_the_documented_json_for_any_title(store: Store) -> None:
    """Quotes, backslashes, control characters, non-ASCII and U+2028 in titles hash in the documented
    form: ``json.dumps(rows, separators=(",", ":"), ensure_ascii=False)`` in UTF-8."""
    for title in ['say "hi" \\ \\n', "tab\tnew\nline\x01\x1f\x7f\r\b\f", "Grüße 🎉 \u2028\u2029\ufeff"]:
        store.add_task("p", title, priority=-2, now=NOW)
    rows = [[t.id, t.title, t.priority, str(t.status)] for t in store.list_tasks("p")]
    canonical = json.dumps(sorted(rows), separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    assert store.board_hash("p") == "sha256:" + hashlib.sha256(canonical).hexdigest()


def test_task_status_is_compare_and_set(store: Store) -> None:
    """A status change that expected a different prior status loses with a conflict."""
    task = store.add_task("p", "t", now=NOW)
    store.set_task_status("p", task.id, TaskStatus.DONE, now=NOW, expected=TaskStatus.TODO)
    with pytest.raises(ConflictError, match="done"):
        store.set_task_status("p", task.id, TaskStatus.BLOCKED, now=NOW, expected=TaskStatus.TODO)
    with pytest.raises(NotFoundError):
        store.set_task_status("q", task.id, TaskStatus.BLOCKED, now=NOW)


def test_plan_current_step_is_first_pending(store: Store) -> None:
    """The fast tick advances the first pending step; a replan keeps finished steps in front."""
    goal = store.add_goal_model("p", title="g", now=NOW)
    task = store.add_task("p", "t", now=NOW)
    steps = store.replace_plan("p", goal.version, [NewPlanStep("one", task.id), NewPlanStep("two")], now=NOW)
    current = store.current_plan_step("p", goal.version)
    assert current is not None
    assert (current.title, current.task_id) == ("one", task.id)
    store.set_step_status("p", steps[0].id, StepStatus.DONE, now=NOW)
    store.replace_plan("p", goal.version, [NewPlanStep("three")], now=NOW)
    assert [(s.title, s.status) for s in store.list_plan("p", goal.version)] == [
        ("one", StepStatus.DONE),
        ("three", StepStatus.PENDING),
    ]
    with pytest.raises(ConflictError):
        store.set_step_status("p", steps[0].id, StepStatus.BLOCKED, now=NOW)


def test_plan_for_unknown_goal_is_not_found(store: Store) -> None:
    """A plan can only be written for a goal model of the same profile."""
    store.add_goal_model("p", title="g", now=NOW)
    with pytest.raises(NotFoundError):
        store.replace_plan("q", 1, [NewPlanStep("x")], now=NOW)


# -- intents ---------------------------------------------------------------------------------------


def test_intent_round_trips_every_field(store: Store) -> None:
    """What is staged reads back exactly, including tier, dry-run and tainted origin."""
    new = NewIntent(
        "email",
        "Hello",
        recipient="a@example.org",
        payload={"body": "hi", "n": [1, 2]},
        tier=Tier.EXTERNAL,
        dry_run=False,
        origin=IntentOrigin("fast", tainted=True),
    )
    made = store.stage_intent("p", new, now=NOW)
    got = store.get_intent("p", made.id)
    assert got == made
    assert (got.status, got.tier, got.dry_run, got.origin) == (S.PROPOSED, Tier.EXTERNAL, False, new.origin)
    assert got.payload == {"body": "hi", "n": [1, 2]}


def test_gate_verdict_moves_proposed_once(store: Store) -> None:
    """The gate's verdict and reasons are recorded once; a second verdict conflicts."""
    intent = store.stage_intent("p", NewIntent("note", "x"), now=NOW)
    judged = store.record_verdict("p", intent.id, Verdict.REQUIRES_APPROVAL, ["money"], now=NOW)
    assert (judged.status, judged.verdict, judged.verdict_reasons) == (
        S.REQUIRES_APPROVAL,
        Verdict.REQUIRES_APPROVAL,
        ("money",),
    )
    with pytest.raises(TransitionError):
        store.record_verdict("p", intent.id, Verdict.ALLOWED, [], now=NOW)


def test_approval_links_a_decision(store: Store) -> None:
    """Approving records who, when and why, and links the decision to the intent."""
    intent_id = staged(store, Verdict.REQUIRES_APPROVAL)
    decision = store.decide("p", intent_id, DecisionKind.APPROVE, by="ian", note="fine", now=LATER)
    intent = store.get_intent("p", intent_id)
    assert (intent.status, intent.decision_id) == (S.APPROVED, decision.id)
    assert store.get_decision("p", decision.id) == decision
    assert (decision.by, decision.note, decision.decided_at) == ("ian", "fine", LATER)


def test_deny_is_final(store: Store) -> None:
    """A denied intent can be neither approved later nor claimed."""
    intent_id = staged(store, Verdict.REQUIRES_APPROVAL)
    store.decide("p", intent_id, DecisionKind.DENY, by="ian", now=NOW)
    with pytest.raises(ConflictError, match="is denied"):
        store.decide("p", intent_id, DecisionKind.APPROVE, by="ian", now=NOW)
    assert store.claim_intents("p", owner="x", now=NOW) == []


def test_blocked_intent_can_never_be_approved_or_executed(store: Store) -> None:
    """A blocked intent refuses approval, is never claimed, and cannot be marked executed."""
    intent_id = staged(store, Verdict.BLOCKED)
    with pytest.raises(ConflictError, match="blocked"):
        store.decide("p", intent_id, DecisionKind.APPROVE, by="ian", now=NOW)
    assert store.claim_intents("p", owner="x", now=NOW) == []
    with pytest.raises(ConflictError, match="blocked"):
        store.finish_intent("p", intent_id, S.COMPLETED, owner="x", now=NOW)
    assert store.get_intent("p", intent_id).status is S.BLOCKED


def test_approving_an_allowed_intent_is_illegal(store: Store) -> None:
    """Only an intent waiting for approval can be approved."""
    intent_id = staged(store, Verdict.ALLOWED)
    with pytest.raises(ConflictError, match="only an intent at requires_approval"):
        store.decide("p", intent_id, DecisionKind.APPROVE, by="ian", now=NOW)


def test_claim_takes_each_intent_once(store: Store) -> None:
    """Claims return ready and approved intents oldest first, and never the same one twice."""
    first = staged(store)
    second = staged(store, Verdict.REQUIRES_APPROVAL)
    store.decide("p", second, DecisionKind.APPROVE, by="ian", now=NOW)
    staged(store, ready=False)
    claimed = store.claim_intents("p", owner="ex-1", now=LATER, limit=10)
    assert [(i.id, i.claim_prior, i.claim_owner, i.claimed_at) for i in claimed] == [
        (first, S.READY, "ex-1", LATER),
        (second, S.APPROVED, "ex-1", LATER),
    ]
    assert store.claim_intents("p", owner="ex-2", now=LATER) == []
    assert store.claim_intents("q", owner="ex-2", now=LATER) == []


def test_claim_respects_limit_and_window(store: Store) -> None:
    """A claim takes at most ``limit`` intents created inside the rolling window."""
    ids = [staged(store) for _ in range(3)]
    assert [i.id for i in store.claim_intents("p", owner="x", now=NOW, limit=2)] == ids[:2]
    assert store.claim_intents("p", owner="x", now=NOW, since=LATER) == []


def test_release_returns_claim_to_prior_status(store: Store) -> None:
    """The tier floor releases a claim back to exactly where it was (ready or approved)."""
    approved = staged(store, Verdict.REQUIRES_APPROVAL)
    store.decide("p", approved, DecisionKind.APPROVE, by="ian", now=NOW)
    [claim] = store.claim_intents("p", owner="ex", now=NOW)
    with pytest.raises(ConflictError, match="claim was lost"):
        store.release_claim("p", claim.id, owner="someone-else", now=NOW)
    released = store.release_claim("p", claim.id, owner="ex", now=NOW)
    assert (released.status, released.claim_owner, released.claimed_at) == (S.APPROVED, None, None)


def test_executor_lifecycle_to_sent(store: Store) -> None:
    """Claimed -> sending -> sent by the claim's owner, with the result kept."""
    intent_id = staged(store)
    store.claim_intents("p", owner="ex", now=NOW)
    store.mark_sending("p", intent_id, owner="ex", now=NOW)
    done = store.finish_intent("p", intent_id, S.SENT, owner="ex", now=LATER, result={"ok": True})
    assert (done.status, done.result, done.handoff, done.updated_at) == (S.SENT, {"ok": True}, False, LATER)
    with pytest.raises(ConflictError, match="is sent"):
        store.finish_intent("p", intent_id, S.FAILED, owner="ex", now=LATER)


def test_spend_handoff_completes_with_flag(store: Store) -> None:
    """A hand-off ends as completed with the hand-off flag, never mistaken for an execution."""
    intent_id = staged(store)
    store.claim_intents("p", owner="ex", now=NOW)
    done = store.finish_intent("p", intent_id, S.COMPLETED, owner="ex", now=NOW, handoff=True)
    assert (done.status, done.handoff) == (S.COMPLETED, True)


def test_finish_needs_owner_and_legal_ending(store: Store) -> None:
    """Only the claim's owner may end it, and only as sent, completed, failed or needs_human."""
    intent_id = staged(store)
    store.claim_intents("p", owner="ex", now=NOW)
    with pytest.raises(ConflictError):
        store.finish_intent("p", intent_id, S.FAILED, owner="intruder", now=NOW)
    with pytest.raises(ConflictError, match="cannot be finished as ready"):
        store.finish_intent("p", intent_id, S.READY, owner="ex", now=NOW)
    with pytest.raises(TransitionError):
        store.finish_intent("p", intent_id, S.SENT, owner="ex", now=NOW)  # sent needs sending first


def test_hand_over_ends_one_side_effect_and_starts_the_next_in_one_call(store: Store) -> None:
    """finish_and_send ends a `sending` claim with its result and moves the next claim to `sending`."""
    first, second = staged(store), staged(store)
    store.claim_intents("p", owner="ex", now=NOW)
    assert store.finish_and_send("p", ending=None, send=first, owner="ex", now=NOW) == (False, True)
    ending = Ending(first, S.COMPLETED, {"call": "x"}, handoff=True)
    assert store.finish_and_send("p", ending=ending, send=second, owner="ex", now=LATER) == (True, True)
    ended, sending = store.get_intent("p", first), store.get_intent("p", second)
    assert (ended.status, ended.result, ended.handoff, ended.updated_at) == (
        S.COMPLETED,
        {"call": "x"},
        True,
        LATER,
    )
    assert (sending.status, sending.claim_owner, sending.updated_at) == (S.SENDING, "ex", LATER)
    last = Ending(second, S.SENT)
    assert store.finish_and_send("p", ending=last, send=None, owner="ex", now=LATER) == (True, False)
    assert (store.get_intent("p", second).status, store.get_intent("p", second).result) == (S.SENT, None)


def test_hand_over_halves_win_or_lose_on_their_own(store: Store) -> None:
    """A reaped ending is not won while the next claim still enters `sending`; a claim that is not
    the owner's (someone else's, released, never claimed) is not sent while the ending is written."""
    reaped, mine, theirs, released, ready = (staged(store) for _ in range(5))
    store.claim_intents("p", owner="ex", now=NOW, limit=2)
    store.claim_intents("p", owner="other", now=NOW, limit=1)
    store.claim_intents("p", owner="ex", now=NOW, limit=1)
    store.release_claim("p", released, owner="ex", now=NOW)
    store.finish_and_send("p", ending=None, send=reaped, owner="ex", now=NOW)
    assert store.reap_stuck(cutoff=LATER, now=LATER) == [reaped]
    lost_ending = Ending(reaped, S.SENT)
    assert store.finish_and_send("p", ending=lost_ending, send=mine, owner="ex", now=LATER) == (False, True)
    assert store.finish_and_send("p", ending=Ending(mine, S.SENT), send=theirs, owner="ex", now=LATER) == (
        True,
        False,
    )
    for other in (released, ready):
        assert store.finish_and_send("p", ending=None, send=other, owner="ex", now=LATER) == (False, False)
    assert [store.get_intent("p", i).status for i in (reaped, mine, theirs, released, ready)] == [
        S.NEEDS_HUMAN, S.SENT, S.CLAIMED, S.READY, S.READY,
    ]  # fmt: skip


def test_hand_over_never_ends_a_claim_that_is_not_sending(store: Store) -> None:
    """Only a claim in `sending` is ended by a hand-over: a claimed, finished, unknown or other
    profile's intent is not won and stays exactly as it was."""
    claimed, finished = staged(store), staged(store)
    store.claim_intents("p", owner="ex", now=NOW)
    store.finish_intent("p", finished, S.FAILED, owner="ex", now=NOW)
    elsewhere = store.stage_intent("q", NewIntent("note", "q's"), now=NOW).id
    for intent_id in (claimed, finished, elsewhere, 10**9):
        ending = Ending(intent_id, S.SENT)
        assert store.finish_and_send("p", ending=ending, send=None, owner="ex", now=LATER) == (False, False)
    assert store.finish_and_send("q", ending=None, send=claimed, owner="ex", now=LATER) == (False, False)
    assert [store.get_intent("p", i).status for i in (claimed, finished)] == [S.CLAIMED, S.FAILED]
    assert store.get_intent("q", elsewhere).status is S.PROPOSED
    assert store.finish_and_send("p", ending=None, send=None, owner="ex", now=LATER) == (False, False)


def test_hand_over_refuses_a_bad_ending_before_writing(store: Store) -> None:
    """An ending that is not a way a claim ends, or one intent in both halves, changes nothing."""
    sending, claimed = staged(store), staged(store)
    store.claim_intents("p", owner="ex", now=NOW)
    store.mark_sending("p", sending, owner="ex", now=NOW)
    with pytest.raises(ConflictError, match="cannot be finished as ready"):
        store.finish_and_send("p", ending=Ending(sending, S.READY), send=claimed, owner="ex", now=LATER)
    with pytest.raises(ValidationError, match=f"intent {claimed}"):
        store.finish_and_send("p", ending=Ending(claimed, S.SENT), send=claimed, owner="ex", now=LATER)
    with pytest.raises(ValidationError, match="result"):
        store.finish_and_send(
            "p", ending=Ending(sending, S.SENT, {"x": {1, 2}}), send=claimed, owner="ex", now=LATER
        )
    assert [store.get_intent("p", i).status for i in (sending, claimed)] == [S.SENDING, S.CLAIMED]


def test_reaper_takes_only_old_sending_claims(store: Store) -> None:
    """The reaper routes stale `sending` claims to needs_human and leaves fresh and finished ones."""
    old, fresh, finished = staged(store), staged(store), staged(store)
    store.claim_intents("p", owner="ex", now=NOW, limit=1)
    store.claim_intents("p", owner="ex", now=LATER, limit=2)
    for intent_id in (old, fresh, finished):
        store.mark_sending("p", intent_id, owner="ex", now=LATER)
    store.finish_intent("p", finished, S.SENT, owner="ex", now=LATER)
    reaped = store.reap_stuck(cutoff=NOW + timedelta(minutes=1), now=LATER + timedelta(hours=1))
    assert reaped == [old]
    assert [store.get_intent("p", i).status for i in (old, fresh, finished)] == [
        S.NEEDS_HUMAN,
        S.SENDING,
        S.SENT,
    ]
    with pytest.raises(ConflictError):
        store.finish_intent("p", old, S.SENT, owner="ex", now=LATER)


def test_stale_claims_never_sending_go_back_to_their_prior_status(store: Store) -> None:
    """A claim its dead claimer never moved to `sending` returns to ready; fresh, sending and other
    profiles' claims stay, and the dead claimer can no longer move the intent."""
    old, fresh, sending = staged(store), staged(store), staged(store)
    store.claim_intents("p", owner="dead", now=NOW, limit=1)
    store.claim_intents("p", owner="live", now=LATER, limit=2)
    store.mark_sending("p", sending, owner="live", now=LATER)
    released = store.release_stale_claims("p", cutoff=NOW + timedelta(minutes=1), now=LATER)
    assert released == [old]
    assert [store.get_intent("p", i).status for i in (old, fresh, sending)] == [S.READY, S.CLAIMED, S.SENDING]
    assert store.get_intent("p", old).claim_owner is None
    with pytest.raises(ConflictError):
        store.mark_sending("p", old, owner="dead", now=LATER)
    assert store.release_stale_claims("q", cutoff=LATER + timedelta(hours=9), now=LATER) == []


def test_failed_actions_list_the_tried_and_failed(store: Store) -> None:
    """Failed, needs-human, denied and blocked intents form the drift guard's list, newest first."""
    blocked = staged(store, Verdict.BLOCKED)
    ok = staged(store)
    failed = staged(store)
    store.claim_intents("p", owner="ex", now=NOW)
    store.finish_intent("p", failed, S.FAILED, owner="ex", now=NOW)
    store.finish_intent("p", ok, S.COMPLETED, owner="ex", now=NOW)
    assert [i.id for i in store.failed_actions("p", since=NOW)] == [failed, blocked]
    assert store.failed_actions("p", since=LATER) == []
    key = store.get_intent("p", failed).action_key()
    assert key == "note|t|"


def test_list_intents_filters_by_status(store: Store) -> None:
    """`intents --status` shows only intents at that status, newest first."""
    a, b = staged(store), staged(store, Verdict.REQUIRES_APPROVAL)
    assert [i.id for i in store.list_intents("p")] == [b, a]
    assert [i.id for i in store.list_intents("p", status=S.REQUIRES_APPROVAL)] == [b]
    assert store.list_intents("q") == []


@pytest.mark.parametrize("op", ["get", "verdict", "ready", "decide", "release", "sending", "finish"])
def test_intent_from_another_profile_is_not_found(store: Store, op: str) -> None:
    """Every intent operation refuses an id that belongs to another profile."""
    intent_id = staged(store, Verdict.REQUIRES_APPROVAL)
    calls = {
        "get": lambda: store.get_intent("q", intent_id),
        "verdict": lambda: store.record_verdict("q", intent_id, Verdict.ALLOWED, [], now=NOW),
        "ready": lambda: store.mark_ready("q", intent_id, now=NOW),
        "decide": lambda: store.decide("q", intent_id, DecisionKind.APPROVE, by="x", now=NOW),
        "release": lambda: store.release_claim("q", intent_id, owner="x", now=NOW),
        "sending": lambda: store.mark_sending("q", intent_id, owner="x", now=NOW),
        "finish": lambda: store.finish_intent("q", intent_id, S.FAILED, owner="x", now=NOW),
    }
    with pytest.raises(NotFoundError, match=f"intent {intent_id}"):
        calls[op]()
    assert store.get_intent("p", intent_id).status is S.REQUIRES_APPROVAL


@pytest.mark.parametrize("bad_id", [-1, 0, 2**63, 10**30])
def test_impossible_ids_are_refused_cleanly(store: Store, bad_id: int) -> None:
    """Negative, zero and out-of-range ids give a store error, never a driver crash."""
    with pytest.raises((NotFoundError, ValidationError)):
        store.get_intent("p", bad_id)
    with pytest.raises((NotFoundError, ValidationError)):
        store.decide("p", bad_id, DecisionKind.APPROVE, by="x", now=NOW)


def test_unknown_ids_are_not_found(store: Store) -> None:
    """Ids that were never issued are reported as not found, not as crashes."""
    for call in (
        lambda: store.get_intent("p", 999_999),
        lambda: store.get_task("p", 999_999),
        lambda: store.get_decision("p", 999_999),
        lambda: store.get_goal_model("p", 999_999),
        lambda: store.set_step_status("p", 999_999, StepStatus.DONE, now=NOW),
    ):
        with pytest.raises(NotFoundError):
            call()


# -- progress, observations, notes, critiques ------------------------------------------------------


def test_progress_rows_newest_first_by_kind(store: Store) -> None:
    """Progress rows keep their outcome label and state hash, newest first, filterable by kind."""
    intent_id = staged(store)
    for n, kind in enumerate(["fast", "observe", "fast"]):
        store.record_progress(
            "p",
            NewProgress(
                kind, Outcome.NOOP, NOW, NOW + timedelta(seconds=n), state_hash=f"h{n}", intent_id=intent_id
            ),
        )
    rows = store.recent_progress("p", limit=2)
    assert [r.state_hash for r in rows] == ["h2", "h1"]
    assert [r.state_hash for r in store.recent_progress("p", tick_kind="fast")] == ["h2", "h0"]
    assert rows[0].intent_id == intent_id
    assert store.recent_progress("q") == []


def test_progress_for_unknown_intent_is_refused(store: Store) -> None:
    """A progress row may only point at an intent that exists in its own profile."""
    with pytest.raises(NotFoundError):
        store.record_progress("p", NewProgress("fast", Outcome.FAILED, NOW, NOW, intent_id=424242))
    theirs = store.stage_intent("q", NewIntent("note", "theirs"), now=NOW)
    with pytest.raises(NotFoundError):
        store.record_progress("p", NewProgress("fast", Outcome.FAILED, NOW, NOW, intent_id=theirs.id))
    assert store.recent_progress("p") == []


def test_plan_step_cannot_link_another_profiles_task(store: Store) -> None:
    """A plan step may only link a task on its own profile's board."""
    goal = store.add_goal_model("p", title="g", now=NOW)
    theirs = store.add_task("q", "theirs", now=NOW)
    with pytest.raises(NotFoundError):
        store.replace_plan("p", goal.version, [NewPlanStep("x", theirs.id)], now=NOW)
    assert store.list_plan("p", goal.version) == []


def test_observations_deduplicate_per_profile(store: Store) -> None:
    """The same content hash is recorded once per profile, but each profile may record it."""
    first = store.add_observation("p", source="git", content_hash="sha256:aa", payload={"x": 1}, now=NOW)
    assert first is not None
    assert first.tainted
    assert store.add_observation("p", source="git", content_hash="sha256:aa", payload={}, now=NOW) is None
    assert store.add_observation("q", source="git", content_hash="sha256:aa", payload={}, now=NOW) is not None
    assert [o.id for o in store.list_observations("p")] == [first.id]


def test_note_search_matches_all_words(store: Store) -> None:
    """Full-text search finds notes with every query word, any case, ignoring punctuation."""
    hit = store.add_note("p", "Quarterly report for ACME-Corp is due", now=NOW)
    store.add_note("p", "report nothing else", now=NOW)
    store.add_note("q", "quarterly acme report", now=NOW)
    assert [n.id for n in store.search_notes("p", "acme REPORT")] == [hit.id]
    assert store.search_notes("p", "missing") == []
    assert store.search_notes("p", "  ") == []


_LITERAL_NOTES = ["near a b", "a or b", "col report", "a report", "1 or 1"]


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ('"', []),
        ("NEAR(a b)", ["near a b"]),
        ("a OR b*", ["a or b"]),
        ("') OR 1=1 --", ["1 or 1"]),
        ("col:report", ["col report"]),
        ("^report", ["a report", "col report"]),
    ],
)
def test_note_search_treats_operators_as_text(store: Store, query: str, found: list[str]) -> None:
    """Search syntax and SQL in a query are just words: the notes holding every word match, no more."""
    for text in _LITERAL_NOTES:
        store.add_note("p", text, now=NOW)
    assert sorted(n.text for n in store.search_notes("p", query)) == found


def test_critiques_keep_last_three_per_goal(store: Store) -> None:
    """Self-critiques are ephemeral: only the newest three per goal survive."""
    for n in range(5):
        store.add_critique("p", 1, f"c{n}", failure_type="repeat", now=NOW)
    store.add_critique("p", 2, "other", failure_type="scope", now=NOW)
    assert [c.text for c in store.recent_critiques("p", 1)] == ["c4", "c3", "c2"]
    assert [c.text for c in store.recent_critiques("p", 1, limit=10)] == ["c4", "c3", "c2"]
    assert [c.text for c in store.recent_critiques("p", 2)] == ["other"]


# -- attention, notifications, monitor, state of play, locks ---------------------------------------


def test_attention_spend_respects_cap_and_gap(store: Store) -> None:
    """A spend fails inside the minimum gap and past the daily cap, and the cap resets each day."""
    gap = timedelta(minutes=90)

    def spend(at: timedelta, day: str = "2026-07-07") -> bool:
        return store.spend_attention("p", now=NOW + at, day=day, cap=2, min_gap=gap, reason="r")

    assert spend(timedelta(0))
    assert not spend(timedelta(minutes=89))
    assert spend(timedelta(minutes=90))
    assert not spend(timedelta(minutes=200))  # cap of 2 reached today
    assert spend(timedelta(minutes=300), day="2026-07-08")
    assert len(store.attention_spends("p")) == 3
    assert store.attention_spends("q") == []


def test_attention_budgets_are_separate(store: Store) -> None:
    """A zero cap never spends, and one budget's spends do not consume another's."""
    assert not store.spend_attention("p", now=NOW, day="d", cap=0, min_gap=timedelta(0))
    assert store.spend_attention("p", now=NOW, day="d", cap=1, min_gap=timedelta(hours=1), budget="voice")
    assert store.spend_attention("p", now=NOW, day="d", cap=1, min_gap=timedelta(hours=1))
    assert [s.budget for s in store.attention_spends("p")] == ["voice", "unsolicited"]


def test_notification_log_and_monitor_conditions(store: Store) -> None:
    """The monitor remembers each condition's state and the notification log keeps every message."""
    assert store.get_condition("p", "stuck") is None
    store.put_condition("p", "stuck", active=True, since=NOW, last_notified_at=NOW, now=NOW)
    state = store.put_condition("p", "stuck", active=False, now=LATER)
    assert store.get_condition("p", "stuck") == state
    assert (state.active, state.since, state.updated_at) == (False, None, LATER)
    sent = store.log_notification("p", channel="email", kind="stuck", subject="s", body="b", now=NOW)
    assert store.list_notifications("p") == [sent]
    assert store.list_notifications("p", since=LATER) == []


def test_list_conditions_reads_every_profile_at_once(store: Store) -> None:
    """The monitor reads all its memory in one call, optionally limited to some profiles."""
    store.put_condition("p", "stuck", active=True, since=NOW, now=NOW)
    store.put_condition("q", "silent", active=False, now=NOW)
    assert [(c.profile, c.name) for c in store.list_conditions()] == [("p", "stuck"), ("q", "silent")]
    assert [c.name for c in store.list_conditions(["q", "nobody"])] == ["silent"]
    assert store.list_conditions([]) == []


def _row(store: Store, kind: str, outcome: Outcome, board: str, second: int) -> None:
    at = NOW + timedelta(seconds=second)
    store.record_progress("p", NewProgress(kind, outcome, at, at, state_hash=board))


def test_loop_stats_streaks_goal_and_approvals(store: Store) -> None:
    """Streaks count the newest rows only: fast ticks without progress, and rows with the newest board."""
    _row(store, "fast", Outcome.DONE, "b1", 0)
    _row(store, "fast", Outcome.NOOP, "b1", 1)
    _row(store, "observe", Outcome.DONE, "b2", 2)  # not a fast tick: does not end the no-progress streak
    _row(store, "fast", Outcome.GATE_STOP, "b2", 3)
    _row(store, "fast", Outcome.FAILED, "b2", 4)
    staged(store, Verdict.REQUIRES_APPROVAL)
    stats = store.loop_stats(window=50)
    assert set(stats) == {"p", "q"}
    p = stats["p"]
    assert (p.no_progress_streak, p.board_unchanged_ticks, p.waiting_approvals) == (3, 3, 1)
    assert p.newest_progress_at == NOW + timedelta(seconds=4)
    assert p.has_active_goal is False
    q = stats["q"]
    assert (q.no_progress_streak, q.board_unchanged_ticks, q.newest_progress_at) == (0, 0, None)
    assert store.loop_stats(window=2)["p"].no_progress_streak == 2  # capped by the window
    assert store.loop_stats(window=2)["p"].board_unchanged_ticks == 2
    assert list(store.loop_stats(["q", "nobody"], window=5)) == ["q"]
    store.add_goal_model("q", title="g", now=NOW)
    store.activate_goal_model("q", 1, now=NOW)
    assert store.loop_stats(["q"], window=5)["q"].has_active_goal is True


FLAG_CASES = [
    # (what p has, flagged?)
    ("healthy", False),
    ("stuck", True),
    ("silent", True),
    ("frozen", True),
    ("no goal", True),
    ("active condition", True),
]


@pytest.mark.parametrize(("state", "flagged"), FLAG_CASES, ids=[c[0] for c in FLAG_CASES])
def test_loop_stats_flagged_filter_returns_only_profiles_worth_a_look(
    store: Store, state: str, flagged: bool
) -> None:
    """With a filter, a healthy profile is not returned; any that could hold a condition is."""
    if state != "no goal":
        store.add_goal_model("p", title="g", now=NOW)
        store.activate_goal_model("p", 1, now=NOW)
    outcome = Outcome.NOOP if state == "stuck" else Outcome.DONE
    for n in range(3):
        board = "same" if state == "frozen" else f"b{n}"
        _row(store, "fast", outcome, board, n - (7200 if state == "silent" else 0))
    if state == "active condition":
        store.put_condition("p", "stuck", active=True, since=NOW, now=NOW)
    limits = Flagged(min_streak=3, min_board=3, silent_before=NOW - timedelta(hours=1))
    assert ("p" in store.loop_stats(["p"], window=10, flagged=limits)) is flagged
    assert "q" in store.loop_stats(window=10, flagged=limits)  # q has no goal: always worth a look


@pytest.mark.parametrize("outcome", list(Outcome))
def test_loop_stats_counts_exactly_the_progress_outcomes(store: Store, outcome: Outcome) -> None:
    """A fast row ends the no-progress streak exactly when its outcome is in PROGRESS_OUTCOMES."""
    _row(store, "fast", Outcome.NOOP, "b", 0)
    _row(store, "fast", outcome, "b", 1)
    streak = store.loop_stats(["p"], window=10)["p"].no_progress_streak
    assert streak == (0 if outcome in PROGRESS_OUTCOMES else 2)


def test_latest_state_of_play(store: Store) -> None:
    """The morning tick reads the newest state-of-play summary."""
    assert store.latest_state_of_play("p") is None
    store.add_state_of_play("p", "old", now=NOW)
    store.add_state_of_play("p", "new", now=LATER)
    latest = store.latest_state_of_play("p")
    assert latest is not None
    assert latest.text == "new"


def test_tick_lock_excludes_same_kind_only(store: Store) -> None:
    """Two ticks of one kind for one profile never overlap; other kinds and profiles proceed."""
    with store.tick_lock("p", "fast", owner="a", now=NOW) as held:
        assert held
        with store.tick_lock("p", "fast", owner="b", now=NOW) as second:
            assert not second
        with store.tick_lock("p", "slow", owner="b", now=NOW) as other_kind:
            assert other_kind
        with store.tick_lock("q", "fast", owner="b", now=NOW) as other_profile:
            assert other_profile
    with store.tick_lock("p", "fast", owner="b", now=NOW) as after:
        assert after


# -- hostile input ---------------------------------------------------------------------------------


def test_sql_metacharacters_round_trip_in_every_text_field(store: Store) -> None:
    """Quotes, comments and placeholders in any text are stored verbatim, never executed."""
    m = METACHARS
    store.create_profile(m, display_name=m, timezone=m, now=NOW)
    goal = store.add_goal_model(m, title=m, body=m, data={m: m}, now=NOW)
    task = store.add_task(m, m, notes=m, now=NOW)
    [step] = store.replace_plan(m, goal.version, [NewPlanStep(m, task.id)], now=NOW)
    intent = store.stage_intent(
        m, NewIntent(m, m, recipient=m, payload={m: m}, origin=IntentOrigin(m, tainted=True)), now=NOW
    )
    store.record_verdict(m, intent.id, Verdict.REQUIRES_APPROVAL, [m], now=NOW)
    decision = store.decide(m, intent.id, DecisionKind.APPROVE, by=m, note=m, now=NOW)
    progress = store.record_progress(
        m, NewProgress(m, Outcome.DONE, NOW, NOW, state_hash=m, error=m, detail=m)
    )
    note = store.add_note(m, m, source=m, now=NOW)
    got = store.get_intent(m, intent.id)
    assert (got.action_type, got.title, got.recipient, got.payload, got.verdict_reasons) == (
        m,
        m,
        m,
        {m: m},
        (m,),
    )
    assert (store.get_profile(m).display_name, store.get_goal_model(m, 1).data) == (m, {m: m})
    assert (store.get_task(m, task.id).notes, step.title, decision.note, progress.error) == (m, m, m, m)
    assert store.search_notes(m, "robert drop table") == [note]
    assert len(store.list_intents("p")) == 0


def test_megabyte_payload_round_trips(store: Store) -> None:
    """A 1 MB payload is stored and read back intact."""
    big = {"blob": "x" * 1_000_000, "unicode": "é€😀"}
    intent = store.stage_intent("p", NewIntent("note", "big", payload=big), now=NOW)
    assert store.get_intent("p", intent.id).payload == big


def test_oversized_payload_is_refused(store: Store) -> None:
    """A payload over the size limit is refused with a message naming the field."""
    with pytest.raises(ValidationError, match="payload"):
        store.stage_intent("p", NewIntent("note", "huge", payload={"b": "x" * 5_000_000}), now=NOW)


@pytest.mark.parametrize("bad", ["bad \udcff bytes", "nul \x00 inside"])
def test_unstorable_text_is_refused_by_name(store: Store, bad: str) -> None:
    """Invalid UTF-8 (lone surrogates) and NUL characters are refused, naming the field."""
    with pytest.raises(ValidationError, match="title"):
        store.add_task("p", bad, now=NOW)
    with pytest.raises(ValidationError, match="text"):
        store.add_note("p", bad, now=NOW)
    with pytest.raises(ValidationError, match="recipient"):
        store.stage_intent("p", NewIntent("email", "t", recipient=bad), now=NOW)
    assert [t.title for t in store.list_tasks("p")] == []


# -- re-prioritisation and retention ---------------------------------------------------------------


def test_task_priority_can_be_set_and_reorders_the_board(store: Store) -> None:
    """The slow tick's new priority is kept and the board lists the task accordingly."""
    low = store.add_task("p", "low", priority=1, now=NOW)
    high = store.add_task("p", "high", priority=5, now=NOW)
    made = store.set_task_priority("p", low.id, 9, now=LATER)
    assert (made.priority, made.updated_at) == (9, LATER)
    assert [t.id for t in store.list_tasks("p")] == [low.id, high.id]
    with pytest.raises(NotFoundError):
        store.set_task_priority("q", low.id, 1, now=LATER)


def _progress(store: Store, kind: str, at: datetime, intent_id: int | None = None) -> int:
    row = NewProgress(kind, Outcome.NOOP, started_at=at, ended_at=at, intent_id=intent_id)
    return store.record_progress("p", row).id


def test_prune_keeps_the_newest_rows_of_each_tick_kind(store: Store) -> None:
    """Old progress goes, but never below the N newest rows of each tick kind, however old."""
    old = NOW - timedelta(days=60)
    slow = [_progress(store, "slow", old + timedelta(minutes=i)) for i in range(3)]
    fast = [_progress(store, "fast", old + timedelta(hours=1, minutes=i)) for i in range(10)]
    fresh = _progress(store, "fast", NOW)
    store.record_progress("q", NewProgress("fast", Outcome.NOOP, started_at=old, ended_at=old))
    counts = store.prune("p", before=NOW - timedelta(days=30), keep_recent=2)
    assert counts["progress"] == 1 + 9
    left = {r.id for r in store.recent_progress("p", limit=100)}
    assert left == {slow[1], slow[2], fast[-1], fresh}
    assert len(store.recent_progress("q")) == 1  # another profile is untouched


def test_prune_never_deletes_a_row_an_open_intent_references(store: Store) -> None:
    """A progress row or notification tied to an intent still in flight survives pruning."""
    old = NOW - timedelta(days=60)
    waiting = staged(store, Verdict.REQUIRES_APPROVAL)
    finished = staged(store, Verdict.BLOCKED)
    kept = _progress(store, "fast", old, intent_id=waiting)
    _progress(store, "fast", old, intent_id=finished)
    store.log_notification(
        "p", channel="attention", kind="candidate", subject="s", now=old, intent_id=waiting
    )
    store.log_notification(
        "p", channel="attention", kind="candidate", subject="s", now=old, intent_id=finished
    )
    counts = store.prune("p", before=NOW, keep_recent=0)
    assert (counts["progress"], counts["notifications"]) == (1, 1)
    assert [r.id for r in store.recent_progress("p")] == [kept]
    assert [n.intent_id for n in store.list_notifications("p")] == [waiting]


def test_prune_thins_observations_and_states_of_play_within_floors(store: Store) -> None:
    """Old observations and summaries go; the newest N of each kind and all recent ones stay."""
    old = NOW - timedelta(days=60)
    for i in range(5):
        store.add_observation("p", source="s", content_hash=f"h{i}", payload={}, now=old)
        store.add_state_of_play("p", f"summary {i}", now=old)
    store.add_observation("p", source="s", content_hash="new", payload={}, now=NOW)
    counts = store.prune("p", before=NOW - timedelta(days=1), keep_recent=2)
    assert (counts["observations"], counts["states_of_play"]) == (4, 3)
    assert [o.content_hash for o in store.list_observations("p")] == ["new", "h4"]
    latest = store.latest_state_of_play("p")
    assert latest is not None
    assert latest.text == "summary 4"
    assert store.prune("p", before=NOW - timedelta(days=1), keep_recent=2) == {
        "progress": 0,
        "observations": 0,
        "notifications": 0,
        "states_of_play": 0,
    }


def test_observations_window_is_newest_first_by_observation_time(store: Store) -> None:
    """A `since` window returns only its observations, latest observed first, ties newest id first."""
    early = store.add_observation("p", source="s", content_hash="a", payload={}, now=NOW - timedelta(days=9))
    late = store.add_observation("p", source="s", content_hash="b", payload={}, now=LATER)
    same = store.add_observation("p", source="s", content_hash="c", payload={}, now=LATER)
    mid = store.add_observation("p", source="s", content_hash="d", payload={}, now=NOW)
    assert early is not None
    assert late is not None
    assert same is not None
    assert mid is not None
    assert [o.id for o in store.list_observations("p", since=NOW)] == [same.id, late.id, mid.id]
    assert [o.id for o in store.list_observations("p", since=LATER + timedelta(seconds=1))] == []
    assert [o.id for o in store.list_observations("p", limit=1)] == [same.id]


# -- the person's way back from a dead end ---------------------------------------------------------


def _ended(store: Store, status: IntentStatus, verdict: Verdict = Verdict.REQUIRES_APPROVAL) -> int:
    """An intent claimed from approved (or ready) and ended at ``status`` by its executor."""
    intent_id = staged(store, verdict)
    if verdict is Verdict.REQUIRES_APPROVAL:
        store.decide("p", intent_id, DecisionKind.APPROVE, by="ann", now=NOW)
    [claimed] = store.claim_intents("p", owner="ex", now=NOW, limit=1)
    if status is S.SENT:  # a send ends from inside the side-effect zone
        store.mark_sending("p", claimed.id, owner="ex", now=NOW)
    store.finish_intent("p", claimed.id, status, owner="ex", now=NOW, result={"why": "x"})
    return intent_id


@pytest.mark.parametrize(
    ("start", "verdict", "kind", "target"),
    [
        (S.FAILED, Verdict.REQUIRES_APPROVAL, DecisionKind.RETRY, S.APPROVED),
        (S.FAILED, Verdict.ALLOWED, DecisionKind.RETRY, S.READY),
        (S.NEEDS_HUMAN, Verdict.REQUIRES_APPROVAL, DecisionKind.RETRY, S.APPROVED),
        (S.NEEDS_HUMAN, Verdict.REQUIRES_APPROVAL, DecisionKind.DONE_BY_HAND, S.COMPLETED),
        (S.NEEDS_HUMAN, Verdict.REQUIRES_APPROVAL, DecisionKind.DID_NOT_HAPPEN, S.FAILED),
    ],
)
def test_a_reconciling_decision_moves_the_intent_and_is_linked(
    store: Store, start: IntentStatus, verdict: Verdict, kind: DecisionKind, target: IntentStatus
) -> None:
    """Retry, done by hand and did not happen are decisions: recorded, linked, the claim cleared."""
    intent_id = _ended(store, start, verdict)
    decision, moved = store.reconcile("p", intent_id, kind, by="ann", now=LATER, note="fixed")
    assert (decision.kind, decision.intent_id, decision.note) == (kind, intent_id, "fixed")
    assert (moved.status, moved.decision_id, moved.claim_owner, moved.claim_prior) == (
        target,
        decision.id,
        None,
        None,
    )
    assert moved.handoff is (kind is DecisionKind.DONE_BY_HAND)
    assert store.get_decision("p", decision.id) == decision
    retried = store.sanctioned_retries("p", since=NOW)
    assert [(i.id, d) for i, d in retried] == (
        [(intent_id, decision.id)] if kind is DecisionKind.RETRY else []
    )


@pytest.mark.parametrize(
    ("start", "kind"),
    [
        (S.SENT, DecisionKind.RETRY),
        (S.COMPLETED, DecisionKind.RETRY),
        (S.FAILED, DecisionKind.DONE_BY_HAND),
        (S.FAILED, DecisionKind.DID_NOT_HAPPEN),
        (S.SENT, DecisionKind.DONE_BY_HAND),
        (S.NEEDS_HUMAN, DecisionKind.APPROVE),
    ],
)
def test_a_reconciling_decision_elsewhere_is_refused_and_records_nothing(
    store: Store, start: IntentStatus, kind: DecisionKind
) -> None:
    """Only the listed dead ends can be reconciled: anything else raises and leaves no decision."""
    intent_id = _ended(store, start)
    before = store.get_intent("p", intent_id)
    with pytest.raises(TransitionError):
        store.reconcile("p", intent_id, kind, by="ann", now=LATER)
    assert store.get_intent("p", intent_id) == before
    assert store.sanctioned_retries("p", since=NOW) == []


def test_a_preview_keeps_the_status_and_loses_to_a_move(store: Store) -> None:
    """A dry pass's preview is written only while the intent is still where the pass saw it."""
    intent_id = staged(store)
    assert store.record_preview("p", intent_id, {"dry_run": True}, expected=S.READY) is True
    after = store.get_intent("p", intent_id)
    assert (after.status, after.result, after.updated_at) == (S.READY, {"dry_run": True}, NOW)
    assert store.record_preview("p", intent_id, {"dry_run": True, "x": 1}, expected=S.APPROVED) is False
    assert store.get_intent("p", intent_id).result == {"dry_run": True}


def test_an_ending_clears_dry_run(store: Store) -> None:
    """An intent is dry_run until an executor ends it; the ending (only armed passes end) clears it."""
    intent_id = staged(store)
    assert store.get_intent("p", intent_id).dry_run is True
    [claimed] = store.claim_intents("p", owner="ex", now=NOW, limit=1)
    store.finish_intent("p", claimed.id, S.COMPLETED, owner="ex", now=NOW)
    assert store.get_intent("p", intent_id).dry_run is False


def test_update_profile_changes_only_what_is_given(store: Store) -> None:
    """`update_profile` keeps a field passed as None and names a missing profile."""
    made = store.update_profile("p", timezone="Europe/Berlin")
    assert (made.timezone, made.display_name) == ("Europe/Berlin", store.get_profile("p").display_name)
    assert store.update_profile("p", display_name="Ann").timezone == "Europe/Berlin"
    with pytest.raises(NotFoundError):
        store.update_profile("ghost", timezone="UTC")
