"""Several machines on one PostgreSQL: executors and ticks on separate process groups (standing in for
hosts) share the database without double execution."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from bench.store_load import T0, seed_intents

from tickloop.operator.domain import IntentStatus
from tickloop.operator.store import open_store

INTENTS = 120
PASSES = 8


def host(pg_url: str, tmp_path: Path, name: str) -> subprocess.Popen[str]:
    """One 'host': its own process group, its own notes directory and config, the shared database;
    it runs executor and observe ticks back to back, as its timers would."""
    home = tmp_path / name
    home.mkdir()
    (home / "config.toml").write_text(f'[handlers]\nnotesDir = "{home / "notes"}"\n[executor]\nbatch = 5\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("TICKLOOP_")}
    env.update(
        TICKLOOP_STORE=pg_url,
        TICKLOOP_CONFIG=str(home / "config.toml"),
        TICKLOOP_DRY_RUN="0",
        XDG_STATE_HOME=str(home / "state"),
    )
    tick = f"{sys.executable} -m tickloop operator tick"
    one_round = f"{tick} executor --day {T0.date()} --profile shared; {tick} observe --profile shared"
    script = f"for i in $(seq {PASSES}); do {one_round}; done"
    return subprocess.Popen(
        ["bash", "-c", script],
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
def test_two_hosts_share_one_postgresql_without_double_execution(pg_url: str, tmp_path: Path) -> None:
    """Every intent is executed exactly once across both hosts: one note file in one host's notes
    directory, the intent `sent`; two executor ticks for one profile never overlap (advisory lock)."""
    with open_store(pg_url) as store:
        store.create_profile("shared", now=T0)
    seed_intents(pg_url, "shared", INTENTS)
    hosts = [host(pg_url, tmp_path, name) for name in ("host-a", "host-b")]
    for proc in hosts:
        _, err = proc.communicate(timeout=240)
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
