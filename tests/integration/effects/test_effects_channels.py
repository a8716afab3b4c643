"""Notification channels against real files, streams and a real HTTP endpoint."""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import HttpSink
from tickloop.errors import ConfigError
from tickloop.notify import (
    AppriseChannel,
    AppriseChannelSettings,
    ConsoleChannel,
    FileChannel,
    FileChannelSettings,
    NotifySettings,
    SmtpSettings,
    build_channels,
    send_all,
)
from tickloop.testing import FakeClock


def test_the_file_channel_appends_json_lines_readable_only_by_the_owner(
    tmp_path: Path, clock: FakeClock
) -> None:
    """Each notification is one JSON line in a file created with mode 0600 inside a 0700 directory."""
    path = tmp_path / "state" / "notifications.jsonl"
    channel = FileChannel("log", path=path, clock=clock)
    assert channel.send("STUCK", "three ticks\nno progress").ok
    assert channel.send("SILENT", "no rows").ok
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["subject"] for r in records] == ["STUCK", "SILENT"]
    assert records[0] == {
        "at": "2026-01-01T00:00:00.000Z",
        "body": "three ticks\nno progress",
        "channel": "log",
        "subject": "STUCK",
    }


def test_the_file_channel_tightens_a_loose_existing_file(tmp_path: Path) -> None:
    """A pre-existing world-readable log is narrowed to 0600 on the next notification."""
    path = tmp_path / "n.jsonl"
    path.write_text("")
    path.chmod(0o644)
    assert FileChannel(path=path).send("s", "b").ok
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_the_file_channel_refuses_to_follow_a_planted_symlink(tmp_path: Path) -> None:
    """A symlink at the log path is a failed delivery, and the file it points to is untouched."""
    target = tmp_path / "elsewhere.txt"
    target.write_text("original")
    link = tmp_path / "n.jsonl"
    link.symlink_to(target)
    outcome = FileChannel("log", path=link).send("s", "b")
    assert not outcome.ok
    assert str(link) in outcome.reason
    assert target.read_text() == "original"


def test_the_console_channel_writes_subject_and_indented_body(clock: FakeClock) -> None:
    """The console channel prints a timestamped subject line and the body indented beneath it."""
    stream = io.StringIO()
    assert ConsoleChannel(stream=stream, clock=clock).send("Approval needed", "intent 45\nemail").ok
    assert stream.getvalue() == "[2026-01-01T00:00:00.000Z] Approval needed\n    intent 45\n    email\n"


def test_the_console_channel_prints_hostile_subjects_and_bodies_inert(clock: FakeClock) -> None:
    """A mail subject or title with escapes, controls or a bidi override reaches the terminal inert."""
    stream = io.StringIO()
    subject = "Re: \x1b]0;pwned\x07invoice \u202eexe.pdf"
    body = "line\x1b[2J one\x08\x08X\nyou> approve\r\x07"
    assert ConsoleChannel(stream=stream, clock=clock).send(subject, body).ok
    assert stream.getvalue() == (
        "[2026-01-01T00:00:00.000Z] Re: invoice \\u202eexe.pdf\n"
        "    line one\\u0008\\u0008X\n    you> approve\n    \\u0007\n"
    )


def test_a_closed_console_is_a_failed_result_not_an_exception() -> None:
    """A channel that cannot write reports a failed result with the reason; it does not raise."""
    stream = io.StringIO()
    stream.close()
    outcome = ConsoleChannel(stream=stream).send("s", "b")
    assert not outcome.ok
    assert "console" in outcome.reason


def test_an_apprise_json_url_delivers_to_a_real_http_endpoint(http_sink: HttpSink) -> None:
    """An Apprise ``json://`` URL posts the subject and body to the configured endpoint."""
    channel = AppriseChannel("hook", url=f"json://{http_sink.url}/notify")
    outcome = channel.send("STUCK: operator", "No progress for 3 ticks.")
    assert outcome.ok, outcome.reason
    [(method, path, body)] = http_sink.requests
    assert (method, path) == ("POST", "/notify")
    assert body["title"] == "STUCK: operator"
    assert body["message"] == "No progress for 3 ticks."
    assert outcome.detail == f"json://{http_sink.url}"


def test_an_endpoint_error_is_a_failed_result_with_a_reason(http_sink: HttpSink) -> None:
    """When the endpoint answers 500 the channel returns a failed result; the caller retries next run."""
    http_sink.status = 500
    outcome = AppriseChannel("hook", url=f"json://{http_sink.url}/notify").send("s", "b")
    assert not outcome.ok
    assert outcome.reason.startswith(f"json://{http_sink.url}:")
    assert len(http_sink.requests) == 1


def test_an_unknown_apprise_scheme_is_a_failed_result() -> None:
    """A URL Apprise does not support fails with a reason that names the scheme and hides the rest."""
    outcome = AppriseChannel("x", url="nosuchservice://token@host/path").send("s", "b")
    assert not outcome.ok
    assert outcome.reason == "Apprise does not recognise the URL nosuchservice://host"
    assert "token" not in outcome.reason


def test_a_missing_apprise_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without apprise installed, building the channel fails and says which extra to install."""
    monkeypatch.setitem(sys.modules, "apprise", None)
    with pytest.raises(ConfigError, match=r"notify channel 'phone': .*pip install -e '\.\[notify\]'"):
        build_channels(
            NotifySettings(channels=[AppriseChannelSettings(name="phone", url="ntfy://ntfy.sh/t")]),
            smtp=SmtpSettings(),
            secret={}.get,
        )


def test_importing_channels_and_handlers_loads_neither_apprise_nor_email_validator() -> None:
    """A tick that sends nothing pays nothing for apprise or email-validator at start-up."""
    code = (
        "import sys, tickloop.notify, tickloop.operator.handlers; "
        "print(sorted(m for m in ('apprise', 'email_validator') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=os.environ, timeout=120
    )
    assert out.stdout.strip() == "[]"


def test_built_channels_deliver_everywhere_and_read_urls_from_secrets(
    tmp_path: Path, http_sink: HttpSink
) -> None:
    """Settings become channels; an apprise URL comes from its variable; every channel gets the message."""
    settings = NotifySettings(
        channels=[
            FileChannelSettings(name="log", path=str(tmp_path / "n.jsonl")),
            AppriseChannelSettings(name="hook", url_env="HOOK_URL"),
        ]
    )
    secrets = {"HOOK_URL": f"json://{http_sink.url}/hook"}
    channels = build_channels(settings, smtp=SmtpSettings(), secret=secrets.get)
    results = send_all(channels, "digest", "2 items")
    assert [(r.channel, r.ok) for r in results] == [("log", True), ("hook", True)]
    assert http_sink.requests[0][1] == "/hook"
    assert [c.describe() for c in channels] == [
        f"file:{tmp_path / 'n.jsonl'}",
        f"apprise:json://{http_sink.url}",
    ]
