"""The dashboard's intent page names where an intent came from: `mcp:NAME` for an agent's token."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from playwright.sync_api import Page, expect
from test_web_browser import P, log_in, shoot
from web_helpers import dashboard, make_world

from tickloop.operator import staging
from tickloop.operator.gate import GateSettings


def test_the_intent_page_shows_the_agent_that_staged_it(tmp_path: Path, sqlite_url: str, page: Page) -> None:
    """An intent staged by the agent whose token is claude-desktop shows "from mcp:claude-desktop"
    and that it waits for the person."""
    world = make_world(tmp_path, sqlite_url, "")
    assert world.tickloop("operator", "init", "--goal", "Ship the thesis").returncode == 0
    draft = staging.Draft(
        action_type="note", title="Jot this down", origin=staging.mcp_origin("claude-desktop")
    )
    with world.store() as store:
        made, _ = staging.stage(store, P, draft, GateSettings(), now=datetime.now(UTC))
    with dashboard(world) as web:
        log_in(page, web)
        page.goto(f"{web.base}/p/{P}/intents/{made.id}")
        expect(page.locator("#intent-origin")).to_have_text("mcp:claude-desktop")
        expect(page.locator("#intent-status")).to_have_text("requires_approval")
        shoot(page, "intent-mcp-origin")
