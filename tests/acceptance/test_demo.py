"""The README's first section works as written: each command block a newcomer copies runs, in a fresh
HOME, against this checkout's venv; and `make demo` (its first block) keeps working, key lines asserted."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
#: `make test` is the suite this test is part of: it is checked with `make -n`, never run from inside
RECURSIVE = "make test"


def first_section_blocks() -> list[str]:
    """The unlabelled ``` blocks before the README's first `## ` heading: what a newcomer copies."""
    head = (ROOT / "README.md").read_text(encoding="utf-8").split("\n## ", 1)[0]
    return re.findall(r"^```\n(.*?)^```$", head, flags=re.MULTILINE | re.DOTALL)


def newcomer_env(home: Path) -> dict[str, str]:
    """A fresh HOME, no TICKLOOP_* or XDG_* settings, no venv active and none on PATH."""
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and ".venv" not in p]
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("TICKLOOP_", "XDG_", "VIRTUAL_ENV"))}
    home.mkdir()
    return {**keep, "HOME": str(home), "PATH": os.pathsep.join(path)}


def run_block(block: str, *, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The block's lines in one bash, stopping at the first that fails (`make test` dry-run only)."""
    script = "\n".join(
        f"make -n {line.split()[1]} >/dev/null" if line.split("#")[0].strip() == RECURSIVE else line
        for line in block.splitlines()
    )
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=540,
        check=False,
    )


def test_the_first_section_has_the_blocks_this_test_runs() -> None:
    """The README opens with `make demo`/`make test`, then the activate-and-chat block: both are run here."""
    blocks = first_section_blocks()
    assert len(blocks) == 2, blocks
    assert blocks[0].startswith("make demo")
    assert RECURSIVE in blocks[0]
    assert blocks[1].startswith("source .venv/bin/activate\n")
    assert "pip install 'tickloop" not in (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.timeout(600)
def test_make_demo_runs_an_operator_day_and_a_verified_tick_session(tmp_path: Path) -> None:
    """The README's first block in a fresh HOME: the demo's executor prints the seed's summary line,
    the approved email reaches the SMTP sink, the doer waits for the person, the chat's ledger
    verifies, and its "Next" lines say how to put tickloop on PATH."""
    result = run_block(first_section_blocks()[0], cwd=ROOT, env=newcomer_env(tmp_path / "home"))
    out = result.stdout
    assert result.returncode == 0, out[-3000:] + result.stderr[-3000:]
    assert "tick done: considered=2 executed=2 skipped=0 failed=0 handoff=1 dry=true" in out
    assert "DRY-RUN spend->notify+handoff: WOULD notify the person to purchase manually" in out
    assert "fast: noop waiting for the person's decision on intent 2" in out
    # the dry pass only previewed (issue 25): the armed pass then executes all three for real
    assert "intent 2 -> would be completed (spend, dry-run); left approved" in out
    assert "tick done: considered=3 executed=3 skipped=0 failed=0 handoff=1 dry=false" in out
    assert "SMTP sink received 1 message(s):\n  from operator@example.org to ada@example.org" in out
    assert "⏱ tick (tickloop 3/3)" in out
    assert "⚙ list_dir" in out
    assert "→ ok (" in out
    assert "ok: 11 records, 1 runs, 3 time steps enqueued" in out
    assert "  source .venv/bin/activate " in out
    assert "pip install" not in out
    assert f"cd {ROOT / '.tickloop-demo'} && " in out


@pytest.mark.timeout(300)
def test_the_activate_and_chat_block_runs_as_written(tmp_path: Path) -> None:
    """The second block, in a fresh HOME from a directory whose .venv is this checkout's: --help lists
    TICKLOOP_DRY_RUN, the chat runs three time steps, and its ledger verifies."""
    work = tmp_path / "checkout"
    work.mkdir()
    (work / ".venv").symlink_to(ROOT / ".venv")
    result = run_block(first_section_blocks()[1], cwd=work, env=newcomer_env(tmp_path / "home"))
    out = result.stdout
    assert result.returncode == 0, out[-3000:] + result.stderr[-3000:]
    assert "TICKLOOP_DRY_RUN" in out
    assert "⏱ tick (tickloop 3/3)" in out
    assert "session-demo.jsonl: ok: " in out  # `audit verify` exits 1 on a bad ledger: the block would fail
    assert "3 time steps enqueued" in out


def test_the_demo_keeps_its_store_in_a_private_directory_it_owns(tmp_path: Path) -> None:
    """The dashboard copy goes to the given (default: in-checkout) directory, 0700, replacing an old one."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import demo  # noqa: PLC0415  (scripts/ is not a package)
    finally:
        sys.path.pop(0)
    assert demo.KEPT == ROOT / ".tickloop-demo"
    work, kept = tmp_path / "work", tmp_path / "kept"
    (work / ".tickloop-audit").mkdir(parents=True)
    (work / ".tickloop-audit" / "session-demo.jsonl").write_text("{}\n")
    (work / "operator.db").write_bytes(b"db")
    kept.mkdir()
    (kept / "stale").write_text("from an earlier demo")
    assert demo.keep_for_the_dashboard(work, kept) == kept
    assert sorted(p.name for p in kept.iterdir()) == [".tickloop-audit", "operator.db"]
    assert kept.stat().st_mode & 0o777 == 0o700
