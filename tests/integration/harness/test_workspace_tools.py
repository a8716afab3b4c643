"""The workspace toolset on real files: what it does, and the jail escape corpus (zero escapes)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tickloop.harness.tools import CallStatus, Toolbox, open_toolbox, tools_settings
from tickloop.harness.tools.workspace import MAX_READ_BYTES, MAX_WRITE_BYTES, WorkspaceOptions, WorkspaceTools
from tickloop.models.base import ToolCall

SECRET = "TOP-SECRET-OUTSIDE"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """``outside/secret.txt`` next to the workspace ``ws`` with files, a dir and symlinks in and out."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    ws = tmp_path / "ws"
    (ws / "docs").mkdir(parents=True)
    (ws / "docs" / "plan.md").write_text("step one\nthe needle is here\n")
    (ws / "readme.txt").write_text("hello workspace\n")
    (ws / "link-out").symlink_to(outside / "secret.txt")
    (ws / "dir-out").symlink_to(outside)
    (ws / "link-in").symlink_to(ws / "readme.txt")
    return ws


def toolbox(ws: Path, *, overwrite: bool = False) -> Toolbox:
    return Toolbox([WorkspaceTools(WorkspaceOptions(ws, overwrite=overwrite))])


async def call(box: Toolbox, name: str, **args: object) -> tuple[CallStatus, str]:
    result = await box.run(ToolCall("c", name, json.dumps(args)))
    return result.status, result.text


async def test_list_read_search_write_and_note_work_inside_the_workspace(tree: Path) -> None:
    """Each tool does its job on files in the workspace."""
    box = toolbox(tree)
    status, listing = await call(box, "list_dir")
    assert status is CallStatus.OK
    assert "docs/" in listing
    assert "readme.txt" in listing
    read = await call(box, "read_file", path="docs/plan.md")
    assert read == (CallStatus.OK, "step one\nthe needle is here\n")
    status, found = await call(box, "search_files", text="needle")
    assert (status, found) == (CallStatus.OK, "docs/plan.md:2: the needle is here")
    assert (await call(box, "write_file", path="out/new.txt", content="fresh"))[0] is CallStatus.OK
    assert (tree / "out" / "new.txt").read_text() == "fresh"
    assert (await call(box, "append_note", text="remember this"))[0] is CallStatus.OK
    assert (await call(box, "append_note", text="and this"))[0] is CallStatus.OK
    assert (tree / "NOTES.md").read_text() == "remember this\n\nand this\n\n"


async def test_write_file_creates_only_unless_overwrite_is_configured(tree: Path) -> None:
    """An existing file is never replaced by default; ``overwrite = true`` allows it."""
    status, text = await call(toolbox(tree), "write_file", path="readme.txt", content="clobbered")
    assert status is CallStatus.ERROR
    assert "exists" in text
    assert "overwrite = true" in text
    assert (tree / "readme.txt").read_text() == "hello workspace\n"
    status, _ = await call(toolbox(tree, overwrite=True), "write_file", path="readme.txt", content="replaced")
    assert status is CallStatus.OK
    assert (tree / "readme.txt").read_text() == "replaced"


async def test_sizes_are_capped(tree: Path) -> None:
    """A big file is cut when read; an oversized write is refused and writes nothing."""
    (tree / "big.txt").write_text("x" * (MAX_READ_BYTES + 500))
    status, text = await call(toolbox(tree), "read_file", path="big.txt")
    assert status is CallStatus.OK
    assert text.endswith(f"[… cut at {MAX_READ_BYTES} bytes]")
    huge = "y" * (MAX_WRITE_BYTES + 1)
    status, text = await call(toolbox(tree), "write_file", path="huge.txt", content=huge)
    assert status is CallStatus.ERROR
    assert not (tree / "huge.txt").exists()


async def test_a_symlink_inside_the_workspace_may_be_read(tree: Path) -> None:
    """A link that stays in the workspace resolves and reads its target."""
    assert await call(toolbox(tree), "read_file", path="link-in") == (CallStatus.OK, "hello workspace\n")


ESCAPES = [
    "../outside/secret.txt",
    "docs/../../outside/secret.txt",
    "..",
    "/etc/passwd",
    str(Path("/") / "tmp"),
    "~/.bashrc",
    "link-out",
    "dir-out/secret.txt",
    "dir-out",
    "\u2024\u2024/outside/secret.txt",  # one dot leader twice: looks like ..
    "\uff0e\uff0e/outside/secret.txt",  # fullwidth full stops
    "\u2024\u2024",
    "docs\u2215..\u2215..\u2215outside",  # division slash
    "docs//plan.md",
    "a" * 300,
    "docs/" + "b" * 256,
    "x/" * 600,
    "docs/plan.md\x00.txt",
    "",
]


