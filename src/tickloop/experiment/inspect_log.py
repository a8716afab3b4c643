"""``tickloop experiment export --format inspect``: one Inspect AI eval log (``.eval``) per cell.

Inspect (the UK AI Security Institute's evaluation framework) reads these with its own tools: the
viewer (``inspect view``), the dataframes (``inspect_ai.analysis.samples_df``) and its scorers
(``inspect score``; ``tickloop.experiment.inspect_scorer`` is an example). The mapping:

- a cell of the grid is one log; its factors are the header's ``task_args`` and ``metadata``;
- a session is a sample (``id``: the cell, ``epoch``: the replicate), its messages the transcript:
  the opening, each time step (``metadata.tickloop.time_step``: a message of the tick plugin), the
  replies, the tool calls and their results;
- the header carries the provenance (``tickloop.experiment.provenance``, as in every format):
  tickloop's version, the spec's and each opening's sha256, the endpoint with its configured and
  returned model ids, the generation settings sent, the policy and its sha256;
- each sample's metadata carries the run's ``end_rule``, its ledger's verify result, the per-step
  figures (step 0 is the opening's reply) and a refused or crashed session's cause code.

Text is redacted exactly as in the other formats (``tickloop.experiment.redaction``): by default
each message holds its keyed digest (under the run's ``run.key``) and length, ``--keep-text`` keeps
it scrubbed, ``--no-redact`` keeps it as it is; model ids are scrubbed too. No wall-clock time is
exported (the log's ``created`` is the Unix epoch).
``inspect_ai`` (extra ``inspect``) is imported only on this path.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from tickloop import __version__
from tickloop.audit import session_file_name
from tickloop.audit.ledger import verify_file
from tickloop.errors import ConfigError, LedgerError, extra_hint
from tickloop.experiment.dataset import Finished, cause_code, failure_text, finished_sessions
from tickloop.experiment.redaction import NoRedaction, Redactor, report, run_key
from tickloop.experiment.runner import LEDGERS, SESSIONS
from tickloop.harness.jsonl import SessionError, read_records
from tickloop.protocol.ledger import loads_bounded

#: ``created`` of every exported log: wall-clock times are never exported
EPOCH = "1970-01-01T00:00:00+00:00"


def provenance(directories: Sequence[Path], redactor: Redactor, *, redact: bool) -> dict[str, Any]:
    """How the run was made, for the log headers: the shared provenance of every export format
    (``run.json`` and the returned model ids), its model ids scrubbed as in the other formats."""
    from tickloop.experiment.provenance import provenance as shared  # noqa: PLC0415
    from tickloop.experiment.provenance import scrubbed  # noqa: PLC0415

    made = shared(directories)
    if made["specSha256"] is None:  # a run made before run.json existed: its spec.sha256 says it
        made["specSha256"] = (directories[0] / "spec.sha256").read_text(encoding="utf-8").strip()
    return scrubbed(made, redactor.scrub) if redact else made


def export_inspect(
    directories: Sequence[Path], out: Path, *, redact: bool = True, keep_text: bool = False
) -> dict[str, int]:
    """The Inspect logs of run directories (shards of one run merge) and ``REDACTION.md`` in ``out``,
    redacted by the same rules (and the same functions) as every other format."""
    from tickloop.experiment.export import experiment_name  # noqa: PLC0415

    if not directories:
        raise ConfigError("export needs at least one run directory")
    names = {experiment_name(d) for d in directories}
    if len(names) != 1:
        raise ConfigError(f"run directories hold different experiments: {', '.join(sorted(names))}")
    try:
        import inspect_ai.log  # noqa: F401, PLC0415  (fail before any file is written)
    except ImportError:
        raise ConfigError(f"--format inspect needs Inspect AI: {extra_hint('inspect')}") from None
    redactor = Redactor(keep_text=keep_text, key=run_key(directories)) if redact else NoRedaction()
    made = provenance(directories, redactor, redact=redact)
    counts = write_logs(directories, out, names.pop(), redactor, made)
    notes = out / "REDACTION.md"
    partial = notes.with_name(f".{notes.name}.partial")
    partial.write_text(report(redactor, redact=redact), encoding="utf-8")
    partial.replace(notes)
    return counts


def write_logs(
    directories: Sequence[Path], out: Path, experiment: str, redactor: Redactor, made: dict[str, Any]
) -> dict[str, int]:
    """One ``.eval`` per cell into ``out`` (each written under a temporary name, then renamed)."""
    by_cell: dict[str, list[Finished]] = defaultdict(list)
    for finished in finished_sessions(directories):
        by_cell[str(finished.started.get("cell"))].append(finished)
    out.mkdir(parents=True, exist_ok=True, mode=0o700)
    sessions = 0
    for cell, group in sorted(by_cell.items()):
        group.sort(key=lambda d: int(d.started.get("replicate", 0)))
        _write(
            _log(experiment, cell, group, made, redactor),
            out / f"{experiment}_{cell.replace('/', '--')}.eval",
        )
        sessions += len(group)
    return {"logs": len(by_cell), "sessions": sessions}


def _write(log: Any, path: Path) -> None:
    from inspect_ai.log import write_eval_log  # noqa: PLC0415  (extra `inspect`, only on this path)

    partial = path.with_name(f".{path.name}.partial")
    try:
        write_eval_log(log, partial, format="eval")
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)


def _log(experiment: str, cell: str, done: list[Finished], made: dict[str, Any], redactor: Redactor) -> Any:
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalResults, EvalSpec  # noqa: PLC0415
    from inspect_ai.model import GenerateConfig  # noqa: PLC0415

    first = done[0].started
    factors = {k: first.get(k) for k in ("model", "policy", "opening", "tools", "temperature")}
    samples = [_sample(cell, d, redactor) for d in done]
    policy_sha = next((s.metadata["policy_sha256"] for s in samples if s.metadata["policy_sha256"]), None)
    header = _header(made, cell, first, policy_sha, factors)
    eval_id = hashlib.sha256(f"{header['spec_sha256']}/{cell}".encode()).hexdigest()[:22]
    spec = EvalSpec(
        eval_id=eval_id,
        run_id=header["spec_sha256"].removeprefix("sha256:")[:22],
        created=EPOCH,
        task=experiment,
        task_id=eval_id,
        task_args=factors,
        dataset=EvalDataset(name=experiment, samples=len(samples)),
        # `none/`: Inspect has no API to call for it (tickloop made the calls), so `inspect score` needs
        # no --model; the endpoint's model ids and the generation settings are in the metadata
        model=f"none/{first.get('model')}",
        model_generate_config=GenerateConfig(**header["generation"]),
        config=EvalConfig(epochs=max(s.epoch for s in samples)),
        packages={"tickloop": header["tickloop_version"]},
        metadata=header,
    )
    results = EvalResults(total_samples=len(samples), completed_samples=len(samples))
    return EvalLog(status="success", eval=spec, results=results, samples=samples)


def _header(
    made: dict[str, Any], cell: str, first: dict[str, Any], policy_sha: str | None, factors: dict[str, Any]
) -> dict[str, Any]:
    """A cell's log header: the run's provenance, narrowed to the cell's endpoint and levels."""
    endpoint = first.get("model")
    model = made["models"].get(endpoint, {})
    # the temperature the cell's requests carried (its level, else the endpoint's own); a run made
    # before factors existed recorded none in its `started` records: the endpoint's then
    temperature = first["temperature"] if "temperature" in first else model.get("temperature")
    return {
        "tickloop_version": made["tickloopVersion"] or __version__, "exported_by": made["exportedBy"],
        "schema_version": made["schemaVersion"], "spec_sha256": made["specSha256"],
        "opening_sha256": made["openingSha256"], "cell": cell, "endpoint": endpoint,
        "model_id": model.get("modelId"), "returned_model_ids": model.get("returnedModelIds", []),
        "policy_id": first.get("policy"), "policy_sha256": policy_sha,
        "generation": {"temperature": temperature, "top_p": model.get("topP"), "seed": model.get("seed"),
                       "max_tokens": model.get("maxTokens")},
        "factors": factors,
    }  # fmt: skip


