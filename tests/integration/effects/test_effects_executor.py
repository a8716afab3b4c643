"""The executor's external tier against a real SMTP server: delivery, the tier floor, hostile recipients."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from conftest import PERSON, SENDER, MailSink
from tickloop.config import Settings
from tickloop.operator.domain import DecisionKind, IntentStatus, NewIntent, Tier, Verdict
from tickloop.operator.gate import GateSettings, Proposal, judge
from tickloop.operator.runner import run_tick
from tickloop.operator.store import Store, open_store
from tickloop.testing import FakeClock

NOW = datetime(2026, 7, 7, 17, 15, tzinfo=UTC)
P = "default"
ARMED = {"TICKLOOP_DRY_RUN": "0"}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with open_store(f"sqlite://{tmp_path / 'store.db'}") as opened:
        opened.create_profile(P, now=NOW)
        yield opened


def _settings(mail_sink: MailSink, **gate: Any) -> Settings:
    smtp = {
        "host": "127.0.0.1",
        "port": mail_sink.port,
        "security": "plain",
        "senders": [SENDER],
        "timeoutS": 5,
    }
    return Settings(smtp=smtp, gate=gate)


def _email(store: Store, settings: Settings, recipient: str, *, approve: bool) -> int:
    """Stage an email, stamp it with the configured gate's verdict, and approve it if asked."""
    intent = store.stage_intent(
        P,
        NewIntent("email", "hello", recipient=recipient, payload={"body": "hi"}, tier=Tier.EXTERNAL),
        now=NOW,
    )
    stamp = judge(Proposal("email", Tier.EXTERNAL), GateSettings(**settings.gate))
    store.record_verdict(P, intent.id, stamp.verdict, stamp.reasons, now=NOW)
    if stamp.verdict is Verdict.ALLOWED:
        store.mark_ready(P, intent.id, now=NOW)
    elif approve:
        store.decide(P, intent.id, DecisionKind.APPROVE, by="person", now=NOW)
    return intent.id


def _tick(store: Store, settings: Settings) -> list[str]:
    lines: list[str] = []
    clock = FakeClock(NOW)
    assert run_tick("executor", store=store, profile=P, settings=settings, env=ARMED, clock=clock,
                    log=lines.append) == 0  # fmt: skip
    return lines


def test_an_approved_linked_email_is_delivered_once_to_one_recipient(
    store: Store, mail_sink: MailSink
) -> None:
    """Armed, an approved email with a linked decision reaches the SMTP server: one recipient, our sender."""
    settings = _settings(mail_sink)
    intent_id = _email(store, settings, PERSON, approve=True)
    lines = _tick(store, settings)
    [envelope] = mail_sink.envelopes
    assert envelope.rcpt_tos == [PERSON]
    assert envelope.mail_from == SENDER
    assert store.get_intent(P, intent_id).status is IntentStatus.SENT
    assert f"intent {intent_id} -> sent (external)" in lines
    assert lines[-1] == "tick done: considered=1 executed=1 skipped=0 failed=0 handoff=0 dry=false"


def test_the_tier_floor_refuses_an_allowed_email_when_the_gate_allows_everything(
    store: Store, mail_sink: MailSink
) -> None:
    """With `[gate] allow = ["email"]` the gate says allowed, yet the armed executor sends nothing."""
    settings = _settings(mail_sink, allow=["email"])
    intent_id = _email(store, settings, PERSON, approve=False)
    assert store.get_intent(P, intent_id).status is IntentStatus.READY  # the gate let it through
    lines = _tick(store, settings)
    assert mail_sink.envelopes == []
    assert (
        f"REFUSED external intent {intent_id} (email): not approved+linked (pre=ready); left pending" in lines
    )
    after = store.get_intent(P, intent_id)
    assert (after.status, after.claim_owner) == (IntentStatus.READY, None)
    [audit] = store.list_notifications(P)
    assert (audit.channel, audit.kind, audit.intent_id) == ("executor", "tier_floor_refused", intent_id)


@pytest.mark.parametrize(
    "recipient",
    [
        "person@example.com\r\nBcc: evil@example.net",
        "person@example.com\nBcc: evil@example.net",
        "person@example.com, evil@example.net",
        "person@example.com; evil@example.net",
        "Person <evil@example.net>",
        "=?utf-8?q?person=0ABcc:evil@example.net?=@example.com",
    ],
)
def test_a_staged_email_with_a_hostile_recipient_is_refused_with_nothing_sent(
    store: Store, mail_sink: MailSink, recipient: str
) -> None:
    """Even approved and armed, an email to an injected address ends failed and no mail leaves."""
    settings = _settings(mail_sink)
    intent_id = _email(store, settings, recipient, approve=True)
    lines = _tick(store, settings)
    assert mail_sink.envelopes == []
    ended = store.get_intent(P, intent_id)
    assert ended.status is IntentStatus.FAILED
    assert ended.result is not None
    assert ended.result["refused"]
    assert any(line.startswith(f"intent {intent_id} -> failed (external)") for line in lines)


def test_an_smtp_server_that_is_down_leaves_the_email_for_a_person(store: Store) -> None:
    """Armed, an approved email whose SMTP delivery fails ends needs_human, and no pass retries it."""
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()  # nothing listens here now: the connection is refused
    settings = Settings(smtp={"host": "127.0.0.1", "port": port, "security": "plain", "senders": [SENDER]})
    intent_id = _email(store, settings, PERSON, approve=True)
    lines = _tick(store, settings)
    assert store.get_intent(P, intent_id).status is IntentStatus.NEEDS_HUMAN
    assert any(
        line.startswith(f"intent {intent_id} -> needs_human (external): DeliveryError") for line in lines
    )
    assert _tick(store, settings)[-1].startswith("tick done: considered=0")
