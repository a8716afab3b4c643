"""``tickloop operator eval``: is this model good enough to run my operator?

Each shipped scenario (``scenarios/*.toml``) is seeded into a throwaway in-memory store and its real
tick runs against it with the chosen model, ``repeat`` times; the executor never runs. Deterministic
checks (``checks``) score every answer; the report gives each check's rate with its 95% Wilson
interval against the bar a model needs before the person arms the executor, and the tokens and the
model's seconds per tick.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from tickloop.config import Settings
from tickloop.models.base import ChatModel
from tickloop.operator.eval.checks import score
from tickloop.operator.eval.report import CheckStats, Spread, check_stats, per_tick
from tickloop.operator.eval.scenarios import Scenario
from tickloop.operator.eval.trial import Trial, run_trial


@dataclass(frozen=True, slots=True)
class EvalResult:
    """The scored trials and their summary."""

    trials: list[Trial]
    verdicts: list[dict[str, bool | None]]
    stats: list[CheckStats]
    per_tick: dict[str, Spread | None]
    #: when the run started and ended (UTC)
    started: datetime | None = None
    finished: datetime | None = None


def run_suite(
    scenarios: Sequence[Scenario],
    model: ChatModel,
    settings: Settings,
    env: Mapping[str, str],
    *,
    repeat: int = 1,
    progress: Any = None,
) -> EvalResult:
    """Run every scenario ``repeat`` times against ``model`` and score each trial."""
    trials: list[Trial] = []
    verdicts: list[dict[str, bool | None]] = []
    started = datetime.now(UTC)
    for number in range(1, repeat + 1):
        for scenario in scenarios:
            trial = run_trial(scenario, number, model, settings, env)
            trials.append(trial)
            verdicts.append(score(scenario, trial))
            if progress is not None:
                progress(scenario, trial, verdicts[-1])
    finished = datetime.now(UTC)
    return EvalResult(trials, verdicts, check_stats(verdicts), per_tick(trials), started, finished)
