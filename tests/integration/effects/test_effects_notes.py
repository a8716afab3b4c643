"""Tier 1 writers: notes, wiki pages, drafts and research notes are created once and never overwritten."""

from __future__ import annotations

import stat
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tickloop.errors import HandlerError
from tickloop.operator.handlers import (
    HANDLERS,
    HandlerContext,
    HandlerRequest,
    HandlerSettings,
    HandlerStatus,
    Tier,
)

NOW = datetime(2026, 7, 7, 17, 15, 3, 421000, tzinfo=UTC)


def _context(tmp_path: Path, **extra: Any) -> HandlerContext:
    settings = HandlerSettings(notes_dir=str(tmp_path / "notes"), drafts_dir=str(tmp_path / "drafts"))
    return HandlerContext(settings=settings, **extra)


def _do(
    action: str, context: HandlerContext, *, title: str = "Buy milk", dry_run: bool = False, **payload: Any
) -> Any:
    request = HandlerRequest(
        intent_id=44, action_type=action, title=title, now=NOW, payload=payload, dry_run=dry_run
    )
    return HANDLERS[action].handler(request, context)


def test_a_note_is_a_private_markdown_file_named_by_date_intent_and_slug(tmp_path: Path) -> None:
    """An armed note writes notes/note-DATE-ID-SLUG.md, mode 0600, with front matter and the body."""
    outcome = _do("note", _context(tmp_path), body="Semi-skimmed.")
    path = tmp_path / "notes" / "note-2026-07-07-44-buy-milk.md"
    assert outcome.status is HandlerStatus.SENT
    assert outcome.target == str(path)
    assert outcome.call == "files_write"
    assert outcome.description.startswith('called files_write({"path": ')
    assert outcome.description.endswith('"mode": "create"})')
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text() == (
        "---\nintent: 44\naction: note\ncreated: 2026-07-07T17:15:03.421Z\n---\n\n"
        "# Buy milk\n\nSemi-skimmed.\n"
    )


def test_a_second_write_of_the_same_note_is_refused_and_the_original_kept(tmp_path: Path) -> None:
    """Notes are write-if-absent: the same name again raises HandlerError and leaves the first intact."""
    context = _context(tmp_path)
    _do("note", context, body="first")
    path = tmp_path / "notes" / "note-2026-07-07-44-buy-milk.md"
    original = path.read_text()
    with pytest.raises(HandlerError, match="already exists"):
        _do("note", context, body="second")
    with pytest.raises(HandlerError, match="already exists"):
        _do("note", context, body="second", dry_run=True)
    assert path.read_text() == original


def test_a_symlink_planted_at_the_note_name_is_not_followed(tmp_path: Path) -> None:
    """A (dangling) symlink where the note would go is refused; its target is never created."""
    notes = tmp_path / "notes"
    notes.mkdir()
    victim = tmp_path / "victim.txt"
    (notes / "note-2026-07-07-44-buy-milk.md").symlink_to(victim)
    with pytest.raises(HandlerError, match="already exists"):
        _do("note", _context(tmp_path), body="x")
    assert not victim.exists()


@pytest.mark.parametrize(
    ("title", "name"),
    [
        ("../../etc/passwd", "note-2026-07-07-44-etc-passwd.md"),
        ("/abs/path\nX", "note-2026-07-07-44-abs-path-x.md"),
        ("Caf\u00e9 cr\u00e8me \u2025 \uff3c", "note-2026-07-07-44-cafe-creme.md"),
        ("!!!", "note-2026-07-07-44-untitled.md"),
        ("word " * 40, "note-2026-07-07-44-word-word-word-word-word-word-word-word-word.md"),
    ],
)
def test_note_names_are_derived_safely_from_any_title(tmp_path: Path, title: str, name: str) -> None:
    """Whatever the title, the file name is a short ASCII slug inside the notes directory."""
    _do("note", _context(tmp_path), title=title)
    assert [p.name for p in (tmp_path / "notes").iterdir()] == [name]


def test_a_title_cannot_add_front_matter_or_headings(tmp_path: Path) -> None:
    """A multi-line title is flattened to one heading line in the note."""
    _do("note", _context(tmp_path), title="t\n---\nintent: 999\n# fake")
    text = next((tmp_path / "notes").iterdir()).read_text()
    assert text.count("\nintent:") == 1
    assert "# t --- intent: 999 # fake\n" in text


