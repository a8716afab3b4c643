"""The intent status machine, as ONE explicit transition table. An illegal transition raises.

::

    proposed -> allowed | requires_approval | blocked        (the gate's verdict)
    allowed -> ready                                         (staged for the executor)
    requires_approval -> approved | denied                   (a person's decision)
    ready | approved -> claimed                              (one executor, compare-and-set)
    claimed -> sending                                       (entering the side-effect zone)
    claimed -> ready | approved                              (claim released to its prior status)
    claimed -> completed | failed | needs_human              (hand-off, refusal, throw)
    sending -> sent | completed | failed | needs_human       (the end; needs_human is never retried)

``blocked`` is final: it can never be approved, claimed, executed or marked executed.

No machine path leaves a final status. Two of them are dead ends only a person can open, with a
decision (``RECONCILE``): ``failed`` and ``needs_human`` can be handed back to the executor
(``retry``: a kernel-sanctioned recovery retry), and ``needs_human`` can be reconciled as
``done_by_hand`` (-> completed) or ``did_not_happen`` (-> failed)::

    failed | needs_human -> approved | ready   (retry: approved if the gate wanted approval)
    needs_human -> completed                   (done by hand)
    needs_human -> failed                      (did not happen)
"""

from __future__ import annotations

from tickloop.errors import TransitionError
from tickloop.operator.domain import DecisionKind, IntentStatus, Verdict

S = IntentStatus

#: Every legal transition. Anything not listed raises ``TransitionError``.
TRANSITIONS: dict[IntentStatus, frozenset[IntentStatus]] = {
    S.PROPOSED: frozenset({S.ALLOWED, S.REQUIRES_APPROVAL, S.BLOCKED}),
    S.ALLOWED: frozenset({S.READY}),
    S.REQUIRES_APPROVAL: frozenset({S.APPROVED, S.DENIED}),
    S.READY: frozenset({S.CLAIMED}),
    S.APPROVED: frozenset({S.CLAIMED}),
    S.CLAIMED: frozenset({S.SENDING, S.READY, S.APPROVED, S.COMPLETED, S.FAILED, S.NEEDS_HUMAN}),
    S.SENDING: frozenset({S.SENT, S.COMPLETED, S.FAILED, S.NEEDS_HUMAN}),
    S.BLOCKED: frozenset(),
    S.DENIED: frozenset(),
    S.SENT: frozenset(),
    S.COMPLETED: frozenset(),
    S.FAILED: frozenset(),
    S.NEEDS_HUMAN: frozenset(),
}

FINAL_STATUSES = frozenset(status for status, targets in TRANSITIONS.items() if not targets)
#: Statuses an executor may claim from.
CLAIMABLE = frozenset({S.READY, S.APPROVED})
#: How an executor may end a claim (``sending`` is entered separately).
ENDINGS = frozenset({S.SENT, S.COMPLETED, S.FAILED, S.NEEDS_HUMAN})
#: The status each gate verdict moves a proposed intent to.
VERDICT_STATUS: dict[Verdict, IntentStatus] = {
    Verdict.ALLOWED: S.ALLOWED,
    Verdict.REQUIRES_APPROVAL: S.REQUIRES_APPROVAL,
    Verdict.BLOCKED: S.BLOCKED,
}


#: A person's reconciling decision -> the statuses it may be given at, and the status it sets
#: (None: a retry, back to ``approved`` or ``ready`` by the gate's verdict; see ``retry_target``).
RECONCILE: dict[DecisionKind, tuple[frozenset[IntentStatus], IntentStatus | None]] = {
    DecisionKind.RETRY: (frozenset({S.FAILED, S.NEEDS_HUMAN}), None),
    DecisionKind.DONE_BY_HAND: (frozenset({S.NEEDS_HUMAN}), S.COMPLETED),
    DecisionKind.DID_NOT_HAPPEN: (frozenset({S.NEEDS_HUMAN}), S.FAILED),
}


def reconcile_target(kind: DecisionKind, current: IntentStatus, verdict: Verdict | None) -> IntentStatus:
    """Where the person's ``kind`` takes an intent at ``current``; ``TransitionError`` if nowhere."""
    if kind not in RECONCILE:
        raise TransitionError(f"{kind} is not a reconciling decision; use one of: {', '.join(RECONCILE)}")
    froms, target = RECONCILE[kind]
    if current not in froms:
        allowed = " or ".join(sorted(froms))
        raise TransitionError(f"{kind.value} applies to an intent at {allowed}, not at {current}")
    if target is not None:
        return target
    # A retry goes back to where the executor takes it: approved (with this decision linked) when the
    # gate asked for approval, ready when the gate allowed it.
    return S.APPROVED if verdict is Verdict.REQUIRES_APPROVAL else S.READY


def check_transition(current: IntentStatus, target: IntentStatus) -> None:
    """Raise ``TransitionError`` unless the table allows ``current -> target``."""
    if target not in TRANSITIONS[current]:
        allowed = ", ".join(sorted(TRANSITIONS[current])) or "nothing (final status)"
        raise TransitionError(f"intent cannot go {current} -> {target}; from {current}: {allowed}")


def sources_of(target: IntentStatus) -> frozenset[IntentStatus]:
    """Every status from which ``target`` is reachable in one step."""
    return frozenset(src for src, targets in TRANSITIONS.items() if target in targets)
