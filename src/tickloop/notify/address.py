"""One safe email address, and a subject that cannot break out of its header.

The address rules are deliberately stricter than RFC 5322: the operator mails exactly one person at a
time, so anything that could name a second recipient or start a new header is refused outright rather
than parsed. ``email_validator`` (without DNS) then checks the syntax that is left.
"""

from __future__ import annotations

import re
import unicodedata

from tickloop.errors import RecipientError

#: RFC 5321 caps a forward path at 256 octets including the angle brackets.
MAX_ADDRESS_LENGTH = 254
#: a subject longer than this is cut: it is a one-line summary, not a body.
MAX_SUBJECT_LENGTH = 200

#: characters that separate, quote or comment addresses; each could smuggle a second recipient.
_FORBIDDEN = frozenset(',;<>"()[]\\:')
#: scripts that legitimately mix inside one domain label (UTS #39 "highly restrictive" profile).
_MIXABLE = (
    frozenset({"LATIN", "CJK", "HIRAGANA", "KATAKANA"}),
    frozenset({"LATIN", "CJK", "HANGUL"}),
    frozenset({"LATIN", "CJK", "BOPOMOFO"}),
)
#: an RFC 2047 encoded word opener; Python's email package decodes these on assignment.
_ENCODED_WORD = re.compile(r"=\?")


def validate_recipient(raw: object, *, where: str = "recipient", allow_international: bool = False) -> str:
    """Return the normalized address if ``raw`` is exactly one safe address, else raise RecipientError.

    ``allow_international`` permits internationalized domain names (never a mixed-script label, the
    homograph trick); local parts stay ASCII so no SMTPUTF8 server support is assumed.
    """
    text = _precheck(raw, where)
    from email_validator import (  # noqa: PLC0415  (start-up cost: only the mail path pays it)
        EmailNotValidError,
        validate_email,
    )

    try:
        valid = validate_email(
            text,
            check_deliverability=False,
            allow_smtputf8=False,
            allow_quoted_local=False,
            allow_display_name=False,
            allow_domain_literal=False,
            allow_empty_local=False,
            strict=True,  # enforces the 64-octet local-part limit too
        )
    except EmailNotValidError as exc:
        raise RecipientError(f"{where}: {_show(text)} is not a valid address: {exc}") from None
    if valid.domain != valid.ascii_domain:
        if not allow_international:
            raise RecipientError(
                f"{where}: {_show(text)} has an internationalized domain; set allowInternational = true "
                "to permit single-script IDNs"
            )
        _refuse_mixed_scripts(valid.domain, text, where)
    return str(valid.ascii_email)


def _precheck(raw: object, where: str) -> str:
    if not isinstance(raw, str):
        raise RecipientError(f"{where}: expected one address as a string, got {type(raw).__name__}")
    if not raw or len(raw) > MAX_ADDRESS_LENGTH:
        raise RecipientError(f"{where}: an address must be 1 to {MAX_ADDRESS_LENGTH} characters")
    for char in raw:
        if char in _FORBIDDEN or _is_invisible(char):
            raise RecipientError(
                f"{where}: {_show(raw)} contains {_name(char)}; give exactly one bare address"
            )
    if _ENCODED_WORD.search(raw):
        raise RecipientError(f"{where}: {_show(raw)} contains an encoded word ('=?'); give a bare address")
    if raw.count("@") != 1:
        raise RecipientError(f"{where}: {_show(raw)} must contain exactly one '@'")
    return raw


def _is_invisible(char: str) -> bool:
    # Cc/Cf cover CR, LF, NUL, tabs, zero-width joiners and bidi overrides; Z* covers every space.
    return unicodedata.category(char) in {"Cc", "Cf", "Cs", "Co", "Cn", "Zs", "Zl", "Zp"}


def _refuse_mixed_scripts(domain: str, text: str, where: str) -> None:
    for label in domain.split("."):
        scripts = {_script(char) for char in label if char.isalpha()}
        if len(scripts) > 1 and not any(scripts <= allowed for allowed in _MIXABLE):
            raise RecipientError(
                f"{where}: {_show(text)} mixes scripts ({', '.join(sorted(scripts))}) in the domain label "
                f"{label!r}, a homograph of another name"
            )


def _script(char: str) -> str:
    name = unicodedata.name(char, "UNKNOWN")
    return "CJK" if name.startswith("CJK") else name.split(" ", 1)[0]


def _name(char: str) -> str:
    return f"{char!r} (U+{ord(char):04X})"


def _show(text: str) -> str:
    # repr() escapes CR/LF/NUL so an error message can never itself inject a line.
    return repr(text[:80] + ("…" if len(text) > 80 else ""))


def clean_subject(raw: str) -> str:
    """Flatten ``raw`` to one header-safe line: no line breaks, controls or encoded-word openers."""
    flat = "".join(" " if _is_invisible(char) else char for char in raw)
    # "=?" would be decoded by the email package into arbitrary text, CR/LF included.
    flat = _ENCODED_WORD.sub("= ?", flat)
    flat = " ".join(flat.split())
    return flat[:MAX_SUBJECT_LENGTH] or "(no subject)"
