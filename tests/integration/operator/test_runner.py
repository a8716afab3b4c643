"""The one-shot runner: one progress row on every path, signals included, with documented exit codes."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tickloop.config import load_settings
from tickloop.operator.domain import Outcome
from tickloop.operator.runner import TICKS, TickContext, TickResult, run_tick
from tickloop.operator.store import open_store


def cli_env(tmp_path: Path, config: str = "") -> dict[str, str]:
    (tmp_path / "config.toml").write_text(config)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TICKLOOP_")}
    env.update(
        TICKLOOP_STORE=f"sqlite:///{tmp_path / 'store.db'}",
        TICKLOOP_CONFIG=str(tmp_path / "config.toml"),
        XDG_STATE_HOME=str(tmp_path / "state"),
    )
    return env


def tickloop(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tickloop", *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def rows(tmp_path: Path) -> list[tuple[str, str]]:
    with open_store(f"sqlite:///{tmp_path / 'store.db'}") as store:
        return [(r.outcome.value, r.error) for r in store.recent_progress("default", limit=10_000)]


@pytest.fixture
def profile_env(tmp_path: Path, slow_calendar_url: str) -> dict[str, str]:
    """A SQLite store with profile `default` and a calendar source that takes a second to answer."""
    env = cli_env(tmp_path, f'[[sources.calendars]]\nlocation = "{slow_calendar_url}"\n')
    assert tickloop(env, "operator", "init", "--goal", "g").returncode == 0
    return env


def test_exit_codes_and_one_row_per_run(profile_env: dict[str, str], tmp_path: Path) -> None:
    """A tick exits 0 and leaves one row; bad usage or an unknown profile exits 2 and leaves none."""
    assert tickloop(profile_env, "operator", "tick", "observe").returncode == 0
    assert len(rows(tmp_path)) == 1
    assert tickloop(profile_env, "operator", "tick", "observe", "--profile", "nobody").returncode == 2
    assert tickloop(profile_env, "operator", "tick", "observe", "--dry-run").returncode == 2
    assert tickloop(profile_env, "operator", "tick", "teleport").returncode == 2
    assert len(rows(tmp_path)) == 1


@pytest.mark.slow
def test_sigterm_at_random_moments_leaves_exactly_one_row_each_time(
    profile_env: dict[str, str], tmp_path: Path
) -> None:
    """SIGTERM at any moment of a tick never leaves two rows; once the handler is in place it leaves
    exactly one (a `failed` row naming the signal, or the tick's own row if it had finished)."""
    rng = random.Random(1234)
    outcomes: dict[int, int] = {}
    interrupted = 0
    for _ in range(30):
        before = len(rows(tmp_path))
        with subprocess.Popen(
            [sys.executable, "-m", "tickloop", "operator", "tick", "observe"],
            env=profile_env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        ) as proc:
            time.sleep(rng.uniform(0.05, 1.6))
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=10)
        found = rows(tmp_path)
        outcomes[code] = outcomes.get(code, 0) + 1
        if code == -signal.SIGTERM:
            # Killed by the default action: before the runner's handler was installed (no store yet,
            # like SIGKILL: no row) or after it was removed again (the row is already written).
            assert len(found) in (before, before + 1)
        else:
            assert code in (0, 143), code
            assert len(found) == before + 1
            if code == 143:
                # The handler wrote the failed row, or the signal came while the tick's own row was
                # being written: the handler then only notes the exit code and lets that row stand.
                assert found[0] == ("failed", "interrupted by SIGTERM") or found[0][0] != "failed", found[0]
                interrupted += found[0][0] == "failed"
    assert interrupted >= 5, outcomes  # the handler's own flush really was exercised


def test_a_tick_that_raises_leaves_one_failed_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An exception inside a tick becomes one `failed` row carrying the error, and exit code 1."""
    from tickloop.operator.ticks import observe  # noqa: PLC0415

    def boom(ctx: TickContext) -> TickResult:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(observe, "run", boom)
    with open_store("memory://") as store:
        store.create_profile("default", display_name="", timezone="UTC", now=_now())
        code = run_tick(
            "observe",
            store=store,
            profile="default",
            settings=load_settings({}, None),
            env={},
            log=lambda _: None,
        )
        found = store.recent_progress("default")
    assert code == 1
    assert [(r.outcome, r.error) for r in found] == [(Outcome.FAILED, "RuntimeError: disk on fire")]


def test_every_tick_kind_is_registered() -> None:
    """The five ticks of the seed are the kinds `operator tick` accepts."""
    assert set(TICKS) == {"observe", "fast", "slow", "executor", "consolidate"}


def _now():  # type: ignore[no-untyped-def]
    from datetime import UTC, datetime  # noqa: PLC0415

    return datetime(2026, 11, 30, tzinfo=UTC)
