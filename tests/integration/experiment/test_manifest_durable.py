"""The manifest under slow fsyncs: each session's ``started`` record is on disk before the session
writes anything, its ``finished`` record is written only once every line of its transcript and
ledger is on disk and is itself on disk before the run returns, and two sessions in a row share one
fsync of the manifest (the last one's ``finished`` with the next one's ``started``)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from tests.disk_witness import DiskWitness

import tickloop.harness.build
from tickloop.config import load_settings
from tickloop.experiment.manifest import ManifestWriter
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
    out = tmp_path / "run"
    manifest = out / "manifest.jsonl"
    opened, write = tickloop.harness.build.open_session, ManifestWriter.write
    problems: list[str] = []

    def open_session(sessions_dir: Path, session_id: str, **kwargs: Any) -> Any:
        if witness.durable_bytes(manifest) < _started_end(manifest, session_id):
            problems.append(f"{session_id} began before its started record was durable")
        return opened(sessions_dir, session_id, **kwargs)

    def checked_write(self: ManifestWriter, record: Mapping[str, Any]) -> None:
        if record["event"] == "finished":
            for sub in ("sessions", "ledgers"):
                path = out / sub / f"session-{record['sessionId']}.jsonl"
                if witness.pending(path) > 0:
                    problems.append(f"finished {record['sessionId']} before its {sub} file was durable")
        write(self, record)

    monkeypatch.setattr(tickloop.harness.build, "open_session", open_session)
    monkeypatch.setattr(ManifestWriter, "write", checked_write)
    config = tmp_path / "config.toml"
    config.write_text("", encoding="utf-8")
    settings = load_settings(env={}, path=config)
    runner = Runner(parse_spec(SPEC, where="spec"), out, settings=settings, env={}, concurrency=concurrency)
    summary = await runner.run()
    assert summary.statuses == {"complete": 6}
    assert problems == []
    witness.assert_durable(manifest, "after the run")
    events = [json.loads(line)["event"] for line in manifest.read_bytes().splitlines()]
    assert (events.count("started"), events.count("finished")) == (6, 6)
    # One fsync per session's start (it also carries the worker's last finished record), and one
    # per worker at the end; concurrent workers may share more.
    assert witness.fsyncs_of(manifest) <= 6 + concurrency
