"""Untrusted text made safe to store: valid Unicode, no control characters, bounded length.

Everything here is pure. Hostile input (CR/LF header injection, lone surrogates from undecodable
bytes, a megabyte of HTML) comes out as plain, bounded, JSON-safe text; it is never interpreted.
"""

from __future__ import annotations

import re

#: marks text that was cut at its bound
ELLIPSIS = "…"

# Pattern strings, not compiled patterns: re compiles each on first use and caches it, so a tick whose
# sources never see outside text (or an empty profile's) does not pay for eight compilations.
_LINE_CONTROLS = r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+"
_BODY_CONTROLS = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029]"
_SPACES = r"[ \t\u00a0]+"
_BLANK_LINES = r"\n{3,}"
_DROP_BLOCKS = r"(?is)<(script|style|head)\b.*?(?:</\1\s*>|\Z)"
_BREAKS = r"(?i)<\s*(?:br|/p|/div|/li|/tr|/h[1-6]|p|div|li|tr)\b[^>]*>"
_TAGS = r"<[^>]*(?:>|\Z)"
_COMMENTS = r"(?s)<!--.*?(?:-->|\Z)"


def valid_unicode(text: str) -> str:
    """``text`` with lone surrogates (from undecodable bytes) replaced, so it always encodes as UTF-8."""
    return text.encode("utf-8", "replace").decode("utf-8")


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, ending in an ellipsis when it was cut."""
    if len(text) <= limit:
        return text
    return text[: max(0, limit - 1)].rstrip() + ELLIPSIS


def one_line(text: str, limit: int = 500) -> str:
    """A header-like value: one line, no control characters, whitespace collapsed, bounded.

    CR and LF become spaces, so a header value can never smuggle in another header.
    """
    flat = re.sub(_LINE_CONTROLS, " ", valid_unicode(text))
    return clip(re.sub(_SPACES, " ", flat).strip(), limit)


def body_text(text: str, limit: int) -> str:
    """A bounded multi-line excerpt: newlines kept, other control characters dropped."""
    text = valid_unicode(text).replace("\r\n", "\n").replace("\r", "\n")
    text = re.sub(_BODY_CONTROLS, "", text)
    lines = (re.sub(_SPACES, " ", line).strip() for line in text.split("\n"))
    return clip(re.sub(_BLANK_LINES, "\n\n", "\n".join(lines)).strip(), limit)


def strip_html(markup: str) -> str:
    """Crude HTML to text: drop scripts, styles and comments, break on blocks, unescape entities.

    Good enough for an excerpt a model reads; it is not a renderer and never executes anything.
    """
    import html  # noqa: PLC0415  (start-up cost: only an HTML-only mail pays for the entity table)

    text = re.sub(_COMMENTS, " ", markup)
    text = re.sub(_DROP_BLOCKS, " ", text)
    text = re.sub(_BREAKS, "\n", text)
    return html.unescape(re.sub(_TAGS, " ", text))
