"""The email channel: the executor's validated SMTP path (``tickloop.notify.smtp``), pointed at the person."""

from __future__ import annotations

from tickloop.errors import DeliveryError, HandlerError
from tickloop.notify.base import DeliveryResult, one_line
from tickloop.notify.smtp import SecretLookup, SmtpSettings, deliver, prepare


class EmailChannel:
    """Mails each notification to one validated address from an allowlisted sender."""

    def __init__(
        self, name: str = "email", *, smtp: SmtpSettings, to: str, sender: str | None, secret: SecretLookup
    ) -> None:
        self._name = name
        self._smtp = smtp
        self._to = to
        self._sender = sender
        self._secret = secret

    @property
    def name(self) -> str:
        return self._name

    def describe(self) -> str:
        return f"email:{self._to}"

    def send(self, subject: str, body: str) -> DeliveryResult:
        try:
            mail = prepare(self._smtp, sender=self._sender, recipient=self._to, subject=subject, body=body)
            message_id = deliver(self._smtp, mail, self._secret)
        except (HandlerError, DeliveryError) as exc:
            return DeliveryResult(self._name, ok=False, reason=one_line(exc.message))
        return DeliveryResult(self._name, ok=True, detail=message_id)
