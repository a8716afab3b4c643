"""`export --format inspect`: Inspect AI's own reader, dataframes, scorer and viewer take the logs."""

from __future__ import annotations

import getpass
import hashlib
import json
import os
import re
import socket
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

import pytest
from tests.inspect_view import inspect_page

from tickloop.config import load_settings
from tickloop.experiment.inspect_log import export_inspect
from tickloop.experiment.runner import Runner
from tickloop.experiment.spec import parse_spec
from tickloop.protocol.envelope import PLUGIN_NAME
from tickloop.testing.openai_server import MODEL_ID, OpenAIServer, Reply

SPEC = b"""
name = "ix"
policies = ["lister"]
models = ["offline"]
steps = 2
replicates = 2
tools = ["none", "workspace"]
[openings]
short = ["Wait for time steps."]
long = ["Hello.", "Then wait for time steps."]
[inlinePolicies]
lister = "tick: list files"
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run: 2 openings x 2 tools levels x 2 replicates, tool calls on the workspace level."""
    import asyncio  # noqa: PLC0415

    base = tmp_path_factory.mktemp("inspect")
    (base / "ws").mkdir()
    (base / "ws" / "notes.md").write_text("hello\n", encoding="utf-8")
    config = base / "config.toml"
    config.write_text(f'[tools.workspace]\nroot = "{base / "ws"}"\n', encoding="utf-8")
    runner = Runner(
        parse_spec(SPEC, where="s"), base / "run", settings=load_settings(env={}, path=config), env={}
    )
    summary = asyncio.run(runner.run())
    assert summary.statuses == {"complete": 8}
    return base / "run"


def _transcript(run: Path, session: str) -> list[dict[str, Any]]:
    path = run / "sessions" / f"session-{session}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _text(rec: dict[str, Any]) -> str:
    if rec["type"] == "message":
        return "".join(p["text"] for p in rec["content"])
    return str(rec["text"] if rec["type"] == "tool_calls" else rec["result"])


@pytest.mark.parametrize("no_redact", [False, True])
def test_every_log_reads_back_with_samples_epochs_and_messages_of_the_transcripts(
    run: Path, tmp_path: Path, *, no_redact: bool
) -> None:
    """read_eval_log reads each cell's log; each session is a sample whose epoch is its replicate and
    whose messages are its transcript in order (time steps marked), redacted unless --no-redact; the
    header carries the provenance and the factors."""
    from inspect_ai.log import read_eval_log  # noqa: PLC0415

    counts = export_inspect([run], tmp_path, redact=not no_redact)
    assert counts == {"logs": 4, "sessions": 8}
    logs = sorted(tmp_path.glob("*.eval"))
    assert len(logs) == 4
    assert (tmp_path / "REDACTION.md").is_file()
    spec_sha = (run / "spec.sha256").read_text().strip()
    for path in logs:
        log = read_eval_log(str(path))
        assert log.samples is not None
        assert sorted(s.epoch for s in log.samples) == [1, 2]
        assert log.eval.metadata is not None
        assert log.eval.metadata["spec_sha256"] == spec_sha
        assert log.eval.metadata["policy_sha256"].startswith("sha256:")
        assert log.eval.metadata["tickloop_version"]
        assert set(log.eval.task_args) == {"model", "policy", "opening", "tools", "temperature"}
        for sample in log.samples:
            _check_sample(run, sample, log.eval.task_args, redacted=not no_redact)


def _check_sample(run: Path, sample: Any, factors: dict[str, Any], *, redacted: bool) -> None:
    meta = sample.metadata
    assert {k: meta[k] for k in factors} == factors
    assert meta["status"] == "complete"
    assert meta["end_rule"]
    assert meta["verify"]["ok"]
    assert [s["step"] for s in meta["steps"]] == [0, 1, 2]  # step 0: the opening's reply, the baseline
    assert all(s["latency_ms"] > 0 for s in meta["steps"])
    assert meta["cause"] is None
    assert meta["error"] is None
    records = [
        r for r in _transcript(run, meta["session"]) if r["type"] in ("message", "tool_calls", "tool_result")
    ]
    assert [m.role for m in sample.messages] == [
        r.get("role", "assistant" if r["type"] == "tool_calls" else "tool") for r in records
    ]
    for message, rec in zip(sample.messages, records, strict=True):
        tickloop = message.metadata["tickloop"]
        assert tickloop["chars"] == len(_text(rec))
        if redacted:
            assert message.text != _text(rec) or not _text(rec)
        else:
            assert message.text == _text(rec)
    steps = [m for m in sample.messages if m.metadata["tickloop"].get("time_step")]
    assert [m.metadata["tickloop"]["step"] for m in steps] == [1, 2]
    assert all(m.metadata["tickloop"]["plugin"] == PLUGIN_NAME for m in steps)
    with_tools = [m for m in sample.messages if m.role == "assistant" and m.tool_calls]
    assert bool(with_tools) == (meta["tools"] == "workspace")


