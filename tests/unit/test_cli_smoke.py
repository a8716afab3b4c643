"""The console entry point answers --help with the env prefix, without importing heavy libraries."""

from __future__ import annotations

import subprocess
import sys


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
