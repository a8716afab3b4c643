"""The JSONL ledger on disk: durable appends, safe file names, a torn-line tolerant reader."""

from tickloop.audit.ledger import (
    DEFAULT_MAX_RECORD_BYTES,
    LedgerFile,
    LedgerRead,
    LineReader,
    audit_key,
    open_session_ledger,
    read_ledger,
    seal_file,
    verify_file,
)
from tickloop.filenames import session_file_name

__all__ = [
    "DEFAULT_MAX_RECORD_BYTES",
    "LedgerFile",
    "LedgerRead",
    "LineReader",
    "audit_key",
    "open_session_ledger",
    "read_ledger",
    "seal_file",
    "session_file_name",
    "verify_file",
]
