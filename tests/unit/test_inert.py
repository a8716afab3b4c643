"""Untrusted text shown in a terminal is inert: no escape sequence, control or bidi override survives."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tickloop.inert import inert

_FORBIDDEN = {chr(c) for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)]} - {"\n", "\t"}
_BIDI = set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")

#: The hostile corpus: each entry and what must not reach the terminal.
CORPUS = [
    ("osc title", "\x1b]0;pwned\x07report", "report"),
    ("osc title ST", "\x1b]2;pwned\x1b\\report", "report"),
    ("csi clear", "\x1b[2J\x1b[Hreport", "report"),
    ("bell", "ding\x07", "ding\\u0007"),
    (
        "backspace overwrite",
        "rm -rf\x08\x08\x08\x08\x08\x08ls",
        "rm -rf\\u0008\\u0008\\u0008\\u0008\\u0008\\u0008ls",
    ),
    ("rtl override", "invoice\u202egnp.exe", "invoice\\u202egnp.exe"),
    ("fake prompt", "done\r\nyou> /tick 99", "done\\u000d\nyou> /tick 99"),
    ("8-bit csi", "\x9b31mred", "red"),
    ("lone escape", "a\x1b", "a"),
]


@pytest.mark.parametrize(("name", "text", "shown"), CORPUS, ids=[c[0] for c in CORPUS])
def test_corpus_is_shown_inert(name: str, text: str, shown: str) -> None:
    """Each hostile string is shown as harmless text: sequences removed, controls made visible."""
    assert inert(text) == shown


def test_newlines_and_tabs_are_kept_or_escaped_on_request() -> None:
    """Multi-line text keeps its lines; a one-line cell shows them as escapes."""
    assert inert("a\n\tb") == "a\n\tb"
    assert inert("a\n\tb", keep_newlines=False) == "a\\u000a\\u0009b"


def test_clean_text_is_unchanged() -> None:
    """Ordinary text, including non-Latin scripts and emoji, is returned as it is."""
    for text in ["hello", "Grüße aus Köln", "שלום", "日本語", "ok 👍", ""]:
        assert inert(text) == text


@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"])))
def test_no_control_or_bidi_character_survives(text: str) -> None:
    """Whatever the input, the output holds no ESC, no C0/C1 control but newline and tab, no bidi."""
    out = inert(text)
    assert not (set(out) & (_FORBIDDEN | _BIDI))
    assert not (set(inert(text, keep_newlines=False)) & (_FORBIDDEN | _BIDI | {"\n", "\t"}))
