"""The dashboard in a real Chromium against a real `tickloop web`, a real store, real ticks and a real
SMTP sink: log in, see what a fast tick staged, decide, watch the executor's result arrive live."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from email import message_from_bytes
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect
from web_helpers import (
    ARTIFACTS,
    DESKTOP,
    PERSON,
    PHONE,
    SENDER,
    Dashboard,
    MailSink,
    World,
    dashboard,
    make_world,
)

from tickloop.operator.domain import IntentStatus
from tickloop.testing.openai_server import OpenAIServer, Reply

P = "default"
TITLE = "Send chapter 3 to Ana"
EMAIL = json.dumps({"actionType": "email", "title": TITLE, "recipient": PERSON, "body": "Draft attached."})


def config(model: OpenAIServer, sink: MailSink, extra: str = "") -> str:
    return (
        f'[model]\nname = "scripted"\n[model.endpoints.scripted]\nbaseUrl = "{model.base_url}"\nmodel = "m"\n'
        f'[smtp]\nhost = "127.0.0.1"\nport = {sink.port}\nsecurity = "plain"\nsenders = ["{SENDER}"]\n'
        f"timeoutS = 5\n{extra}"
    )


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return str(request.getfixturevalue("pg_url"))


def staged_world(
    tmp_path: Path,
    url: str,
    sink: MailSink,
    reply: str = EMAIL,
    extra: str = "",
    *,
    before_fast: Callable[[World], None] | None = None,
) -> tuple[World, int]:
    """A profile whose real fast tick (scripted model) staged one email waiting for approval
    (``before_fast`` runs first, e.g. real observe ticks)."""
    with OpenAIServer(default=Reply.text(reply)) as model:
        world = make_world(tmp_path, url, config(model, sink, extra))
        made = world.tickloop("operator", "init", "--goal", "Ship the thesis")
        assert made.returncode == 0, made.stderr
        for args in (("task", "add", "Write chapter 3", "--priority", "5"), ("task", "add", "Book the room")):
            assert world.tickloop("operator", *args).returncode == 0
        if before_fast is not None:
            before_fast(world)
        fast = world.tickloop("operator", "tick", "fast")
        assert fast.returncode == 0, fast.stderr
    with world.store() as store:
        [intent] = store.list_intents(P)
    assert intent.status is IntentStatus.REQUIRES_APPROVAL
    return world, intent.id


def log_in(page: Page, web: Dashboard) -> None:
    page.goto(web.login_url)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(re.compile(r"/p/default/$"))
    expect(page.locator("#live-state")).to_have_text("live updates: on")


def shoot(page: Page, name: str) -> None:
    """Screenshots at desktop and phone width (tests/artifacts/web/NAME-desktop.png, -phone.png)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for label, size in (("desktop", DESKTOP), ("phone", PHONE)):
        page.set_viewport_size(size)  # type: ignore[arg-type]
        page.screenshot(path=str(ARTIFACTS / f"{name}-{label}.png"), full_page=True)
    page.set_viewport_size(DESKTOP)  # type: ignore[arg-type]


