"""The built-in workspace toolset: list, read, search, create and note files in one directory.

Every path goes through the operator's workspace jail (``tickloop.operator.handlers.jail``): relative,
no ``..``, portable names only (no unicode look-alikes of ``.`` or ``/``), and it must resolve,
symlinks followed, inside the workspace. Files are opened with ``O_NOFOLLOW`` after that check, so a
symlink swapped in between is refused rather than followed. Reads, writes, listings and searches are
capped. There is no shell and no way to run anything.
"""

from __future__ import annotations

import asyncio
import errno
import os
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tickloop.errors import JailError
from tickloop.harness.tools.base import FunctionTool, Tool, ToolError
from tickloop.models.base import ToolSpec
from tickloop.operator.handlers.jail import resolve_in_jail

#: below the default result cap ([tools] maxResultChars), so a whole read reaches the model
MAX_READ_BYTES = 12 * 1024
MAX_WRITE_BYTES = 256 * 1024
MAX_NOTE_BYTES = 4 * 1024
MAX_LIST_ENTRIES = 500
MAX_MATCHES = 50
MAX_SEARCH_FILE_BYTES = 1024 * 1024
MAX_SEARCH_FILES = 2000
NOTES_FILE = "NOTES.md"


@dataclass(frozen=True, slots=True)
class WorkspaceOptions:
    """Where the workspace is and whether ``write_file`` may replace an existing file."""

    root: Path
    overwrite: bool = False


def _path_arg(name: str, description: str) -> dict[str, Any]:
    return {"type": "string", "description": description, "maxLength": 1024, "title": name}


def _schema(properties: dict[str, Any], required: Sequence[str]) -> dict[str, Any]:
    schema = {"type": "object", "properties": properties, "required": list(required)}
    return {**schema, "additionalProperties": False}


def _list_dir_spec() -> ToolSpec:
    props = {"path": _path_arg("path", "directory, relative to the workspace root")}
    doc = "List the entries of a directory in the workspace (default: its root)."
    return ToolSpec("list_dir", doc, _schema(props, ()))


def _read_file_spec() -> ToolSpec:
    props = {"path": _path_arg("path", "file, relative to the workspace root")}
    doc = f"Read a text file in the workspace (at most {MAX_READ_BYTES} bytes are returned)."
    return ToolSpec("read_file", doc, _schema(props, ("path",)))


def _search_files_spec() -> ToolSpec:
    props = {
        "text": {"type": "string", "minLength": 1, "maxLength": 200},
        "path": _path_arg("path", "directory to search, relative to the workspace root"),
    }
    doc = f"Find lines containing a text in the workspace's files (at most {MAX_MATCHES} matches)."
    return ToolSpec("search_files", doc, _schema(props, ("text",)))


def _write_file_spec(*, overwrite: bool) -> ToolSpec:
    props = {"path": _path_arg("path", "file, relative to the workspace root"), "content": {"type": "string"}}
    rule = "replaces an existing file" if overwrite else "refuses to replace an existing file"
    return ToolSpec(
        "write_file", f"Create a text file in the workspace; {rule}.", _schema(props, ("path", "content"))
    )


def _append_note_spec() -> ToolSpec:
    props = {"text": {"type": "string", "minLength": 1, "maxLength": MAX_NOTE_BYTES}}
    doc = f"Append a note (one paragraph) to {NOTES_FILE} in the workspace."
    return ToolSpec("append_note", doc, _schema(props, ("text",)))


