"""The dataset of real runs: every session status exports in every format, atomically, once per key,
with its provenance, and read back with pyarrow."""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tickloop.config import load_settings
from tickloop.errors import ConfigError
from tickloop.experiment.export import FORMATS, export
from tickloop.experiment.report import summarise
from tickloop.experiment.runner import Manifest, Runner
from tickloop.experiment.schema import SCHEMA_VERSION, TABLES
from tickloop.experiment.spec import Spec, parse_spec
from tickloop.testing.openai_server import MODEL_ID, OpenAIServer, Reply

SPEC = """
name = "every"
opening = ["Wait for time steps."]
policies = ["default"]
models = ["offline", "limited"]
steps = 2
replicates = 3
"""
STATUSES = {"complete", "stopped", "refused", "no_run", "crashed"}


@pytest.fixture
def limited() -> Iterator[OpenAIServer]:
    """A server whose first session is rate limited at its opening turn and whose second fails a step."""
    with OpenAIServer(default=Reply.text("fine answer", chunks=2)) as server:
        server.script(
            Reply.error(429, "slow down"),  # r001: the opening turn -> the /tick is refused
            Reply.text("opening ok"),  # r002: the opening ...
            Reply.error(500, "boom"),  # ... then step 1 fails -> stopped
        )
        yield server


def _config(tmp_path: Path, server: OpenAIServer) -> Path:
    path = tmp_path / "config.toml"
    endpoint = f'baseUrl = "{server.base_url}"\nmodel = "requested-id"\ntemperature = 0.25\n'
    path.write_text(f"[model.endpoints.limited]\n{endpoint}", encoding="utf-8")
    return path


async def _every_status_run(tmp_path: Path, server: OpenAIServer) -> tuple[Spec, Path]:
    """A real run with complete, stopped, refused and crashed sessions, plus one no_run record."""
    spec = parse_spec(SPEC.encode(), where="spec")
    out = tmp_path / "run"
    # The transcript path of one offline session is a directory: that session crashes on opening it.
    (out / "sessions" / "session-every-offline-default-r002.jsonl").mkdir(parents=True)
    settings = load_settings(env={}, path=_config(tmp_path, server))
    summary = await Runner(spec, out, settings=settings, env={}, concurrency=1).run()
    assert summary.statuses == {"complete": 3, "crashed": 1, "refused": 1, "stopped": 1}
    # A finished session whose ledger holds no run: the harness cannot be made to produce one today,
    # so its manifest records are written as the runner writes them.
    manifest = Manifest(out / "manifest.jsonl")
    base = {"key": "offline/default/r004", "sessionId": "every-offline-default-r004"}
    manifest.append({**base, "event": "started", "attempt": 1, "cell": "offline/default", "model": "offline",
                     "policy": "default", "replicate": 4})  # fmt: skip
    manifest.append({**base, "event": "finished", "status": "no_run", "endRule": None, "error": None,
                     "wallMs": 1.0, "steps": [], "stepsPlanned": 2, "modelReturned": []})  # fmt: skip
    return spec, out


def _read(path: Path, fmt: str) -> list[dict[str, Any]]:
    if fmt == "parquet":
        import pyarrow.parquet as pq  # noqa: PLC0415

        return list(pq.read_table(path).to_pylist())
    if fmt == "jsonl":
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


async def test_every_status_exports_in_every_format(tmp_path: Path, limited: OpenAIServer) -> None:
    """A grid holding complete, stopped, refused, no_run and crashed sessions exports in Parquet,
    JSON Lines and CSV; each refused or crashed row names its cause; unknown figures are null."""
    _, out = await _every_status_run(tmp_path, limited)
    for fmt in FORMATS:
        target = tmp_path / f"x-{fmt}"
        counts = export([out], target, fmt)
        assert counts["sessions"] == 7
        sessions = {r["session"]: r for r in _read(target / f"sessions.{fmt}", fmt)}
        assert {r["status"] for r in sessions.values()} == STATUSES, fmt
        assert sorted(p.name for p in target.iterdir()) == sorted(
            [*(f"{t}.{fmt}" for t in TABLES), "REDACTION.md"]
        )
    rows = {r["session"]: r for r in _read(tmp_path / "x-parquet" / "sessions.parquet", "parquet")}
    refused, crashed = rows["every-limited-default-r001"], rows["every-offline-default-r002"]
    assert (refused["status"], refused["cause"]) == ("refused", "http_429")
    assert refused["error_hash"].startswith("hmac-sha256:")
    assert refused["error"] is None
    assert refused["policy_sha256"].startswith("sha256:")  # from run.json: the run never armed
    assert (crashed["status"], crashed["steps_completed"], crashed["usage_reported"]) == ("crashed", 0, None)
    assert crashed["cause"].startswith("crash.")
    assert crashed["input_tokens"] is None
    assert rows["every-limited-default-r002"]["status"] == "stopped"
    assert rows["every-offline-default-r004"]["status"] == "no_run"
    assert rows["every-limited-default-r003"]["steps_planned"] == 2


