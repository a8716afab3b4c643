"""Attacks on a running dashboard, from a real Chromium: CSRF, a foreign site, token guessing, and
hostile text (mail subjects, intent titles, model output, terminal escapes) that must stay text."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from playwright.sync_api import BrowserContext, Page, expect
from test_web_browser import P, log_in, shoot, staged_world
from web_helpers import PERSON, MailSink, World, dashboard

from tickloop.operator.domain import IntentStatus

XSS = '<script>window.__pwned=1;alert(1)</script><img src=x onerror="window.__pwned=2;alert(2)">'
ESCAPES = "\x1b]0;owned\x07\x1b[2J\x1b[31mRED\x1b[0m \u202eevil"
HOSTILE_TITLE = f"Title {XSS} {ESCAPES}"
HOSTILE_SUBJECT = f"Subject {XSS}"
HOSTILE_REPLY = f"Model said {XSS} {ESCAPES}"


def test_a_post_without_the_csrf_token_is_refused_and_changes_nothing(
    tmp_path: Path, sqlite_url: str, sink: MailSink, page: Page
) -> None:
    """A logged-in browser's POST without the form's CSRF token gets 403; a GET never decides."""
    world, intent_id = staged_world(tmp_path, sqlite_url, sink)
    with dashboard(world) as web:
        log_in(page, web)
        url = f"{web.base}/p/{P}/intents/{intent_id}/decide"
        refused = page.request.post(url, form={"decision": "approve"})
        assert refused.status == 403
        assert "CSRF" in refused.text()
        wrong = page.request.post(url, form={"decision": "approve", "csrf": "guess"})
        assert wrong.status == 403
        assert page.request.get(url).status == 405
        for header in ("content-security-policy", "x-frame-options", "referrer-policy"):
            assert header in refused.headers
        assert refused.headers["x-frame-options"] == "DENY"
        assert refused.headers["referrer-policy"] == "no-referrer"
        assert "default-src 'self'" in refused.headers["content-security-policy"]
    with world.store() as store:
        assert store.get_intent(P, intent_id).status is IntentStatus.REQUIRES_APPROVAL


class _Attacker(BaseHTTPRequestHandler):
    """Another site on this machine: a page with a form that posts to the dashboard."""

    page = b""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(self.page)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        """Quiet."""


@pytest.fixture
def attacker() -> Iterator[tuple[ThreadingHTTPServer, type[_Attacker]]]:
    handler = type("Attacker", (_Attacker,), {})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server, handler
    server.shutdown()
    server.server_close()


def test_a_form_on_a_foreign_origin_cannot_decide_even_with_a_leaked_csrf_token(
    tmp_path: Path,
    sqlite_url: str,
    sink: MailSink,
    page: Page,
    attacker: tuple[ThreadingHTTPServer, type[_Attacker]],
) -> None:
    """A page on another origin that submits the approve form (same browser, logged in, even with
    the right CSRF token) is refused: the request is not same-origin. A forged Origin header is too."""
    world, intent_id = staged_world(tmp_path, sqlite_url, sink)
    server, handler = attacker
    with dashboard(world) as web:
        log_in(page, web)
        page.goto(f"{web.base}/p/{P}/approvals")
        csrf = page.locator("input[name=csrf]").first.get_attribute("value")
        action = f"{web.base}/p/{P}/intents/{intent_id}/decide"
        handler.page = (
            f'<form method="post" action="{action}"><input name="csrf" value="{csrf}">'
            '<button name="decision" value="approve">win a prize</button></form>'
        ).encode()
        page.goto(f"http://127.0.0.1:{server.server_address[1]}/")
        page.get_by_role("button", name="win a prize").click()
        expect(page.locator("main")).to_contain_text("another site")
        forged = page.request.post(action, form={"decision": "approve", "csrf": csrf or ""},
                                   headers={"Origin": "http://evil.example"})  # fmt: skip
        assert forged.status == 403
    with world.store() as store:
        assert store.get_intent(P, intent_id).status is IntentStatus.REQUIRES_APPROVAL


def test_wrong_login_tokens_are_refused_then_rate_limited_but_a_valid_token_still_logs_in(
    tmp_path: Path, sqlite_url: str, sink: MailSink, context: BrowserContext, page: Page
) -> None:
    """A one-time URL that was used logs nobody in a second time; that and four wrong tokens get 403,
    then wrong ones are rate-limited (429 with Retry-After); a fresh valid token from
    `tickloop web --login-url` still logs the person in: guesses never lock them out."""
    world, _ = staged_world(tmp_path, sqlite_url, sink)
    with dashboard(world) as web:
        log_in(page, web)
        again = context.browser.new_context() if context.browser else None
        assert again is not None
        other = again.new_page()
        other.goto(web.login_url)  # the same URL, second time
        other.get_by_role("button", name="Log in").click()
        expect(other.locator("main")).to_contain_text("wrong, used or expired")
        statuses = []
        fresh = world.tickloop("web", "--login-url")
        assert fresh.returncode == 0, fresh.stderr
        for guess in ["nope"] * 5 + [fresh.stdout.strip().split("token=")[1]]:
            form_page = other.request.get(f"{web.base}/login").text()
            pre = re.search(r'name="csrf" value="([^"]+)"', form_page)
            assert pre is not None
            answer = other.request.post(
                f"{web.base}/login", form={"csrf": pre.group(1), "token": guess}, max_redirects=0
            )
            statuses.append(answer.status)
            if answer.status == 429:
                assert int(answer.headers["retry-after"]) > 0
        assert statuses == [403, 403, 403, 403, 429, 303]
        assert "tl_session=" in answer.headers["set-cookie"]
        again.close()


def test_the_login_form_refuses_a_post_without_its_pre_session_csrf_token(
    tmp_path: Path, sqlite_url: str, sink: MailSink, context: BrowserContext, page: Page
) -> None:
    """Before any session, /login needs the form's CSRF token and its cookie: a valid login token posted
    without them (a cross-site login) gets 403 and is not spent, so the real form still logs in with it."""
    world, _ = staged_world(tmp_path, sqlite_url, sink)
    with dashboard(world) as web:
        token = web.login_url.split("token=", 1)[1]
        form_page = page.request.get(f"{web.base}/login").text()  # sets the pre-session cookie
        pre = re.search(r'name="csrf" value="([^"]+)"', form_page)
        assert pre is not None
        assert context.browser is not None
        cookieless = context.browser.new_context()
        attempts = [
            page.request.post(f"{web.base}/login", form={"token": token}, max_redirects=0),
            page.request.post(f"{web.base}/login", form={"csrf": "guess", "token": token}, max_redirects=0),
            cookieless.request.post(
                f"{web.base}/login", form={"csrf": pre.group(1), "token": token}, max_redirects=0
            ),
        ]
        assert [a.status for a in attempts] == [403, 403, 403]
        assert all("CSRF" in a.text() for a in attempts)
        cookieless.close()
        log_in(page, web)
        expect(page.locator("main")).not_to_contain_text("wrong, used or expired")


def hostile_mail(box: Path) -> None:
    msg = EmailMessage()
    msg["From"] = "Mallory <m@evil.example>"
    msg["To"] = "me@example.org"
    msg["Subject"] = HOSTILE_SUBJECT
    msg["Date"] = "Mon, 30 Nov 2026 08:00:00 +0000"
    msg["Message-ID"] = "<x@evil.example>"
    msg.set_content(f"Body {XSS}")
    (box / "tmp" / "1.M1.host").write_bytes(bytes(msg))
    (box / "tmp" / "1.M1.host").rename(box / "new" / "1.M1.host")


def test_hostile_text_is_shown_as_text_and_no_planted_script_runs(
    tmp_path: Path, sqlite_url: str, sink: MailSink, page: Page
) -> None:
    """Script tags, event handlers and terminal escapes in a mail subject, an intent title and model
    output render as visible text: no dialog opens, no planted script sets its flag, no element is
    injected, and escape sequences are gone or shown as `\\u` escapes."""
    box = tmp_path / "Maildir"
    for sub in ("cur", "new", "tmp"):
        (box / sub).mkdir(parents=True)

    def observe_the_mail(world: World) -> None:
        assert world.tickloop("operator", "tick", "observe").returncode == 0  # the baseline
        hostile_mail(box)
        seen = world.tickloop("operator", "tick", "observe")
        assert seen.returncode == 0, seen.stderr

    reply = json.dumps({"actionType": "email", "title": HOSTILE_TITLE, "recipient": PERSON,
                        "body": HOSTILE_REPLY})  # fmt: skip
    extra = f'[[sources.maildirs]]\npath = "{box}"\n'
    world, intent_id = staged_world(
        tmp_path, sqlite_url, sink, reply=reply, extra=extra, before_fast=observe_the_mail
    )
    offline = tmp_path / "chat.toml"
    offline.write_text(f"[model.offline]\nreply = {json.dumps(HOSTILE_REPLY)}\n")
    chat = world.tickloop("chat", "--model", "offline", "--session", "hostile", stdin="hello\n/tick 1\n",
                          TICKLOOP_CONFIG=str(offline))  # fmt: skip
    assert chat.returncode == 0, chat.stderr
    with dashboard(world) as web:
        log_in(page, web)
        for path, shows in [
            (f"/p/{P}/", "Title <script>"),
            (f"/p/{P}/approvals", "Subject <script>"),
            (f"/p/{P}/intents", "Title <script>"),
            (f"/p/{P}/intents/{intent_id}", "Model said <script>"),
            ("/sessions/hostile", "Model said <script>"),
        ]:
            page.goto(web.base + path)
            main = page.locator("main")
            expect(main).to_contain_text(shows)
            text = main.inner_text()
            assert "\x1b" not in text
            assert "\u202e" not in text
            assert "\\u202e" in text or (path == f"/p/{P}/approvals" and "Subject" in text)
            assert page.locator("main img, main script, main [onerror]").count() == 0
            assert page.evaluate("() => window.__pwned === undefined")
        shoot(page, "hostile-session")
