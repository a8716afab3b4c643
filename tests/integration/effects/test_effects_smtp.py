"""The email handler and channel against a real SMTP server (aiosmtpd on 127.0.0.1)."""

from __future__ import annotations

from datetime import UTC, datetime
from email import message_from_bytes, policy
from typing import Any

import pytest

from conftest import PERSON, SENDER, SMTP_PASSWORD, SMTP_USER, MailSink
from tickloop.errors import ConfigError, DeliveryError, HandlerError, RecipientError
from tickloop.notify import EmailChannel, SmtpSettings
from tickloop.operator.handlers import HandlerContext, HandlerRequest, HandlerStatus, handler_for

NOW = datetime(2026, 7, 7, 17, 15, 3, tzinfo=UTC)

#: Each entry tries to reach a second mailbox, start a new header, or pass for a different domain.
INJECTIONS: list[Any] = [
    "person@example.com\r\nBcc: evil@example.net",
    "person@example.com\nBcc: evil@example.net",
    "person@example.com\rBcc: evil@example.net",
    "person@example.com\r\n",
    "person@example.com, evil@example.net",
    "person@example.com,evil@example.net",
    "person@example.com;evil@example.net",
    "person@example.com evil@example.net",
    "person@example.com\tevil@example.net",
    '"Person" <person@example.com>',
    "Person <person@example.com>",
    "<person@example.com>",
    "person@example.com <evil@example.net>",
    "=?utf-8?q?person=0ABcc:evil@example.net?=@example.com",
    "=?utf-8?b?cGVyc29uCkJjYzogZXZpbEBleGFtcGxlLm5ldA==?=@example.com",
    "person@=?utf-8?q?example.com=0A?=",
    '"person,evil"@example.com',
    '"person\\"evil"@example.com',
    '"evil@example.net"@example.com',
    '"person"@example.com',
    "person@ex\u0430mple.com",  # Cyrillic a (U+0430) inside a Latin label
    "person@xn--exmple-4nf.com",  # the same homograph, already punycoded
    "person@\u0440\u0430\u0443\u0440\u0430l.com",  # an all-Cyrillic look-alike: IDNs are off by default
    "person@example.com\x00",
    "person\x00@example.com",
    "person@example.com\x00Bcc: evil@example.net",
    "person@example.com\u2028Bcc: evil@example.net",
    "person@example.com\u0085Bcc: evil@example.net",
    "person\u200b@example.com",
    "person\u202e@example.com",
    "person@example.com (comment)",
    "person@[127.0.0.1]",
    "p" * 65 + "@example.com",
    "person@" + "a" * 250 + ".com",
    "person@" + ("label." * 60) + "com",
    "",
    "@example.com",
    "person@",
    "person@@example.com",
    "person@example.com@evil.net",
    None,
    ["person@example.com"],
    42,
]


def _request(
    recipient: Any, *, title: str = "Quarterly numbers", dry_run: bool = False, **payload: Any
) -> HandlerRequest:
    payload.setdefault("body", "Hello.\nThe numbers are attached in spirit.")
    return HandlerRequest(
        intent_id=45,
        action_type="email",
        title=title,
        now=NOW,
        recipient=recipient,
        payload=payload,
        dry_run=dry_run,
    )


def _send(request: HandlerRequest, smtp: SmtpSettings, **context: Any) -> Any:
    spec = handler_for("email")
    assert spec is not None
    return spec.handler(request, HandlerContext(smtp=smtp, **context))


def test_email_arrives_with_exactly_one_recipient_and_the_allowed_sender(
    mail_sink: MailSink, smtp: SmtpSettings
) -> None:
    """An armed email intent delivers one message to one envelope recipient from the configured sender."""
    outcome = _send(_request(PERSON), smtp)
    assert outcome.status is HandlerStatus.SENT
    assert outcome.description.startswith("called smtp.send_message(")
    [envelope] = mail_sink.envelopes
    assert envelope.mail_from == SENDER
    assert envelope.rcpt_tos == [PERSON]
    received = message_from_bytes(envelope.original_content or b"", policy=policy.default)
    assert received.get_all("To") == [PERSON]
    assert received.get_all("Cc") is None
    assert received.get_all("Bcc") is None
    assert received["Message-ID"] == outcome.details["message_id"]


def test_subject_line_breaks_and_encoded_newlines_are_flattened(
    mail_sink: MailSink, smtp: SmtpSettings
) -> None:
    """A subject carrying CR/LF or an encoded newline arrives as one line and adds no header."""
    title = "Hi\r\nBcc: evil@example.net =?utf-8?q?x=0ACc:_evil@example.net?="
    _send(_request(PERSON, title=title), smtp)
    [envelope] = mail_sink.envelopes
    assert envelope.rcpt_tos == [PERSON]
    received = message_from_bytes(envelope.original_content or b"", policy=policy.default)
    assert received.get_all("Bcc") is None
    assert received.get_all("Cc") is None
    subject = str(received["Subject"])
    assert "\n" not in subject
    assert "\r" not in subject
    assert subject.startswith("Hi Bcc: evil@example.net")


@pytest.mark.parametrize("recipient", INJECTIONS, ids=[repr(item)[:40] for item in INJECTIONS])
def test_header_injection_corpus_is_refused_and_nothing_is_sent(
    mail_sink: MailSink, smtp: SmtpSettings, recipient: Any
) -> None:
    """Every address in the injection corpus is refused with RecipientError before any SMTP traffic."""
    with pytest.raises(RecipientError):
        _send(_request(recipient), smtp)
    assert mail_sink.envelopes == []


