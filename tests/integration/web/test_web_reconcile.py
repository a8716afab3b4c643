"""The dashboard's way back from a dead end, on the intent page, in a real Chromium: retry a failed
email after fixing the setting (it then arrives at a real SMTP sink), or reconcile a needs_human one."""

from __future__ import annotations

import re
import socket
from pathlib import Path

from playwright.sync_api import Page, expect
from web_helpers import ARTIFACTS, DESKTOP, PERSON, PHONE, SENDER, MailSink, World, dashboard, make_world

P = "default"


def _smtp(port: int) -> str:
    return (
        f'[smtp]\nhost = "127.0.0.1"\nport = {port}\nsecurity = "plain"\nsenders = ["{SENDER}"]\n'
        "timeoutS = 5\n"
    )


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _ended_email(tmp_path: Path, url: str, smtp: str) -> tuple[World, int]:
    """An approved email that an armed executor ended (failed: no [smtp]; needs_human: nobody listens)."""
    world = make_world(tmp_path, url, smtp)
    assert world.tickloop("operator", "init", "--goal", "Ship the thesis").returncode == 0
    added = world.tickloop("operator", "intents", "add", "--type", "email", "--title", "Send chapter 3",
                           "--recipient", PERSON, "--payload", '{"body": "Draft attached."}')  # fmt: skip
    assert added.returncode == 0, added.stderr
    with world.store() as store:
        [intent] = store.list_intents(P)
    assert world.tickloop("operator", "approve", str(intent.id)).returncode == 0
    assert world.tickloop("operator", "tick", "executor", TICKLOOP_DRY_RUN="0").returncode == 0
    return world, intent.id


def _shoot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for label, size in (("desktop", DESKTOP), ("phone", PHONE)):
        page.set_viewport_size(size)  # type: ignore[arg-type]
        page.screenshot(path=str(ARTIFACTS / f"{name}-{label}.png"), full_page=True)
    page.set_viewport_size(DESKTOP)  # type: ignore[arg-type]


def _log_in(page: Page, login_url: str) -> None:
    page.goto(login_url)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(re.compile(r"/p/default/$"))


def test_retry_on_the_intent_page_needs_a_note_and_then_the_mail_arrives(
    tmp_path: Path, sqlite_url: str, sink: MailSink, page: Page
) -> None:
    """A failed email shows Retry (not the needs_human buttons); without a note it is refused (400,
    nothing changes); with one it is approved again as a decision, and after the person fixes [smtp]
    the armed executor delivers it."""
    world, intent_id = _ended_email(tmp_path, sqlite_url, "")
    with dashboard(world) as web:
        _log_in(page, web.login_url)
        page.goto(f"{web.base}/p/{P}/intents/{intent_id}")
        expect(page.locator("#intent-status")).to_have_text("failed")
        form = page.locator("#reconcile")
        expect(form.get_by_role("button", name="Done by hand")).to_have_count(0)
        form.get_by_role("button", name="Retry").click()
        expect(page.locator("main")).to_contain_text("a retry needs a note")
        page.goto(f"{web.base}/p/{P}/intents/{intent_id}")
        expect(page.locator("#intent-status")).to_have_text("failed")
        page.fill("#reconcile-note", "smtp is configured now")
        page.locator("#reconcile").get_by_role("button", name="Retry").click()
        expect(page).to_have_url(re.compile(rf"/p/default/intents/{intent_id}$"))
        expect(page.locator("#intent-status")).to_have_text("approved")
        expect(page.locator("main")).to_contain_text("retried")
        expect(page.locator("#reconcile")).to_have_count(0)
        (tmp_path / "config.toml").write_text(_smtp(sink.port))
        run = world.tickloop("operator", "tick", "executor", TICKLOOP_DRY_RUN="0")
        assert "kernel-sanctioned recovery retry" in run.stderr
        expect(page.locator("#intent-status")).to_have_text("sent", timeout=15_000)
    [envelope] = sink.envelopes
    assert envelope.rcpt_tos == [PERSON]


def test_a_needs_human_intent_is_reconciled_done_by_hand_on_its_page(
    tmp_path: Path, sqlite_url: str, sink: MailSink, page: Page
) -> None:
    """A needs_human email offers Retry, Done by hand and Did not happen; Done by hand completes it
    (recorded as a decision), and nothing is sent."""
    world, intent_id = _ended_email(tmp_path, sqlite_url, _smtp(_closed_port()))
    with dashboard(world) as web:
        _log_in(page, web.login_url)
        page.goto(f"{web.base}/p/{P}/intents/{intent_id}")
        expect(page.locator("#intent-status")).to_have_text("needs_human")
        _shoot(page, "intent-needs-human")
        page.fill("#reconcile-note", "I sent it from my phone")
        page.locator("#reconcile").get_by_role("button", name="Done by hand").click()
        expect(page.locator("#intent-status")).to_have_text("completed")
        expect(page.locator("main")).to_contain_text("done by hand")
        _shoot(page, "intent-done-by-hand")
    assert sink.envelopes == []
    with world.store() as store:
        intent = store.get_intent(P, intent_id)
        assert intent.handoff is True
        assert intent.decision_id is not None
        assert store.get_decision(P, intent.decision_id).note == "I sent it from my phone"
