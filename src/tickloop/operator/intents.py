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
"""

from __future__ import annotations

from tickloop.errors import TransitionError
from tickloop.operator.domain import IntentStatus, Verdict

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


def check_transition(current: IntentStatus, target: IntentStatus) -> None:
    """Raise ``TransitionError`` unless the table allows ``current -> target``."""
    if target not in TRANSITIONS[current]:
        allowed = ", ".join(sorted(TRANSITIONS[current])) or "nothing (final status)"
        raise TransitionError(f"intent cannot go {current} -> {target}; from {current}: {allowed}")


def sources_of(target: IntentStatus) -> frozenset[IntentStatus]:
    """Every status from which ``target`` is reachable in one step."""
    return frozenset(src for src, targets in TRANSITIONS.items() if target in targets)
