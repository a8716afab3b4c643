"""The one SMTP path: validate, build with ``EmailMessage``, prove one recipient, send with smtplib.

Both the executor's ``email`` handler and the email notification channel go through ``prepare`` and
``deliver``; there is no second way to put mail on the wire.

TOML (``[smtp]``)::

    host = "smtp.example.com"
    port = 587
    security = "starttls"              # starttls | ssl | plain (plain: loopback hosts only)
    username = "operator@example.com"  # empty: no login
    passwordEnv = "TICKLOOP_SMTP_PASSWORD"
    timeoutS = 30
    caFile = ""                        # PEM CA bundle for a private relay; empty: the system store
    senders = ["operator@example.com"] # the fixed sender allowlist
    allowInternational = false         # permit single-script IDN recipient domains
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal, NamedTuple

import msgspec

from tickloop.errors import ConfigError, DeliveryError, HandlerError, RecipientError
from tickloop.notify.address import clean_subject, validate_recipient
from tickloop.system import is_loopback_host

if TYPE_CHECKING:  # smtplib, ssl and email cost more than a bare interpreter: only a send imports them
    import smtplib
    from email.message import EmailMessage

_STRUCT = {"frozen": True, "forbid_unknown_fields": True, "rename": "camel", "kw_only": True}

#: A secret lookup: variable name -> value from the environment or the env file (``config.secret``).
SecretLookup = Callable[[str], str | None]
#: headers that name recipients; the built message must carry exactly one of them, with one address.
_RECIPIENT_HEADERS = ("To", "Cc", "Bcc", "Resent-To", "Resent-Cc", "Resent-Bcc")
#: largest body the operator sends (a notification or a short email, never an attachment dump).
MAX_BODY_CHARS = 100_000


class SmtpSettings(msgspec.Struct, **_STRUCT):
    """How mail leaves the machine."""

    #: SMTP server host name; empty: email is not configured
    host: str = ""
    #: 587 for STARTTLS, 465 for SSL, 25 for plain
    port: Annotated[int, msgspec.Meta(ge=1, le=65535)] = 587
    #: ``starttls`` or ``ssl``; ``plain`` is refused unless the host is a loopback address
    security: Literal["starttls", "ssl", "plain"] = "starttls"
    #: login name; empty: no AUTH
    username: str = ""
    #: the environment (or env file) variable holding the password; never the password itself
    password_env: str = "TICKLOOP_SMTP_PASSWORD"  # noqa: S105  (a variable name, not a password)
    #: a PEM file of CA certificates to trust instead of the system store (a private relay); empty: system
    ca_file: str = ""
    #: seconds for connect and each command
    timeout_s: Annotated[float, msgspec.Meta(gt=0, le=600)] = 30.0
    #: the fixed allowlist of sender addresses
    senders: list[str] = msgspec.field(default_factory=list)
    #: permit internationalized (single-script) recipient domains
    allow_international: bool = False

    def __post_init__(self) -> None:
        if self.security == "plain" and self.host and not is_loopback_host(self.host):
            raise ConfigError(
                f"smtp.security: plain SMTP to {self.host!r} would send mail (and any password) "
                "unencrypted; use starttls or ssl (plain is for loopback test servers only)"
            )
        if self.password_env and not self.password_env.isidentifier():
            raise ConfigError(f"smtp.passwordEnv: {self.password_env!r} is not an environment variable name")
        for index, sender in enumerate(self.senders):
            try:
                validate_recipient(sender, where=f"smtp.senders[{index}]")
            except RecipientError as exc:
                raise ConfigError(exc.message) from None


def parse_smtp_settings(data: object) -> SmtpSettings:
    """Validate an ``[smtp]`` table; errors name the field (``$.port``)."""
    try:
        return msgspec.convert(data, SmtpSettings, strict=False)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"invalid [smtp] settings: {exc}") from None


class PreparedMail(NamedTuple):
    """A message that passed every check and is ready for ``deliver``."""

    sender: str
    recipient: str
    subject: str
    message: EmailMessage

    def describe(self, smtp: SmtpSettings) -> str:
        """The call, on one line, without the body or any secret."""
        return (
            f"smtp.send_message(host={smtp.host!r}, port={smtp.port}, security={smtp.security!r}, "
            f"from={self.sender!r}, to=[{self.recipient!r}], subject={self.subject!r})"
        )


def prepare(
    smtp: SmtpSettings, *, sender: str | None, recipient: object, subject: str, body: str
) -> PreparedMail:
    """Validate every part and build the message; raises HandlerError (RecipientError) and sends nothing."""
    if not smtp.host:
        raise HandlerError("smtp.host is empty: configure [smtp] before sending email")
    address = validate_recipient(recipient, allow_international=smtp.allow_international)
    from_addr = _allowed_sender(smtp, sender)
    _check_body(body)
    from email import policy  # noqa: PLC0415  (only when a mail is built)
    from email.message import EmailMessage  # noqa: PLC0415
    from email.utils import make_msgid  # noqa: PLC0415

    message = EmailMessage(policy=policy.SMTP)
    message["From"] = from_addr
    message["To"] = address
    message["Subject"] = clean_subject(subject)
    message["Message-ID"] = make_msgid(domain=from_addr.rpartition("@")[2])
    message.set_content(body)
    _prove_one_recipient(message, address, str(message["Subject"]))
    return PreparedMail(from_addr, address, str(message["Subject"]), message)


def _check_body(body: object) -> None:
    if not isinstance(body, str) or len(body) > MAX_BODY_CHARS:
        raise HandlerError(f"email body must be text of at most {MAX_BODY_CHARS} characters")
    try:
        body.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate, e.g. from a model's JSON escape
        raise HandlerError(f"email body is not valid Unicode at character {exc.start}") from None


def _allowed_sender(smtp: SmtpSettings, sender: str | None) -> str:
    if not smtp.senders:
        raise HandlerError("smtp.senders is empty: list the sender addresses the operator may use")
    if sender is None:
        return validate_recipient(smtp.senders[0], where="smtp.senders[0]")
    chosen = validate_recipient(sender, where="sender")
    allowed = {validate_recipient(s, where="smtp.senders") for s in smtp.senders}
    if chosen not in allowed:
        raise HandlerError(f"sender {chosen!r} is not in smtp.senders; the allowlist is fixed in config")
    return chosen


def _prove_one_recipient(message: EmailMessage, address: str, subject: str) -> None:
    from email import policy  # noqa: PLC0415
    from email.parser import BytesParser  # noqa: PLC0415
    from email.utils import getaddresses  # noqa: PLC0415

    # Re-parse the exact bytes that would go on the wire: what a server sees is what we check.
    parsed = BytesParser(policy=policy.default).parsebytes(message.as_bytes())
    headers = [(name, value) for name in _RECIPIENT_HEADERS for value in parsed.get_all(name, [])]
    addresses = getaddresses([str(value) for _, value in headers])
    if len(headers) != 1 or headers[0][0] != "To" or [a for _, a in addresses] != [address]:
        raise RecipientError(
            f"the built message does not carry exactly one recipient ({address!r}); not sent"
        )
    if str(parsed["Subject"]) != subject:
        raise HandlerError("the subject did not survive serialization unchanged; not sent")


def deliver(smtp: SmtpSettings, mail: PreparedMail, secret: SecretLookup) -> str:
    """Send ``mail``; return its Message-ID. Raises DeliveryError (never with the password in it)."""
    import smtplib  # noqa: PLC0415  (only when a mail is sent)

    password = check_credentials(smtp, secret)
    try:
        with _connect(smtp) as client:
            if smtp.username:
                client.login(smtp.username, password or "")
            refused = client.send_message(mail.message, from_addr=mail.sender, to_addrs=[mail.recipient])
    except (smtplib.SMTPException, OSError) as exc:
        raise DeliveryError(
            f"SMTP delivery to {mail.recipient!r} via {smtp.host}:{smtp.port} failed: {_why(exc)}"
        ) from None
    if refused:
        raise DeliveryError(f"SMTP server refused {mail.recipient!r}: {refused}")
    return str(mail.message["Message-ID"])


def check_credentials(smtp: SmtpSettings, secret: SecretLookup) -> str | None:
    """The SMTP password if a login is configured (None if not); refuses when it is missing."""
    if not smtp.username:
        return None
    value = secret(smtp.password_env)
    if value is None:
        raise HandlerError(
            f"smtp.username is set but {smtp.password_env} is not in the environment or the env file"
        )
    return value


def _connect(smtp: SmtpSettings) -> smtplib.SMTP:
    import smtplib  # noqa: PLC0415
    import ssl  # noqa: PLC0415

    # Certificates and host names are always verified; ca_file only changes whom we trust.
    context = ssl.create_default_context(
        cafile=str(Path(smtp.ca_file).expanduser()) if smtp.ca_file else None
    )
    if smtp.security == "ssl":
        return smtplib.SMTP_SSL(smtp.host, smtp.port, timeout=smtp.timeout_s, context=context)
    client = smtplib.SMTP(smtp.host, smtp.port, timeout=smtp.timeout_s)
    if smtp.security == "starttls":
        try:
            client.starttls(context=context)
        except BaseException:
            client.close()
            raise
    return client


def _why(exc: BaseException) -> str:
    # smtplib errors carry the server's reply, never our password; keep them on one line.
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
