"""Headless Debian chromium driven by Playwright (never Playwright's own browser download)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, sync_playwright
from web_helpers import CHROMIUM, CHROMIUM_ARGS, DESKTOP, MailSink, mail_sink


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One chromium per test module (starting it costs about a second)."""
    with sync_playwright() as pw:
        launched = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    """A fresh browser profile (no cookies) per test."""
    made = browser.new_context(viewport=DESKTOP)  # type: ignore[arg-type]
    yield made
    made.close()


@pytest.fixture
def page(context: BrowserContext) -> Iterator[Page]:
    """A page that fails the test if any dialog (alert, confirm, prompt) opens: no planted script ran."""
    opened = context.new_page()
    dialogs: list[Any] = []

    def on_dialog(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    opened.on("dialog", on_dialog)
    yield opened
    assert dialogs == [], f"a dialog fired: a planted script ran: {dialogs}"


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """A SQLite store file in the test's directory."""
    return f"sqlite:///{tmp_path / 'store.db'}"


@pytest.fixture
def sink() -> Iterator[MailSink]:
    """A real SMTP server on 127.0.0.1 that keeps what it receives."""
    with mail_sink() as made:
        yield made