def _sample(cell: str, done: Finished, redactor: Redactor) -> Any:
    from inspect_ai.log import EvalSample  # noqa: PLC0415
    from inspect_ai.model import ChatMessageUser, ModelOutput, ModelUsage  # noqa: PLC0415

    rec, start = done.record, done.started
    sid = str(rec["sessionId"])
    name = session_file_name(sid)
    model = str(start.get("model"))
    messages: list[Any] = list(_messages(_records(done.directory / SESSIONS / name), redactor, model))
    opening: list[Any] = [m for m in messages if isinstance(m, ChatMessageUser) and not _is_step(m)]
    steps = [_step(s) for s in rec.get("steps", [])]
    tokens_in = sum(s["input_tokens"] or 0 for s in steps)
    tokens_out = sum(s["output_tokens"] or 0 for s in steps)
    replies = [m for m in messages if m.role == "assistant" and not m.tool_calls]
    metadata = {
        "session": sid, "key": rec.get("key"), "status": rec.get("status"), "end_rule": rec.get("endRule"),
        **{k: start.get(k) for k in ("model", "policy", "opening", "tools", "temperature")},
        "policy_sha256": _policy_sha(done.directory / LEDGERS / name),
        "verify": _verify(done.directory / LEDGERS / name), "steps": steps, "wall_ms": rec.get("wallMs"),
        **_failure(rec, redactor),
    }  # fmt: skip
    return EvalSample(
        id=cell,
        epoch=int(start.get("replicate", 1)),
        input=opening or "",
        target="",
        messages=messages,
        output=ModelOutput(model=model, completion=replies[-1].text if replies else ""),
        metadata=metadata,
        model_usage={model: ModelUsage(input_tokens=tokens_in, output_tokens=tokens_out,
                                       total_tokens=tokens_in + tokens_out)},
    )  # fmt: skip


