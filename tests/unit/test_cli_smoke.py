"""The console entry point answers --help with the env prefix, without importing heavy libraries."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path


def test_help_lists_commands_and_env_prefix() -> None:
    """`tickloop --help` shows the commands and the TICKLOOP_ variables a person can set."""
    out = subprocess.run(
        [sys.executable, "-m", "tickloop.cli", "--help"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    assert "audit" in out
    assert "TICKLOOP_STORE" in out


def test_cli_start_does_not_import_heavy_libraries() -> None:
    """A one-shot command must not pay for openai, rich, psycopg or pydantic at start-up."""
    code = (
        "import sys; from tickloop.cli import main; "
        "main(['policies']); "
        "names = ('openai', 'rich', 'psycopg', 'pydantic', 'prompt_toolkit'); "
        "heavy = [m for m in names if m in sys.modules]; "
        "print('HEAVY', heavy)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert "HEAVY []" in out


def _env_vars_read_in_src() -> dict[str, str]:
    """Every TICKLOOP_* name written in src/, with the first file that names it."""
    root = Path(__file__).parents[2] / "src"
    found: dict[str, str] = {}
    for path in sorted(root.rglob("*.py")):
        for name in re.findall(r"TICKLOOP_[A-Z_]+", path.read_text(encoding="utf-8")):
            found.setdefault(name, str(path.relative_to(root.parent)))
    return found


def test_help_lists_every_tickloop_variable_the_code_reads_dry_run_first() -> None:
    """`tickloop --help` lists exactly the TICKLOOP_* variables named in src/, TICKLOOP_DRY_RUN first."""
    out = subprocess.run(
        [sys.executable, "-m", "tickloop.cli", "--help"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    listed = re.findall(r"^\s+(TICKLOOP_[A-Z_]+)\s", out, flags=re.MULTILINE)
    read = _env_vars_read_in_src()
    missing = [
        f'{name} (read in {where}): add `"{name}": "<what it does>",` to ENV_HELP in src/tickloop/cli/app.py '
        "(or, if it sets a config key, to ENV_VARS in src/tickloop/config.py)"
        for name, where in sorted(read.items())
        if name not in listed
    ]
    stale = [
        f"{name}: listed by --help but named nowhere in src/; remove it"
        for name in listed
        if name not in read
    ]
    assert not missing, "\n".join(missing)
    assert not stale, "\n".join(stale)
    assert listed[0] == "TICKLOOP_DRY_RUN"
    assert len(listed) == len(set(listed))
