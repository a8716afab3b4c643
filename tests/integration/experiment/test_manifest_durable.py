"""The manifest under slow fsyncs: each session's ``started`` record is on disk before the session
writes anything, its ``finished`` record before the run returns, and two sessions in a row share
one fsync of the manifest (the last one's ``finished`` with the next one's ``started``)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from tests.disk_witness import DiskWitness

import tickloop.harness.build
from tickloop.config import load_settings
from tickloop.experiment.runner import Runner
from tickloop.experiment.spec import parse_spec

SPEC = (
    b'name = "m"\nopening = ["Wait for time steps."]\npolicies = ["default"]\nmodels = ["offline"]\n'
    b"steps = 2\nreplicates = 6\n"
)


def _started_end(manifest: Path, session_id: str) -> int:
    """The byte offset just past the ``started`` record of ``session_id``."""
    offset = 0
    for line in manifest.read_bytes().splitlines(keepends=True):
        offset += len(line)
        rec = json.loads(line)
        if rec["event"] == "started" and rec["sessionId"] == session_id:
            return offset
    raise AssertionError(f"no started record for {session_id}")


@pytest.mark.parametrize("concurrency", [1, 3])
async def test_manifest_records_are_durable_in_order_and_sessions_in_a_row_share_an_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, concurrency: int
) -> None:
    witness = DiskWitness(os.fsync, delay=(0.001, 0.004))
    monkeypatch.setattr(os, "fsync", witness)
    manifest = tmp_path / "run" / "manifest.jsonl"
    opened = tickloop.harness.build.open_session

    def open_session(sessions_dir: Path, session_id: str, **kwargs: Any) -> Any:
        durable = witness.durable_bytes(manifest)
        began = f"{session_id} began before its started record was durable"
        assert durable >= _started_end(manifest, session_id), began
        return opened(sessions_dir, session_id, **kwargs)

    monkeypatch.setattr(tickloop.harness.build, "open_session", open_session)
    config = tmp_path / "config.toml"
    config.write_text("", encoding="utf-8")
    settings = load_settings(env={}, path=config)
    runner = Runner(parse_spec(SPEC, where="spec"), tmp_path / "run", settings=settings, env={},
                    concurrency=concurrency)  # fmt: skip
    summary = await runner.run()
    assert summary.statuses == {"complete": 6}
    witness.assert_durable(manifest, "after the run")
    events = [json.loads(line)["event"] for line in manifest.read_bytes().splitlines()]
    assert (events.count("started"), events.count("finished")) == (6, 6)
    # One fsync per session's start (it also carries the worker's last finished record), and one
    # per worker at the end; concurrent workers may share more.
    assert witness.fsyncs_of(manifest) <= 6 + concurrency
