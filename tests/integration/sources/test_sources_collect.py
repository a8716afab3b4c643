"""collect() across several sources: isolation of failures, cursors, duplicates, taint, dedup."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sources_support import Repo, deliver, make_maildir

from tickloop.operator.sources import (
    CalendarSource,
    FilesSource,
    GitSource,
    ImapSource,
    MaildirSource,
    SourcesSettings,
    collect,
)

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def test_broken_sources_are_recorded_and_the_healthy_ones_still_report(repo: Repo, tmp_path: Path) -> None:
    """A missing path, a malformed calendar, a dead server and a non-repository each fail alone."""
    repo.commit("one")
    (tmp_path / "bad.ics").write_bytes(b"garbage")
    (tmp_path / "plain").mkdir()
    settings = SourcesSettings(
        git=[GitSource(path=str(tmp_path / "plain")), GitSource(path=str(repo.path))],
        files=[FilesSource(path=str(tmp_path / "missing"))],
        calendars=[CalendarSource(location=str(tmp_path / "bad.ics"))],
        maildirs=[MaildirSource(path=str(tmp_path / "nomail"))],
        imap=[ImapSource(host="127.0.0.1", port=9, username="u", password_env="P", timeout_seconds=2)],
    )
    result = collect(settings, {}, NOW, secret={"P": "pw"}.get)
    assert [o.source for o in result.observations] == [f"git:{repo.path}"]
    assert len(result.errors) == 5
    assert {e.source.split(":")[0] for e in result.errors} == {"git", "files", "calendar", "mail"}
    assert list(result.cursors) == [f"git:{repo.path}"]


def test_a_failing_source_keeps_its_cursor_so_nothing_is_lost(tmp_path: Path) -> None:
    """Mail that arrives while a source is broken is still reported once the source recovers."""
    box = make_maildir(tmp_path / "box")
    settings = SourcesSettings(maildirs=[MaildirSource(path=str(box))])
    cursors = collect(settings, {}, NOW).cursors
    deliver(box, b"Subject: while broken\r\n\r\nhi\r\n", "1764000000.M1P1.h")
    (box / "cur").rename(tmp_path / "cur-away")
    broken = collect(settings, cursors, NOW)
    assert broken.errors
    assert broken.cursors == cursors
    (tmp_path / "cur-away").rename(box / "cur")
    healed = collect(settings, broken.cursors, NOW)
    assert [o.payload["subject"] for o in healed.observations] == ["while broken"]


def test_cursors_survive_a_json_round_trip(repo: Repo, tmp_path: Path) -> None:
    """Cursors are plain JSON: stored and read back, they still yield exactly the new deltas."""
    repo.commit("one")
    (tmp_path / "w").mkdir()
    settings = SourcesSettings(
        git=[GitSource(path=str(repo.path))], files=[FilesSource(path=str(tmp_path / "w"))]
    )
    stored = json.dumps(collect(settings, {}, NOW).cursors)
    repo.commit("two")
    (tmp_path / "w" / "f").write_text("x", encoding="utf-8")
    result = collect(settings, json.loads(stored), NOW)
    assert [o.kind for o in result.observations] == ["git.commit", "file.created"]


def test_the_same_source_configured_twice_is_an_error(tmp_path: Path) -> None:
    """Two sources with the same id would share a cursor; the second is refused with a clear message."""
    (tmp_path / "w").mkdir()
    files = FilesSource(path=str(tmp_path / "w"))
    result = collect(SourcesSettings(files=[files, files]), {}, NOW)
    assert len(result.observations) == 1
    assert "configured twice" in result.errors[0].message


def test_every_outside_observation_is_tainted(repo: Repo, tmp_path: Path) -> None:
    """Git, files, calendars and mail are all untrusted, so every observation carries the taint."""
    repo.commit("one")
    (tmp_path / "c.ics").write_bytes(b"BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n")
    (tmp_path / "w").mkdir()
    settings = SourcesSettings(
        git=[GitSource(path=str(repo.path))],
        files=[FilesSource(path=str(tmp_path / "w"))],
        calendars=[CalendarSource(location=str(tmp_path / "c.ics"))],
        maildirs=[MaildirSource(path=str(make_maildir(tmp_path / "m")))],
    )
    result = collect(settings, {}, NOW)
    assert len(result.observations) == 4
    assert all(o.tainted for o in result.observations)


def test_a_naive_now_is_refused() -> None:
    """Time is injected as an aware UTC moment; a naive one is a programming error."""
    with pytest.raises(ValueError, match="timezone-aware"):
        collect(SourcesSettings(), {}, datetime(2026, 1, 1))  # noqa: DTZ001  (the point of the test)


def test_a_corrupt_cursor_starts_a_new_baseline_instead_of_crashing(repo: Repo, tmp_path: Path) -> None:
    """A cursor of the wrong shape (an old version, a damaged row) rebaselines the source and says so."""
    repo.commit("one")
    source = f"git:{repo.path}"
    settings = SourcesSettings(git=[GitSource(path=str(repo.path))])
    result = collect(settings, {source: ["not", "a", "dict"]}, NOW)
    assert [o.kind for o in result.observations] == ["git.baseline"]
    assert "unreadable" in result.errors[0].message
    hostile = collect(settings, {source: {"head": "--output=/tmp/x", "branch": 3}}, NOW)
    assert [o.kind for o in hostile.observations] == ["git.branch_changed", "git.commit"]
