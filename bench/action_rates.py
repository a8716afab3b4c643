"""Twenty fast ticks over twenty varied goals and boards, and three rates of what they proposed.
Shared by the ``local_model`` tests and ``bench_local``, so both measure the same thing:

- **schema-valid**: the answer decoded as an ``ActionIntentOut`` (and its cross-field checks);
- **known action type**: it names a type a registered handler runs (``none`` is not one);
- **executable or correctly gated**: the intent reached ``ready`` and its handler accepts it (run
  dry, nothing written), or it waits at ``requires_approval`` because its type is external or
  spend, with a payload its handler would accept once approved (an email's one valid address).

The ticks are real: ``run_tick("fast", ...)`` on a store seeded with each scenario, the model as
given. Half the scenarios have a current plan step; half have only a board (the tick re-plans).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tickloop.config import load_settings
from tickloop.errors import TickloopError
from tickloop.models.base import ChatModel
from tickloop.operator.domain import Intent, IntentStatus, NewPlanStep, Outcome, Tier
from tickloop.operator.handlers import HandlerContext, HandlerRequest, HandlerSettings, handler_for
from tickloop.operator.runner import run_tick
from tickloop.operator.store import open_store
from tickloop.operator.store.base import Store


@dataclass(frozen=True, slots=True)
class Scenario:
    """A goal, its open tasks (most important first) and the current plan step (None: no plan)."""

    goal: str
    board: tuple[str, ...]
    step: str | None


#: different domains, lengths and verbs; every other one has no plan step
_S = Scenario
SCENARIOS: tuple[Scenario, ...] = (
    _S("Ship the quarterly report", ("Email the draft to finance", "Fix the charts"),
       "Email the draft to the finance team at finance@example.com"),
    _S("Plan a birthday party", ("Book a venue", "Invite friends", "Order a cake"), None),
    _S("Learn Spanish", ("Practice verbs", "Find a tutor"), "Write down twenty common verbs"),
    _S("Fix the leaking roof", ("Ask two roofers for a quote", "Buy a tarp"), None),
    _S("Run a half marathon", ("Write this week's training plan",), "Write this week's training plan"),
    _S("Move to a new flat", ("List the boxes still to pack", "Cancel the internet contract"), None),
    _S("Renew the passport", ("Fill in the renewal form", "Take photos"), "Fill in the renewal form"),
    _S("Launch the newsletter", ("Draft the first issue's outline", "Pick a name"), None),
    _S("Reduce cloud costs", ("Find the three most expensive services",),
       "Look up what we noted about the storage bill"),
    _S("Prepare the tax return", ("Collect last year's receipts", "Book the accountant"), None),
    _S("Hire a designer", ("Post the job description", "Set a budget"), "Draft the job description"),
    _S("Write a thesis chapter", ("Summarise the related work", "Make figure 3"), None),
    _S("Adopt a dog", ("Call the shelter about visiting hours",), "Tell the person the shelter opens at 10"),
    _S("Organise the team offsite", ("Send a poll for the dates", "Find a venue"), None),
    _S("Publish the open-source library", ("Write the README install section",),
       "Write the README's install section"),
    _S("Repair the bicycle", ("Buy a new inner tube for 8 euros at the bike shop", "Oil the chain"), None),
    _S("Cut sugar from the diet", ("Plan next week's breakfasts",), "Plan next week's breakfasts"),
    _S("Back up the family photos", ("Copy the 2023 folder to the disk", "Label the disk"), None),
    _S("Apply for the grant", ("Ask the professor for a reference letter",),
       "Draft the request to the professor"),
    _S("Tidy the garage", ("Note which tools to give away", "Sweep the floor"), None),
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class TickVerdict:
    """What one tick's answer achieved, and what the row said."""

    goal: str
    schema_valid: bool
    known_type: bool
    executable_or_gated: bool
    said: str


@dataclass(frozen=True, slots=True)
class Rates:
    """The three rates over the ticks, and each tick's verdict (for reports and failure messages)."""

    ticks: tuple[TickVerdict, ...] = field(default_factory=tuple)

    def _rate(self, attribute: str) -> float:
        return sum(getattr(t, attribute) for t in self.ticks) / len(self.ticks) if self.ticks else 0.0

    @property
    def schema_valid(self) -> float:
        return self._rate("schema_valid")

    @property
    def known_type(self) -> float:
        return self._rate("known_type")

    @property
    def executable_or_gated(self) -> float:
        return self._rate("executable_or_gated")

    def __str__(self) -> str:
        n = len(self.ticks)
        counts = [sum(getattr(t, a) for t in self.ticks) for a in _RATES]
        return ", ".join(
            f"{name} {c}/{n} ({c / n if n else 0:.0%})" for name, c in zip(_NAMES, counts, strict=True)
        )

    def misses(self) -> list[str]:
        """One line per tick that missed any rate: its goal and what the row said."""
        return [f"{t.goal}: {t.said}" for t in self.ticks if not t.executable_or_gated]


