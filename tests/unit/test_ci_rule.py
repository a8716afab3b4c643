"""CI's no-skip rule (tests/conftest.py) holds for skips at collection time too, run in a real pytest."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CONFTEST = Path(__file__).parents[1] / "conftest.py"

SKIPS = {
    "importorskip": 'pytest.importorskip("tickloop_no_such_module")\n',
    "module_level_skip": 'pytest.skip("not here", allow_module_level=True)\n',
    "skip_in_test": "",
}


def _run(tmp_path: Path, how: str, *, ci: bool) -> subprocess.CompletedProcess[str]:
    (tmp_path / "conftest.py").write_text(CONFTEST.read_text(encoding="utf-8"), encoding="utf-8")
    skip = '    pytest.skip("no")\n' if how == "skip_in_test" else "    pass\n"
    body = "def test_it():\n" + skip
    (tmp_path / "test_probe.py").write_text("import pytest\n" + SKIPS[how] + body, encoding="utf-8")
    (tmp_path / "test_other.py").write_text("def test_fine():\n    pass\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci:
        env["CI"] = "true"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("how", sorted(SKIPS))
def test_a_skip_of_any_kind_fails_under_ci(tmp_path: Path, how: str) -> None:
    """Under CI=true an importorskip, a module-level skip or a skip in a test makes the run fail."""
    result = _run(tmp_path, how, ci=True)
    assert result.returncode != 0, result.stdout
    assert "(counts as a failure)" in result.stdout


@pytest.mark.parametrize("how", sorted(SKIPS))
def test_a_skip_outside_ci_stays_a_skip(tmp_path: Path, how: str) -> None:
    """Without CI=true the same skips are reported as skips and the run passes."""
    result = _run(tmp_path, how, ci=False)
    assert result.returncode == 0, result.stdout
    assert "skipped" in result.stdout
