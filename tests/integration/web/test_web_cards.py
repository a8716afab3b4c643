"""Stable cards on a phone: a decision made elsewhere never moves a card under the person's finger,
the buttons name their intent, and a decision on an intent that no longer waits is refused in words."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

from playwright.sync_api import Browser, Page, expect
from test_web_browser import P, log_in, staged_world
from web_helpers import ARTIFACTS, PERSON, PHONE, MailSink, World, dashboard

from tickloop.operator import gate, staging
from tickloop.operator.domain import IntentStatus

#: where the thumb rests on a 390 x 844 phone: the lower middle of the screen
THUMB = (195, 600)


def more_waiting(world: World, n: int) -> list[int]:
    """``n`` more emails waiting for the person, staged through the one staging path."""
    ids = []
    with world.store() as store:
        for i in range(n):
            body = {"body": f"Line one\nline two of reply {i}"}
            draft = staging.Draft(action_type="email", title=f"Reply {i}", recipient=f"r{i}@example.org",
                                  payload=body, origin="manual")  # fmt: skip
            made, _ = staging.stage(store, P, draft, gate.GateSettings(), now=datetime.now(UTC))
            ids.append(made.id)
    return ids


def under_thumb(page: Page) -> str | None:
    """The intent id of the element under the thumb (a button, or the card it sits in)."""
    return page.evaluate(
        """([x, y]) => {
            const el = document.elementFromPoint(x, y);
            const owner = el && el.closest("[data-intent], [data-card]");
            return owner ? (owner.getAttribute("data-intent") || owner.getAttribute("data-card")) : null;
        }""",
        list(THUMB),
    )


def test_an_approval_from_the_cli_never_moves_the_card_under_the_thumb(
    tmp_path: Path, sqlite_url: str, sink: MailSink, browser: Browser, page: Page
) -> None:
    """Phone and desktop pages open on the approvals; the CLI approves the first card: under a fixed
    point the phone still shows the same intent, the gone card is greyed with its buttons disabled,
    and a bar offers "1 changed — show", which then shows the fresh list."""
    world, first = staged_world(tmp_path, sqlite_url, sink)
    others = more_waiting(world, 4)
    phone = browser.new_context(viewport=PHONE, has_touch=True, is_mobile=True)  # type: ignore[arg-type]
    thumb = phone.new_page()
    with dashboard(world) as web:
        log_in(page, web)
        second = world.tickloop("web", "--login-url")  # a second device: the running server's address
        assert second.returncode == 0, second.stderr
        assert second.stdout.startswith(web.base + "/login?token=")
        thumb.goto(second.stdout.strip())
        thumb.get_by_role("button", name="Log in").click()
        for each in (page, thumb):
            each.goto(f"{web.base}/p/{P}/approvals")
            expect(each.locator("#live-state")).to_have_text("live updates: on")
        thumb.locator(f"#intent-{others[0]}").scroll_into_view_if_needed()
        thumb.mouse.wheel(0, 0)
        before = under_thumb(thumb)
        assert before is not None
        approved = world.tickloop("operator", "approve", str(first), "--by", "cli-person")
        assert approved.returncode == 0, approved.stderr
        for each in (page, thumb):
            expect(each.locator("#changes")).to_have_text("1 changed — show", timeout=15_000)
        assert under_thumb(thumb) == before
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        thumb.screenshot(path=str(ARTIFACTS / "cards-frozen-phone.png"))
        thumb.locator(f"#intent-{first}").scroll_into_view_if_needed()
        thumb.screenshot(path=str(ARTIFACTS / "cards-gone-phone.png"))
        thumb.locator(f"#intent-{others[0]}").scroll_into_view_if_needed()
        gone = thumb.locator(f"#intent-{first}")
        expect(gone).to_have_class(re.compile(r"\bgone\b"))
        expect(gone.get_by_role("button", name=f"Approve #{first}")).to_be_disabled()
        page.locator("#changes button").click()
        expect(page.locator(f"#intent-{first}")).to_have_count(0)
        expect(page.locator(f"#intent-{others[0]}")).to_be_visible()
        expect(page.locator("#changes")).to_have_count(0)
    phone.close()
    with world.store() as store:
        assert store.get_intent(P, first).status is IntentStatus.APPROVED
        assert all(store.get_intent(P, i).status is IntentStatus.REQUIRES_APPROVAL for i in others)


def test_a_decision_on_an_intent_decided_elsewhere_is_refused_in_words(
    tmp_path: Path, sqlite_url: str, sink: MailSink, browser: Browser
) -> None:
    """Without JavaScript a stale card still posts; the server refuses it (409) and says who decided."""
    world, first = staged_world(tmp_path, sqlite_url, sink)
    context = browser.new_context(java_script_enabled=False, viewport=PHONE)  # type: ignore[arg-type]
    stale = context.new_page()
    with dashboard(world) as web:
        stale.goto(web.login_url)
        stale.get_by_role("button", name="Log in").click()
        stale.goto(f"{web.base}/p/{P}/approvals")
        button = stale.get_by_role("button", name=f"Deny #{first} · email to {PERSON}")
        expect(button).to_be_visible()
        denied = world.tickloop("operator", "approve", str(first), "--by", "cli-person")
        assert denied.returncode == 0, denied.stderr
        with stale.expect_response(re.compile(r"/decide$")) as answer:
            button.click()
        assert answer.value.status == 409
        expect(stale.locator("p.problem")).to_contain_text(
            f"Not recorded: #{first} · email to {PERSON} is no longer waiting for you. "
            "It was approved by cli-person"
        )
    context.close()
    with world.store() as store:
        assert store.get_intent(P, first).status is IntentStatus.APPROVED


def test_a_deep_link_survives_login(tmp_path: Path, sqlite_url: str, sink: MailSink, page: Page) -> None:
    """A notice's link to intent N, opened without a session, goes to the login form; logging in
    with the one-time URL lands on intent N, not the overview."""
    world, intent_id = staged_world(tmp_path, sqlite_url, sink)
    with dashboard(world) as web:
        page.goto(f"{web.base}/p/{P}/intents/{intent_id}")
        expect(page).to_have_url(re.compile(r"/login\?next="))
        page.goto(web.login_url)
        page.get_by_role("button", name="Log in").click()
        expect(page).to_have_url(re.compile(rf"/p/{P}/intents/{intent_id}$"))
        expect(page.locator("#intent-status")).to_have_text("requires_approval")
        expect(page.locator(".mail-body")).to_contain_text("Draft attached.")
