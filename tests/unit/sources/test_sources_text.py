"""Untrusted text normalisation and mail payloads: hostile headers and bodies stay bounded data."""

from __future__ import annotations

import json
import re
from email.message import EmailMessage

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tickloop.operator.sources import Observation
from tickloop.operator.sources.mail import message_payload
from tickloop.operator.sources.text import body_text, clip, one_line, strip_html

_CONTROL = "\r\n\x00\x0b\x0c\x1b\x7f\x85\u2028\u2029"


@given(st.text(), st.integers(min_value=1, max_value=600))
def test_one_line_is_always_a_single_bounded_line_of_valid_text(text: str, limit: int) -> None:
    """Whatever a header holds, the stored value is one line, within its bound, and valid UTF-8."""
    line = one_line(text, limit)
    assert len(line) <= limit
    assert not any(ch in line for ch in _CONTROL)
    line.encode("utf-8")
    assert line == line.strip()


@given(st.text(alphabet=st.characters(blacklist_categories=["Cs", "Cc", "Zl", "Zp", "Zs"]) | st.just(" ")))
def test_one_line_keeps_ordinary_text(text: str) -> None:
    """Printable text survives normalisation apart from runs of spaces being collapsed."""
    assert one_line(text, 10_000) == re.sub(" +", " ", text).strip()


@given(st.text(), st.integers(min_value=1, max_value=5_000))
def test_body_text_is_bounded_and_keeps_no_carriage_returns(text: str, limit: int) -> None:
    """A body excerpt never exceeds its bound and carries only newlines and tabs as control characters."""
    body = body_text(text, limit)
    assert len(body) <= limit
    assert "\r" not in body
    assert all(ch in "\n\t" or ch >= " " for ch in body)
    body.encode("utf-8")


def test_header_injection_is_flattened() -> None:
    """A header value with CR/LF cannot smuggle in a second header."""
    assert one_line("Hello\r\nBcc: victim@example.org") == "Hello Bcc: victim@example.org"


def test_clip_marks_what_it_cut() -> None:
    """A cut value ends with an ellipsis so a reader knows it is partial."""
    assert clip("abcdef", 4) == "abc…"
    assert clip("abc", 4) == "abc"


def test_strip_html_drops_scripts_styles_and_tags() -> None:
    """HTML-only mail reads as its text: no markup, no script bodies, entities decoded."""
    html = "<html><head><style>p{}</style></head><body><p>Hi&nbsp;&amp; bye</p><script>evil()</script>"
    text = body_text(strip_html(html), 100)
    assert text == "Hi & bye"


def mail(**headers: str) -> bytes:
    msg = EmailMessage()
    for name, value in headers.items():
        msg[name.replace("_", "-")] = value
    msg.set_content("Hello")
    return bytes(msg)


def test_encoded_words_and_unknown_charsets_are_decoded_safely() -> None:
    """RFC 2047 subjects decode, and a made-up charset gives the raw text instead of an error."""
    raw = (
        b"From: =?utf-8?q?Zo=C3=AB?= <zoe@example.org>\r\n"
        b"Subject: =?x-unknown-42?q?Gr=FC=DFe?=\r\n"
        b"To: =?iso-8859-1?q?J=FCrgen?= <j@example.org>\r\n\r\nbody\r\n"
    )
    payload = message_payload(raw, 2_000)
    assert payload["from"] == "Zoë <zoe@example.org>"
    assert payload["to"] == "Jürgen <j@example.org>"
    assert "Gr" in payload["subject"]


def test_raw_eight_bit_headers_and_bodies_do_not_crash() -> None:
    """Undeclared 8-bit bytes in headers and body become replacement characters, not exceptions."""
    raw = (
        b"Subject: caf\xe9 \xff\xfe\r\nContent-Type: text/plain; charset=bogus\r\n\r\nna\xefve \xff body\r\n"
    )
    payload = message_payload(raw, 2_000)
    json.dumps(payload, ensure_ascii=False).encode("utf-8")
    assert payload["subject"].startswith("caf")
    assert "body" in payload["excerpt"]


@pytest.mark.parametrize("charset", ["base64", "rot13", "zlib", "x-no-such-charset", "utf-7"])
def test_a_codec_that_is_not_a_text_charset_still_gives_an_excerpt(charset: str) -> None:
    """A Content-Type naming a byte codec or an invented charset falls back to UTF-8 text."""
    raw = f"Subject: x\r\nContent-Type: text/plain; charset={charset}\r\n\r\nplain words\r\n".encode()
    assert message_payload(raw, 2_000)["excerpt"] == "plain words"


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=4_000))
def test_arbitrary_bytes_as_a_message_give_a_bounded_json_payload(raw: bytes) -> None:
    """Any byte string parses to a payload that is valid, bounded JSON (no exception escapes)."""
    payload = message_payload(raw, 500)
    Observation("mail:maildir:x", "mail.new", payload)
    assert len(payload["excerpt"]) <= 500
    assert all(len(payload[k]) <= 500 for k in ("from", "to", "cc", "subject", "date", "messageId"))


header_values = st.lists(
    st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=20)
    | st.sampled_from(["\r\n", "\n", "\r\nBcc: x@y", "=?utf-8?q?", "=?bogus?b?", "?=", "\t"]),
    max_size=15,
).map("".join)


@settings(max_examples=150, deadline=None)
@given(header_values, header_values)
def test_any_subject_and_sender_stay_single_line_after_a_round_trip(subject: str, sender: str) -> None:
    """Whatever a sender puts in From and Subject is stored as one line each, never as extra headers."""
    raw = (
        b"From: " + sender.encode("utf-8", "replace") + b"\r\nSubject: " + subject.encode("utf-8", "replace")
    )
    payload = message_payload(raw + b"\r\n\r\nbody", 100)
    for key in ("from", "subject"):
        assert "\n" not in payload[key]
        assert "\r" not in payload[key]


@pytest.mark.parametrize("limit", [100, 2_000])
def test_the_excerpt_is_cut_at_the_configured_length_and_says_so(limit: int) -> None:
    """A long body is cut to excerptChars and flagged as truncated."""
    msg = EmailMessage()
    msg["Subject"] = "long"
    msg.set_content("word " * 5_000)
    payload = message_payload(bytes(msg), limit)
    assert len(payload["excerpt"]) == limit
    assert payload["excerptTruncated"] is True


def test_a_worst_case_message_still_fits_in_one_observation() -> None:
    """Four-byte characters in every header, many attachments and the largest excerpt stay within bounds."""
    wide = "\U0001f600" * 5_000
    headers = "".join(f"{name}: {wide}\r\n" for name in ("From", "To", "Cc", "Subject", "Date", "Message-ID"))
    parts = "".join(
        f'--b\r\nContent-Disposition: attachment; filename="{n}{wide}"\r\n\r\nx\r\n' for n in range(30)
    )
    raw = (
        f"{headers}Content-Type: multipart/mixed; boundary=b\r\n\r\n"
        f"--b\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{wide * 2}\r\n{parts}--b--\r\n"
    )
    payload = message_payload(raw.encode("utf-8"), 8_000)
    assert len(payload["attachments"]) == 20
    assert len(payload["excerpt"]) == 8_000
    Observation("mail:maildir:x", "mail.new", {"key": wide[:200], **payload})
