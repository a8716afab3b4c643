"""The Store interface: every operation the operator's ticks, executor and monitor perform.

One interface, one implementation per SQL dialect, chosen by URL in ``open_store``. The contract
suite in ``tests/contract`` runs the same tests on SQLite in memory, on a file, and PostgreSQL.

Rules every backend keeps:

- Every row belongs to one profile; an id from another profile is ``NotFoundError``.
- Every state change is compare-and-set: it names the prior state and raises ``ConflictError``
  when the row was not in it (a second process finds zero rows changed). ``claim_intents``,
  ``reap_stuck`` and ``finish_and_send`` return what they won instead, because losing is their
  normal case.
- Time is passed in (``now``); the store never reads the clock.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import TYPE_CHECKING, Any

import msgspec

from tickloop.operator.domain import (
    AttentionSpend,
    ConditionState,
    Critique,
    Decision,
    DecisionKind,
    GoalModel,
    Intent,
    IntentStatus,
    MemoryNote,
    NewIntent,
    NewPlanStep,
    NewProgress,
    Notification,
    Observation,
    PlanStep,
    Profile,
    ProgressRow,
    StateOfPlay,
    StepStatus,
    Task,
    TaskStatus,
    Verdict,
)
from tickloop.sha256 import sha256

if TYPE_CHECKING:
    from tickloop.operator.store.sqlops.views import OverviewSnapshot

if TYPE_CHECKING:  # the monitor's types: only loop_stats builds them, and ticks never call it
    from tickloop.operator.conditions import Flagged, LoopStats

#: The ephemeral kinds ``prune`` deletes from, in the order it reports them.
PRUNABLE = ("progress", "observations", "notifications", "states_of_play")
#: The start of time for "since" windows that are not given.
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_WORD = re.compile(r"[^\W_]+")


class Ending(msgspec.Struct, frozen=True):
    """How one claim in ``sending`` ends, for ``Store.finish_and_send``."""

    intent_id: int
    #: sent | completed | failed | needs_human
    status: IntentStatus
    #: what the handler returned (or why it failed), kept as the intent's result
    result: dict[str, Any] | None = None
    #: a hand-off (spend): completed, never mistaken for an execution
    handoff: bool = False


class Store(ABC):
    """The operator's state, behind named operations."""

    #: The URL this store was opened with, password removed (safe to print).
    url: str

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @abstractmethod
    def close(self) -> None:
        """Release connections. The store is unusable afterwards."""

    def release_tick_lock(self, profile: str, tick_kind: str, *, owner: str) -> None:  # noqa: B027
        """For a signal handler about to exit without unwinding ``tick_lock``: free the lock now.
        A no-op default: PostgreSQL's advisory lock dies with its process."""

    def abandon_transaction(self) -> None:  # noqa: B027  (a deliberate no-op default; SQLite overrides)
        """For a signal handler that is about to exit the process: roll back whatever transaction
        the interrupted code left open on this thread, so the last writes (the progress row, the tick
        lock's release) can go through, whatever statement the interrupted code was in the middle of.
        Only SQLite needs it (it also moves to a fresh connection): PostgreSQL writes the row on
        another pooled connection and the server rolls the abandoned one back when the process exits."""

    @abstractmethod
    def migrate(self, *, target: int | None = None) -> list[int]:
        """Apply pending migrations (up to ``target``); return the versions applied now."""

    @abstractmethod
    def schema_version(self) -> int:
        """The highest migration applied (0 for an empty database)."""

    # -- profiles -----------------------------------------------------------------------------------

    @abstractmethod
    def create_profile(
        self, name: str, *, now: datetime, display_name: str = "", timezone: str = "UTC"
    ) -> Profile:
        """Create a profile; ``ConflictError`` if the name is taken."""

    @abstractmethod
    def get_profile(self, name: str) -> Profile:
        """The profile, or ``NotFoundError``."""

    @abstractmethod
    def update_profile(
        self, name: str, *, display_name: str | None = None, timezone: str | None = None
    ) -> Profile:
        """Change a profile's display name and/or timezone (None: unchanged); ``NotFoundError``."""

    @abstractmethod
    def list_profiles(self) -> list[Profile]:
        """Every profile, by name."""

    # -- goal models --------------------------------------------------------------------------------

    @abstractmethod
    def add_goal_model(
        self, profile: str, *, title: str, now: datetime, body: str = "", data: dict[str, Any] | None = None
    ) -> GoalModel:
        """Write the next version as a draft (never auto-activated)."""

    @abstractmethod
    def activate_goal_model(self, profile: str, version: int, *, now: datetime) -> GoalModel:
        """Make ``version`` the one active goal model; the previous active one is retired."""

    @abstractmethod
    def get_goal_model(self, profile: str, version: int) -> GoalModel:
        """One version, or ``NotFoundError``."""

    @abstractmethod
    def active_goal_model(self, profile: str) -> GoalModel | None:
        """The active goal model, or None: a tick without one must refuse to act."""

    @abstractmethod
    def list_goal_models(self, profile: str) -> list[GoalModel]:
        """Every version, oldest first."""

    # -- board --------------------------------------------------------------------------------------

    @abstractmethod
    def add_task(
        self, profile: str, title: str, *, now: datetime, priority: int = 0, notes: str = ""
    ) -> Task:
        """Add a task to the board as ``todo``."""

    @abstractmethod
    def get_task(self, profile: str, task_id: int) -> Task:
        """One task, or ``NotFoundError``."""

    @abstractmethod
    def list_tasks(self, profile: str) -> list[Task]:
        """The board: highest priority first, then oldest."""

    @abstractmethod
    def set_task_priority(self, profile: str, task_id: int, priority: int, *, now: datetime) -> Task:
        """Set a task's priority (the slow tick's re-prioritisation); ``NotFoundError`` if unknown."""

    @abstractmethod
    def set_task_status(
        self,
        profile: str,
        task_id: int,
        status: TaskStatus,
        *,
        now: datetime,
        expected: TaskStatus | None = None,
    ) -> Task:
        """Compare-and-set a task's status (``expected`` defaults to the status read just before)."""

    def board_hash(self, profile: str) -> str:
        """``sha256:`` + hex SHA-256 of the board's canonical JSON: the list of ``[id, title,
        priority, status]`` rows sorted by id, compact separators, UTF-8, no ASCII escaping. This
        form is part of the documented contract (a golden vector pins it): an unchanged hash
        means an unchanged board, across ticks, backends and versions."""
        rows = [[t.id, t.title, t.priority, str(t.status)] for t in self.list_tasks(profile)]
        canonical = json.dumps(sorted(rows), separators=(",", ":"), ensure_ascii=False)
        return "sha256:" + sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()

    # -- plan ---------------------------------------------------------------------------------------

    @abstractmethod
    def replace_plan(
        self, profile: str, goal_version: int, steps: Sequence[NewPlanStep], *, now: datetime
    ) -> list[PlanStep]:
        """Replace the goal's pending steps with ``steps`` (in order, after any finished ones)."""

    @abstractmethod
    def list_plan(self, profile: str, goal_version: int) -> list[PlanStep]:
        """The goal's steps in order."""

    @abstractmethod
    def current_plan_step(self, profile: str, goal_version: int) -> PlanStep | None:
        """The first pending step: the one the fast tick advances."""

    @abstractmethod
    def set_step_status(
        self,
        profile: str,
        step_id: int,
        status: StepStatus,
        *,
        now: datetime,
        expected: StepStatus = StepStatus.PENDING,
    ) -> PlanStep:
        """Compare-and-set a step's status."""

    # -- intents ------------------------------------------------------------------------------------

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

    # -- progress -----------------------------------------------------------------------------------

    @abstractmethod
    def record_progress(self, profile: str, row: NewProgress) -> ProgressRow:
        """Append one tick's progress row."""

    @abstractmethod
    def recent_progress(
        self, profile: str, *, limit: int = 20, tick_kind: str | None = None
    ) -> list[ProgressRow]:
        """The newest rows first; as fast with a million rows as with a thousand."""

    # -- observations and memory --------------------------------------------------------------------

    @abstractmethod
    def add_observation(
        self,
        profile: str,
        *,
        source: str,
        content_hash: str,
        payload: dict[str, Any],
        now: datetime,
        tainted: bool = True,
    ) -> Observation | None:
        """Record an observation; None when this profile already has its content hash."""

    @abstractmethod
    def list_observations(
        self, profile: str, *, since: datetime = EPOCH, limit: int = 100
    ) -> list[Observation]:
        """Those observed at or after ``since``, newest first (by observation time, then id); as
        fast with a year of older observations as with none."""

    @abstractmethod
    def add_note(
        self, profile: str, text: str, *, now: datetime, source: str = "", tainted: bool = False
    ) -> MemoryNote:
        """Keep a memory note."""

    @abstractmethod
    def search_notes(self, profile: str, query: str, *, limit: int = 20) -> list[MemoryNote]:
        """Notes containing every word of ``query`` (case-insensitive), newest first."""

    # -- critiques, attention, notifications, monitor, state of play --------------------------------

    @abstractmethod
    def add_critique(
        self, profile: str, goal_version: int, text: str, *, failure_type: str, now: datetime, keep: int = 3
    ) -> Critique:
        """Add a self-critique and prune the goal's critiques to the newest ``keep``."""

    @abstractmethod
    def recent_critiques(self, profile: str, goal_version: int, *, limit: int = 3) -> list[Critique]:
        """The goal's newest critiques first."""

    @abstractmethod
    def spend_attention(
        self,
        profile: str,
        *,
        now: datetime,
        day: str,
        cap: int,
        min_gap: timedelta,
        budget: str = "unsolicited",
        reason: str = "",
    ) -> bool:
        """Spend one interruption if ``day`` has used fewer than ``cap`` and the last spend of this
        budget (on any day) is at least ``min_gap`` before ``now``. One conditional statement: True
        when spent. ``day`` is the profile-local date the caller computed (e.g. ``2026-07-07``)."""

    @abstractmethod
    def attention_spends(self, profile: str, *, since: datetime = EPOCH) -> list[AttentionSpend]:
        """Spends at or after ``since``, oldest first."""

    @abstractmethod
    def log_notification(
        self,
        profile: str,
        *,
        channel: str,
        kind: str,
        subject: str,
        now: datetime,
        body: str = "",
        intent_id: int | None = None,
    ) -> Notification:
        """Append to the notification log."""

    @abstractmethod
    def list_notifications(
        self, profile: str, *, since: datetime = EPOCH, limit: int = 100
    ) -> list[Notification]:
        """Newest first."""

    @abstractmethod
    def get_condition(self, profile: str, name: str) -> ConditionState | None:
        """The monitor's state for one condition, or None if never recorded."""

    @abstractmethod
    def put_condition(
        self,
        profile: str,
        name: str,
        *,
        active: bool,
        now: datetime,
        since: datetime | None = None,
        last_notified_at: datetime | None = None,
    ) -> ConditionState:
        """Write the monitor's state for one condition."""

    @abstractmethod
    def list_conditions(self, profiles: Sequence[str] | None = None) -> list[ConditionState]:
        """The monitor's state of every condition of ``profiles`` (None: every profile), in one
        query: the monitor reads all its memory at once, never a profile at a time."""

    @abstractmethod
    def loop_stats(
        self, profiles: Sequence[str] | None = None, *, window: int, flagged: Flagged | None = None
    ) -> dict[str, LoopStats]:
        """What the stall monitor reads about each profile of ``profiles`` (None: every profile), in
        one set-based query however many profiles there are. Every profile in scope has an entry,
        unless ``flagged`` is given: then only those with ``no_progress_streak >= min_streak``, or
        ``board_unchanged_ticks >= min_board``, or ``newest_progress_at <= silent_before``, or no
        active goal model, or an active monitor condition (a healthy fleet returns nothing).

        - ``no_progress_streak``: the newest ``fast`` rows in a row whose outcome is not in
          ``PROGRESS_OUTCOMES``, counted over at most the newest ``window`` fast rows;
        - ``newest_progress_at``: ``ended_at`` of the newest row of any kind (None: never ran);
        - ``has_active_goal``; ``waiting_approvals``: intents at ``requires_approval``;
        - ``board_unchanged_ticks``: the newest rows (any kind) in a row whose ``state_hash`` equals
          the newest row's, counted over at most the newest ``window`` rows.
        """

    @abstractmethod
    def add_state_of_play(self, profile: str, text: str, *, now: datetime) -> StateOfPlay:
        """Write a state-of-play summary."""

    @abstractmethod
    def latest_state_of_play(self, profile: str) -> StateOfPlay | None:
        """The newest summary, or None."""

    # -- the dashboard's reads ------------------------------------------------------------------------

    @abstractmethod
    def count_intents(self, profile: str, *, status: IntentStatus | None = None) -> int:
        """How many intents the profile has (at ``status``): a COUNT, never a capped list's length."""

    @abstractmethod
    def intent_mark(self, profile: str, status: IntentStatus) -> tuple[int, int]:
        """How many intents are at ``status``, and the newest one's id (0 for none), in one read."""

    @abstractmethod
    def intents_oldest(
        self, profile: str, *, status: IntentStatus, after: int = 0, limit: int = 20
    ) -> list[Intent]:
        """The intents at ``status`` with an id above ``after``, oldest first (keyset paging)."""

    @abstractmethod
    def search_intents(
        self,
        profile: str,
        *,
        status: IntentStatus | None = None,
        action_type: str = "",
        words: Sequence[str] = (),
        before: int | None = None,
        limit: int = 200,
    ) -> list[Intent]:
        """Every intent (not only the newest N) newest first below ``before``, by status, type and
        up to three words its title contains (case-insensitive), in SQL along an index."""

    @abstractmethod
    def progress_filtered(
        self, profile: str, *, tick_kind: str = "", outcome: str = "", limit: int = 200
    ) -> list[ProgressRow]:
        """The newest rows of this kind and/or outcome among every row, along an index."""

    @abstractmethod
    def overview_snapshot(
        self, profile: str, *, kinds: Sequence[str], waiting: int, since: datetime
    ) -> OverviewSnapshot:
        """Everything the dashboard's overview shows (``NotFoundError`` for an unknown profile)."""

    @abstractmethod
    def observations_by_id(self, profile: str, ids: Sequence[int]) -> list[Observation]:
        """The profile's observations with these ids (unknown ids are skipped), oldest first."""

    # -- retention ----------------------------------------------------------------------------------

    @abstractmethod
    def prune(self, profile: str, *, before: datetime, keep_recent: int) -> dict[str, int]:
        """Delete the profile's ephemeral rows older than ``before``, within the retention floors;
        return how many rows of each kind went (``PRUNABLE`` names the kinds).

        Floors: the ``keep_recent`` newest rows of each kind always stay (progress: of each tick
        kind, so a rare tick's last row survives a flood of fast ones), and so does any progress
        row or notification that references an open (non-final) intent. Intents, decisions, goal
        models, the board, notes and critiques are never pruned here. A pruned observation's hash
        may be observed again later."""

    # -- tick locks ---------------------------------------------------------------------------------

    @abstractmethod
    def tick_lock(
        self,
        profile: str,
        tick_kind: str,
        *,
        owner: str,
        now: datetime,
        lease: timedelta = timedelta(hours=1),
    ) -> AbstractContextManager[bool]:
        """``with store.tick_lock(...) as held:`` — held is False when another tick of this kind
        for this profile is running; two never overlap. ``lease`` bounds a crashed holder
        (SQLite); PostgreSQL uses a session advisory lock, released when its process dies."""


def search_tokens(text: str) -> list[str]:
    """The words of ``text``, lowercased: runs of letters and digits. Every backend indexes and
    queries by these, so punctuation and search operators in a query are never syntax."""
    return _WORD.findall(text.lower())
