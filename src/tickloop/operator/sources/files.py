"""Watched directories: files created, changed (size or modification time) and deleted.

Only metadata is read, never content. Symlinks are skipped, never followed, so nothing outside the
root is observed. A tree with more than ``maxFiles`` files is refused with an error instead of being
half-watched (a partial snapshot would report files beyond the cut as deleted).

Cursor: ``{"files": {"relative/path": [mtime_ns, size], ...}}``.
"""

from __future__ import annotations

import os
import stat
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tickloop.errors import SourceError
from tickloop.operator.sources.ids import files_id
from tickloop.operator.sources.observation import Observation
from tickloop.operator.sources.settings import FilesSource

Snapshot = dict[str, list[int]]


def observe(
    settings: FilesSource, cursor: dict[str, Any] | None
) -> tuple[list[Observation], dict[str, Any], list[str]]:
    """Changes since ``cursor`` (a first run records a ``file.baseline``) and the new cursor."""
    root = Path(settings.path).expanduser()
    now_files = snapshot(root, settings.max_files, include_hidden=settings.include_hidden)
    src = files_id(settings)
    if cursor is None:
        return [Observation(src, "file.baseline", {"count": len(now_files)})], {"files": now_files}, []
    before = cursor.get("files")
    found = _diff(src, before if isinstance(before, dict) else {}, now_files)
    if len(found) > settings.max_changes:
        more = Observation(src, "file.more", {"count": len(found) - settings.max_changes})
        found = [*found[: settings.max_changes], more]
    return found, {"files": now_files}, []


def _diff(src: str, before: Snapshot, after: Snapshot) -> list[Observation]:
    found: list[Observation] = []
    for path in sorted(before.keys() | after.keys()):
        old, new = before.get(path), after.get(path)
        if old is None and new is not None:
            found.append(Observation(src, "file.created", _payload(path, new)))
        elif new is None:
            found.append(Observation(src, "file.deleted", {"path": path}))
        elif list(old or []) != new:
            found.append(Observation(src, "file.changed", _payload(path, new)))
    return found


def _payload(path: str, meta: list[int]) -> dict[str, Any]:
    mtime = datetime.fromtimestamp(meta[0] / 1e9, tz=UTC)
    return {"path": path, "size": meta[1], "modified": mtime.isoformat(timespec="seconds")}


def snapshot(root: Path, max_files: int, *, include_hidden: bool = False) -> Snapshot:
    """``relative path -> [mtime_ns, size]`` for every regular file under ``root``, symlinks skipped."""
    if not root.is_dir():
        raise SourceError(f"files: {root} is not a directory; check the path in [[sources.files]]")
    found: Snapshot = {}
    pending = [root]
    while pending:
        directory = pending.pop()
        for entry in _entries(directory, strict=directory == root):
            if not include_hidden and entry.name.startswith("."):
                continue
            info = _lstat(entry)
            if info is None:
                continue
            if stat.S_ISDIR(info.st_mode):
                pending.append(Path(entry.path))
            elif stat.S_ISREG(info.st_mode):
                found[_relative(root, entry.path)] = [info.st_mtime_ns, info.st_size]
                if len(found) > max_files:
                    raise SourceError(
                        f"files: {root} holds more than {max_files} files; raise maxFiles or watch a "
                        "narrower directory"
                    )
    return found


def _entries(directory: Path, *, strict: bool) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as listing:
            return list(listing)
    except OSError as exc:
        if strict:
            raise SourceError(f"files: cannot list {directory}: {exc.strerror}") from None
        return []  # an unreadable or vanished subdirectory is not a broken source


def _lstat(entry: os.DirEntry[str]) -> os.stat_result | None:
    try:
        return entry.stat(follow_symlinks=False)
    except OSError:
        return None  # deleted between listing and stat: the next run reports it


def _relative(root: Path, path: str) -> str:
    """The path below ``root`` as valid text (undecodable bytes shown as ``\\xNN``, still unique)."""
    raw = os.fsencode(os.path.relpath(path, root))
    return raw.decode("utf-8", "backslashreplace")
