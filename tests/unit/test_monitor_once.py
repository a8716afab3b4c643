"""`operator monitor` parsed without click accepts nothing click refuses, and means the same."""

from __future__ import annotations

import os

import click
from hypothesis import given
from hypothesis import strategies as st

from tickloop.cli.monitor_once import MonitorRequest, parse
from tickloop.cli.operator_monitor import monitor

TOKENS = st.sampled_from(
    ["--all", "--profile", "--profile=me", "me", "-x", "--help", "--profile=", "--", "x=1"]
)


@given(st.lists(TOKENS, max_size=3), st.sampled_from([None, "envp"]))
def test_the_fast_parse_agrees_with_click(args: list[str], env_profile: str | None) -> None:
    """Whatever the fast path accepts, click accepts too, for the same profiles."""
    env = {} if env_profile is None else {"TICKLOOP_PROFILE": env_profile}
    got = parse(args, env)
    if got is None:
        return
    saved = os.environ.pop("TICKLOOP_PROFILE", None)
    os.environ.update(env)
    try:
        ctx = monitor.make_context("monitor", list(args))
    except click.exceptions.Exit as exc:  # pragma: no cover  (--help is never accepted by parse)
        raise AssertionError(args) from exc
    finally:
        os.environ.pop("TICKLOOP_PROFILE", None)
        if saved is not None:
            os.environ["TICKLOOP_PROFILE"] = saved
    profile, everyone = ctx.params["profile"], ctx.params["all_profiles"]
    assert got == MonitorRequest(None if everyone or profile is None else (profile,))


def test_the_plain_forms_take_the_fast_path() -> None:
    """The forms a timer uses are parsed; help and mistakes are left to click."""
    assert parse([], {}) == MonitorRequest(None)
    assert parse(["--all"], {}) == MonitorRequest(None)
    assert parse(["--profile", "me"], {}) == MonitorRequest(("me",))
    assert parse([], {"TICKLOOP_PROFILE": "me"}) == MonitorRequest(("me",))
    for odd in (
        ["--help"],
        ["--profile"],
        ["--all", "--all"],
        ["--profile", "-x"],
        ["--all", "--profile", "me"],
    ):
        assert parse(odd, {}) is None