ENDPOINT_SPEC = b"""
name = "ih"
opening = ["Wait for time steps."]
policies = ["default"]
models = ["ep"]
steps = 1
replicates = 2
temperature = [0.0, 0.9]
"""


def test_each_header_carries_the_model_ids_and_the_generation_settings_sent(tmp_path: Path) -> None:
    """Against an endpoint, each cell's header names the configured and the returned model ids, the
    temperature its requests carried and the endpoint's max_tokens (top_p and seed: not sent), as the
    dataset's provenance does; a refused session's sample carries its cause code and no raw error."""
    import asyncio  # noqa: PLC0415

    from inspect_ai.log import read_eval_log  # noqa: PLC0415

    with OpenAIServer(default=Reply.text("fine answer")) as server:
        server.script(Reply.error(429, "slow down"))  # the first session's opening: refused
        config = tmp_path / "config.toml"
        config.write_text(
            f'[model.endpoints.ep]\nbaseUrl = "{server.base_url}"\nmodel = "requested-id"\n'
            "temperature = 0.25\nmaxTokens = 64\n",
            encoding="utf-8",
        )
        settings = load_settings(env={}, path=config)
        runner = Runner(parse_spec(ENDPOINT_SPEC, where="s"), tmp_path / "run", settings=settings, env={},
                        concurrency=1)  # fmt: skip
        summary = asyncio.run(runner.run())
    assert summary.statuses == {"complete": 3, "refused": 1}
    export_inspect([tmp_path / "run"], tmp_path / "logs")
    logs = [read_eval_log(str(p)) for p in sorted((tmp_path / "logs").glob("*.eval"))]
    assert len(logs) == 2
    opening = "sha256:" + hashlib.sha256(b"Wait for time steps.").hexdigest()
    causes = []
    for log in logs:
        meta, level = log.eval.metadata or {}, log.eval.task_args["temperature"]
        assert (meta["model_id"], meta["returned_model_ids"]) == ("requested-id", [MODEL_ID])
        assert meta["generation"] == {"temperature": level, "top_p": None, "seed": None, "max_tokens": 64}
        assert (log.eval.model_generate_config.temperature, log.eval.model_generate_config.max_tokens) == (
            level,
            64,
        )
        assert meta["opening_sha256"] == {"default": [opening]}
        assert log.samples is not None
        causes += [(s.metadata["cause"], s.metadata["error"]) for s in log.samples]
    assert sorted(level for log in logs for level in [log.eval.task_args["temperature"]]) == [0.0, 0.9]
    refused = [(cause, error) for cause, error in causes if cause is not None]
    assert [cause for cause, _ in refused] == ["http_429"]
    assert refused[0][1]["hash"].startswith("hmac-sha256:")
    assert "slow down" not in refused[0][1]["text"]


def test_samples_df_gives_one_row_per_session(run: Path, tmp_path: Path) -> None:
    """inspect_ai.analysis.samples_df over the log directory: one row per session of the run."""
    from inspect_ai.analysis import samples_df  # noqa: PLC0415

    export_inspect([run], tmp_path)
    frame = samples_df(str(tmp_path), quiet=True)
    sessions = {json.loads(line)["sessionId"] for line in (run / "manifest.jsonl").read_text().splitlines()}
    assert len(frame) == len(sessions) == 8
    assert len({(row.id, row.epoch) for row in frame.itertuples()}) == 8


