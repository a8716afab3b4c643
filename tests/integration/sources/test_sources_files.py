"""Watched directories on a real filesystem: created, changed, deleted; symlinks; limits."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tickloop.operator.sources import CollectResult, FilesSource, SourcesSettings, collect

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def run(root: Path, cursors: dict[str, Any] | None = None, **options: Any) -> CollectResult:
    return collect(SourcesSettings(files=[FilesSource(path=str(root), **options)]), cursors or {}, NOW)


def changes(result: CollectResult) -> list[tuple[str, str]]:
    return [(o.kind, o.payload.get("path", "")) for o in result.observations]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A watched directory holding one file and one nested file."""
    (tmp_path / "watched" / "sub").mkdir(parents=True)
    (tmp_path / "watched" / "a.txt").write_text("a", encoding="utf-8")
    (tmp_path / "watched" / "sub" / "b.txt").write_text("b", encoding="utf-8")
    return tmp_path / "watched"


def test_created_changed_and_deleted_files_are_each_reported(root: Path) -> None:
    """Every kind of file change since the last run is reported with the file's relative path."""
    first = run(root)
    assert [o.kind for o in first.observations] == ["file.baseline"]
    assert first.observations[0].payload == {"count": 2}
    (root / "new.txt").write_text("new", encoding="utf-8")
    (root / "a.txt").write_text("a longer text", encoding="utf-8")
    (root / "sub" / "b.txt").unlink()
    second = run(root, first.cursors)
    assert changes(second) == [
        ("file.changed", "a.txt"),
        ("file.created", "new.txt"),
        ("file.deleted", "sub/b.txt"),
    ]
    assert all(o.tainted for o in second.observations)
    assert run(root, second.cursors).observations == ()


def test_a_touched_file_with_the_same_size_counts_as_changed(root: Path) -> None:
    """A new modification time alone is a change (editors often keep the size)."""
    first = run(root)
    os.utime(root / "a.txt", ns=(0, 1_700_000_000_000_000_000))
    assert changes(run(root, first.cursors)) == [("file.changed", "a.txt")]


def test_symlinks_out_of_the_root_are_not_followed(root: Path, tmp_path: Path) -> None:
    """A symlink to a directory outside the watched root never exposes that directory's files."""
    outside = tmp_path / "secret"
    outside.mkdir()
    (outside / "key.pem").write_text("private", encoding="utf-8")
    (root / "escape").symlink_to(outside)
    (root / "link.txt").symlink_to(outside / "key.pem")
    first = run(root)
    assert first.observations[0].payload == {"count": 2}
    assert "key.pem" not in str(first.cursors)


def test_hidden_files_are_skipped_unless_asked_for(root: Path) -> None:
    """Dot-files and dot-directories (.git) are not watched by default."""
    (root / ".git").mkdir()
    (root / ".git" / "index").write_text("x", encoding="utf-8")
    assert run(root).observations[0].payload == {"count": 2}
    assert run(root, include_hidden=True).observations[0].payload == {"count": 3}


def test_a_tree_over_the_file_limit_is_an_error_and_keeps_the_old_cursor(root: Path) -> None:
    """A directory with more files than maxFiles is refused instead of being half-watched."""
    first = run(root, max_files=5)
    for n in range(5):
        (root / f"extra{n}.txt").write_text("x", encoding="utf-8")
    second = run(root, first.cursors, max_files=5)
    assert second.observations == ()
    assert "more than 5 files" in second.errors[0].message
    assert second.cursors == first.cursors


def test_many_changes_are_capped_and_the_rest_counted(root: Path) -> None:
    """A burst of changes reports at most maxChanges and counts the rest."""
    first = run(root, max_changes=3)
    for n in range(10):
        (root / f"n{n}.txt").write_text("x", encoding="utf-8")
    second = run(root, first.cursors, max_changes=3)
    assert [o.kind for o in second.observations] == ["file.created"] * 3 + ["file.more"]
    assert second.observations[-1].payload == {"count": 7}


def test_undecodable_file_names_are_reported_as_valid_text(root: Path) -> None:
    """A file name that is not UTF-8 is reported (escaped) rather than crashing the source."""
    first = run(root)
    Path(os.fsdecode(bytes(root) + b"/caf\xe9.txt")).write_text("x", encoding="utf-8")
    second = run(root, first.cursors)
    assert changes(second) == [("file.created", "caf\\xe9.txt")]


def test_a_missing_directory_is_an_error_not_an_exception(tmp_path: Path) -> None:
    """A watched directory that does not exist is reported as a failed source."""
    result = run(tmp_path / "nope")
    assert result.observations == ()
    assert "is not a directory" in result.errors[0].message
