"""The observe tick's cursor file: a str path, written with msgspec, read as earlier versions wrote it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tickloop.operator.ticks.observe import cursor_path, load_cursors, save_cursors


def test_the_cursor_file_is_the_escaped_profile_in_the_state_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    path = cursor_path("me/../x")
    assert path == str(tmp_path / "tickloop" / "observe" / "session-me_2F_2E_2E_2Fx.json")


def test_saved_cursors_read_back_and_a_file_json_dump_wrote_still_reads(tmp_path: Path) -> None:
    path = str(tmp_path / "observe" / "session-me.json")
    cursors = {"git:b": {"head": "ab12", "seen": [1, 2]}, "files:a": {"mtime": 1.5, "name": "Grüße"}}
    save_cursors(path, cursors)
    assert load_cursors(path) == cursors
    assert list(json.loads(Path(path).read_text(encoding="utf-8"))) == ["files:a", "git:b"]  # sorted
    assert not (tmp_path / "observe" / "session-me.tmp").exists()
    Path(path).write_text(json.dumps(cursors, sort_keys=True), encoding="utf-8")  # the old writer's form
    assert load_cursors(path) == cursors


@pytest.mark.parametrize("content", [b"", b"{not json", b"[1, 2]", b"\xff\xfe"])
def test_a_missing_or_unreadable_cursor_file_starts_fresh(tmp_path: Path, content: bytes) -> None:
    assert load_cursors(str(tmp_path / "none.json")) == {}
    (tmp_path / "bad.json").write_bytes(content)
    assert load_cursors(str(tmp_path / "bad.json")) == {}
