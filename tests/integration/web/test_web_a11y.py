"""Every dashboard page with a full waiting queue, in Chromium at desktop (1280) and phone (390)
width, light and dark: axe-core finds no serious or critical violation, nothing scrolls sideways on
a phone, and each is saved as a screenshot under tests/artifacts/web/ to be looked at."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect
from test_web_browser import P, staged_world
from test_web_screens import fits_a_phone, furnish
from tests.peers import AXE_JS, require
from web_helpers import ARTIFACTS, DESKTOP, PHONE, MailSink, World, dashboard

from tickloop.operator import gate, staging

SEVERE = {"serious", "critical"}


def fill_queue(world: World, n: int) -> None:
    """``n`` more waiting intents of several types, with long titles and multi-line bodies."""
    with world.store() as store:
        for i in range(n):
            kind = ("email", "spend", "message")[i % 3]
            title = f"Reply {i} about the defence date and the room booking for the examiners' committee"
            body = {
                "body": f"Dear examiner {i},\n\nthe defence could be on 12 March.\nBest,\nAna",
                "amount": 12.5,
            }
            to = f"examiner{i}@university.example.org"
            draft = staging.Draft(action_type=kind, title=title, recipient=to, payload=body, origin="manual")
            staging.stage(store, P, draft, gate.GateSettings(), now=datetime.now(UTC))


def severe(page: Page) -> list[dict[str, Any]]:
    """axe-core's serious and critical violations on the page as it is now (it must have checked
    something: a run that passed no rule at all would prove nothing)."""
    page.add_script_tag(path=str(require(AXE_JS)))
    result: dict[str, Any] = page.evaluate(
        """async () => {
            const r = await axe.run(document);
            return {passes: r.passes.length, violations: r.violations.map(v => ({
                id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 3).map(n => n.target.join(" "))}))};
        }"""
    )
    assert result["passes"] > 10
    return [v for v in result["violations"] if v["impact"] in SEVERE]


@pytest.mark.timeout(600)
def test_every_page_light_and_dark_desktop_and_phone_has_no_serious_axe_violation(
    tmp_path: Path, sqlite_url: str, sink: MailSink, browser: Browser
) -> None:
    """Ten pages x two widths x two colour schemes: zero serious/critical axe-core violations, no
    sideways scrolling on a phone, a screenshot of each."""
    world, intent_id = staged_world(tmp_path, sqlite_url, sink)
    fill_queue(world, 24)
    furnish(world)
    pages = {
        "login": "/login",
        "overview": f"/p/{P}/",
        "approvals": f"/p/{P}/approvals",
        "board": f"/p/{P}/board",
        "timeline": f"/p/{P}/timeline",
        "intents": f"/p/{P}/intents",
        "intent": f"/p/{P}/intents/{intent_id}",
        "attention": f"/p/{P}/attention",
        "sessions": "/sessions",
        "session": "/sessions/thesis",
    }
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    problems: dict[str, list[dict[str, Any]]] = {}
    with dashboard(world) as web:
        for scheme in ("light", "dark"):
            # axe-core is injected as an inline script, which our CSP refuses: bypassed for the audit only
            context = browser.new_context(viewport=DESKTOP, color_scheme=scheme, bypass_csp=True)  # type: ignore[arg-type]
            page = context.new_page()
            url = web.login_url if scheme == "light" else world.tickloop("web", "--login-url").stdout.strip()
            page.goto(url)
            page.get_by_role("button", name="Log in").click()
            expect(page.locator("#live-state")).to_have_text("live updates: on")
            for name, path in pages.items():
                for width, size in (("desktop", DESKTOP), ("phone", PHONE)):
                    page.set_viewport_size(size)  # type: ignore[arg-type]
                    page.goto(web.base + path)
                    expect(page.locator("h1")).to_be_visible()
                    page.screenshot(path=str(ARTIFACTS / f"a11y-{name}-{width}-{scheme}.png"), full_page=True)
                    if width == "phone":
                        assert fits_a_phone(page), f"{name} scrolls sideways on a phone ({scheme})"
                    found = severe(page)
                    if found:
                        problems[f"{name} {width} {scheme}"] = found
            context.close()
    assert problems == {}
