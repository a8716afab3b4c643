"""Write-if-absent files with names we derive, never names we are given."""

from __future__ import annotations

import json
import os
import re
import unicodedata
from datetime import datetime
from pathlib import Path

from tickloop.errors import DeliveryError, HandlerError

#: notes and drafts are the person's private material.
FILE_MODE = 0o600
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_SLUG_MAX = 48


def slug(title: str) -> str:
    """Lower-case ASCII words joined by ``-`` (at most 48 characters); ``untitled`` if nothing is left."""
    ascii_text = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii")
    words = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    if len(words) > _SLUG_MAX:
        # Cut at a word boundary when there is one, so the name still reads as words.
        cut = words[: _SLUG_MAX + 1]
        words = cut.rsplit("-", 1)[0] if "-" in cut else words[:_SLUG_MAX]
    return words or "untitled"


def file_name(prefix: str, now: datetime, intent_id: int, title: str) -> str:
    """``note-2026-07-07-44-buy-milk.md``: date, intent id and slug, so names never collide by accident."""
    if now.tzinfo is None:
        raise HandlerError(f"intent {intent_id}: request.now must be timezone-aware")
    if isinstance(intent_id, bool) or not isinstance(intent_id, int) or intent_id < 0:
        raise HandlerError(f"intent id must be a non-negative integer, got {intent_id!r}")
    return f"{prefix}-{now.date().isoformat()}-{intent_id}-{slug(title)}.md"


def check_absent(directory: Path, name: str) -> Path:
    """The target path; refuses if it exists (or is a dangling symlink): we never overwrite."""
    path = directory / name
    if os.path.lexists(path):
        raise HandlerError(f"{path} already exists; notes and drafts are write-if-absent, never overwritten")
    return path


def create_exclusive(directory: Path, name: str, content: str) -> Path:
    """Create ``directory/name`` with O_CREAT|O_EXCL|O_NOFOLLOW, write, fsync. Never overwrites."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        try:
            fd = os.open(name, _CREATE, FILE_MODE, dir_fd=dir_fd)
        except FileExistsError:
            raise HandlerError(
                f"{directory / name} already exists; notes and drafts are write-if-absent, never overwritten"
            ) from None
        _write_all(fd, content.encode("utf-8"), directory / name, dir_fd, name)
    finally:
        os.close(dir_fd)
    return directory / name


def _write_all(fd: int, data: bytes, path: Path, dir_fd: int, name: str) -> None:
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except OSError as exc:
        # A half-written note is worse than none: remove what we created, then report.
        os.unlink(name, dir_fd=dir_fd)
        raise DeliveryError(f"writing {path} failed: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def files_write_args(path: Path, content: str) -> str:
    """The arguments of the files_write call, as compact JSON with the content shortened."""
    shown = content if len(content) <= 40 else content[:39] + "…"
    return json.dumps({"path": str(path), "content": shown, "mode": "create"}, ensure_ascii=False)
