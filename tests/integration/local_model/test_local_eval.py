"""`tickloop operator eval` against the real local model (SmolLM2-135M under llama.cpp's grammar):
the suite runs end to end through the CLI and scores real answers."""

from __future__ import annotations

import json
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
    under the grammar every answer is schema-valid, and the table counts each check it applies to."""
    config = endpoint_config(tmp_path, served.base_url, timeout_s=240)
    env = {**clean_env(), "TICKLOOP_CONFIG": str(config), "HOME": str(tmp_path)}
    args = [sys.executable, "-m", "tickloop", "operator", "eval", "--model", "local", "--json"]
    for name in SCENARIOS:
        args += ["--scenario", name]
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=False, timeout=840)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert [t["scenario"] for t in data["trials"]] == SCENARIOS
    assert all(len(t["calls"]) == 1 for t in data["trials"])
    checks = {c["check"]: c for c in data["checks"]}
    assert checks["schema-valid"]["applied"] == 3
    assert checks["schema-valid"]["passed"] == 3, [t["error"] for t in data["trials"]]
    assert checks["plan covers open tasks"]["applied"] == 1
    assert data["perTick"]["model_seconds"]["count"] == 3
