"""Untrusted text made inert for a terminal: what a person sees is the text, never a command to it.

Task and intent titles, payloads, mail subjects, model output and tool output all reach the
terminal through :func:`inert`. It removes whole escape sequences (CSI ``ESC [ ... final``, OSC
``ESC ] ... BEL|ST``, DCS/SOS/PM/APC strings, two-byte ``ESC x``), then shows every remaining C0/C1
control character and every bidi override or isolate as a visible ``\\u`` escape, so a window-title
change, a screen clear, a bell, a backspace overwrite, a right-to-left override or a carriage
return that fakes a ``you>`` line is shown as harmless text. Newline and tab are kept where they
mean something (``keep_newlines``); with ``keep_newlines=False`` (a table cell, a one-line header)
they are escaped too.

Pure and cheap: one regex pass for sequences, one for characters. The regexes are compiled the
first time a text needs them (clean text never does), so a one-shot tick does not pay for them.
"""

from __future__ import annotations

import functools
import re

#: A whole escape sequence, 7-bit or 8-bit: CSI, OSC/DCS/SOS/PM/APC strings (ended by BEL or ST,
#: or by the end of the text), and two-character ESC sequences.
_SEQUENCE = r"""
    (?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?          # CSI ... final byte
  | (?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f]).*?(?:\x07|\x1b\\|\x9c|$)  # OSC, DCS, SOS, PM, APC strings
  | \x1b[\x20-\x2f]*[\x30-\x7e]?                                 # ESC x (and a lone ESC)
    """
#: Bidi embeddings, overrides and isolates, and the marks that can reorder a line.
_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_CONTROLS = "".join(chr(c) for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)])


@functools.cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """The sequence pattern, then the unsafe characters with and without newline and tab."""
    keep_lines = _CONTROLS.replace(chr(10), "").replace(chr(9), "")
    return (
        re.compile(_SEQUENCE, re.VERBOSE | re.DOTALL),
        re.compile(f"[{re.escape(_CONTROLS + _BIDI)}]"),
        re.compile(f"[{re.escape(keep_lines + _BIDI)}]"),
    )


def _visible(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def inert(text: str, *, keep_newlines: bool = True) -> str:
    """``text`` with escape sequences removed and other control or bidi characters made visible."""
    if text.isprintable() and (keep_newlines or ("\n" not in text and "\t" not in text)):
        # str.isprintable() is False for every C0/C1 control and for the bidi formatting characters
        # (category Cf), so clean text (the common case) costs one C-level scan.
        return text
    sequence, any_unsafe, unsafe_keep_lines = _patterns()
    text = sequence.sub("", text)
    return (unsafe_keep_lines if keep_newlines else any_unsafe).sub(_visible, text)
