"""`tickloop operator eval` against the real local model (SmolLM2-135M under llama.cpp's grammar):
the suite runs end to end through the CLI and scores real answers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .local_support import ServedModel, clean_env, endpoint_config

pytestmark = [pytest.mark.local_model, pytest.mark.slow]

SCENARIOS = ["advance-plan-step", "nothing-to-do", "slow-review"]


@pytest.mark.timeout(900)
def test_the_eval_scores_real_answers_of_the_local_model(served: ServedModel, tmp_path: Path) -> None:
    """Three scenarios (a fast step, nothing to do, a review of 6 tasks) each ask the real model once;
    under the grammar every answer is schema-valid, and the table counts each check it applies to.
    With --format inspect, Inspect reads the log back: each sample ends in the model's answer."""
    from inspect_ai.log import read_eval_log  # noqa: PLC0415

    config = endpoint_config(tmp_path, served.base_url, timeout_s=240)
    env = {**clean_env(), "TICKLOOP_CONFIG": str(config), "HOME": str(tmp_path)}
    args = [sys.executable, "-m", "tickloop", "operator", "eval", "--model", "local"]
    args += ["--format", "inspect", "--out", str(tmp_path / "logs")]
    for name in SCENARIOS:
        args += ["--scenario", name]
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=False, timeout=840)
    assert done.returncode == 0, done.stderr
    assert "schema-valid" in done.stdout
    (path,) = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(str(path))
    samples = {s.id: s for s in log.samples}
    assert sorted(samples) == sorted(SCENARIOS)
    assert all(len(s.metadata["calls"]) == 1 for s in log.samples)
    for sample in log.samples:
        assert sample.messages[-1].role == "assistant", sample.metadata["error"]
        assert sample.messages[-1].text == sample.output.completion
    checks = {s.name: s for s in log.results.scores}
    assert checks["schema-valid"].scored_samples == 3
    assert checks["schema-valid"].metrics["rate"].value == 1.0, [s.metadata["error"] for s in log.samples]
    assert checks["plan covers open tasks"].scored_samples == 1
    assert log.eval.metadata["per_tick"]["model_seconds"]["count"] == 3
