"""Only `operator init` and `operator migrate` create a store; new files are 0600, new directories 0700."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tickloop.errors import StoreError
from tickloop.operator.store import open_store

READ_COMMANDS = [
    ["operator", "board"],
    ["operator", "status"],
    ["operator", "intents"],
    ["operator", "progress"],
    ["operator", "attention"],
    ["operator", "tick", "fast"],
    ["operator", "run", "--once"],
]


def run(tmp_path: Path, store: str, *args: str, umask: int = 0o022) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TICKLOOP_")}
    env["TICKLOOP_STORE"] = store
    return subprocess.run(
        [sys.executable, "-m", "tickloop.cli", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        preexec_fn=lambda: os.umask(umask),
    )


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("command", READ_COMMANDS, ids=" ".join)
def test_a_command_other_than_init_or_migrate_never_creates_the_store(
    tmp_path: Path, command: list[str]
) -> None:
    """On a URL whose directory is missing, the command fails naming the directory and creates nothing."""
    missing = tmp_path / "missing"
    result = run(tmp_path, f"sqlite://{missing / 'dir' / 'x.db'}", *command)
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"the directory {missing} does not exist" in result.stderr
    assert "tickloop operator init" in result.stderr
    assert not missing.exists()


def test_a_missing_file_in_an_existing_directory_is_named_and_not_made(tmp_path: Path) -> None:
    """The directory exists but the file does not: the error names the file, and no file appears."""
    path = tmp_path / "x.db"
    result = run(tmp_path, f"sqlite://{path}", "operator", "board")
    assert result.returncode == 2
    assert f"the file {path} does not exist" in result.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", [["operator", "init", "--goal", "g"], ["operator", "migrate"]])
def test_init_and_migrate_create_the_store_owner_only(tmp_path: Path, command: list[str]) -> None:
    """init and migrate make missing directories 0700 and the file 0600, even under a permissive umask."""
    path = tmp_path / "a" / "b" / "x.db"
    result = run(tmp_path, f"sqlite://{path}", *command, umask=0o000)
    assert result.returncode == 0, result.stderr
    assert _mode(path) == 0o600
    assert _mode(path.parent) == 0o700
    assert _mode(path.parent.parent) == 0o700
    after = run(tmp_path, f"sqlite://{path}", "operator", "board", "--profile", "default")
    assert "no SQLite store" not in after.stderr
    for extra in path.parent.iterdir():  # -wal / -shm, if SQLite left them, take the file's mode
        assert _mode(extra) == 0o600, extra


def test_the_library_creates_owner_only_files_and_refuses_when_asked_not_to(tmp_path: Path) -> None:
    """open_store(create=False) refuses a missing file; the default creates it 0600 in 0700 dirs."""
    path = tmp_path / "lib" / "s.db"
    with pytest.raises(StoreError, match=f"the directory {path.parent} does not exist"):
        open_store(f"sqlite://{path}", create=False)
    assert not path.parent.exists()
    old = os.umask(0)
    try:
        open_store(f"sqlite://{path}").close()
    finally:
        os.umask(old)
    assert (_mode(path), _mode(path.parent)) == (0o600, 0o700)
    open_store(f"sqlite://{path}", create=False).close()


@pytest.mark.parametrize("url", ["sqlite://relative.db", "sqlite://dir/x.db", "sqlite://~/x.db"])
def test_a_relative_sqlite_url_is_refused_showing_the_right_form(tmp_path: Path, url: str) -> None:
    """Two slashes mean a relative path: refused, showing sqlite:///abs/path.db, and nothing is created."""
    result = run(tmp_path, url, "operator", "migrate")
    assert result.returncode == 2
    assert "relative SQLite store URL" in result.stderr
    assert "sqlite:///abs/path.db" in result.stderr
    assert list(tmp_path.iterdir()) == []