def test_the_example_scorer_scores_a_redacted_log(run: Path, tmp_path: Path) -> None:
    """words_per_step scores each sample of a redacted log with its mean words per time step, through
    Inspect's own `score` and through `inspect score --scorer FILE@words_per_step`."""
    from inspect_ai import score  # noqa: PLC0415
    from inspect_ai.log import read_eval_log  # noqa: PLC0415

    from tickloop.experiment import inspect_scorer  # noqa: PLC0415

    export_inspect([run], tmp_path)
    path = sorted(tmp_path.glob("*.eval"))[0]
    scored = score(read_eval_log(str(path)), inspect_scorer.words_per_step(), display="none")
    assert scored.samples is not None
    for sample in scored.samples:
        words = [s["words"] for s in sample.metadata["steps"] if s["step"] > 0]
        assert len(words) == 2
        assert sample.scores is not None
        assert sample.scores["words_per_step"].value == pytest.approx(sum(words) / len(words))
    assert scored.results is not None
    assert scored.results.scores[0].name == "words_per_step"
    cli = subprocess.run(
        [str(Path(sys.executable).parent / "inspect"), "score", str(path), "--scorer",
         f"{inspect_scorer.__file__}@words_per_step", "--overwrite", "--display", "none"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert cli.returncode == 0, cli.stderr
    rescored = read_eval_log(str(path))
    assert rescored.results is not None
    assert rescored.results.scores[0].name == "words_per_step"


SECRET_KEY = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"


@pytest.mark.parametrize("keep_text", [False, True])
def test_inspect_logs_leak_nothing_planted(tmp_path: Path, *, keep_text: bool) -> None:
    """Secrets, paths, this machine's host and user names where they name it (the scrubber's rules,
    as in every format), the run's key and wall-clock times planted in a run appear in no byte of any
    exported log (every member of the .eval archive), with or without --keep-text."""
    import asyncio  # noqa: PLC0415

    host, user = socket.gethostname(), getpass.getuser()
    planted = [SECRET_KEY, "/home/alice/private/notes.md", host, f"{user}@{host}", f"/home/{user}/"]
    spec = (
        'name = "leak"\n'
        f'opening = ["My key is {SECRET_KEY}, notes in /home/alice/private/notes.md on {host}."]\n'
        f'policies = ["planted"]\nmodels = ["offline"]\nsteps = 2\n'
        f'[inlinePolicies]\nplanted = "tick; key {SECRET_KEY} host {host} '
        f'login {user}@{host} home /home/{user}/"\n'
    )
    config = tmp_path / "config.toml"
    config.write_text("[model.offline]\necho = true\n", encoding="utf-8")
    out = tmp_path / "run"
    runner = Runner(
        parse_spec(spec.encode(), where="s"), out, settings=load_settings(env={}, path=config), env={}
    )
    asyncio.run(runner.run())
    assert SECRET_KEY.encode() in b"".join(p.read_bytes() for p in (out / "sessions").iterdir())
    target = tmp_path / "logs"
    export_inspect([out], target, keep_text=keep_text)
    blob = b""
    for path in target.glob("*.eval"):
        with zipfile.ZipFile(path) as archive:
            blob += b"\n".join(archive.read(name) for name in archive.namelist())
    assert blob
    for secret in planted:
        if len(secret) >= 3:
            assert secret.encode() not in blob, f"{secret!r} leaked"
    assert (out / "run.key").read_bytes().strip() not in blob, "the run's secret leaked"
    assert not re.search(rb"20\d\d-\d\d-\d\dT\d\d:\d\d", blob), "a wall-clock timestamp leaked"
    report = (target / "REDACTION.md").read_text()
    if keep_text:
        assert b"<secret>" in blob
        assert re.search(r"\| secret \| [1-9]", report)
    else:
        assert re.search(r"\| text \(replaced by keyed digest and length\) \| [1-9]", report)


@pytest.mark.timeout(240)
def test_inspect_view_shows_a_sample_transcript(run: Path, tmp_path: Path) -> None:
    """`inspect view` serves the exported directory and a headless Chromium shows one sample's
    messages: the opening, the time steps and a tool call, with the text redacted."""
    logs = tmp_path / "logs"
    export_inspect([run], logs)
    name = next(p.name for p in sorted(logs.glob("*.eval")) if "long--workspace" in p.name)
    cell = "offline/lister/long/workspace"
    quote = urllib.parse.quote
    with inspect_page(logs, tmp_path) as (server, page):
        page.goto(f"{server}/#/logs/{quote(name, safe='')}/samples/sample/{quote(cell, safe='')}/1")
        page.get_by_text("list_dir").first.wait_for(timeout=60_000)
        text = page.inner_text("body")
        page.screenshot(path=str(tmp_path / "sample.png"))
        shot = Path(os.environ.get("SCREENSHOT_DIR", tmp_path)) / "inspect-sample.png"
        page.screenshot(path=str(shot))
    assert f"{cell} (Epoch 1)" in text
    assert "[redacted:" in text
    assert text.count("USER") >= 4  # two opening lines and two time steps
    assert (tmp_path / "sample.png").stat().st_size > 10_000


def test_without_inspect_installed_the_export_says_which_extra_and_writes_nothing(
    run: Path, tmp_path: Path
) -> None:
    """With inspect_ai not importable, `export --format inspect` exits 2 naming the extra, and
    writes no file."""
    code = (
        "import sys; sys.modules['inspect_ai'] = None\n"
        "from tickloop.cli import main\n"
        "run, out = sys.argv[1:]\n"
        "sys.argv = ['tickloop', 'experiment', 'export', run, '--format', 'inspect', '--out', out]\n"
        "sys.exit(main())\n"
    )
    out = tmp_path / "logs"
    done = subprocess.run([sys.executable, "-c", code, str(run), str(out)], capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "pip install -e '.[inspect]'" in done.stderr
    assert not out.exists() or not any(out.iterdir())
