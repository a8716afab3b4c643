"""``message`` goes out through the notify channels; ``spend`` only ever tells the person."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from conftest import HttpSink, MailSink
from tickloop.errors import DeliveryError, HandlerError
from tickloop.notify import AppriseChannel, Channel, FileChannel
from tickloop.operator.handlers import HANDLERS, HandlerContext, HandlerRequest, HandlerResult, HandlerStatus

NOW = datetime(2026, 7, 7, 17, 15, 3, tzinfo=UTC)


def _channels(tmp_path: Path, http_sink: HttpSink) -> list[Channel]:
    return [
        FileChannel("log", path=tmp_path / "n.jsonl"),
        AppriseChannel("hook", url=f"json://{http_sink.url}/h"),
    ]


def _do(
    action: str, channels: list[Channel], *, recipient: str | None = None, **payload: Any
) -> HandlerResult:
    request = HandlerRequest(
        intent_id=41,
        action_type=action,
        title="Desk lamp",
        now=NOW,
        recipient=recipient,
        payload=payload,
        dry_run=False,
    )
    return HANDLERS[action].handler(request, HandlerContext(channels=channels))


def _log(tmp_path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (tmp_path / "n.jsonl").read_text().splitlines()]


def test_a_message_reaches_every_configured_channel(tmp_path: Path, http_sink: HttpSink) -> None:
    """An armed message is delivered through each channel and the result lists every delivery."""
    outcome = _do("message", _channels(tmp_path, http_sink), body="The build is green.")
    assert outcome.status is HandlerStatus.SENT
    assert [d["ok"] for d in outcome.details["deliveries"]] == [True, True]
    assert http_sink.requests[0][2]["message"] == "The build is green."
    assert _log(tmp_path)[0]["subject"] == "Desk lamp"


def test_a_message_to_a_named_channel_uses_only_that_channel(tmp_path: Path, http_sink: HttpSink) -> None:
    """The intent's recipient picks one configured channel by name."""
    _do("message", _channels(tmp_path, http_sink), recipient="hook", body="only here")
    assert len(http_sink.requests) == 1
    assert not (tmp_path / "n.jsonl").exists()


def test_a_message_to_an_unknown_channel_is_refused(tmp_path: Path, http_sink: HttpSink) -> None:
    """A recipient that names no configured channel is refused, listing the ones that exist."""
    with pytest.raises(HandlerError, match=r"no notify channel named 'bob' \(configured: log, hook\)"):
        _do("message", _channels(tmp_path, http_sink), recipient="bob")
    assert http_sink.requests == []


def test_a_message_no_channel_delivered_raises_delivery_error(tmp_path: Path, http_sink: HttpSink) -> None:
    """When every channel fails the handler raises DeliveryError with each channel's reason."""
    http_sink.status = 503
    (tmp_path / "n.jsonl").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(DeliveryError, match=r"no channel delivered: log: .*; hook: json://"):
        _do("message", _channels(tmp_path, http_sink), body="x")


def test_an_armed_spend_only_notifies_and_hands_off(
    tmp_path: Path, http_sink: HttpSink, mail_sink: MailSink
) -> None:
    """Spend never executes: the person gets title, amount, vendor and intent id; it ends as a hand-off."""
    outcome = _do("spend", _channels(tmp_path, http_sink), amount=42, currency="EUR", vendor="Acme")
    assert (outcome.status, outcome.handoff) == (HandlerStatus.COMPLETED, True)
    assert outcome.description.startswith("notified the person to purchase manually:")
    [record] = _log(tmp_path)
    assert record["subject"] == "Purchase manually: Desk lamp"
    assert record["body"].startswith("The operator will NOT auto-purchase.")
    assert "title: Desk lamp\namount: 42 EUR\nvendor: Acme\nintent: 41" in record["body"]
    assert http_sink.requests[0][2]["title"] == "Purchase manually: Desk lamp"
    assert mail_sink.envelopes == []


def test_a_spend_with_missing_facts_still_hands_off_and_says_so(tmp_path: Path, http_sink: HttpSink) -> None:
    """Missing amount or vendor is shown as not stated; the hand-off still happens, nothing is bought."""
    outcome = _do("spend", _channels(tmp_path, http_sink))
    assert "amount='(not stated)', vendor='(not stated)'" in outcome.description


def test_a_spend_nobody_heard_about_raises_delivery_error(tmp_path: Path) -> None:
    """If no channel delivered the hand-off the handler raises, so a human looks instead of it completing."""
    (tmp_path / "n.jsonl").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(DeliveryError):
        _do("spend", [FileChannel("log", path=tmp_path / "n.jsonl")], amount=1, vendor="Acme")


def test_message_and_spend_need_a_channel() -> None:
    """Without any notify channel, message and spend refuse rather than silently dropping the note."""
    for action in ("message", "spend"):
        with pytest.raises(HandlerError, match="no notify channels"):
            _do(action, [])
