"""A configuration error stops every face when it starts: exit 2, naming the section and the key.

Each command is run against a config with an unknown key in one section and a wrong type in
another; across the commands every checked section is hit at least once (the full section x error
table runs in-process in tests/unit/config/test_check_config.py, through the same function).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tickloop.config_sections import SECTION_TYPES

COMMANDS: list[list[str]] = [
    ["chat"],
    *(["operator", "tick", kind] for kind in ("observe", "fast", "slow", "executor", "consolidate")),
    ["web"],
    ["mcp", "serve"],
]
#: A key of the wrong type in each section (TOML text), the key the message must name.
WRONG_TYPE = {
    "sources": ("[sources]\ngit = 3\n", "git"),
    "handlers": ('[handlers.workspace]\ntimeoutS = "soon"\n', "timeoutS"),
    "smtp": ('[smtp]\nport = "twenty-five"\n', "port"),
    "notify": ("[notify]\nchannels = 5\n", "channels"),
    "gate": ("[gate]\nblock = 1\n", "block"),
    "attention": ('[attention]\nbudgetPerDay = "six"\n', "budgetPerDay"),
    "monitor": ('[monitor]\nstuckStreak = "x"\n', "stuckStreak"),
    "schedule": ("[schedule]\nfast = 30\n", "fast"),
    "executor": ('[executor]\nbatch = "ten"\n', "batch"),
    "tools": ('[tools]\nmaxRounds = "many"\n', "maxRounds"),
    "web": ("[web]\nbaseUrl = 8\n", "baseUrl"),
    "mcp": ('[mcp]\nautoAllow = "note"\n', "autoAllow"),
}
SECTIONS = sorted(SECTION_TYPES)


def _run(tmp_path: Path, command: list[str], toml: str, **extra: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "config.toml").write_text(toml)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TICKLOOP_")}
    env.update(
        TICKLOOP_CONFIG=str(tmp_path / "config.toml"),
        TICKLOOP_STORE=f"sqlite:///{tmp_path / 'store.db'}",
        HOME=str(tmp_path),
        XDG_STATE_HOME=str(tmp_path / "state"),
        **extra,
    )
    return subprocess.run(
        [sys.executable, "-m", "tickloop", *command],
        env=env,
        input="",
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        cwd=tmp_path,
    )


def test_the_wrong_type_table_covers_every_section() -> None:
    """Every checked section has a wrong-type case below, so a new section cannot be skipped."""
    assert sorted(WRONG_TYPE) == SECTIONS


@pytest.mark.parametrize("n", range(len(COMMANDS)), ids=[" ".join(c) for c in COMMANDS])
def test_an_unknown_key_exits_2_naming_it(tmp_path: Path, n: int) -> None:
    """`[SECTION] zzTypo = 1` makes the command exit 2 at once, naming the section and the key."""
    name = SECTIONS[n % len(SECTIONS)]
    table = "[handlers.workspace]" if name == "handlers" else f"[{name}]"
    done = _run(tmp_path, COMMANDS[n], f"{table}\nzzTypo = 1\n")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert f"[{name}]" in done.stderr
    assert "zzTypo" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "store.db").exists()  # nothing was opened, let alone written


@pytest.mark.parametrize("n", range(len(COMMANDS)), ids=[" ".join(c) for c in COMMANDS])
def test_a_wrong_type_exits_2_naming_it(tmp_path: Path, n: int) -> None:
    """A key of the wrong type makes the command exit 2 at once, naming the section and the key."""
    name = SECTIONS[(n + 3) % len(SECTIONS)]
    toml, key = WRONG_TYPE[name]
    done = _run(tmp_path, COMMANDS[n], toml)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert f"[{name}]" in done.stderr
    assert key in done.stderr


@pytest.mark.parametrize("command", [["operator", "tick", "fast"], ["chat"]])
def test_a_model_nothing_defines_exits_2(tmp_path: Path, command: list[str]) -> None:
    """TICKLOOP_MODEL=nope fails the start (exit 2) saying which models exist."""
    done = _run(tmp_path, command, "", TICKLOOP_MODEL="nope")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "unknown model 'nope'" in done.stderr
