"""Safe, injective file names for ids that come from input (session ids, profile names).

Kept apart from the audit ledger so that a one-shot operator tick can name its files without
importing the ledger and the protocol core.
"""

from __future__ import annotations

from tickloop.errors import LedgerError
from tickloop.sha256 import sha256

_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-")
_MAX_ESCAPED = 120


def session_file_name(session_id: str) -> str:
    """A file name for a session id that is safe on every platform and injective.

    Characters other than ASCII letters, digits and ``-`` are escaped as ``_XX`` (hex of each UTF-8
    byte; ``_`` itself too), so no name holds ``/``, ``.``, NUL or a reserved device name (the
    ``session-`` prefix sees to ``CON``). Ids whose escaped form passes 120 characters keep a
    readable prefix and add the full sha256 of the id.
    """
    if not isinstance(session_id, str) or not session_id:
        raise LedgerError("a session id must be a non-empty string")
    try:
        raw = session_id.encode("utf-8")
    except UnicodeEncodeError:
        raise LedgerError(f"session id {session_id!r} is not well-formed Unicode") from None
    escaped = "".join(chr(b) if chr(b) in _SAFE else f"_{b:02X}" for b in raw)
    if len(escaped) > _MAX_ESCAPED:
        escaped = f"{escaped[:64]}~{sha256(raw).hexdigest()}"
    return f"session-{escaped}.jsonl"
