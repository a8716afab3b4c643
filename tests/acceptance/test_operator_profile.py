"""The profile's timezone is checked when it is entered, can be changed later, and a bad stored one
is one clear line, never a traceback (and never a reason to delete the store)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tickloop.errors import ValidationError
from tickloop.operator.domain import check_timezone
from tickloop.operator.store import open_store


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TICKLOOP_")}
    env.update(
        TICKLOOP_STORE=f"sqlite:///{tmp_path / 'store.db'}",
        TICKLOOP_CONFIG=str(tmp_path / "config.toml"),
        TICKLOOP_PROFILE="me",
        XDG_STATE_HOME=str(tmp_path / "state"),
        COLUMNS="200",
    )
    return env


def _op(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tickloop", "operator", *args],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_init_refuses_a_misspelt_timezone_and_writes_nothing(tmp_path: Path) -> None:
    """`init --timezone Europe/Berln` exits 2 naming --timezone; no store and no config are written."""
    done = _op(tmp_path, "init", "--goal", "g", "--timezone", "Europe/Berln", "--quiet", "22-7")
    assert done.returncode == 2, done.stderr
    assert "--timezone: 'Europe/Berln' is not an IANA timezone" in done.stderr
    assert not (tmp_path / "store.db").exists()
    assert not (tmp_path / "config.toml").exists()


def test_a_bad_stored_timezone_is_one_line_and_profile_set_repairs_it(tmp_path: Path) -> None:
    """With a stored zone that names nothing (an older store), status and the executor say so in one
    line with the fix; `profile set --timezone` repairs it, records the change, and status works."""
    (tmp_path / "config.toml").write_text("")
    with open_store(f"sqlite:///{tmp_path / 'store.db'}") as store:
        store.create_profile("me", timezone="Europe/Berln", now=datetime.now(UTC))
    status = _op(tmp_path, "status")
    assert status.returncode == 2
    assert "Traceback" not in status.stderr
    assert len(status.stderr.strip().splitlines()) == 1
    assert "profile set --timezone" in status.stderr
    tick = _op(tmp_path, "tick", "executor")
    assert "Traceback" not in tick.stderr
    assert "'Europe/Berln' is not an IANA timezone" in tick.stderr
    shown = _op(tmp_path, "profile", "show", "--json")
    assert json.loads(shown.stdout)["timezoneValid"] is False
    refused = _op(tmp_path, "profile", "set", "--timezone", "Mars/Olympus")
    assert refused.returncode == 2
    assert "'Mars/Olympus' is not an IANA timezone" in refused.stderr
    fixed = _op(tmp_path, "profile", "set", "--timezone", "Europe/Berlin")
    assert fixed.returncode == 0, fixed.stderr
    assert "timezone: 'Europe/Berln' -> 'Europe/Berlin'" in fixed.stdout
    assert _op(tmp_path, "status").returncode == 0
    with open_store(f"sqlite:///{tmp_path / 'store.db'}") as store:
        [logged] = [n for n in store.list_notifications("me") if n.kind == "profile_changed"]
        assert logged.subject == "timezone: 'Europe/Berln' -> 'Europe/Berlin'"


def test_profile_set_writes_quiet_hours_and_a_channel_and_checks_them_first(tmp_path: Path) -> None:
    """`profile set --quiet 23-6 --channel console` writes [attention] and [notify]; a bad value for
    either is refused (exit 2) before anything changes."""
    (tmp_path / "config.toml").write_text("")
    assert _op(tmp_path, "init", "--goal", "g").returncode == 0
    bad = _op(tmp_path, "profile", "set", "--timezone", "Europe/Berlin", "--quiet", "25-7")
    assert bad.returncode == 2
    assert json.loads(_op(tmp_path, "profile", "show", "--json").stdout)["profile"]["timezone"] == "UTC"
    done = _op(tmp_path, "profile", "set", "--quiet", "23-6", "--channel", "console")
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "config.toml").read_text()
    assert "quietStart = 23" in text
    assert 'kind = "console"' in text
    again = _op(tmp_path, "profile", "set", "--quiet", "22-7")
    assert "already in the config file" in again.stdout


@given(st.text(max_size=40))
def test_check_timezone_returns_a_zone_or_a_validation_error(name: str) -> None:
    """Any text is either an IANA zone or refused with ValidationError naming it: nothing else escapes."""
    try:
        zone = check_timezone(name)
    except ValidationError as exc:
        assert "--timezone" in exc.message
    else:
        assert zone.key == name


@pytest.mark.parametrize(
    "name", ["", "../../etc/passwd", "Europe/Berln", "UTC\x00", "/abs/path", "Europe//Berlin"]
)
def test_hostile_timezones_are_refused(name: str) -> None:
    """Empty, path-like, NUL-bearing or misspelt names are refused."""
    with pytest.raises(ValidationError):
        check_timezone(name)
