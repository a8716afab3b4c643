"""The drift guard: never re-grind an action that already failed.

An action is normalised to ``type|title|recipient`` (Unicode NFKC, case-folded, whitespace
collapsed) and compared with the tried-and-failed list. Only an exact-ish repeat is suppressed, so a
genuinely new action (another title word, another recipient) is never blocked. A recovery retry that
the kernel sanctioned is exempt.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable


def normalise(action_type: str, title: str, recipient: str = "") -> str:
    """The comparison key of an action. ``|`` and backslash inside a part are escaped, so two
    different actions never share a key (a false repeat would suppress a genuinely new action)."""
    return "|".join(_part(part) for part in (action_type, title, recipient))


def _part(text: str) -> str:
    folded = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    return folded.replace("\\", "\\\\").replace("|", "\\|")


def is_repeat(key: str, tried_and_failed: Iterable[str], *, sanctioned_retry: bool = False) -> bool:
    """True if ``key`` repeats a failed action (and the kernel did not sanction a retry)."""
    return not sanctioned_retry and key in set(tried_and_failed)
