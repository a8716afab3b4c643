"""Every dashboard page in a real Chromium at desktop and phone width, light and dark: it renders,
fits a phone without sideways scrolling, and is saved as a screenshot under tests/artifacts/web/."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from playwright.sync_api import Browser, Page, expect
from test_web_browser import P, log_in, shoot, staged_world
from web_helpers import ARTIFACTS, PHONE, MailSink, World, dashboard

from tickloop.operator.domain import NewPlanStep, NewProgress, Outcome
from tickloop.operator.notices import ATTENTION


def furnish(world: World) -> None:
    """A day of history: ticks every 10 minutes with a 3-hour silence, a plan, attention records, a chat."""
    now = datetime.now(UTC)
    with world.store() as store:
        goal = store.active_goal_model(P)
        assert goal is not None
        store.replace_plan(P, goal.version, [NewPlanStep("Write chapter 3"), NewPlanStep("Send it to Ana"),
                                             NewPlanStep("Book the defence room")], now=now)  # fmt: skip
        outcomes = [
            Outcome.DONE,
            Outcome.NOOP,
            Outcome.STAGED,
            Outcome.DONE,
            Outcome.FAILED,
            Outcome.GATE_STOP,
        ]
        start = now - timedelta(hours=12)
        for i in range(72):
            at = start + timedelta(minutes=10 * i)
            if timedelta(hours=5) < at - start < timedelta(hours=8):
                continue  # the loop was down: a gap
            for kind, offset in (("observe", 0), ("fast", 2), ("executor", 4)):
                outcome = outcomes[(i + offset) % len(outcomes)] if kind == "fast" else Outcome.DONE
                begin = at + timedelta(minutes=offset)
                store.record_progress(P, NewProgress(kind, outcome, begin, begin + timedelta(seconds=20),
                                                     detail=f"{kind} tick {i}"))  # fmt: skip
        for check, sent in (("sent", True), ("quiet_hours", False), ("budget", False)):
            body = json.dumps(
                {"check": check, "kind": "notice", "sent": sent, "source": "monitor.stuck.fire"}
            )
            store.log_notification(P, channel=ATTENTION, kind=ATTENTION, subject=f"stuck: 4 ticks ({check})",
                                   body=body, now=now)  # fmt: skip
    chat = world.tickloop("chat", "--model", "offline", "--session", "thesis", stdin="hello\n/tick 2\n")
    assert chat.returncode == 0, chat.stderr


def fits_a_phone(page: Page) -> bool:
    return bool(page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth + 1"))


def test_every_page_renders_fits_a_phone_and_is_screenshotted(
    tmp_path: Path, sqlite_url: str, sink: MailSink, browser: Browser, page: Page
) -> None:
    """Overview, approvals, board, timeline, intents, one intent, attention, sessions and one session:
    each has its heading, none scrolls sideways at 390 px, and each is saved at both widths."""
    world, intent_id = staged_world(tmp_path, sqlite_url, sink)
    furnish(world)
    with dashboard(world) as web:
        login = browser.new_page()
        login.goto(web.base + "/login")
        shoot(login, "login")
        login.close()
        log_in(page, web)
        pages = {
            "overview": (f"/p/{P}/", "Overview"),
            "approvals": (f"/p/{P}/approvals", "Waiting for your decision"),
            "board": (f"/p/{P}/board", "Board and plan"),
            "timeline": (f"/p/{P}/timeline", "Timeline"),
            "timeline-filtered": (f"/p/{P}/timeline?kind=fast&outcome=failed", "Timeline"),
            "intents": (f"/p/{P}/intents", "Intents"),
            "intent": (f"/p/{P}/intents/{intent_id}", "#"),
            "attention": (f"/p/{P}/attention", "Attention"),
            "sessions": ("/sessions", "Tick sessions"),
            "session": ("/sessions/thesis", "Session thesis"),
        }
        for name, (path, heading) in pages.items():
            page.goto(web.base + path)
            expect(page.locator("h1")).to_contain_text(heading)
            shoot(page, name)
            page.set_viewport_size(PHONE)  # type: ignore[arg-type]
            assert fits_a_phone(page), f"{name} scrolls sideways on a phone"
            page.set_viewport_size({"width": 1280, "height": 900})
        expect(page.locator("svg rect.gap")).to_have_count(0)  # the last page is a session
        page.goto(web.base + f"/p/{P}/timeline")
        assert page.locator("svg rect.gap").count() >= 1  # the 3-hour silence is visible
        assert page.locator("svg rect.m").count() > 100
        page.locator("figure.chart").screenshot(path=str(ARTIFACTS / "timeline-chart.png"))
        page.goto(web.base + "/sessions")
        expect(page.locator("main")).to_contain_text("✔ ok:")
        page.emulate_media(color_scheme="dark")
        for name in ("overview", "approvals", "timeline"):
            page.goto(web.base + pages[name][0])
            shoot(page, f"{name}-dark")
        page.locator("figure.chart").screenshot(path=str(ARTIFACTS / "timeline-chart-dark.png"))
        background = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
        assert background == "rgb(18, 20, 22)"
