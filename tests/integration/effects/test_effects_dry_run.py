"""Dry-run: every handler runs its whole validation pipeline and makes no side effect at all."""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from conftest import PERSON, HttpSink, MailSink
from tickloop.notify import AppriseChannel, FileChannel, SmtpSettings
from tickloop.operator.handlers import (
    HANDLERS,
    HandlerContext,
    HandlerRequest,
    HandlerSettings,
    HandlerStatus,
    WorkspaceSettings,
)

NOW = datetime(2026, 7, 7, 17, 15, 3, tzinfo=UTC)

#: One valid request per action type: (recipient, payload).
REQUESTS: dict[str, tuple[str | None, dict[str, Any]]] = {
    "note": (None, {"body": "remember the milk"}),
    "wiki_write": (None, {"body": "glossary"}),
    "draft_prep": ("sam@example.com", {"body": "Thanks!"}),
    "research": (None, {"query": "milk"}),
    "workspace_task": (None, {"argv": [sys.executable, "marker.py"]}),
    "email": (PERSON, {"body": "Hello"}),
    "message": (None, {"body": "FYI"}),
    "spend": (None, {"amount": "42.00", "currency": "EUR", "vendor": "Acme"}),
}


@pytest.fixture
def world(tmp_path: Path, mail_sink: MailSink, smtp: SmtpSettings, http_sink: HttpSink) -> HandlerContext:
    """A fully configured context whose every side effect would be visible: files, mail, HTTP, processes."""
    jail = tmp_path / "jail"
    jail.mkdir()
    (jail / "marker.py").write_text("open('ran.txt', 'w').write('ran')")
    settings = HandlerSettings(
        notes_dir=str(tmp_path / "notes"),
        drafts_dir=str(tmp_path / "drafts"),
        workspace=WorkspaceSettings(jail=str(jail), programs=[sys.executable]),
    )
    channels = [
        FileChannel("log", path=tmp_path / "notify.jsonl"),
        AppriseChannel("hook", url=f"json://{http_sink.url}/hook"),
    ]
    return HandlerContext(settings=settings, smtp=smtp, channels=channels, search=lambda q: [f"hit for {q}"])


def _tree(root: Path) -> list[tuple[str, int]]:
    return sorted((str(p.relative_to(root)), p.lstat().st_mtime_ns) for p in root.rglob("*"))


def test_every_handler_has_a_dry_run_case() -> None:
    """The dry-run table covers every registered action type, so a new handler cannot skip it."""
    assert set(REQUESTS) == set(HANDLERS)


@pytest.mark.parametrize("action", sorted(REQUESTS))
def test_dry_run_describes_the_call_and_makes_no_side_effect(
    action: str, world: HandlerContext, tmp_path: Path, mail_sink: MailSink, http_sink: HttpSink
) -> None:
    """In dry-run no file, mail, HTTP request or process happens; the result says what WOULD be called."""
    recipient, payload = REQUESTS[action]
    before = _tree(tmp_path)
    request = HandlerRequest(
        intent_id=44, action_type=action, title="Buy milk", now=NOW, recipient=recipient, payload=payload
    )
    outcome = HANDLERS[action].handler(request, world)
    assert outcome.dry_run is True
    assert outcome.description.startswith("WOULD ")
    assert "\n" not in outcome.description
    assert _tree(tmp_path) == before
    assert mail_sink.envelopes == []
    assert http_sink.requests == []


def test_a_dry_note_shows_the_files_write_call_in_create_mode(world: HandlerContext) -> None:
    """The dry note line names the path it would create and the create mode, as the seed's log shows."""
    request = HandlerRequest(
        intent_id=44, action_type="note", title="Buy milk", now=NOW, payload={"body": "x"}
    )
    outcome = HANDLERS["note"].handler(request, world)
    path = Path(world.settings.notes_dir) / "note-2026-07-07-44-buy-milk.md"
    assert (outcome.status, outcome.call, outcome.target) == (HandlerStatus.SENT, "files_write", str(path))
    assert outcome.description == (
        f'WOULD call files_write({{"path": "{path}", '
        '"content": "---\\nintent: 44\\naction: note\\ncreated: 20…", '
        '"mode": "create"})'
    )


def test_a_dry_spend_is_a_completed_handoff_naming_title_amount_vendor_and_intent(
    world: HandlerContext,
) -> None:
    """The spend tier never buys: dry or not it completes with the hand-off flag and says what to buy."""
    request = HandlerRequest(
        intent_id=41, action_type="spend", title="Desk lamp", now=NOW, payload=REQUESTS["spend"][1]
    )
    outcome = HANDLERS["spend"].handler(request, world)
    assert (outcome.status, outcome.handoff, outcome.call) == (
        HandlerStatus.COMPLETED,
        True,
        "notify+handoff",
    )
    assert outcome.description == (
        "WOULD notify the person to purchase manually: "
        "title='Desk lamp', amount='42.00 EUR', vendor='Acme', intent='41'"
    )


def test_dry_run_still_refuses_what_an_armed_run_would_refuse(
    world: HandlerContext, mail_sink: MailSink
) -> None:
    """Validation is the same in dry-run: a bad recipient is refused, not described."""
    from tickloop.errors import RecipientError  # noqa: PLC0415

    request = HandlerRequest(
        intent_id=45,
        action_type="email",
        title="t",
        now=NOW,
        recipient="a@example.com, b@example.com",
        payload={"body": "x"},
    )
    with pytest.raises(RecipientError):
        HANDLERS["email"].handler(request, world)
    assert os.environ.get("TICKLOOP_DRY_RUN") is None