def test_a_sender_outside_the_allowlist_is_refused(mail_sink: MailSink, smtp: SmtpSettings) -> None:
    """An intent cannot pick its own From address: only the configured senders may send."""
    with pytest.raises(HandlerError, match=r"not in smtp\.senders"):
        _send(_request(PERSON, **{"from": "ceo@example.com"}), smtp)
    assert mail_sink.envelopes == []


def test_the_password_comes_from_the_named_variable_and_logs_in(
    mail_sink: MailSink, smtp: SmtpSettings
) -> None:
    """With a username configured, the password is read from the variable named by passwordEnv."""
    armed = SmtpSettings(**{**_fields(smtp), "username": SMTP_USER, "password_env": "MY_SMTP_PW"})
    _send(_request(PERSON), armed, secret={"MY_SMTP_PW": SMTP_PASSWORD}.get)
    assert mail_sink.logins == [(SMTP_USER, SMTP_PASSWORD)]
    assert len(mail_sink.envelopes) == 1


def test_a_wrong_password_fails_without_revealing_it(mail_sink: MailSink, smtp: SmtpSettings) -> None:
    """A failed login raises DeliveryError whose message never contains the password."""
    armed = SmtpSettings(**{**_fields(smtp), "username": SMTP_USER, "password_env": "MY_SMTP_PW"})
    with pytest.raises(DeliveryError) as caught:
        _send(_request(PERSON), armed, secret={"MY_SMTP_PW": "hunter2-wrong"}.get)
    assert "hunter2-wrong" not in str(caught.value)
    assert mail_sink.envelopes == []


def test_a_missing_password_is_refused_even_in_dry_run(mail_sink: MailSink, smtp: SmtpSettings) -> None:
    """A dry run reports a missing SMTP password, so arming the executor does not discover it later."""
    armed = SmtpSettings(**{**_fields(smtp), "username": SMTP_USER, "password_env": "MY_SMTP_PW"})
    with pytest.raises(HandlerError, match="MY_SMTP_PW"):
        _send(_request(PERSON, dry_run=True), armed, secret={}.get)
    assert mail_sink.envelopes == []


def test_plain_smtp_is_refused_for_a_remote_host() -> None:
    """Plain SMTP is only for loopback test servers: a remote host must use STARTTLS or SSL."""
    with pytest.raises(ConfigError, match="unencrypted"):
        SmtpSettings(host="smtp.example.com", security="plain", senders=[SENDER])


def test_the_email_channel_uses_the_same_validated_path(mail_sink: MailSink, smtp: SmtpSettings) -> None:
    """The email notification channel delivers to its one address through the handler's SMTP path."""
    channel = EmailChannel("mail", smtp=smtp, to=PERSON, sender=None, secret={}.get)
    outcome = channel.send("STUCK: no progress\r\nBcc: evil@example.net", "Three ticks without progress.")
    assert outcome.ok, outcome.reason
    [envelope] = mail_sink.envelopes
    assert envelope.rcpt_tos == [PERSON]
    received = message_from_bytes(envelope.original_content or b"", policy=policy.default)
    assert received.get_all("Bcc") is None
    assert str(received["Subject"]) == "STUCK: no progress Bcc: evil@example.net"


def test_the_email_channel_reports_a_bad_address_as_a_failed_result(
    mail_sink: MailSink, smtp: SmtpSettings
) -> None:
    """A channel never raises for a delivery problem: an unsafe address is a failed result with a reason."""
    channel = EmailChannel("mail", smtp=smtp, to="a@example.com, b@example.com", sender=None, secret={}.get)
    outcome = channel.send("subject", "body")
    assert not outcome.ok
    assert "','" in outcome.reason
    assert mail_sink.envelopes == []


def test_the_email_channel_reports_an_unreachable_server(smtp: SmtpSettings) -> None:
    """When the SMTP server is down the channel returns a failed result naming the server."""
    down = SmtpSettings(**{**_fields(smtp), "port": _closed_port()})
    outcome = EmailChannel("mail", smtp=down, to=PERSON, sender=None, secret={}.get).send("s", "b")
    assert not outcome.ok
    assert f"127.0.0.1:{down.port}" in outcome.reason


def test_mail_is_sent_over_verified_tls(tls_sink: tuple[MailSink, SmtpSettings]) -> None:
    """With starttls or ssl the message travels encrypted to a server whose certificate is verified."""
    sink, settings = tls_sink
    _send(_request(PERSON), settings)
    [envelope] = sink.envelopes
    assert envelope.rcpt_tos == [PERSON]


def test_an_untrusted_certificate_stops_the_send(tls_sink: tuple[MailSink, SmtpSettings]) -> None:
    """Without trusting the server's certificate the send fails with DeliveryError and nothing arrives."""
    sink, settings = tls_sink
    untrusting = SmtpSettings(**{**_fields(settings), "ca_file": ""})
    with pytest.raises(DeliveryError, match="CERTIFICATE_VERIFY_FAILED"):
        _send(_request(PERSON), untrusting)
    assert sink.envelopes == []


def _fields(smtp: SmtpSettings) -> dict[str, Any]:
    return {name: getattr(smtp, name) for name in smtp.__struct_fields__}


def _closed_port() -> int:
    import socket  # noqa: PLC0415

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
