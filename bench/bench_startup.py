"""Start-up of the one-shot processes in instructions, as ratios to ``python -c pass`` (issue 25).

Each command runs under callgrind (``valgrind --tool=callgrind --callgrind-out-file=/dev/null``),
alternating with the baseline, on a fresh SQLite store made by ``operator init`` (one profile, an
active goal); the ratio is each round's count over the baseline's of the same round (median and
min-max). Each command is counted twice: with an empty config file, and with the one a real
installation has, as ``operator init --quiet 22-7 --channel console`` writes it. The bytecode cache,
the store and the config cache are warmed first, as an installed package and a running installation
have them. Instruction counts do not depend on the other load of a shared machine, unlike CPU time
(which ``bench_ticks`` reports for ``observe``).
Targets: observe <= 4.5, fast <= 8, executor <= 6, monitor <= 6. Without valgrind: a note, no figures.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench._util import instructions, report_rounds

#: (name, argv after ``python -m tickloop``, target)
COMMANDS = [
    ("tick observe", ["operator", "tick", "observe"], "<= 4.5"),
    ("tick fast", ["operator", "tick", "fast"], "<= 8"),
    ("tick executor", ["operator", "tick", "executor"], "<= 6"),
    ("operator monitor", ["operator", "monitor"], "<= 6"),
]
#: (name, extra ``operator init`` options): the empty config file, and what init writes for a person
CONFIGS = [
    ("empty config", []),
    ("real config", ["--quiet", "22-7", "--channel", "console"]),
]


def _installation(root: Path, init_options: list[str]) -> dict[str, str]:
    """An environment with its own empty config file, store and state dir, set up by ``operator init``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("TICKLOOP_") and k != "PYTHONDONTWRITEBYTECODE"
    }
    root.mkdir()
    (root / "config.toml").write_text("")
    env.update(
        TICKLOOP_STORE=f"sqlite:///{root / 'store.db'}",
        TICKLOOP_CONFIG=str(root / "config.toml"),
        XDG_STATE_HOME=str(root / "state"),
        XDG_DATA_HOME=str(root / "data"),
    )
    init = ["operator", "init", "--goal", "Ship the thesis", "--timezone", "Europe/Berlin"]
    init += init_options
    _tickloop(init, env, check=True)
    for _, argv, _ in COMMANDS:  # warm the bytecode cache, the store and any state file
        _tickloop(argv, env, check=False)
    return env


def _tickloop(argv: list[str], env: dict[str, str], *, check: bool) -> None:
    subprocess.run(
        [sys.executable, "-m", "tickloop", *argv], env=env, capture_output=True, check=check, timeout=120
    )


def run(quick: bool) -> None:  # noqa: FBT001  (the bench runner's fixed signature)
    if shutil.which("valgrind") is None:
        print("start-up instruction counts: valgrind is not installed (apt-get install valgrind); skipped")
        return
    rounds = 1 if quick else 3
    with tempfile.TemporaryDirectory() as tmp:
        for config, init_options in CONFIGS:
            env = _installation(Path(tmp) / config.replace(" ", "-"), init_options)
            for name, argv, target in COMMANDS:
                counts, baselines = [], []
                for _ in range(rounds):
                    baselines.append(instructions([sys.executable, "-c", "pass"], env))
                    # as in the warm-up, a tick may end non-zero (no model): its start-up is still counted
                    counts.append(instructions([sys.executable, "-m", "tickloop", *argv], env, check=False))
                label = f"start-up instructions: {name}, {config}"
                report_rounds(label, counts, baselines, target=target, unit="")
