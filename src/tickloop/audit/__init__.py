"""The JSONL ledger on disk: durable appends, safe file names, a torn-line tolerant reader."""

from tickloop.audit.ledger import (
    LedgerFile,
    LedgerRead,
    open_session_ledger,
    read_ledger,
    verify_file,
)
from tickloop.filenames import session_file_name

__all__ = [
    "LedgerFile",
    "LedgerRead",
    "open_session_ledger",
    "read_ledger",
    "session_file_name",
    "verify_file",
]
