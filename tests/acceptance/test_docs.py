"""The documentation site (docs/): every shell block a user is told to run is either run by a test or
marked as something else (a synopsis, or an example that needs outside setup), and the blocks this test
owns run for real, in a fresh HOME, against the checkout's venv."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
#: a fenced block a reader would paste into a shell
_SHELL = re.compile(
    r"^\s*(\$ )?(tickloop|make|\.venv|printf|source|kubectl|npm|pip|curl|sudo|systemctl|TICKLOOP_)", re.M
)
_BLOCK = re.compile(r"(?:^<!-- (?P<mark>[^>]*) -->\n)?^```(?P<lang>\w*)\n(?P<body>.*?)^```", re.S | re.M)
_MARK = re.compile(r"^(synopsis|example: .+|tested: (?P<test>tests/\S+\.py))$")
THIS = "tests/acceptance/test_docs.py"


def _blocks() -> list[tuple[str, str | None, str]]:
    return [
        (page.name, m["mark"], m["body"])
        for page in sorted(DOCS.glob("*.md"))
        for m in _BLOCK.finditer(page.read_text(encoding="utf-8"))
        if m["lang"] in ("", "sh", "bash", "console", "shell") and _SHELL.search(m["body"])
    ]


def test_every_shell_block_is_run_by_a_test_or_marked_as_needing_setup() -> None:
    """A block a reader would run carries ``<!-- tested: FILE -->`` naming an existing test,
    ``<!-- synopsis -->`` or ``<!-- example: what it needs -->`` on the line above it."""
    blocks = _blocks()
    assert len(blocks) >= 5
    for page, mark, body in blocks:
        assert mark is not None, f"docs/{page}: mark this block (tested/synopsis/example):\n{body}"
        checked = _MARK.match(mark)
        assert checked, f"docs/{page}: unknown mark {mark!r}"
        if checked["test"]:
            assert (ROOT / checked["test"]).is_file(), f"docs/{page}: {checked['test']} does not exist"


def test_the_home_page_opens_as_the_readme_does() -> None:
    """docs/index.md and README.md open with the same first section (the one test_demo runs)."""
    first = [p.read_text(encoding="utf-8").split("tickloop is a Python toolkit", 1)[0] for p in
             (ROOT / "README.md", DOCS / "index.md")]  # fmt: skip
    assert first[0] == first[1]


@pytest.mark.parametrize("body", [b for _, mark, b in _blocks() if mark == f"tested: {THIS}"])
def test_the_blocks_this_test_owns_run_in_a_fresh_home(body: str, tmp_path: Path) -> None:
    """Each block marked as tested here runs with bash -euo pipefail in a fresh HOME and exits 0."""
    home = tmp_path / "home"
    home.mkdir()
    keep = {k: v for k, v in os.environ.items() if k in ("LANG", "TMPDIR")}
    env = {**keep, "HOME": str(home), "PATH": f"{ROOT / '.venv' / 'bin'}:/usr/bin:/bin"}
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", body], cwd=home, env=env, capture_output=True,
                          text=True, timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert (home / ".local" / "share" / "tickloop").is_dir(), "the commands used the fresh HOME's data dir"
