"""The one-address validator and the subject flattener: strict, and never surprised by input."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from tickloop.errors import RecipientError
from tickloop.notify.address import MAX_SUBJECT_LENGTH, clean_subject, validate_recipient
from tickloop.notify.smtp import SmtpSettings, prepare

_DANGEROUS = ("\r", "\n", ",", ";")
_ALPHABET = st.sampled_from(list("person@example.com,;<>\"'()[]\\:=? \r\n\t\x00\u2028\u0085\u200b\u0430"))


def _check(raw: object) -> None:
    try:
        address = validate_recipient(raw)
    except RecipientError:
        return
    assert isinstance(raw, str)
    assert not any(char in raw for char in _DANGEROUS)
    assert not any(char in address for char in _DANGEROUS)
    assert address.count("@") == 1


@given(st.text())
@example("person@example.com\r\nBcc: evil@example.net")
@example("=?utf-8?q?a=0A?=@example.com")
def test_arbitrary_text_is_either_one_clean_address_or_a_recipient_error(raw: str) -> None:
    """Any string validates to one address free of CR, LF, commas and semicolons, or raises RecipientError."""
    _check(raw)


@given(st.text(alphabet=_ALPHABET, max_size=40))
def test_near_miss_addresses_never_validate_with_separators(raw: str) -> None:
    """Strings built from address characters and separators never sneak a separator through."""
    _check(raw)


@given(st.from_type(object))
def test_non_text_is_refused_with_a_recipient_error(raw: object) -> None:
    """A recipient that is not a string is refused with RecipientError, never a TypeError."""
    if not isinstance(raw, str):
        with pytest.raises(RecipientError):
            validate_recipient(raw)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("person@example.com", "person@example.com"),
        ("first.last+tag@sub.example.co.uk", "first.last+tag@sub.example.co.uk"),
        ("Person@EXAMPLE.com", "Person@example.com"),
    ],
)
def test_plain_addresses_validate_and_normalize_the_domain(raw: str, expected: str) -> None:
    """Ordinary addresses pass and come back with the domain lower-cased."""
    assert validate_recipient(raw) == expected


def test_international_domains_are_off_by_default() -> None:
    """An IDN recipient is refused unless allowInternational is set, with a message saying how."""
    with pytest.raises(RecipientError, match="allowInternational"):
        validate_recipient("person@münchen.de")


def test_single_script_idns_pass_when_allowed_and_travel_as_punycode() -> None:
    """With allowInternational a single-script IDN validates to its ASCII (punycode) form."""
    assert validate_recipient("person@münchen.de", allow_international=True) == "person@xn--mnchen-3ya.de"


@pytest.mark.parametrize(
    "raw", ["person@ex\u0430mple.com", "person@xn--exmple-4nf.com", "person@g\u03bfogle.com"]
)
def test_mixed_script_homographs_are_refused_even_when_idns_are_allowed(raw: str) -> None:
    """A domain label mixing Latin with Cyrillic or Greek look-alikes is refused as a homograph."""
    with pytest.raises(RecipientError, match="mixes scripts"):
        validate_recipient(raw, allow_international=True)


def test_errors_name_where_and_escape_line_breaks() -> None:
    """The error names the field and shows the bad value escaped, so it cannot forge a log line."""
    with pytest.raises(RecipientError) as caught:
        validate_recipient("a@example.com\nINJECTED", where="notify channel 'mail': to")
    assert caught.value.message.startswith("notify channel 'mail': to:")
    assert "\n" not in caught.value.message


@given(st.text())
@example("=?utf-8?q?x=0ABcc:_e@x.net?=")
@example("==??")
def test_a_cleaned_subject_is_one_line_without_encoded_words(raw: str) -> None:
    """Whatever the title, the subject is a single line, without '=?', of bounded length."""
    subject = clean_subject(raw)
    assert len(subject.splitlines()) == 1
    assert "=?" not in subject
    assert 0 < len(subject) <= MAX_SUBJECT_LENGTH


_CONTROL = st.characters(categories=["Cc", "Cf"])
_SUBJECT_WITH_CONTROLS = st.lists(st.one_of(_CONTROL, st.characters(categories=["L", "N"])), max_size=60).map(
    "".join
)
_SEEN_CONTROLS = ("\x00", "\x1b", "\u202e", "\u200b", "\ufeff", "\x7f", "\x9b")


def _has_control(text: str) -> bool:
    return any(unicodedata.category(char) in {"Cc", "Cf"} for char in text)


@given(_SUBJECT_WITH_CONTROLS)
@example("Invoice\x00\u202etxt.exe\x1b[2J")
def test_a_cleaned_subject_carries_no_control_or_format_character(raw: str) -> None:
    """NUL, ESC, bidi overrides and other Cc/Cf characters never reach the person's mail client."""
    assert not _has_control(clean_subject(raw))


@pytest.mark.parametrize("char", _SEEN_CONTROLS, ids=lambda c: f"U+{ord(c):04X}")
def test_the_prepared_message_carries_no_control_character_in_its_subject(char: str) -> None:
    """The message prepare() builds for the wire has the control character in neither header nor bytes."""
    smtp = SmtpSettings(host="127.0.0.1", security="plain", senders=["op@example.org"])
    raw = f"Chapter{char}3 {char}[31mdone"
    prepared = prepare(smtp, sender=None, recipient="ada@example.org", subject=raw, body="hello\n")
    assert not _has_control(prepared.subject)
    assert not _has_control(str(prepared.message["Subject"]))
    wire = prepared.message.as_bytes()
    header = wire.split(b"\n\n", 1)[0].split(b"\r\n\r\n", 1)[0]
    assert char.encode("utf-8") not in header
    assert b"Chapter 3" in header