async def test_parquet_carries_provenance_and_column_meanings(tmp_path: Path, limited: OpenAIServer) -> None:
    """The runs table and the Parquet metadata say how the run was made: versions, digests, the
    configured and the returned model id, the generation settings sent; each field has its meaning."""
    import pyarrow.parquet as pq  # noqa: PLC0415

    spec, out = await _every_status_run(tmp_path, limited)
    export([out], tmp_path / "x", "parquet")
    runs = {r["model"]: r for r in pq.read_table(tmp_path / "x" / "runs.parquet").to_pylist()}
    assert runs["limited"]["model_id"] == "requested-id"
    assert runs["limited"]["returned_model_ids"] == MODEL_ID
    assert (runs["limited"]["temperature"], runs["limited"]["top_p"], runs["limited"]["seed"]) == (
        0.25,
        None,
        None,
    )
    assert runs["offline"]["model_id"] is None
    assert runs["offline"]["spec_sha256"] == spec.sha256
    assert runs["offline"]["schema_version"] == SCHEMA_VERSION
    assert json.loads(runs["offline"]["opening_sha256"]) == {
        "default": ["sha256:" + hashlib.sha256(line.encode()).hexdigest() for line in spec.opening("default")]
    }
    schema = pq.read_schema(tmp_path / "x" / "steps.parquet")
    provenance = json.loads(schema.metadata[b"tickloop.provenance"])
    assert provenance["specSha256"] == spec.sha256
    assert provenance["models"]["limited"]["returnedModelIds"] == [MODEL_ID]
    meaning = schema.field("finish_reason").metadata
    assert meaning[b"type"] == b"string?"
    assert b"finish reason" in meaning[b"meaning"]
    described = json.loads(schema.metadata[b"tickloop.columns"])
    assert set(described) == {name for name, _, _ in TABLES["steps"]}


async def test_step_rows_hold_the_opening_and_running_figures(tmp_path: Path, limited: OpenAIServer) -> None:
    """Step 0 is the opening turn; finish reasons, cumulative tokens and changed_from_previous are
    filled from the run, and a session with no reported usage has null sums, not 0."""
    _, out = await _every_status_run(tmp_path, limited)
    export([out], tmp_path / "x", "jsonl")
    steps = _read(tmp_path / "x" / "steps.jsonl", "jsonl")
    complete = [r for r in steps if r["session"] == "every-limited-default-r003"]
    assert [r["step"] for r in complete] == [0, 1, 2]
    assert [r["finish_reason"] for r in complete] == ["stop", "stop", "stop"]
    assert [r["changed_from_previous"] for r in complete] == [None, False, False]
    running = 0
    for row in complete:
        running += row["output_tokens"]
        assert row["cumulative_output_tokens"] == running
    refused = [r for r in steps if r["session"] == "every-limited-default-r001"]
    assert [(r["step"], r["status"], r["usage_reported"]) for r in refused] == [(0, "error", False)]
    assert refused[0]["cumulative_input_tokens"] is None


async def test_a_failed_export_leaves_no_partial_file(tmp_path: Path, limited: OpenAIServer) -> None:
    """An export that fails midway (a hand-edited manifest whose last replicate is not a number)
    leaves the earlier export's files as they were, and no temporary or partial file beside them."""
    _, out = await _every_status_run(tmp_path, limited)
    target = tmp_path / "x"
    export([out], target, "parquet")
    before = {p.name: p.read_bytes() for p in target.iterdir()}
    records = list(Manifest(out / "manifest.jsonl").read())
    records[-2]["replicate"] = "four"  # the last session's started record
    (out / "manifest.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"sessions row of session '[^']+': replicate = 'four' is not int"):
        export([out], target, "parquet")
    assert {p.name: p.read_bytes() for p in target.iterdir()} == before
    with pytest.raises(ConfigError):
        export([out], tmp_path / "fresh", "csv")
    assert list((tmp_path / "fresh").iterdir()) == []