def _failure(rec: dict[str, Any], redactor: Redactor) -> dict[str, Any]:
    """A refused or crashed session's cause code and its failure's text (redacted), as in the
    sessions table; both null for any other session."""
    status, text = str(rec.get("status")), failure_text(rec)
    shown = None if text is None or status not in ("refused", "crashed") else _error(redactor, text)
    return {"cause": cause_code(status, text, rec.get("error")), "error": shown}


def _is_step(message: Any) -> bool:
    return bool((message.metadata or {}).get("tickloop", {}).get("time_step"))


def _records(path: Path) -> list[dict[str, Any]]:
    try:
        return read_records(path) if path.is_file() else []
    except SessionError as exc:
        raise ConfigError(str(exc)) from None


def _messages(records: Iterable[dict[str, Any]], redactor: Redactor, model: str) -> Iterable[Any]:
    """The transcript as Inspect chat messages, in order."""
    from inspect_ai.model import ChatMessageAssistant, ChatMessageTool, ChatMessageUser  # noqa: PLC0415
    from inspect_ai.tool import ToolCall  # noqa: PLC0415

    for rec in records:
        kind, turn = rec.get("type"), rec.get("turn")
        if kind == "message":
            content, meta = _text(redactor, "".join(str(p.get("text", "")) for p in rec.get("content", [])))
            source = rec.get("source") or {}
            time_step = source.get("kind") == "plugin"
            step = (rec.get("meta") or {}).get("step") if time_step else None
            meta.update(turn=turn, source=source.get("kind"), plugin=source.get("plugin"))
            meta.update(time_step=time_step, step=step)
            if rec.get("role") == "assistant":
                yield ChatMessageAssistant(content=content, model=model, metadata={"tickloop": meta})
            else:
                yield ChatMessageUser(content=content, metadata={"tickloop": meta})
        elif kind == "tool_calls":
            content, meta = _text(redactor, str(rec.get("text", "")))
            calls = [ToolCall(id=str(c["id"]), function=str(c["tool"]), arguments=_arguments(redactor, c))
                     for c in rec.get("calls", [])]  # fmt: skip
            meta.update(turn=turn, round=rec.get("round"), time_step=False)
            yield ChatMessageAssistant(
                content=content, model=model, tool_calls=calls, metadata={"tickloop": meta}
            )
        elif kind == "tool_result":
            content, meta = _text(redactor, str(rec.get("result", "")))
            meta.update(turn=turn, round=rec.get("round"), status=rec.get("status"),
                        duration_ms=rec.get("durationMs"), outcome=rec.get("outcome"))  # fmt: skip
            yield ChatMessageTool(
                content=content, tool_call_id=str(rec.get("id")), function=str(rec.get("tool")),
                metadata={"tickloop": meta},
            )  # fmt: skip


