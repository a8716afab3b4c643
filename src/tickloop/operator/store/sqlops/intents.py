"""Intents and decisions: staging, the gate's verdict, approvals, claims and endings."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from tickloop.errors import ConflictError, NotFoundError, ValidationError
from tickloop.operator import intents as machine
from tickloop.operator.domain import Decision, DecisionKind, Intent, IntentStatus, NewIntent, Verdict
from tickloop.operator.store import _rows as rows
from tickloop.operator.store._rows import Row, dumps
from tickloop.operator.store._sql import Tx
from tickloop.operator.store.base import EPOCH, Ending
from tickloop.operator.store.sqlops.base import SqlBase

#: For each way a claim may end, the statuses it may end from (claimed and/or sending).
_FINISH_FROM = {
    end: sorted(machine.sources_of(end) & {IntentStatus.CLAIMED, IntentStatus.SENDING})
    for end in machine.ENDINGS
}


class IntentOps(SqlBase):
    """Intents through the state machine, and the decisions on them."""

    # -- intents ------------------------------------------------------------------------------------

    def stage_intent(self, profile: str, intent: NewIntent, *, now: datetime) -> Intent:
        with self._write_one() as tx:
            row = tx.one(
                "stage_intent",
                profile=profile,
                action_type=intent.action_type,
                title=intent.title,
                recipient=intent.recipient,
                payload=dumps("payload", intent.payload),
                tier=intent.tier,
                dry_run=intent.dry_run,
                handoff=False,
                origin_tick=intent.origin.tick_kind,
                origin_tainted=intent.origin.tainted,
                now=now,
            )
        assert row is not None
        return rows.intent(row)

    def get_intent(self, profile: str, intent_id: int) -> Intent:
        with self._read() as tx:
            row = tx.one("get_intent", profile=profile, id=intent_id)
        if row is None:
            raise NotFoundError(f"no intent {intent_id} in profile {profile!r}")
        return rows.intent(row)

    def list_intents(
        self, profile: str, *, status: IntentStatus | None = None, limit: int = 100
    ) -> list[Intent]:
        with self._read() as tx:
            if status is None:
                found = tx.rows("list_intents", profile=profile, limit=limit)
            else:
                found = tx.rows("list_intents_by_status", profile=profile, status=status, limit=limit)
        return [rows.intent(r) for r in found]

    def record_verdict(
        self, profile: str, intent_id: int, verdict: Verdict, reasons: Sequence[str], *, now: datetime
    ) -> Intent:
        target = machine.VERDICT_STATUS[Verdict(verdict)]
        with self._write_one() as tx:
            row = tx.one(
                "record_verdict",
                profile=profile,
                id=intent_id,
                status=target,
                verdict=verdict,
                reasons=dumps("reasons", list(reasons)),
                now=now,
            )
            if row is None:
                self._intent_lost(tx, profile, intent_id, IntentStatus.PROPOSED, target)
        assert row is not None
        return rows.intent(row)

    def mark_ready(self, profile: str, intent_id: int, *, now: datetime) -> Intent:
        return self._move(profile, intent_id, IntentStatus.ALLOWED, IntentStatus.READY, now=now)

    def _move(
        self, profile: str, intent_id: int, expected: IntentStatus, target: IntentStatus, *, now: datetime
    ) -> Intent:
        machine.check_transition(expected, target)
        with self._write_one() as tx:
            row = tx.one(
                "move_intent", profile=profile, id=intent_id, status=target, expected=expected, now=now
            )
            if row is None:
                self._intent_lost(tx, profile, intent_id, expected, target)
        assert row is not None
        return rows.intent(row)

    def _intent_lost(
        self, tx: Tx, profile: str, intent_id: int, expected: IntentStatus, target: IntentStatus
    ) -> None:
        found = tx.one("get_intent", profile=profile, id=intent_id)
        if found is None:
            raise NotFoundError(f"no intent {intent_id} in profile {profile!r}")
        current = IntentStatus(found["status"])
        machine.check_transition(current, target)  # the clearer message when the move is illegal
        raise ConflictError(f"intent {intent_id} is {current}, not {expected}: another process changed it")

    def decide(
        self, profile: str, intent_id: int, kind: DecisionKind, *, by: str, now: datetime, note: str = ""
    ) -> Decision:
        kind = DecisionKind(kind)
        target = IntentStatus.APPROVED if kind is DecisionKind.APPROVE else IntentStatus.DENIED
        with self._write() as tx:
            current = tx.one("get_intent", profile=profile, id=intent_id)
            if current is None:
                raise NotFoundError(f"no intent {intent_id} in profile {profile!r}")
            check_decidable(intent_id, IntentStatus(current["status"]), target)
            made = _add_decision(tx, profile, intent_id, kind, by=by, note=note, now=now)
            moved = tx.one(
                "decide_intent", profile=profile, id=intent_id, status=target, decision_id=made["id"], now=now
            )
            if moved is None:  # raising rolls the decision back with the transaction
                self._intent_lost(tx, profile, intent_id, IntentStatus.REQUIRES_APPROVAL, target)
        assert made is not None
        return rows.decision(made)

    def reconcile(
        self, profile: str, intent_id: int, kind: DecisionKind, *, by: str, now: datetime, note: str = ""
    ) -> tuple[Decision, Intent]:
        kind = DecisionKind(kind)
        with self._write() as tx:
            current = tx.one("get_intent", profile=profile, id=intent_id)
            if current is None:
                raise NotFoundError(f"no intent {intent_id} in profile {profile!r}")
            found = rows.intent(current)
            target = machine.reconcile_target(kind, found.status, found.verdict)
            made = _add_decision(tx, profile, intent_id, kind, by=by, note=note, now=now)
            moved = tx.one(
                "reconcile_intent",
                profile=profile,
                id=intent_id,
                status=target,
                expected=found.status,
                decision_id=made["id"],
                # done by hand: completed, and never mistaken for something the machine did
                handoff=found.handoff or kind is DecisionKind.DONE_BY_HAND,
                now=now,
            )
            if moved is None:  # raising rolls the decision back with the transaction
                self._intent_lost(tx, profile, intent_id, found.status, target)
        assert made is not None
        assert moved is not None
        return rows.decision(made), rows.intent(moved)

    def sanctioned_retries(
        self, profile: str, *, since: datetime, limit: int = 50
    ) -> list[tuple[Intent, int]]:
        with self._read() as tx:
            found = tx.rows("sanctioned_retries", profile=profile, since=since, limit=limit)
        return [(rows.intent(r), int(r["retry_decision"])) for r in found]

    def get_decision(self, profile: str, decision_id: int) -> Decision:
        with self._read() as tx:
            row = tx.one("get_decision", profile=profile, id=decision_id)
        if row is None:
            raise NotFoundError(f"no decision {decision_id} in profile {profile!r}")
        return rows.decision(row)

    def claim_intents(
        self, profile: str, *, owner: str, now: datetime, limit: int = 10, since: datetime = EPOCH
    ) -> list[Intent]:
        with self._write_one() as tx:
            found = tx.rows("claim_intents", profile=profile, owner=owner, now=now, limit=limit, since=since)
        return sorted((rows.intent(r) for r in found), key=lambda i: i.id)

    def release_claim(self, profile: str, intent_id: int, *, owner: str, now: datetime) -> Intent:
        with self._write_one() as tx:
            row = tx.one("release_claim", profile=profile, id=intent_id, owner=owner, now=now)
            if row is None:
                self._claim_lost(tx, profile, intent_id, owner, IntentStatus.CLAIMED)
        assert row is not None
        return rows.intent(row)

    def record_preview(
        self, profile: str, intent_id: int, preview: dict[str, Any], *, expected: IntentStatus
    ) -> bool:
        with self._write() as tx:
            changed = tx.run(
                "record_preview",
                profile=profile,
                id=intent_id,
                result=dumps("result", preview),
                expected=expected,
            )
        return changed == 1

    def mark_sending(self, profile: str, intent_id: int, *, owner: str, now: datetime) -> Intent:
        with self._write_one() as tx:
            row = tx.one("mark_sending", profile=profile, id=intent_id, owner=owner, now=now)
            if row is None:
                self._claim_lost(tx, profile, intent_id, owner, IntentStatus.CLAIMED)
        assert row is not None
        return rows.intent(row)

    def _claim_lost(self, tx: Tx, profile: str, intent_id: int, owner: str, expected: IntentStatus) -> None:
        found = tx.one("get_intent", profile=profile, id=intent_id)
        if found is None:
            raise NotFoundError(f"no intent {intent_id} in profile {profile!r}")
        raise ConflictError(
            f"intent {intent_id} is {found['status']} (claimed by {found['claim_owner']!r}), "
            f"not {expected} by {owner!r}: the claim was lost"
        )

    def finish_intent(
        self,
        profile: str,
        intent_id: int,
        status: IntentStatus,
        *,
        owner: str,
        now: datetime,
        result: dict[str, Any] | None = None,
        handoff: bool = False,
    ) -> Intent:
        target = check_ending(status)
        froms = _FINISH_FROM[target]
        with self._write_one() as tx:
            row = tx.one(
                "finish_intent",
                profile=profile,
                id=intent_id,
                status=target,
                from_a=froms[0],
                from_b=froms[-1],
                owner=owner,
                result=None if result is None else dumps("result", result),
                handoff=handoff,
                now=now,
            )
            if row is None:  # say why: gone, not finishable, an illegal ending, or someone else's claim
                found = tx.one("get_intent", profile=profile, id=intent_id)
                if found is None:
                    raise NotFoundError(f"no intent {intent_id} in profile {profile!r}")
                prior = check_finishable(intent_id, IntentStatus(found["status"]), target)
                self._claim_lost(tx, profile, intent_id, owner, prior)
        assert row is not None
        return rows.intent(row)

    def finish_and_send(
        self, profile: str, *, ending: Ending | None, send: int | None, owner: str, now: datetime
    ) -> tuple[bool, bool]:
        params = handover_params(profile, ending, send, owner=owner, now=now)
        with self._write() as tx:  # two statements, one commit
            ended = ending is not None and tx.run("end_sending", **params) == 1
            sending = send is not None and tx.run("start_sending", **params) == 1
        return ended, sending

    def reap_stuck(self, *, cutoff: datetime, now: datetime, profile: str | None = None) -> list[int]:
        with self._write_one() as tx:
            if profile is None:
                found = tx.rows("reap_stuck", cutoff=cutoff, now=now)
            else:
                found = tx.rows("reap_stuck_profile", profile=profile, cutoff=cutoff, now=now)
        return sorted(int(r["id"]) for r in found)

    def release_stale_claims(self, profile: str, *, cutoff: datetime, now: datetime) -> list[int]:
        with self._write_one() as tx:
            found = tx.rows("release_stale_claims", profile=profile, cutoff=cutoff, now=now)
        return sorted(int(r["id"]) for r in found)

    def failed_actions(self, profile: str, *, since: datetime, limit: int = 50) -> list[Intent]:
        with self._read() as tx:
            return [
                rows.intent(r) for r in tx.rows("failed_actions", profile=profile, since=since, limit=limit)
            ]


def check_decidable(intent_id: int, current: IntentStatus, target: IntentStatus) -> None:
    """A blocked intent can never be approved; anything else not awaiting a decision is illegal."""
    if current is IntentStatus.BLOCKED:
        raise ConflictError(f"intent {intent_id} is blocked by the gate: it can never be approved or denied")
    if current is not IntentStatus.REQUIRES_APPROVAL:
        raise ConflictError(
            f"intent {intent_id} is {current}: only an intent at requires_approval can be approved or denied"
        )
    machine.check_transition(current, target)


def check_finishable(intent_id: int, current: IntentStatus, target: IntentStatus) -> IntentStatus:
    """``current`` if a claim at ``current`` may end as ``target``: losing the claim is a conflict
    (the reaper or a release got there first), an illegal ending is a transition error."""
    if current not in (IntentStatus.CLAIMED, IntentStatus.SENDING):
        raise ConflictError(
            f"intent {intent_id} is {current}: only a claimed or sending intent can be finished "
            "(the claim was lost, or never taken)"
        )
    machine.check_transition(current, target)
    return current


def handover_params(
    profile: str, ending: Ending | None, send: int | None, *, owner: str, now: datetime
) -> dict[str, Any]:
    """The checked parameters of ``finish_and_send``'s statements (an absent half matches no row)."""
    if ending is not None and ending.intent_id == send:
        raise ValidationError(f"intent {send} cannot end and enter `sending` in the same hand-over")
    return {
        "profile": profile,
        "owner": owner,
        "now": now,
        "end_id": None if ending is None else ending.intent_id,
        "status": None if ending is None else check_ending(ending.status),
        "result": None if ending is None or ending.result is None else dumps("result", ending.result),
        "handoff": ending is not None and ending.handoff,
        "send_id": send,
    }


def handed_over(found: Sequence[Row], ending: Ending | None, send: int | None) -> tuple[bool, bool]:
    """``(ended, sending)`` from the ids of the rows a hand-over changed."""
    changed = {int(row["id"]) for row in found}
    return ending is not None and ending.intent_id in changed, send is not None and send in changed


def check_ending(status: IntentStatus) -> IntentStatus:
    """``status`` if it is one of the ways a claim may end."""
    target = IntentStatus(status)
    if target not in machine.ENDINGS:
        allowed = ", ".join(sorted(machine.ENDINGS))
        raise ConflictError(f"an intent cannot be finished as {target}; use one of: {allowed}")
    return target


def _add_decision(
    tx: Tx, profile: str, intent_id: int, kind: DecisionKind, *, by: str, note: str, now: datetime
) -> Row:
    """Record the person's decision (inside the caller's transaction, before the intent moves)."""
    made = tx.one(
        "add_decision", profile=profile, intent_id=intent_id, kind=kind, by_whom=by, note=note, now=now
    )
    assert made is not None
    return made
