"""Several machines on one PostgreSQL: executors and ticks on separate process groups (standing in for
hosts) share the database without double execution."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from bench.store_load import T0, seed_intents

from tickloop.operator.domain import IntentStatus
from tickloop.operator.store import open_store

pytestmark = pytest.mark.postgres
INTENTS = 120
PASSES = 8


def host(pg_url: str, tmp_path: Path, name: str) -> subprocess.Popen[str]:
    """One 'host': its own process group, its own notes directory and config, the shared database;
    it runs executor and observe ticks back to back, as its timers would."""
    home = tmp_path / name
    home.mkdir()
    (home / "config.toml").write_text(f'[handlers]\nnotesDir = "{home / "notes"}"\n[executor]\nbatch = 5\n')
    tick = f"{sys.executable} -m tickloop operator tick"
    one_round = f"{tick} executor --day {T0.date()} --profile shared; {tick} observe --profile shared"
    script = f"for i in $(seq {PASSES}); do {one_round}; done"
    return subprocess.Popen(
        ["bash", "-c", script],
        env=_env(pg_url, home),
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _env(pg_url: str, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TICKLOOP_")}
    env.update(
        TICKLOOP_STORE=pg_url,
        TICKLOOP_CONFIG=str(home / "config.toml"),
        TICKLOOP_DRY_RUN="0",
        XDG_STATE_HOME=str(home / "state"),
    )
    return env


def _tick_s(pg_url: str, tmp_path: Path) -> float:
    """Seconds one observe tick process takes on this machine now (it has nothing to observe)."""
    home = tmp_path / "probe"
    home.mkdir()
    (home / "config.toml").write_text("")
    argv = [sys.executable, "-m", "tickloop", "operator", "tick", "observe", "--profile", "shared"]
    started = time.monotonic()
    subprocess.run(argv, env=_env(pg_url, home), check=True, capture_output=True, timeout=120)
    return time.monotonic() - started


@pytest.mark.slow
def test_two_hosts_share_one_postgresql_without_double_execution(pg_url: str, tmp_path: Path) -> None:
    """Every intent is executed exactly once across both hosts: one note file in one host's notes
    directory, the intent `sent`; two executor ticks for one profile never overlap (advisory lock)."""
    with open_store(pg_url) as store:
        store.create_profile("shared", now=T0)
    seed_intents(pg_url, "shared", INTENTS)
    # A liveness bound, not the behaviour under test: scaled by a tick's measured cost here and now
    # (both hosts' ticks, ten times over), never below the four minutes it always had.
    bound_s = max(240.0, 10 * 2 * 2 * PASSES * _tick_s(pg_url, tmp_path))
    hosts = [host(pg_url, tmp_path, name) for name in ("host-a", "host-b")]
    for proc in hosts:
        _, err = proc.communicate(timeout=bound_s)
        assert proc.returncode == 0, err[-2000:]
    written = {
        name: {p.name.split("-")[4] for p in (tmp_path / name / "notes").glob("note-*.md")}
        for name in ("host-a", "host-b")
    }
    assert not written["host-a"] & written["host-b"], "an intent was executed on both hosts"
    assert len(written["host-a"]) + len(written["host-b"]) == INTENTS
    with open_store(pg_url) as store:
        statuses = {i.status for i in store.list_intents("shared", limit=INTENTS + 1)}
        executor_rows = store.recent_progress("shared", limit=100, tick_kind="executor")
    assert statuses == {IntentStatus.SENT}
    assert len(executor_rows) == 2 * PASSES  # one row per executor tick on either host, every path
