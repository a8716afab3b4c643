"""Start-up of the one-shot processes in instructions, as ratios to ``python -c pass`` (issue 25).

Each command runs under callgrind (``valgrind --tool=callgrind --callgrind-out-file=/dev/null``),
alternating with the baseline, on a fresh SQLite store with one profile and an active goal; the
ratio is each round's count over the baseline's of the same round (median and min-max). The
bytecode cache is warmed first, as an installed package has it. Instruction counts do not depend on
the other load of a shared machine, unlike CPU time (which ``bench_ticks`` reports for ``observe``).
Targets: observe <= 4.5, fast <= 8, executor <= 6, monitor <= 6. Without valgrind: a note, no figures.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from bench._util import report_rounds
from tickloop.operator.store import open_store

#: (name, argv after ``python -m tickloop``, target)
COMMANDS = [
    ("tick observe", ["operator", "tick", "observe"], "<= 4.5"),
    ("tick fast", ["operator", "tick", "fast"], "<= 8"),
    ("tick executor", ["operator", "tick", "executor"], "<= 6"),
    ("operator monitor", ["operator", "monitor"], "<= 6"),
]
_COLLECTED = re.compile(r"Collected : (\d+)")


def _env(root: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("TICKLOOP_") and k != "PYTHONDONTWRITEBYTECODE"
    }
    (root / "config.toml").write_text("")
    env.update(
        TICKLOOP_STORE=f"sqlite:///{root / 'store.db'}",
        TICKLOOP_CONFIG=str(root / "config.toml"),
        XDG_STATE_HOME=str(root / "state"),
        XDG_DATA_HOME=str(root / "data"),
    )
    return env


def _instructions(argv: list[str], env: dict[str, str]) -> int:
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    found = _COLLECTED.search(done.stderr)
    if found is None:
        raise RuntimeError(f"callgrind reported no count for {argv}: {done.stderr[-500:]}")
    return int(found[1])


def run(quick: bool) -> None:  # noqa: FBT001  (the bench runner's fixed signature)
    if shutil.which("valgrind") is None:
        print("start-up instruction counts: valgrind is not installed (apt-get install valgrind); skipped")
        return
    rounds = 1 if quick else 3
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        env = _env(root)
        with open_store(env["TICKLOOP_STORE"]) as store:
            now = datetime.now(UTC)
            store.create_profile("default", now=now)
            goal = store.add_goal_model("default", title="Ship the thesis", now=now)
            store.activate_goal_model("default", goal.version, now=now)
        for _, argv, _ in COMMANDS:  # warm the bytecode cache and the store
            subprocess.run(
                [sys.executable, "-m", "tickloop", *argv],
                env=env,
                capture_output=True,
                check=False,
                timeout=120,
            )
        for name, argv, target in COMMANDS:
            counts, baselines = [], []
            for _ in range(rounds):
                baselines.append(_instructions([sys.executable, "-c", "pass"], env))
                counts.append(_instructions([sys.executable, "-m", "tickloop", *argv], env))
            report_rounds(f"start-up instructions: {name}", counts, baselines, target=target, unit="")