def test_approve_in_the_browser_then_the_live_executor_sends_and_the_page_shows_sent(
    tmp_path: Path, store_url: str, sink: MailSink, page: Page
) -> None:
    """Log in with the one-time URL, approve what a real fast tick staged, run the armed executor: the
    mail reaches the SMTP sink and the open page turns to `sent` by itself (SSE live refresh)."""
    world, intent_id = staged_world(tmp_path, store_url, sink)
    with dashboard(world) as web:
        log_in(page, web)
        expect(page.locator("#waiting-count")).to_have_text("1")
        page.get_by_role("link", name="Approvals").click()
        card = page.locator(f"#intent-{intent_id}")
        expect(card.locator("h2")).to_contain_text(TITLE)
        expect(card).to_contain_text(PERSON)
        expect(card).to_contain_text("gate.external_or_irreversible")
        page.fill(f"#note-{intent_id}", "looks right")
        card.get_by_role("button", name=f"Approve #{intent_id} · email to {PERSON}").click()
        expect(page).to_have_url(re.compile(rf"/p/default/approvals\?decided={intent_id}$"))
        expect(page.locator("#decided")).to_contain_text(
            f"Approved #{intent_id} · email to {PERSON}: recorded"
        )
        expect(page.locator("main")).to_contain_text("Nothing else waits for you.")
        page.locator("#decided").get_by_role("link", name=f"See #{intent_id}").click()
        expect(page.locator("#intent-status")).to_have_text("approved")
        expect(page.locator("#live-state")).to_have_text("live updates: on")
        expect(page.locator("#waiting-count")).to_have_text("")
        run = world.tickloop("operator", "tick", "executor", TICKLOOP_DRY_RUN="0")
        assert run.returncode == 0, run.stderr
        expect(page.locator("#intent-status")).to_have_text("sent", timeout=15_000)
        assert page.locator("body").get_attribute("data-refreshed") is not None  # no reload: live
    [envelope] = sink.envelopes
    assert envelope.rcpt_tos == [PERSON]
    assert message_from_bytes(envelope.original_content or b"")["Subject"] == TITLE
    with world.store() as store:
        intent = store.get_intent(P, intent_id)
        assert intent.decision_id is not None
        decision = store.get_decision(P, intent.decision_id)
    assert decision.by.startswith("web:")
    assert decision.note == "looks right"


def test_deny_in_the_browser_and_the_armed_executor_sends_nothing(
    tmp_path: Path, sqlite_url: str, sink: MailSink, page: Page
) -> None:
    """Denying with a note records the person's decision; the executor then has nothing to send."""
    world, intent_id = staged_world(tmp_path, sqlite_url, sink)
    with dashboard(world) as web:
        log_in(page, web)
        page.goto(f"{web.base}/p/default/intents/{intent_id}")
        page.fill("#note", "not yet")
        page.get_by_role("button", name="Deny").click()
        expect(page.locator("#decided")).to_contain_text(f"Denied #{intent_id}")
        page.goto(f"{web.base}/p/default/intents/{intent_id}")
        expect(page.locator("#intent-status")).to_have_text("denied")
        expect(page.locator("ol.life")).to_contain_text("not yet")
        run = world.tickloop("operator", "tick", "executor", TICKLOOP_DRY_RUN="0")
        assert run.returncode == 0, run.stderr
    assert sink.envelopes == []
    with world.store() as store:
        assert store.get_intent(P, intent_id).status is IntentStatus.DENIED


def test_the_overview_and_the_approval_count_update_live_when_an_intent_starts_waiting(
    tmp_path: Path, sqlite_url: str, sink: MailSink, page: Page
) -> None:
    """An open overview shows a newly waiting intent (count and list) without a reload."""
    world, first = staged_world(tmp_path, sqlite_url, sink)
    with dashboard(world) as web:
        log_in(page, web)
        expect(page.locator("#overview-waiting")).to_have_text("1 intent")
        added = world.tickloop("operator", "intents", "add", "--type", "email", "--title", "Book the room",
                               "--recipient", PERSON, "--payload", '{"body": "Please book it."}')  # fmt: skip
        assert added.returncode == 0, added.stderr
        expect(page.locator("#waiting-count")).to_have_text("2", timeout=10_000)
        expect(page.locator("#overview-waiting")).to_have_text("2 intents", timeout=10_000)
        expect(page.locator("main")).to_contain_text("Book the room")
        assert page.url.endswith("/p/default/")
    assert first


def test_login_and_approval_work_with_javascript_off(
    tmp_path: Path, sqlite_url: str, sink: MailSink, browser: Browser
) -> None:
    """Without JavaScript the pages still log in, show and decide: plain forms and redirects."""
    world, intent_id = staged_world(tmp_path, sqlite_url, sink)
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    with dashboard(world) as web:
        page.goto(web.login_url)
        page.get_by_role("button", name="Log in").click()
        expect(page).to_have_url(re.compile(r"/p/default/$"))
        page.goto(f"{web.base}/p/default/approvals")
        page.locator(f"#intent-{intent_id}").get_by_role("button", name="Approve").click()
        expect(page.locator("#decided")).to_contain_text(f"Approved #{intent_id}")
    context.close()
    with world.store() as store:
        assert store.get_intent(P, intent_id).status is IntentStatus.APPROVED