_RATES = ("schema_valid", "known_type", "executable_or_gated")
_NAMES = ("schema-valid", "known type", "executable-or-gated")
#: the rows of a tick whose answer never decoded (``_ask``)
_UNDECODED = ("invalid model output", "model answer truncated")


def seed(store: Store, profile: str, scenario: Scenario, now: datetime) -> None:
    """A profile with the scenario's active goal, its board and (if any) its one plan step."""
    store.create_profile(profile, now=now)
    goal = store.add_goal_model(
        profile, title=scenario.goal, body=f"The person wants to: {scenario.goal.lower()}.", now=now
    )
    store.activate_goal_model(profile, goal.version, now=now)
    tasks = [
        store.add_task(profile, title, priority=90 - 10 * rank, now=now)
        for rank, title in enumerate(scenario.board)
    ]
    if scenario.step is not None:
        store.replace_plan(profile, goal.version, [NewPlanStep(scenario.step, tasks[0].id)], now=now)


def measure(
    model: ChatModel,
    scenarios: Sequence[Scenario] = SCENARIOS,
    *,
    store_url: str = "memory://",
    log: Callable[[str], None] = lambda _: None,
    on_tick: Callable[[TickVerdict], None] = lambda _: None,
) -> Rates:
    """One real fast tick per scenario, each in its own profile of one store; the three rates."""
    settings = load_settings({}, None)
    now = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    verdicts: list[TickVerdict] = []
    with open_store(store_url) as store, tempfile.TemporaryDirectory(prefix="tickloop-rates-") as tmp:
        for number, scenario in enumerate(scenarios):
            profile = f"s{number}"
            seed(store, profile, scenario, now - timedelta(minutes=1))
            run_tick("fast", store=store, profile=profile, settings=settings, env={}, log=log, model=model)
            verdicts.append(judge(store, profile, scenario.goal, Path(tmp)))
            on_tick(verdicts[-1])
    return Rates(tuple(verdicts))


def judge(store: Store, profile: str, goal: str, scratch: Path) -> TickVerdict:
    """Classify the one fast tick of ``profile`` by its progress row and its intent."""
    [row] = store.recent_progress(profile, limit=1, tick_kind="fast")
    said = f"{row.outcome}: {row.error or row.detail}"[:300]
    if row.outcome is Outcome.FAILED and row.error.startswith(_UNDECODED):
        return TickVerdict(goal, False, False, False, said)
    if row.outcome is Outcome.FAILED:  # decoded, but refused by the cross-field checks (check_intent)
        return TickVerdict(goal, False, False, False, said)
    intent = next(iter(store.list_intents(profile, limit=1)), None)
    if intent is None:  # ``none``: nothing to do; not a known action type
        return TickVerdict(goal, True, False, False, said)
    spec = handler_for(intent.action_type)
    said = f"{said} -> {intent.action_type} {intent.title[:60]!r} to {intent.recipient[:60]!r}"
    return TickVerdict(goal, True, spec is not None, _runs_or_waits(intent, scratch), said)


def _runs_or_waits(intent: Intent, scratch: Path) -> bool:
    spec = handler_for(intent.action_type)
    if spec is None or any(r.startswith("gate.unknown_type") for r in intent.verdict_reasons):
        return False
    if intent.status is IntentStatus.READY:
        return _handler_accepts(intent, scratch)
    if intent.status is IntentStatus.REQUIRES_APPROVAL and spec.tier in (Tier.EXTERNAL, Tier.SPEND):
        return _payload_would_do(intent)
    return False


def _handler_accepts(intent: Intent, scratch: Path) -> bool:
    """The handler, run dry (it validates everything and writes nothing), accepts the intent."""
    spec = handler_for(intent.action_type)
    assert spec is not None
    context = HandlerContext(
        settings=HandlerSettings(notes_dir=str(scratch / "notes"), drafts_dir=str(scratch / "drafts")),
        search=lambda _query: [],
    )
    request = HandlerRequest(
        intent_id=intent.id,
        action_type=intent.action_type,
        title=intent.title,
        now=intent.created_at,
        recipient=intent.recipient or None,
        payload=intent.payload,
        dry_run=True,
    )
    try:
        spec.handler(request, context)
    except TickloopError:
        return False
    return True


def _payload_would_do(intent: Intent) -> bool:
    """An external intent the person could approve as it stands: an email to one valid address, a
    message to every channel (the model knows no channel names), a spend with its amount."""
    from tickloop.notify.address import validate_recipient  # noqa: PLC0415

    if intent.action_type == "email":
        try:
            validate_recipient(intent.recipient)
        except TickloopError:
            return False
        return True
    if intent.action_type == "message":
        return intent.recipient == ""
    return intent.action_type == "spend" and isinstance(intent.payload.get("amount"), int | float)
