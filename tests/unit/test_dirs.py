"""tickloop's default directories follow the XDG rules, exactly where platformdirs puts them on Linux."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import platformdirs
import pytest

from tickloop import dirs

KINDS: list[tuple[str, str, Callable[[], Path], Callable[[str], Path]]] = [
    ("XDG_CONFIG_HOME", ".config", dirs.user_config_path, platformdirs.user_config_path),
    ("XDG_DATA_HOME", ".local/share", dirs.user_data_path, platformdirs.user_data_path),
    ("XDG_STATE_HOME", ".local/state", dirs.user_state_path, platformdirs.user_state_path),
]

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the XDG rules are Linux's")


@pytest.mark.parametrize(("variable", "fallback", "ours", "theirs"), KINDS)
@pytest.mark.parametrize("value", [None, "", "   ", "/srv/xdg"])
def test_each_dir_is_where_platformdirs_puts_it(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    variable: str,
    fallback: str,
    ours: Callable[[], Path],
    theirs: Callable[[str], Path],
    value: str | None,
) -> None:
    """Unset, empty or absolute, the variable leads tickloop to the same dir as platformdirs."""
    monkeypatch.setenv("HOME", str(tmp_path))
    if value is None:
        monkeypatch.delenv(variable, raising=False)
    else:
        monkeypatch.setenv(variable, value)
    expected = Path(value.strip()) if value and value.strip() else tmp_path / fallback
    assert ours() == expected / "tickloop"
    assert ours() == theirs("tickloop")


@pytest.mark.parametrize(("variable", "fallback", "ours", "theirs"), KINDS)
def test_a_relative_xdg_path_is_ignored_as_the_spec_says(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    variable: str,
    fallback: str,
    ours: Callable[[], Path],
    theirs: Callable[[str], Path],
) -> None:
    """A relative XDG variable would scatter files under the working dir; the default is used instead."""
    del theirs
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv(variable, "relative/dir")
    assert ours() == tmp_path / fallback / "tickloop"


def test_logs_go_to_the_log_folder_of_the_state_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The serve-local log lands where platformdirs puts user logs on Linux."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert dirs.user_log_path() == tmp_path / "tickloop" / "log"
    assert dirs.user_log_path() == platformdirs.user_log_path("tickloop")
