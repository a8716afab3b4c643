"""A real study against an OpenAI-compatible server nobody here wrote (`@copilotkit/aimock`), read
back with pyarrow the way a researcher would."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests import peers

from tickloop.config import load_settings
from tickloop.experiment.export import export
from tickloop.experiment.runner import Runner
from tickloop.experiment.spec import parse_spec

SPEC = """
name = "aimock-study"
opening = ["Wait for time steps."]
policies = ["default", "brief", "terse"]
models = ["offline", "aimock"]
steps = 3
replicates = 2
[inlinePolicies]
brief = "tick (one sentence)"
terse = "tick (one word)"
"""
FIXTURES = {
    "fixtures": [
        {"match": {"userMessage": "tick"}, "response": {"content": "A time step passed; still waiting."}},
        {"match": {}, "response": {"content": "Noted. Waiting for time steps."}},
    ]
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def aimock(tmp_path: Path) -> Iterator[str]:
    """aimock's own CLI on a free loopback port; yields its base URL."""
    cli = peers.require(peers.AIMOCK / "dist" / "cli.js")
    fixtures = tmp_path / "fixtures.json"
    fixtures.write_text(json.dumps(FIXTURES), encoding="utf-8")
    port, log = _free_port(), (tmp_path / "aimock.log").open("wb")
    node = str(peers.require(peers.NODE))
    command = [node, str(cli), "-p", str(port), "-f", str(fixtures), "--log-level", "warn"]
    proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.1)
    else:
        proc.kill()
        proc.wait(timeout=10)
        log.close()
        pytest.fail(f"aimock did not start: {(tmp_path / 'aimock.log').read_text()!r}")
    yield f"http://127.0.0.1:{port}/v1"
    proc.terminate()
    proc.wait(timeout=10)
    log.close()


@pytest.mark.timeout(300)
async def test_a_3x2_grid_against_aimock_reads_back_with_pyarrow(tmp_path: Path, aimock: str) -> None:
    """3 policies x 2 models x 2 replicates against aimock: the Parquet export reads back with
    pyarrow, sessions join their steps one to many, and the runs table names the model aimock said
    answered and the temperature that was sent."""
    import pyarrow.parquet as pq  # noqa: PLC0415

    config = tmp_path / "config.toml"
    config.write_text(
        f'[model.endpoints.aimock]\nbaseUrl = "{aimock}"\nmodel = "gpt-4o"\ntemperature = 0.0\n',
        encoding="utf-8",
    )
    out = tmp_path / "run"
    spec = parse_spec(SPEC.encode(), where="spec")
    summary = await Runner(
        spec, out, settings=load_settings(env={}, path=config), env={}, concurrency=4
    ).run()
    assert summary.statuses == {"complete": 12}
    export([out], tmp_path / "x", "parquet")
    steps = pq.read_table(tmp_path / "x" / "steps.parquet")
    sessions = pq.read_table(tmp_path / "x" / "sessions.parquet")
    runs = {r["model"]: r for r in pq.read_table(tmp_path / "x" / "runs.parquet").to_pylist()}
    assert sessions.num_rows == 12
    assert steps.num_rows == 12 * (1 + 3)
    joined = steps.join(sessions.select(["session", "status", "steps_planned"]), "session", right_suffix="_s")
    assert joined.num_rows == steps.num_rows
    assert set(joined.column("status_s").to_pylist()) == {"complete"}
    aimock_steps = [r for r in steps.to_pylist() if r["model"] == "aimock"]
    assert {r["finish_reason"] for r in aimock_steps} == {"stop"}
    assert all(r["usage_reported"] for r in aimock_steps)
    assert [r["changed_from_previous"] for r in aimock_steps if r["session"].endswith("default-r001")] == [
        None,
        True,  # the opening's answer, then the time steps' answer
        False,
        False,
    ]
    assert (runs["aimock"]["model_id"], runs["aimock"]["returned_model_ids"]) == ("gpt-4o", "gpt-4o")
    assert runs["aimock"]["temperature"] == 0.0
    assert runs["offline"]["model_id"] is None


async def test_a_model_id_that_is_a_path_is_scrubbed_in_the_runs_table(tmp_path: Path, aimock: str) -> None:
    """A server that names its model by a file path (as llama.cpp does) leaks no path through the
    runs table or the Parquet metadata of a redacted export; --no-redact keeps it."""
    import pyarrow.parquet as pq  # noqa: PLC0415

    path_id = "/home/researcher/models/smol.gguf"
    config = tmp_path / "config.toml"
    config.write_text(
        f'[model.endpoints.aimock]\nbaseUrl = "{aimock}"\nmodel = "{path_id}"\n', encoding="utf-8"
    )
    spec = parse_spec(
        SPEC.replace('"offline", ', "").replace("replicates = 2", "replicates = 1").encode(), where="s"
    )
    out = tmp_path / "run"
    await Runner(spec, out, settings=load_settings(env={}, path=config), env={}).run()
    export([out], tmp_path / "x", "parquet")
    blob = b"".join(p.read_bytes() for p in (tmp_path / "x").iterdir())
    assert path_id.encode() not in blob
    (runs,) = pq.read_table(tmp_path / "x" / "runs.parquet").to_pylist()
    assert (runs["model_id"], runs["returned_model_ids"]) == ("<path>", "<path>")
    export([out], tmp_path / "raw", "parquet", redact=False)
    (raw,) = pq.read_table(tmp_path / "raw" / "runs.parquet").to_pylist()
    assert raw["returned_model_ids"] == path_id
