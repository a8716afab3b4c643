"""IMAP against a real Dovecot on 127.0.0.1 over TLS and STARTTLS: deltas, read-only, secrets."""

from __future__ import annotations

from datetime import UTC, datetime
from email.message import EmailMessage
from typing import Any

import pytest
from sources_support import Imap

from tickloop.operator.sources import CollectResult, ImapSource, SourcesSettings, collect

NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
PASSWORD_VAR = "TICKLOOP_TEST_IMAP_PASSWORD"


def run(
    server: Imap,
    folder: str,
    cursors: dict[str, Any] | None = None,
    *,
    password: str | None = None,
    **options: Any,
) -> CollectResult:
    options.setdefault("port", server.tls_port)
    source = ImapSource(
        host=server.host,
        username=server.user,
        password_env=PASSWORD_VAR,
        folder=folder,
        ca_file=server.ca_file,
        timeout_seconds=5,
        **options,
    )
    secrets = {PASSWORD_VAR: server.password if password is None else password}
    return collect(SourcesSettings(imap=[source]), cursors or {}, NOW, secret=secrets.get)


def message(subject: str, body: str = "Hello from IMAP.") -> bytes:
    msg = EmailMessage()
    msg["From"] = "Carol <carol@example.org>"
    msg["To"] = "alice@example.org"
    msg["Subject"] = subject
    msg["Message-ID"] = f"<{subject}@example.org>"
    msg.set_content(body)
    return bytes(msg).replace(b"\n", b"\r\n")


@pytest.fixture
def folder(dovecot: Imap) -> str:
    """A fresh folder on the shared Dovecot server holding one old message."""
    name = dovecot.new_folder()
    dovecot.append(message("before"), name)
    return name


def test_new_mail_over_tls_is_reported_once(dovecot: Imap, folder: str) -> None:
    """A message arriving after the baseline is reported once, with headers and excerpt, then not again."""
    first = run(dovecot, folder)
    assert first.errors == ()
    assert [(o.kind, o.payload) for o in first.observations] == [("mail.baseline", {"count": 1})]
    dovecot.append(message("hello", "Can you review the draft?"), folder)
    second = run(dovecot, folder, first.cursors)
    assert [o.kind for o in second.observations] == ["mail.new"]
    payload = second.observations[0].payload
    assert payload["subject"] == "hello"
    assert payload["from"] == "Carol <carol@example.org>"
    assert payload["messageId"] == "<hello@example.org>"
    assert payload["excerpt"] == "Can you review the draft?"
    assert second.observations[0].tainted
    assert second.observations[0].source == f"mail:imap:127.0.0.1/{folder}"
    assert run(dovecot, folder, second.cursors).observations == ()


def test_starttls_works_too(dovecot: Imap, folder: str) -> None:
    """A server offering STARTTLS on the plain port is read after upgrading to TLS."""
    first = run(dovecot, folder, security="starttls", port=dovecot.plain_port)
    assert first.errors == ()
    dovecot.append(message("via-starttls"), folder)
    second = run(dovecot, folder, first.cursors, security="starttls", port=dovecot.plain_port)
    assert [o.payload["subject"] for o in second.observations] == ["via-starttls"]


def test_observing_never_marks_mail_as_read(dovecot: Imap, folder: str) -> None:
    """The person's unread mail stays unread after the operator has observed it."""
    first = run(dovecot, folder)
    dovecot.append(message("unread"), folder)
    run(dovecot, folder, first.cursors)
    with dovecot.client() as client:
        client.select(folder, readonly=True)
        _, data = client.search(None, "UNSEEN")
    assert len(data[0].split()) == 2


def test_a_large_message_is_fetched_only_up_to_the_byte_limit(dovecot: Imap, folder: str) -> None:
    """A message with a big attachment is downloaded only up to maxMessageBytes."""
    first = run(dovecot, folder, max_message_bytes=4_096)
    msg = EmailMessage()
    msg["Subject"] = "big"
    msg.set_content("See attached.")
    msg.add_attachment(b"\x00" * 300_000, maintype="application", subtype="octet-stream", filename="a.bin")
    dovecot.append(bytes(msg).replace(b"\n", b"\r\n"), folder)
    payload = run(dovecot, folder, first.cursors, max_message_bytes=4_096).observations[0].payload
    assert payload["readBytes"] == 4_096
    assert payload["size"] > 300_000
    assert payload["excerpt"] == "See attached."


def test_a_backlog_is_reported_in_order_over_several_runs(dovecot: Imap, folder: str) -> None:
    """More new mail than maxMessages is reported across runs, none lost, none repeated."""
    cursors = run(dovecot, folder).cursors
    for n in range(5):
        dovecot.append(message(f"m{n}"), folder)
    subjects: list[str] = []
    for _ in range(3):
        result = run(dovecot, folder, cursors, max_messages=2)
        subjects += [o.payload["subject"] for o in result.observations]
        cursors = result.cursors
    assert subjects == ["m0", "m1", "m2", "m3", "m4"]


def test_a_changed_uidvalidity_starts_a_new_baseline(dovecot: Imap, folder: str) -> None:
    """When the server renumbers the folder, the source rebaselines instead of replaying or losing mail."""
    cursors = run(dovecot, folder).cursors
    source = next(iter(cursors))
    cursors[source]["uidValidity"] += 1
    result = run(dovecot, folder, cursors)
    assert [o.kind for o in result.observations] == ["mail.uidvalidity_changed"]


def test_a_wrong_password_is_an_error_that_never_contains_the_password(dovecot: Imap, folder: str) -> None:
    """Failed authentication is reported clearly, and the password appears nowhere in the result."""
    result = run(dovecot, folder, password="hunter2-wrong")
    assert result.observations == ()
    assert "hunter2" not in repr(result)
    assert "127.0.0.1" in result.errors[0].message


def test_a_missing_password_variable_is_named_in_the_error(dovecot: Imap, folder: str) -> None:
    """A password variable that is not set is reported by its name."""
    result = run(dovecot, folder, password="")
    assert PASSWORD_VAR in result.errors[0].message


def test_an_untrusted_certificate_is_refused(dovecot: Imap, folder: str) -> None:
    """A server whose certificate is not trusted is never sent the password."""
    source = ImapSource(
        host=dovecot.host,
        port=dovecot.tls_port,
        username="alice",
        password_env="P",
        folder=folder,
        timeout_seconds=5,
    )
    result = collect(SourcesSettings(imap=[source]), {}, NOW, secret={"P": dovecot.password}.get)
    assert "CERTIFICATE_VERIFY_FAILED" in result.errors[0].message


def test_a_missing_folder_and_an_unreachable_server_are_errors(dovecot: Imap) -> None:
    """A folder that does not exist and a port nobody listens on are each reported, not raised."""
    assert "STATUS" in run(dovecot, "no-such-folder").errors[0].message
    assert run(dovecot, "INBOX", port=9).errors[0].message.startswith("imap 127.0.0.1:9")
