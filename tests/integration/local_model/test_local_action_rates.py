"""Twenty real fast ticks on the real local model (SmolLM2-135M under llama.cpp's grammar), over twenty
varied goals and boards: how many proposals are schema-valid, name an action a handler runs, and are
executable or correctly gated. A schema-valid intent no handler can run is not a success."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from bench.action_rates import SCENARIOS, measure

from .local_support import ServedModel, local_model

pytestmark = [pytest.mark.local_model, pytest.mark.slow]

#: the issue's bar for SmolLM2-135M; not lowered: a miss reports the measured rates and each miss
TARGET = 0.8


# twenty real model calls: minutes on 2 cores, and many more on a loaded machine; far past the
# suite's 180 s default
@pytest.mark.timeout(1800)
def test_twenty_fast_ticks_propose_known_and_executable_or_gated_actions(
    served: ServedModel, tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    """With the grammar steering actionType to the registered handler types, at least 80% of twenty
    fast ticks propose a known action type, and at least 80% one that runs or waits correctly."""
    model = local_model(tmp_path, served.base_url, timeout_s=120)
    rates = measure(model, SCENARIOS, store_url=f"sqlite:///{tmp_path / 'store.db'}")
    summary = f"{len(SCENARIOS)} fast ticks with the grammar: {rates}" + "".join(
        f"\n  missed: {line}" for line in rates.misses()
    )
    print(f"\n{summary}")
    record_property("schema_valid", rates.schema_valid)
    record_property("known_type", rates.known_type)
    record_property("executable_or_gated", rates.executable_or_gated)
    assert rates.schema_valid >= TARGET, summary
    assert rates.known_type >= TARGET, summary
    assert rates.executable_or_gated >= TARGET, summary