def _text(redactor: Redactor, text: str, prefix: str = "text") -> tuple[str, dict[str, Any]]:
    """A message's content and its tickloop metadata: the digest and length always; the text itself
    only when the redaction keeps it (scrubbed, or raw with ``--no-redact``)."""
    fields = redactor.text_fields(text, prefix)
    meta: dict[str, Any] = {"hash": fields[f"{prefix}_hash"], "chars": len(text)}
    kept = fields[prefix]
    if kept is not None or not text:
        return kept or "", meta
    return f"[redacted: {len(text)} characters, {_short(meta['hash'])}…]", meta


def _short(digest: str) -> str:
    """A digest's algorithm and its first 12 hex digits, for a placeholder a person can compare."""
    algorithm, _, hexdigest = digest.partition(":")
    return f"{algorithm}:{hexdigest[:12]}"


def _error(redactor: Redactor, text: str) -> dict[str, Any]:
    content, meta = _text(redactor, text, "error")
    return {"text": content, **meta}


def _arguments(redactor: Redactor, call: dict[str, Any]) -> dict[str, Any]:
    text = str(call.get("args", ""))
    fields = redactor.text_fields(text, "text")
    content = fields["text"]
    if content is None:
        return {"redacted": fields["text_hash"], "chars": len(text)}
    try:
        parsed = loads_bounded(content.encode("utf-8"))
    except (ValueError, LedgerError):
        return {"arguments": content}  # scrubbing can break the JSON; the text is still there
    return parsed if isinstance(parsed, dict) else {"arguments": parsed}


#: (metadata name, manifest name) of each per-step figure
_STEP_FIELDS = (("step", "step"), ("status", "status"), ("finish_reason", "finishReason"),
                ("input_tokens", "inputTokens"), ("output_tokens", "outputTokens"),
                ("latency_ms", "latencyMs"), ("ttft_ms", "ttftMs"), ("tool_calls", "toolCalls"),
                ("chars", "chars"), ("words", "words"))  # fmt: skip


def _step(step: dict[str, Any]) -> dict[str, Any]:
    return {name: step.get(key) for name, key in _STEP_FIELDS}


def _verify(ledger: Path) -> dict[str, Any]:
    """The ledger's verify result: ok, and the rule of each violation found."""
    if not ledger.is_file():
        return {"ok": False, "records": 0, "violations": ["ledger.missing"]}
    report, _ = verify_file(ledger)
    return {"ok": report.ok, "records": report.records, "violations": [v.rule for v in report.violations]}


def _policy_sha(ledger: Path) -> str | None:
    for rec in _records(ledger):
        if rec.get("type") == "loop_armed" and rec.get("timeStepSha256"):
            return f"sha256:{rec['timeStepSha256']}"
    return None
