"""Operating the operator from the command line: install outputs, status, doctor."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def env_for(tmp_path: Path, store: str | None = None, config: str = "") -> dict[str, str]:
    (tmp_path / "config.toml").write_text(config)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TICKLOOP_")}
    env.update(
        TICKLOOP_STORE=store or f"sqlite:///{tmp_path / 'store.db'}",
        TICKLOOP_CONFIG=str(tmp_path / "config.toml"),
        XDG_STATE_HOME=str(tmp_path / "state"),
        XDG_CONFIG_HOME=str(tmp_path / "xdg"),
    )
    return env


def tickloop(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tickloop", *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        timeout=120,
    )


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_install_systemd_writes_verified_units(tmp_path: Path) -> None:
    """`install --systemd` writes a service and timer per kind, verifies them, leaves the executor off."""
    env = env_for(tmp_path)
    result = tickloop(env, "operator", "install", "--systemd", "--dir", str(tmp_path / "units"))
    assert result.returncode == 0, result.stderr
    assert "systemd-analyze verify: ok" in result.stdout
    names = sorted(p.name for p in (tmp_path / "units").iterdir())
    assert len(names) == 10
    assert "tickloop-executor@.timer" in names
    assert "tickloop-executor@" not in result.stdout.split("enable:")[1].split("\n")[0]


def test_install_cron_and_kubernetes(tmp_path: Path) -> None:
    """`--cron` prints crontab lines; `--kubernetes` writes CronJobs; no target is a usage error."""
    env = env_for(tmp_path, config='[schedule]\nfast = "*/45 * * * *"\ntimezone = "Europe/Berlin"\n')
    cron = tickloop(env, "operator", "install", "--cron", "--profile", "ada")
    assert cron.returncode == 0, cron.stderr
    assert cron.stdout.startswith("CRON_TZ=Europe/Berlin\n")
    assert "*/45 * * * * " in cron.stdout
    kube = tickloop(env, "operator", "install", "--kubernetes", "--profile", "ada", "--dir", str(tmp_path))
    assert kube.returncode == 0, kube.stderr
    docs = (tmp_path / "tickloop-ada-cronjobs.yaml").read_text().split("\n---\n")
    assert json.loads(docs[0])["metadata"]["name"] == "tickloop-fast-ada"
    assert tickloop(env, "operator", "install").returncode == 2


def test_status_shows_goal_ticks_and_waiting_intents(tmp_path: Path) -> None:
    """`operator status --json` reports the goal, the last tick of each kind and intents awaiting approval."""
    env = env_for(tmp_path)
    assert tickloop(env, "operator", "init", "--goal", "Ship it").returncode == 0
    assert tickloop(env, "operator", "tick", "observe").returncode == 0
    result = tickloop(env, "operator", "status", "--json")
    assert result.returncode == 0, result.stderr
    view = json.loads(result.stdout)
    assert view["goal"] == "v1: Ship it"
    assert view["last_ticks"]["observe"]["outcome"] == "noop"
    assert view["last_ticks"]["fast"] is None
    assert view["conditions"] == {"stuck": False, "silent": False, "no_goal": False, "board_frozen": False}


def test_doctor_passes_on_a_healthy_setup_and_explains_problems(tmp_path: Path) -> None:
    """`doctor` exits 0 when all is well; an unreachable store or a bad section exits 1 with a fix."""
    env = env_for(tmp_path)
    assert tickloop(env, "operator", "init", "--goal", "g").returncode == 0
    healthy = tickloop(env, "doctor")
    assert healthy.returncode == 0, healthy.stdout
    assert "[ok ] model offline" in healthy.stdout
    assert "dry-run: ON (unset)" in healthy.stdout
    (tmp_path / "b").mkdir(exist_ok=True)
    broken = env_for(
        tmp_path / "b",
        store="postgresql://nobody:secret@127.0.0.1:1/none",
        config="[attention]\nquietStart = 30\n",
    )
    sick = tickloop(broken, "doctor")
    assert sick.returncode == 1
    assert "[BAD] config [attention]" in sick.stdout
    assert "[BAD] store" in sick.stdout
    assert "secret" not in sick.stdout  # the password never appears
    assert "fix:" in sick.stdout


def test_init_with_flags_creates_tasks_and_writes_settings(tmp_path: Path) -> None:
    """Non-interactive init: goal, tasks, quiet hours and a channel from flags; the config still loads."""
    env = env_for(tmp_path)
    result = tickloop(
        env, "operator", "init", "--goal", "Ship", "--task", "Write", "--task", "Plot",
        "--quiet", "23-6", "--channel", "me@example.org", "--timezone", "Europe/Berlin", "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    made = json.loads(result.stdout)
    assert [t["title"] for t in made["tasks"]] == ["Write", "Plot"]
    assert made["configWritten"] == ["attention", "notify"]
    assert tickloop(env, "doctor").returncode == 0
    refused = tickloop(
        env, "operator", "init", "--profile", "b", "--goal", "x", "--channel", "slack://tok/en"
    )
    assert refused.returncode == 2
    assert "environment variable" in refused.stderr


def test_install_reads_cadences_in_the_profiles_timezone_and_says_why(tmp_path: Path) -> None:
    """Without [schedule] timezone, `install --cron` and `--systemd` use the profile's timezone (not
    UTC) and say so on stderr; with no such profile they keep UTC and say why."""
    env = env_for(tmp_path)
    made = tickloop(env, "operator", "init", "--profile", "ada", "--goal", "g", "--timezone", "Europe/Berlin")
    assert made.returncode == 0, made.stderr
    cron = tickloop(env, "operator", "install", "--cron", "--profile", "ada")
    assert cron.stdout.startswith("CRON_TZ=Europe/Berlin\n")
    assert "profile ada's timezone" in cron.stderr
    units = tickloop(
        env, "operator", "install", "--systemd", "--profile", "ada", "--dir", str(tmp_path / "u")
    )
    assert " Europe/Berlin\n" in (tmp_path / "u" / "tickloop-fast@.timer").read_text()
    assert units.returncode == 0, units.stderr
    other = tickloop(env, "operator", "install", "--cron", "--profile", "nobody")
    assert other.stdout.startswith("CRON_TZ=UTC\n")
    assert "profile nobody is not in the store" in other.stderr


def test_the_scheduler_logs_one_line_per_kind(tmp_path: Path) -> None:
    """`operator run --once` logs its cadences one kind per line, with the zone they are read in."""
    env = env_for(tmp_path, config='[schedule]\nfast = "*/45 * * * *"\n')
    assert tickloop(env, "operator", "init", "--goal", "g").returncode == 0
    ran = tickloop(env, "operator", "run", "--once")
    assert ran.returncode == 0, ran.stderr
    assert "cadences read in UTC:" in ran.stderr
    lines = [line.split("] ", 1)[1] for line in ran.stderr.splitlines() if "] " in line]
    assert "  fast        */45 * * * *" in lines
    assert any(line.startswith("  monitor     ") for line in lines)
    assert "{" not in ran.stderr.split("scheduler started")[1].split("\n")[0]
