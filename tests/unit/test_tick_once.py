"""The click-free parser of ``tickloop operator tick`` agrees with the click command it stands in for."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import date
from pathlib import Path
from unittest import mock

import click
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tickloop.cli import tick_once
from tickloop.cli.operator_tick import tick
from tickloop.cli.tick_once import TickRequest, parse

TOKENS = [
    *("observe", "fast", "slow", "executor", "consolidate", "Fast", "bogus", ""),
    *("--profile", "--profile=alice", "--profile=", "alice", "--prof", "-p"),
    *("--day", "2026-11-30", "--day=2026-11-30", "2026-13-01", "--day=", "30/11/2026"),
    *("--dry-run", "--dry-run=1", "--help", "-h", "--", "-", "x=1"),
]


def click_request(args: list[str]) -> TickRequest | None:
    """What the click command would run for ``args``, or None if it would refuse them."""
    try:
        ctx = tick.make_context("tick", list(args))
    except (click.exceptions.Exit, click.UsageError, click.BadParameter):
        return None
    params = ctx.params
    day = None if params["day"] is None else params["day"].date()
    if params["kind"] != "executor" and (day is not None or params["dry_run"]):
        return None  # the command body's own usage error
    return TickRequest(params["kind"], params["profile"], day, params["dry_run"])


@given(
    args=st.lists(st.sampled_from(TOKENS), max_size=6),
    profile_env=st.sampled_from([None, "", "bob"]),
)
def test_every_invocation_the_plain_parser_accepts_means_what_click_says(
    args: list[str], profile_env: str | None
) -> None:
    """Whatever the plain parser accepts, click parses to the same tick; it accepts nothing click refuses."""
    env = {k: v for k, v in os.environ.items() if k != tick_once.PROFILE_ENV}
    if profile_env is not None:
        env[tick_once.PROFILE_ENV] = profile_env
    with mock.patch.dict(os.environ, env, clear=True):
        ours = parse(args, os.environ)
        theirs = click_request(args)
    if ours is not None:
        assert ours == theirs


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["observe"], TickRequest("observe", "default")),
        (["fast", "--profile", "alice"], TickRequest("fast", "alice")),
        (["--profile=alice", "slow"], TickRequest("slow", "alice")),
        (
            ["executor", "--day", "2026-11-30", "--dry-run"],
            TickRequest("executor", "default", date(2026, 11, 30), True),
        ),
        (["executor", "--day=2026-11-30"], TickRequest("executor", "default", date(2026, 11, 30))),
    ],
)
def test_the_forms_a_timer_uses_take_the_plain_path(args: list[str], expected: TickRequest) -> None:
    """The invocations the generated timers and cron lines use never need click."""
    assert parse(args, {}) == expected


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--help"],
        ["observe", "--help"],
        ["observe", "fast"],
        ["nope"],
        ["observe", "--dry-run"],
        ["fast", "--day", "2026-11-30"],
        ["executor", "--day", "2026-02-30"],
        ["executor", "--profile"],
        ["executor", "--profile", "--dry-run"],
        ["observe", "--profile", "a", "--profile", "b"],
        ["observe", "--verbose"],
    ],
)
def test_help_and_mistakes_are_left_to_click(args: list[str]) -> None:
    """Help and every malformed invocation go to click, which prints its usage message."""
    assert parse(args, {}) is None


def test_the_profile_comes_from_the_environment_when_no_flag_names_it() -> None:
    """TICKLOOP_PROFILE picks the profile, an explicit --profile wins, and an empty variable means default."""
    assert parse(["observe"], {"TICKLOOP_PROFILE": "carol"}) == TickRequest("observe", "carol")
    assert parse(["observe", "--profile", "dan"], {"TICKLOOP_PROFILE": "carol"}) == TickRequest(
        "observe", "dan"
    )
    assert parse(["observe"], {"TICKLOOP_PROFILE": ""}) == TickRequest("observe", "default")


def cli_env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "config.toml").write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TICKLOOP_")}
    env.update(
        TICKLOOP_STORE=f"sqlite:///{tmp_path / 'store.db'}",
        TICKLOOP_CONFIG=str(tmp_path / "config.toml"),
        XDG_STATE_HOME=str(tmp_path / "state"),
    )
    return env


def test_a_plain_tick_runs_without_importing_click(tmp_path: Path) -> None:
    """`tickloop operator tick observe` records its row and prints it without ever importing click."""
    env = cli_env(tmp_path)
    init = [sys.executable, "-m", "tickloop", "operator", "init", "--goal", "g"]
    subprocess.run(init, env=env, check=True, capture_output=True, timeout=120)
    code = (
        "import sys; from tickloop.cli import main; code = main(['operator', 'tick', 'observe']); "
        "print('CLICK', 'click' in sys.modules, 'CODE', code)"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, timeout=120
    )
    assert run.stdout.splitlines()[0].startswith("observe: noop")
    assert "CLICK False CODE 0" in run.stdout


def test_a_mistake_in_a_tick_invocation_gets_clicks_usage_error(tmp_path: Path) -> None:
    """A wrong KIND is refused with click's usage message and exit code 2, and no row is written."""
    run = subprocess.run(
        [sys.executable, "-m", "tickloop", "operator", "tick", "obsrve"],
        env=cli_env(tmp_path),
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert run.returncode == 2
    assert "Invalid value for '{consolidate|executor|fast|observe|slow}'" in run.stderr
    assert not (tmp_path / "store.db").exists()


def test_an_unknown_profile_on_the_plain_path_is_a_one_line_error(tmp_path: Path) -> None:
    """A tick for a profile that does not exist says so on stderr and exits 2, with no traceback."""
    env = cli_env(tmp_path)
    subprocess.run(
        [sys.executable, "-m", "tickloop", "operator", "migrate"], env=env, check=True, timeout=120
    )
    run = subprocess.run(
        [sys.executable, "-m", "tickloop", "operator", "tick", "observe", "--profile", "ghost"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert run.returncode == 2
    assert run.stderr.startswith("tickloop: ")
    assert "ghost" in run.stderr
    assert "Traceback" not in run.stderr
