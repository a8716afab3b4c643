"""The suite fails instead of hanging: every subprocess the tests start has a timeout.

A broken claim once made the executor loop forever inside a test's subprocess, and the suite hung. So
every ``subprocess.run`` / ``check_output`` / ``check_call`` / ``call`` in tests/ and bench/ names a
``timeout``, and pytest-timeout gives every test a global limit (pyproject.toml).
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BLOCKING = {"run", "check_output", "check_call", "call"}


def _calls_without_timeout(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    missing = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        owner = node.func.value
        if isinstance(owner, ast.Name) and owner.id == "subprocess" and node.func.attr in BLOCKING:
            names = {k.arg for k in node.keywords}
            if "timeout" not in names and None not in names:  # None: **kwargs may carry it
                missing.append(f"{path.relative_to(ROOT)}:{node.lineno}: subprocess.{node.func.attr}")
    return missing


def test_every_subprocess_call_in_the_tests_has_a_timeout() -> None:
    """No blocking subprocess call in tests/ or bench/ can wait forever."""
    files = [p for top in ("tests", "bench") for p in (ROOT / top).rglob("*.py")]
    files = [p for p in files if "node_modules" not in p.parts]
    assert len(files) > 50
    missing = [line for path in sorted(files) for line in _calls_without_timeout(path)]
    assert missing == [], "add timeout= to:\n" + "\n".join(missing)


def test_the_grep_finds_a_call_without_a_timeout(tmp_path: Path) -> None:
    """The check itself can fail: a planted call without a timeout is reported, one with it is not."""
    planted = ROOT / "tests" / "_planted_probe.py"
    planted.write_text("import subprocess\nsubprocess.run(['true'])\nsubprocess.run(['true'], timeout=5)\n")
    try:
        assert _calls_without_timeout(planted) == ["tests/_planted_probe.py:2: subprocess.run"]
    finally:
        planted.unlink()


def test_every_test_has_a_global_time_limit() -> None:
    """pytest-timeout is configured with a default, so a hanging test fails instead of stalling CI."""
    options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert 0 < int(options["timeout"]) <= 600
