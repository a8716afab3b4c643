"""`tickloop operator run` as a real process: SIGTERM lets the running tick finish and write its row."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tickloop.operator.store import open_store


def test_sigterm_to_the_scheduler_lets_the_running_tick_write_its_own_row(
    tmp_path: Path, slow_calendar_url: str
) -> None:
    """The scheduler stops starting ticks on SIGTERM but waits: the observe tick it was running finishes
    its work (row `done`, not `failed`), and the scheduler exits 0 after it."""
    (tmp_path / "config.toml").write_text(f'[[sources.calendars]]\nlocation = "{slow_calendar_url}"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("TICKLOOP_")}
    env.update(
        TICKLOOP_STORE=f"sqlite:///{tmp_path / 'store.db'}",
        TICKLOOP_CONFIG=str(tmp_path / "config.toml"),
        XDG_STATE_HOME=str(tmp_path / "state"),
    )
    init = [sys.executable, "-m", "tickloop", "operator", "init", "--goal", "g"]
    assert subprocess.run(init, env=env, capture_output=True, check=False, timeout=120).returncode == 0
    with subprocess.Popen(
        [sys.executable, "-m", "tickloop", "operator", "run", "--once"],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    ) as scheduler:
        assert scheduler.stderr is not None
        for line in scheduler.stderr:
            if "start observe for default" in line:
                break
        time.sleep(0.5)  # the observe tick is now waiting on the slow calendar
        scheduler.send_signal(signal.SIGTERM)
        rest = scheduler.stderr.read()
        code = scheduler.wait(timeout=30)
    assert code == 0, rest
    assert "exit observe for default: 0" in rest
    assert "skip fast for default: stopping" in rest
    assert rest.rstrip().endswith("scheduler stopped")
    with open_store(f"sqlite:///{tmp_path / 'store.db'}") as store:
        observe = store.recent_progress("default", tick_kind="observe")
    assert [(r.outcome.value, r.error) for r in observe] == [("done", "")]
