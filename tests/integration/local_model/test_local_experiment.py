"""A small experiment against the real SmolLM2 server: the runner drives real sessions end to end."""

from __future__ import annotations

from pathlib import Path

import pytest

from tickloop.audit.ledger import verify_file
from tickloop.config import load_settings
from tickloop.experiment.export import export
from tickloop.experiment.runner import Runner
from tickloop.experiment.spec import parse_spec

from .local_support import ServedModel, endpoint_config

pytestmark = pytest.mark.local_model

SPEC = b"""
name = "local-small"
opening = ["Say hello in five words."]
policies = ["default"]
models = ["local"]
steps = 3
replicates = 2
"""


async def test_a_small_experiment_on_the_local_model_verifies(served: ServedModel, tmp_path: Path) -> None:
    """1 policy x 2 sessions x 3 steps against SmolLM2: both sessions complete, ledgers verify, and the
    dataset has a row for each opening turn and each of the 6 steps."""
    settings = load_settings({}, endpoint_config(tmp_path, served.base_url, max_tokens=16))
    out = tmp_path / "run"
    summary = await Runner(
        parse_spec(SPEC, where="spec"), out, settings=settings, env={}, concurrency=2
    ).run()
    assert summary.statuses == {"complete": 2}
    for ledger in (out / "ledgers").iterdir():
        assert verify_file(ledger)[0].violations == []
    assert export([out], tmp_path / "x", "jsonl") == {"sessions": 2, "steps": 2 * (1 + 3), "runs": 1}
