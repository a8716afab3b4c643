"""Action intents from staging to their end: the gate's verdict, a person's decision, the
executor's claims."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import msgspec

from tickloop.operator.domain import (
    Decision,
    DecisionKind,
    Intent,
    IntentStatus,
    NewIntent,
    Verdict,
)
from tickloop.operator.store.interface.common import EPOCH


class Ending(msgspec.Struct, frozen=True):
    """How one claim in ``sending`` ends, for ``Store.finish_and_send``."""

    intent_id: int
    #: sent | completed | failed | needs_human
    status: IntentStatus
    #: what the handler returned (or why it failed), kept as the intent's result
    result: dict[str, Any] | None = None
    #: a hand-off (spend): completed, never mistaken for an execution
    handoff: bool = False


class IntentInterface(ABC):
    """The operations on action intents and the decisions about them."""

    @abstractmethod
    def stage_intent(self, profile: str, intent: NewIntent, *, now: datetime) -> Intent:
        """Record an action intent at ``proposed``."""

    @abstractmethod
    def get_intent(self, profile: str, intent_id: int) -> Intent:
        """One intent, or ``NotFoundError``."""

    @abstractmethod
    def list_intents(
        self, profile: str, *, status: IntentStatus | None = None, limit: int = 100
    ) -> list[Intent]:
        """Newest first, optionally only those at ``status``."""

    @abstractmethod
    def record_verdict(
        self, profile: str, intent_id: int, verdict: Verdict, reasons: Sequence[str], *, now: datetime
    ) -> Intent:
        """The gate's verdict: ``proposed`` -> allowed | requires_approval | blocked."""

    @abstractmethod
    def mark_ready(self, profile: str, intent_id: int, *, now: datetime) -> Intent:
        """Stage an allowed intent for the executor: ``allowed`` -> ``ready``."""

    @abstractmethod
    def decide(
        self, profile: str, intent_id: int, kind: DecisionKind, *, by: str, now: datetime, note: str = ""
    ) -> Decision:
        """A person's decision: ``requires_approval`` -> approved | denied, linked, in one transaction."""

    @abstractmethod
    def reconcile(
        self, profile: str, intent_id: int, kind: DecisionKind, *, by: str, now: datetime, note: str = ""
    ) -> tuple[Decision, Intent]:
        """A person's way back from a dead end (``intents.RECONCILE``): retry a failed or needs_human
        intent, or reconcile a needs_human one as done by hand or did not happen. The decision and the
        move are one transaction; the decision is linked to the intent."""

    @abstractmethod
    def sanctioned_retries(
        self, profile: str, *, since: datetime, limit: int = 50
    ) -> list[tuple[Intent, int]]:
        """The intents a person handed back with ``retry`` since ``since``, newest first, each with
        the retry decision's id: the drift guard's kernel-sanctioned recovery retries."""

    @abstractmethod
    def get_decision(self, profile: str, decision_id: int) -> Decision:
        """One decision, or ``NotFoundError``."""

    @abstractmethod
    def claim_intents(
        self, profile: str, *, owner: str, now: datetime, limit: int = 10, since: datetime = EPOCH
    ) -> list[Intent]:
        """Claim up to ``limit`` ready/approved intents created at or after ``since``, oldest first.

        Each intent is claimed by exactly one caller, however many run at once; the claim remembers
        the prior status so ``release_claim`` can put it back.
        """

    @abstractmethod
    def release_claim(self, profile: str, intent_id: int, *, owner: str, now: datetime) -> Intent:
        """Give a claim back: ``claimed`` -> its prior status (ready or approved)."""

    @abstractmethod
    def record_preview(
        self, profile: str, intent_id: int, preview: dict[str, Any], *, expected: IntentStatus
    ) -> bool:
        """A dry pass's preview on the intent's result, status unchanged; False if it is no longer
        at ``expected`` (another process moved it)."""

    @abstractmethod
    def mark_sending(self, profile: str, intent_id: int, *, owner: str, now: datetime) -> Intent:
        """Enter the side-effect zone: ``claimed`` -> ``sending`` (only by the claim's owner)."""

    @abstractmethod
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
        """End a claim: claimed/sending -> sent | completed | failed | needs_human (owner only)."""

    @abstractmethod
    def finish_and_send(
        self, profile: str, *, ending: Ending | None, send: int | None, owner: str, now: datetime
    ) -> tuple[bool, bool]:
        """The executor's hand-over between two side effects, in ONE commit: end ``ending``'s claim
        (``sending`` -> its status) and move claim ``send`` into the side-effect zone (``claimed`` ->
        ``sending``). Both belong to ``owner``; either may be None.

        Each half is its own compare-and-set and says whether it won: ``(ended, sending)``, False
        for a half with nothing to do or whose intent was not ``owner``'s at the status it needs
        (reaped, released, another profile's, unknown). An ending that is not sent, completed,
        failed or needs_human, or the same intent in both halves, is refused before anything is
        written. Only what won is returned, not the rows: this is the executor's hot path.
        """

    @abstractmethod
    def reap_stuck(self, *, cutoff: datetime, now: datetime, profile: str | None = None) -> list[int]:
        """Route intents still ``sending`` that were claimed before ``cutoff`` to ``needs_human``.

        The guard is in the UPDATE's WHERE, so finished work is never overwritten. Returns the ids.
        """

    @abstractmethod
    def release_stale_claims(self, profile: str, *, cutoff: datetime, now: datetime) -> list[int]:
        """Give back claims still ``claimed`` (never ``sending``) since before ``cutoff``: their
        claimer died before any side effect began, so the intent returns to its prior status.
        Guarded in the WHERE like the reaper, so a live claimer and this never both win."""

    @abstractmethod
    def failed_actions(self, profile: str, *, since: datetime, limit: int = 50) -> list[Intent]:
        """Intents that failed, need a human, were denied or blocked since ``since``: tried-and-failed."""