class WorkspaceTools:
    """The workspace toolset as a ``ToolProvider``."""

    name = "workspace"

    def __init__(self, options: WorkspaceOptions) -> None:
        root = Path(os.path.realpath(options.root))
        if not root.is_dir():
            raise ToolError(f"[tools.workspace] root: {root} is not a directory")
        self.root = root
        self.overwrite = options.overwrite
        self._tools = self._build()

    def tools(self) -> Sequence[Tool]:
        return self._tools

    async def start(self, notice: Callable[[str], None]) -> None:
        """Nothing to start."""

    async def aclose(self) -> None:
        """Nothing to close."""

    # -- the tools ---------------------------------------------------------------------------------

    def _build(self) -> list[Tool]:
        specs = [
            (_list_dir_spec(), self.list_dir),
            (_read_file_spec(), self.read_file),
            (_search_files_spec(), self.search_files),
            (_write_file_spec(overwrite=self.overwrite), self.write_file),
            (_append_note_spec(), self.append_note),
        ]
        return [FunctionTool(spec, _threaded(function)) for spec, function in specs]

    def _resolve(self, raw: object, where: str) -> Path:
        if raw in (None, "", "."):
            return self.root
        try:
            return resolve_in_jail(self.root, raw, where=where)
        except JailError as exc:
            raise ToolError(str(exc)) from None

    def _relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix() or "."

    def list_dir(self, args: Mapping[str, Any]) -> str:
        target = self._resolve(args.get("path"), "list_dir.path")
        if not target.is_dir():
            raise ToolError(f"list_dir: {self._relative(target)} is not a directory")
        entries = sorted(os.scandir(target), key=lambda e: e.name)
        rows = [_entry_row(entry) for entry in entries[:MAX_LIST_ENTRIES]]
        if len(entries) > MAX_LIST_ENTRIES:
            rows.append(f"… {len(entries) - MAX_LIST_ENTRIES} more entries not shown")
        return "\n".join(rows) if rows else "(empty directory)"

    def read_file(self, args: Mapping[str, Any]) -> str:
        target = self._resolve(args.get("path"), "read_file.path")
        data = _read_capped(target, MAX_READ_BYTES + 1)
        text = data[:MAX_READ_BYTES].decode("utf-8", "replace")
        if len(data) > MAX_READ_BYTES:
            text += f"\n[… cut at {MAX_READ_BYTES} bytes]"
        return text

    def search_files(self, args: Mapping[str, Any]) -> str:
        needle = args.get("text")
        if not isinstance(needle, str) or not needle:
            raise ToolError("search_files: text must be a non-empty string")
        start = self._resolve(args.get("path"), "search_files.path")
        matches: list[str] = []
        for path in self._files_under(start):
            if len(matches) >= MAX_MATCHES:
                matches.append(f"… stopped at {MAX_MATCHES} matches")
                break
            matches.extend(self._matches_in(path, needle, MAX_MATCHES - len(matches)))
        return "\n".join(matches) if matches else f"no line contains {needle[:80]!r}"

    def _files_under(self, start: Path) -> list[Path]:
        found: list[Path] = []
        for folder, dirs, files in os.walk(start, followlinks=False):
            dirs.sort()
            for name in sorted(files):
                path = Path(folder) / name
                rel = path.relative_to(self.root).as_posix()
                try:
                    real = resolve_in_jail(self.root, rel, where="search_files")
                except JailError:
                    continue  # a symlink out of the workspace, or a name outside the portable set
                if real.is_file():
                    found.append(path)
                if len(found) >= MAX_SEARCH_FILES:
                    return found
        return found

    def _matches_in(self, path: Path, needle: str, room: int) -> list[str]:
        try:
            data = _read_capped(path, MAX_SEARCH_FILE_BYTES)
        except ToolError:
            return []
        rel = self._relative(path)
        out = []
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), start=1):
            if needle in line:
                out.append(f"{rel}:{number}: {line[:300]}")
                if len(out) >= room:
                    break
        return out

    def write_file(self, args: Mapping[str, Any]) -> str:
        data = _write_content(args.get("content"))
        target = self._resolve(args.get("path"), "write_file.path")
        if target == self.root:
            raise ToolError("write_file: path must name a file")
        target.parent.mkdir(parents=True, exist_ok=True)
        rel = self._relative(target)
        with os.fdopen(self._open_for_write(target, rel), "wb") as handle:
            handle.write(data)
        return f"wrote {len(data)} bytes to {rel}"

    def _open_for_write(self, target: Path, rel: str) -> int:
        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_TRUNC if self.overwrite else os.O_EXCL)
        try:
            return os.open(target, flags, 0o644)
        except FileExistsError:
            raise ToolError(
                f"write_file: {rel} exists; tickloop creates files only ([tools.workspace] overwrite = true "
                "allows replacing)"
            ) from None
        except OSError as exc:
            raise ToolError(f"write_file: cannot write {rel}: {_reason(exc)}") from None

    def append_note(self, args: Mapping[str, Any]) -> str:
        text = args.get("text")
        if not isinstance(text, str) or not text.strip():
            raise ToolError("append_note: text must be a non-empty string")
        data = (text.rstrip("\n") + "\n\n").encode("utf-8")
        if len(data) > MAX_NOTE_BYTES:
            raise ToolError(f"append_note: a note is at most {MAX_NOTE_BYTES} bytes")
        target = self._resolve(NOTES_FILE, "append_note")
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o644)
        except OSError as exc:
            raise ToolError(f"append_note: cannot write {NOTES_FILE}: {_reason(exc)}") from None
        with os.fdopen(fd, "ab") as handle:
            handle.write(data)
        return f"appended {len(data)} bytes to {NOTES_FILE}"


def _write_content(content: object) -> bytes:
    if not isinstance(content, str):
        raise ToolError("write_file: content must be a string")
    data = content.encode("utf-8")
    if len(data) > MAX_WRITE_BYTES:
        raise ToolError(f"write_file: content is {len(data)} bytes; the cap is {MAX_WRITE_BYTES}")
    return data


def _threaded(function: Callable[[Mapping[str, Any]], str]) -> Callable[[Mapping[str, Any]], Any]:
    """File work runs in a thread, so a slow disk never stalls the chat's event loop."""

    async def run(args: Mapping[str, Any]) -> str:
        return await asyncio.to_thread(function, args)

    return run


def _entry_row(entry: os.DirEntry[str]) -> str:
    if entry.is_symlink():
        return f"{entry.name} -> (symlink)"
    if entry.is_dir(follow_symlinks=False):
        return f"{entry.name}/"
    try:
        size = entry.stat(follow_symlinks=False).st_size
    except OSError:
        return entry.name
    return f"{entry.name}  {size} bytes"


def _read_capped(path: Path, limit: int) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise ToolError(f"cannot read {path.name}: {_reason(exc)}") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise ToolError(f"{path.name} is not a regular file")
        return handle.read(limit)


def _reason(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "it is a symlink"
    return exc.strerror or type(exc).__name__
