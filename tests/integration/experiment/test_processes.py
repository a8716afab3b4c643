"""`experiment run --processes N`: N shard processes into one run directory, as one process would."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tickloop.audit.ledger import verify_file
from tickloop.experiment.export import export
from tickloop.experiment.processes import sub_shards
from tickloop.experiment.spec import Shard, parse_spec

SPEC = """
name = "procs"
opening = ["Wait for time steps."]
policies = ["default", "brief"]
models = ["offline"]
steps = 2
replicates = 6
delayMs = {delay}
[inlinePolicies]
brief = "tick (one sentence)"
"""


@given(
    index=st.integers(1, 6),
    extra=st.integers(0, 5),
    processes=st.integers(1, 5),
    replicates=st.integers(1, 40),
)
def test_sub_shards_split_a_share_exactly(index: int, extra: int, processes: int, replicates: int) -> None:
    """The processes' sub-shards of any --shard K/N are disjoint and together own exactly K/N's share."""
    shard = Shard(index, index + extra)
    spec = parse_spec(
        SPEC.format(delay=0).replace("replicates = 6", f"replicates = {replicates}").encode(), where="s"
    )
    share = {p.key for p in spec.sessions() if shard.owns(p)}
    parts = [{p.key for p in spec.sessions() if sub.owns(p)} for sub in sub_shards(shard, processes)]
    assert set().union(*parts) == share
    assert sum(len(part) for part in parts) == len(share)


def _env(tmp_path: Path) -> dict[str, str]:
    config = tmp_path / "config.toml"
    config.write_text("", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TICKLOOP_")}
    return {**env, "TICKLOOP_CONFIG": str(config), "HOME": str(tmp_path)}


def _run(tmp_path: Path, out: str, *extra: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "tickloop", "experiment", "run", "spec.toml", "--out", out, *extra]
    return subprocess.run(command, cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True,
                          timeout=timeout, check=False)  # fmt: skip


def _records(run: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in (run / "manifest.jsonl").read_text(encoding="utf-8").splitlines()]


def test_two_processes_write_the_run_one_process_would(tmp_path: Path) -> None:
    """--processes 2 runs every session exactly once, in two processes, into one directory whose
    ledgers verify and whose export has the same sessions as a one-process run."""
    (tmp_path / "spec.toml").write_text(SPEC.format(delay=0), encoding="utf-8")
    two = _run(tmp_path, "two", "--processes", "2", "--concurrency", "2")
    assert two.returncode == 0, two.stderr
    assert "ran 12 sessions (complete 12)" in two.stdout
    one = _run(tmp_path, "one")
    assert one.returncode == 0, one.stderr
    finished = [r["key"] for r in _records(tmp_path / "two") if r["event"] == "finished"]
    assert sorted(finished) == sorted(set(finished))
    assert len(finished) == 12
    assert len({r["pid"] for r in _records(tmp_path / "two") if r["event"] == "started"}) == 2
    for ledger in (tmp_path / "two" / "ledgers").iterdir():
        assert verify_file(ledger)[0].violations == []
    keys = {}
    for name in ("one", "two"):
        export([tmp_path / name], tmp_path / f"x-{name}", "jsonl")
        rows = (tmp_path / f"x-{name}" / "sessions.jsonl").read_text().splitlines()
        keys[name] = sorted((json.loads(r)["session"], json.loads(r)["status"]) for r in rows)
    assert keys["one"] == keys["two"]


def test_sigterm_to_the_parent_stops_every_child_and_a_rerun_completes_the_run(tmp_path: Path) -> None:
    """SIGTERM to `run --processes 2` ends both children (none is left running); running again
    finishes every session exactly once, re-running the cut-off ones as new sessions."""
    (tmp_path / "spec.toml").write_text(SPEC.format(delay=300), encoding="utf-8")
    command = [sys.executable, "-m", "tickloop", "experiment", "run", "spec.toml", "--out", "run",
               "--processes", "2", "--concurrency", "1"]  # fmt: skip
    parent = subprocess.Popen(
        command, cwd=tmp_path, env=_env(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    manifest = tmp_path / "run" / "manifest.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and b'"finished"' not in (
        manifest.read_bytes() if manifest.exists() else b""
    ):
        time.sleep(0.1)
    parent.send_signal(signal.SIGTERM)
    assert parent.wait(timeout=30) == 128 + signal.SIGTERM
    pids = {int(r["pid"]) for r in _records(tmp_path / "run") if r["event"] == "started"}  # type: ignore[call-overload]
    assert len(pids) == 2
    for pid in pids:
        assert (
            not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()
        )
    cut = {r["key"] for r in _records(tmp_path / "run") if r["event"] == "finished"}
    assert 0 < len(cut) < 12
    again = _run(tmp_path, "run", "--processes", "2")
    assert again.returncode == 0, again.stderr
    finished = [r["key"] for r in _records(tmp_path / "run") if r["event"] == "finished"]
    assert len(finished) == len(set(finished)) == 12