@pytest.mark.parametrize("path", ESCAPES)
@pytest.mark.parametrize("tool", ["read_file", "list_dir", "write_file", "search_files"])
async def test_the_escape_corpus_never_leaves_the_workspace(tree: Path, tool: str, path: str) -> None:
    """``..``, absolute paths, symlinks out, unicode dots and long names: refused or harmless, never out."""
    args: dict[str, object] = {"path": path}
    if tool == "write_file":
        args["content"] = "pwned"
    if tool == "search_files":
        args["text"] = "SECRET"
    status, text = await call(toolbox(tree), tool, **args)
    assert SECRET not in text
    assert "secret.txt" not in text or status is CallStatus.ERROR
    assert (tree.parent / "outside" / "secret.txt").read_text() == SECRET
    assert sorted(p.name for p in (tree.parent / "outside").iterdir()) == ["secret.txt"]
    if path not in ("",):
        assert status is CallStatus.ERROR, text


async def test_search_never_follows_a_symlink_out(tree: Path) -> None:
    """A search of the whole workspace skips links that point outside it."""
    status, text = await call(toolbox(tree), "search_files", text="SECRET")
    assert status is CallStatus.OK
    assert SECRET not in text


async def test_list_dir_shows_symlinks_without_following_them(tree: Path) -> None:
    """Links are listed as links; their targets outside are not revealed."""
    status, text = await call(toolbox(tree), "list_dir")
    assert status is CallStatus.OK
    assert "link-out -> (symlink)" in text
    assert str(tree.parent / "outside") not in text


PIECES = ["..", ".", "/", "a", "\u2024", "\uff0e", "~", "link-out", "dir-out", "secret.txt", "docs"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.sampled_from(PIECES), min_size=1, max_size=12))
async def test_no_generated_path_reads_outside(tree: Path, parts: list[str]) -> None:
    """Any path built from dots, slashes, look-alikes and the outward links never reads the secret."""
    path = "".join(parts)
    status, text = await call(toolbox(tree), "read_file", path=path)
    assert SECRET not in text
    if status is CallStatus.OK:
        resolved = Path(os.path.realpath(tree / path))
        assert resolved.is_relative_to(tree)


def test_the_workspace_toolset_is_off_unless_enabled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No [tools] and no --tools: no tools are offered at all."""
    assert open_toolbox(tools_settings({})).specs() == ()
    monkeypatch.chdir(tmp_path)
    names = [s.name for s in open_toolbox(tools_settings({}, enable=["workspace"])).specs()]
    assert names == ["list_dir", "read_file", "search_files", "write_file", "append_note"]


async def test_append_note_refuses_a_notes_file_that_links_out(tree: Path) -> None:
    """A NOTES.md planted as a symlink to a file outside is refused; the outside file is untouched."""
    (tree / "NOTES.md").symlink_to(tree.parent / "outside" / "secret.txt")
    status, text = await call(toolbox(tree), "append_note", text="leak")
    assert status is CallStatus.ERROR
    assert "outside the workspace" in text
    assert (tree.parent / "outside" / "secret.txt").read_text() == SECRET


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.sampled_from(PIECES), min_size=1, max_size=10))
async def test_no_generated_path_writes_outside(tree: Path, parts: list[str]) -> None:
    """Any generated path given to write_file creates nothing outside the workspace."""
    outside = tree.parent / "outside"
    before = sorted(p.name for p in outside.iterdir())
    await call(toolbox(tree), "write_file", path="".join(parts), content="pwned")
    assert sorted(p.name for p in outside.iterdir()) == before
    assert (outside / "secret.txt").read_text() == SECRET


@pytest.mark.parametrize(
    ("tool", "args", "name"),
    [
        ("write_file", {"path": "readme.txt", "content": "OVERWRITTEN"}, "readme.txt"),
        ("write_file", {"path": "fresh.txt", "content": "OVERWRITTEN"}, "fresh.txt"),
        ("append_note", {"text": "OVERWRITTEN"}, "NOTES.md"),
    ],
)
async def test_a_symlink_swapped_in_between_the_check_and_the_open_is_refused(
    tree: Path, monkeypatch: pytest.MonkeyPatch, tool: str, args: dict[str, str], name: str
) -> None:
    """The path is checked, then replaced by a symlink to a file outside just before the open: O_NOFOLLOW
    refuses it, and the outside file keeps its content (overwrite = true, so only O_NOFOLLOW stands)."""
    real_open = os.open
    target = tree / name

    def swap_then_open(path: object, flags: int, *rest: int) -> int:
        if Path(str(path)) == target:  # the race: the jail check passed, the open has not happened
            target.unlink(missing_ok=True)
            target.symlink_to(tree.parent / "outside" / "secret.txt")
        return real_open(path, flags, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr("tickloop.harness.tools.workspace.os.open", swap_then_open)
    status, text = await call(toolbox(tree, overwrite=True), tool, **args)
    assert status is CallStatus.ERROR
    assert "cannot write" in text
    assert (tree.parent / "outside" / "secret.txt").read_text() == SECRET