def test_wiki_pages_go_to_the_notes_directory_with_their_own_prefix(tmp_path: Path) -> None:
    """wiki_write writes wiki-DATE-ID-SLUG.md in the notes directory, create mode."""
    outcome = _do("wiki_write", _context(tmp_path), title="Operator glossary", body="tick: one step")
    assert Path(outcome.target) == tmp_path / "notes" / "wiki-2026-07-07-44-operator-glossary.md"
    assert "tick: one step" in Path(outcome.target).read_text()


def test_a_draft_is_written_to_the_drafts_directory_and_marked_not_sent(tmp_path: Path) -> None:
    """draft_prep writes a draft file naming the would-be recipient; nothing is sent."""
    request = HandlerRequest(
        intent_id=44,
        action_type="draft_prep",
        title="Reply to Sam",
        now=NOW,
        recipient="sam@example.com",
        payload={"body": "Thanks!"},
        dry_run=False,
    )
    outcome = HANDLERS["draft_prep"].handler(request, _context(tmp_path))
    text = Path(outcome.target).read_text()
    assert Path(outcome.target).parent == tmp_path / "drafts"
    assert "> draft for sam@example.com, not sent" in text
    assert text.rstrip().endswith("Thanks!")


def test_research_searches_memory_then_writes_what_it_found(tmp_path: Path) -> None:
    """research calls the injected full-text search with the query and writes the hits as a note."""
    queries: list[str] = []

    def search(query: str) -> list[str]:
        queries.append(query)
        return ["milk is in the fridge\n(observed 2026-07-06)", "the shop closes at 8"]

    outcome = _do("research", _context(tmp_path, search=search), query="milk")
    text = Path(outcome.target).read_text()
    assert queries == ["milk"]
    assert outcome.details["hits"] == 2
    assert "## Recall for `milk`" in text
    assert "- milk is in the fridge (observed 2026-07-06)\n- the shop closes at 8\n" in text


def test_research_without_a_search_is_refused(tmp_path: Path) -> None:
    """research needs the store's search; without one it refuses instead of writing an empty note."""
    with pytest.raises(HandlerError, match="no memory search"):
        _do("research", _context(tmp_path))
    assert not (tmp_path / "notes").exists()


def test_bad_payload_fields_are_refused_with_intent_and_key(tmp_path: Path) -> None:
    """A payload field of the wrong type is refused with a message naming intent, action and key."""
    with pytest.raises(HandlerError, match=r"intent 44 \(note\): payload\.body must be text"):
        _do("note", _context(tmp_path), body=["not", "text"])


def test_the_ladder_matches_figure_8() -> None:
    """Every action type sits on the tier the seed's autonomy ladder gives it."""
    assert {action: spec.tier for action, spec in HANDLERS.items()} == {
        "note": Tier.REVERSIBLE,
        "wiki_write": Tier.REVERSIBLE,
        "draft_prep": Tier.REVERSIBLE,
        "research": Tier.REVERSIBLE,
        "workspace_task": Tier.REVERSIBLE,
        "email": Tier.EXTERNAL,
        "message": Tier.EXTERNAL,
        "spend": Tier.SPEND,
    }


@pytest.mark.parametrize("action", ["note", "wiki_write", "draft_prep", "research"])
def test_every_file_writer_neutralises_control_and_escape_characters(tmp_path: Path, action: str) -> None:
    """An agent's ESC[2J, OSC title change, bell, backspace or bidi override never reaches the file raw;
    newlines and tabs are kept, and CRLF becomes LF."""
    body = "line one\r\n\tindented\x1b[2J\x1b]0;owned\x07 bell\x07 back\x08 \u202eevil\nend"
    context = _context(tmp_path, search=lambda _query: ["hit \x1b[31mred\x1b[0m"])
    outcome = _do(action, context, title="Hostile \x1b[2J title", body=body, query="hostile")
    written = Path(outcome.target).read_text(encoding="utf-8")
    assert not any(c in written for c in "\x1b\x07\x08\r\u202e")
    assert "line one\n\tindented bell\\u0007 back\\u0008 \\u202eevil\nend" in written
    assert "# Hostile  title" in written or "# Hostile title" in written
