"""`tickloop doctor` on a fresh machine, before `operator migrate`: the whole checklist, one failed
check for the pending migrations with its fix, exit 1 (a finding, not a usage error), and no file made."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest


def _env(tmp_path: Path, store: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TICKLOOP_")}
    env.update(
        XDG_CONFIG_HOME=str(tmp_path / "config"),
        XDG_DATA_HOME=str(tmp_path / "data"),
        XDG_STATE_HOME=str(tmp_path / "state"),
        XDG_CACHE_HOME=str(tmp_path / "cache"),
    )
    if store is not None:
        env["TICKLOOP_STORE"] = store
    return env


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def _doctor(tmp_path: Path, store: str | None) -> subprocess.CompletedProcess[str]:
    before = _files(tmp_path)
    run = subprocess.run(
        [sys.executable, "-m", "tickloop", "doctor"],
        env=_env(tmp_path, store),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert _files(tmp_path) == before, f"doctor made files: {_files(tmp_path) - before}"
    return run


def _assert_fresh_checklist(run: subprocess.CompletedProcess[str]) -> None:
    assert run.returncode == 1, run.stdout + run.stderr
    out = run.stdout
    assert "[ok ] store:" in out
    assert "[BAD] migrations: migrations pending: schema 0 of" in out
    assert "fix: run `tickloop operator init` (it creates the store and your profile)" in out
    assert "operator migrate" not in out  # a newcomer needs init, not migrate
    assert "[ - ] profiles: not checked until the store is migrated" in out
    for check in (
        "[ok ] config:",
        "[ok ] config [gate]",
        "[ok ] model offline",
        "[ok ] notify",
        "[ok ] dry-run",
    ):
        assert check in out
    assert out.count("[BAD]") == 1
    assert "1 problem(s)" in out
    assert "no such table" not in out + run.stderr


@pytest.mark.parametrize("url", ["default", "named"])
def test_doctor_before_migrate_on_sqlite_shows_the_checklist_and_makes_no_file(
    tmp_path: Path, url: str
) -> None:
    """With no store yet (the default path, or a sqlite:/// URL), doctor lists every check, says the
    migrations are pending and how to apply them, exits 1, and leaves no database file behind."""
    store = None if url == "default" else f"sqlite:///{tmp_path / 'ops' / 'store.db'}"
    run = _doctor(tmp_path, store)
    _assert_fresh_checklist(run)
    assert "no database file yet" in run.stdout


def test_doctor_on_an_existing_unmigrated_sqlite_file_leaves_no_side_files(tmp_path: Path) -> None:
    """An empty database file is read without leaving WAL side files, and reported as unmigrated."""
    (tmp_path / "store.db").write_bytes(b"")
    run = _doctor(tmp_path, f"sqlite:///{tmp_path / 'store.db'}")
    _assert_fresh_checklist(run)


def test_doctor_on_a_store_behind_an_upgrade_says_migrate(tmp_path: Path) -> None:
    """A store with an older schema (not a fresh one) gets the fix `tickloop operator migrate`."""
    path = tmp_path / "store.db"
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("CREATE TABLE tickloop_migrations (version INTEGER PRIMARY KEY)")
        conn.execute("INSERT INTO tickloop_migrations VALUES (1)")
    conn.close()
    run = _doctor(tmp_path, f"sqlite:///{path}")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "[BAD] migrations: migrations pending: schema 1 of" in run.stdout
    assert "fix: run `tickloop operator migrate`" in run.stdout


@pytest.mark.postgres
def test_doctor_before_migrate_on_postgresql_shows_the_checklist_and_creates_nothing(
    tmp_path: Path, pg_url: str
) -> None:
    """On an unmigrated PostgreSQL schema doctor reports the pending migrations as one problem,
    exits 1, and creates no table."""
    run = _doctor(tmp_path, pg_url)
    _assert_fresh_checklist(run)
    import psycopg  # noqa: PLC0415  (only the postgres test needs the driver)

    with psycopg.connect(pg_url) as conn:
        tables = conn.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()"
        ).fetchone()
    assert tables == (0,)