async def test_the_same_directory_twice_counts_each_session_once(
    tmp_path: Path, limited: OpenAIServer
) -> None:
    """`export runs/a runs/a` (or a second spelling of it) gives each session once, and the report
    counts `replicates` sessions in a cell."""
    _, out = await _every_status_run(tmp_path, limited)
    again = out.parent / "." / out.name
    counts = export([out, out, again], tmp_path / "x", "jsonl")
    assert counts["sessions"] == 7
    _, cells = summarise([out, out])
    assert cells["limited/default"].sessions == 3


async def test_two_runs_of_one_spec_into_two_directories_are_refused(tmp_path: Path) -> None:
    """Two directories that each ran the whole grid hold two attempts of every key: merging them is
    refused, naming the key and both directories."""
    spec = parse_spec(SPEC.replace('["offline", "limited"]', '["offline"]').encode(), where="s")
    (tmp_path / "empty.toml").write_text("", encoding="utf-8")
    settings = load_settings(env={}, path=tmp_path / "empty.toml")
    for name in ("a", "b"):
        await Runner(spec, tmp_path / name, settings=settings, env={}).run()
    with pytest.raises(
        ConfigError, match=r"session 'offline/default/r00\d' finished differently in .*a and .*b"
    ):
        export([tmp_path / "a", tmp_path / "b"], tmp_path / "x", "jsonl")


async def test_equal_replies_have_equal_keyed_digests_that_a_guess_cannot_confirm(tmp_path: Path) -> None:
    """Within one export equal replies have equal digests, but the digest is not the sha256 of the
    reply (a guessed reply cannot be confirmed), and another run's key gives other digests."""

    config = tmp_path / "config.toml"
    config.write_text("[model.offline]\necho = true\n", encoding="utf-8")
    settings = load_settings(env={}, path=config)
    spec = parse_spec(SPEC.replace('["offline", "limited"]', '["offline"]').encode(), where="s")
    digests = []
    for name in ("a", "b"):
        await Runner(spec, tmp_path / name, settings=settings, env={}).run()
        export([tmp_path / name], tmp_path / f"x-{name}", "jsonl")
        digests.append([r["text_hash"] for r in _read(tmp_path / f"x-{name}" / "steps.jsonl", "jsonl")])
    a, b = digests
    step_rows = _read(tmp_path / "x-a" / "steps.jsonl", "jsonl")
    by_length: dict[int, set[str]] = {}
    for row in step_rows:
        by_length.setdefault(row["text_length"], set()).add(row["text_hash"])
    assert all(len(d) == 1 for d in by_length.values())  # the echo replies repeat: equal digests
    guess = "sha256:" + hashlib.sha256(b"echo: tick").hexdigest()
    assert guess not in a
    assert all(d.startswith("hmac-sha256:") for d in a)
    assert set(a).isdisjoint(b)
    assert oct((tmp_path / "a" / "run.key").stat().st_mode & 0o777) == "0o600"


async def test_resuming_with_another_model_id_is_refused(tmp_path: Path, limited: OpenAIServer) -> None:
    """A run resumed after the config changed an endpoint's model id would mix two experiments in one
    grid: it is refused, naming what changed, and no session runs."""
    spec, out = await _every_status_run(tmp_path, limited)
    before = (out / "manifest.jsonl").read_bytes()
    config = tmp_path / "config.toml"
    config.write_text(
        config.read_text(encoding="utf-8").replace("requested-id", "other-id"), encoding="utf-8"
    )
    with pytest.raises(ConfigError, match="this run began with other models"):
        await Runner(spec, out, settings=load_settings(env={}, path=config), env={}).run()
    assert (out / "manifest.jsonl").read_bytes() == before


async def test_a_run_from_before_provenance_still_exports(tmp_path: Path, limited: OpenAIServer) -> None:
    """A run directory without run.json and run.key (made by an earlier tickloop) exports: a key is
    made for it, and the runs table is empty rather than wrong."""
    _, out = await _every_status_run(tmp_path, limited)
    (out / "run.json").unlink()
    (out / "run.key").unlink()
    counts = export([out], tmp_path / "x", "parquet")
    assert (counts["sessions"], counts["runs"]) == (7, 0)
    assert (out / "run.key").is_file()
