"""An example Inspect scorer for exported tickloop logs: the mean words per time step of a session.

It reads the per-step word counts that every exported sample carries in its metadata, so it scores
a redacted log too (the counts are numbers, never text)::

    scorer="$(python -c 'import tickloop.experiment.inspect_scorer as m; print(m.__file__)')"
    inspect score logs/grid_offline--default.eval --scorer "$scorer@words_per_step"

or from Python: ``inspect_ai.score(read_eval_log(path), words_per_step())``. This module imports
``inspect_ai`` (extra ``inspect``) at import time: only Inspect and a researcher's script load it.
"""

from __future__ import annotations

import statistics

from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr
from inspect_ai.solver import TaskState


@scorer(metrics=[mean(), stderr()])
def words_per_step() -> Scorer:
    """Mean whitespace-separated words of the replies to the time steps (0 for a session without any);
    step 0, the reply to the opening, is the baseline and not a time step."""

    async def score(state: TaskState, target: Target) -> Score:  # noqa: ARG001  (no target: a measure)
        steps = state.metadata.get("steps", [])
        words = [s["words"] for s in steps if s.get("step", 1) > 0 and s.get("words") is not None]
        value = statistics.fmean(words) if words else 0.0
        return Score(value=value, explanation=f"{len(words)} time steps, words {words}")

    return score
