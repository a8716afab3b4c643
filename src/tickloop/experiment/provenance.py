"""How a run was made, so it can be reproduced from its export: ``run.json`` and the ``runs`` table.

The runner writes ``run.json`` into the run directory before the first session starts: tickloop's
version, the spec's sha256 and each opening text's, each policy's sha256 and, for each model, the
configured model id and the generation settings the requests carry. The model id the provider
returned is recorded per session in the manifest (``modelReturned``) and gathered here.

Every export format calls ``provenance(directories)``; nothing in it is secret (no URL, no key).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from tickloop import __version__
from tickloop.config import Settings
from tickloop.errors import ConfigError
from tickloop.experiment.schema import SCHEMA_VERSION
from tickloop.experiment.spec import Spec

RUN_FILE = "run.json"
#: Settings that, changed between a run and its resumption, would mix two experiments in one grid.
_FIXED = ("specSha256", "openingSha256", "policies", "models")


def model_settings(name: str, settings: Settings) -> dict[str, Any]:
    """The configured model id and generation settings of one endpoint (null: not sent)."""
    from tickloop.models.registry import endpoints  # noqa: PLC0415

    # top_p and seed are not settings of an endpoint: they are never sent, and say so (null).
    sent: dict[str, Any] = dict.fromkeys(("modelId", "temperature", "topP", "seed", "maxTokens"))
    if name == "offline":
        return sent
    ep = endpoints(settings)[name]
    return {**sent, "modelId": ep.model, "temperature": ep.temperature, "maxTokens": ep.max_tokens}


def spec_openings(spec: Spec) -> dict[str, tuple[str, ...]]:
    """The spec's opening variants by name (a spec with one ``opening`` has one, ``default``)."""
    return dict(spec.openings)


def run_record(spec: Spec, settings: Settings) -> dict[str, Any]:
    """What ``run.json`` holds for this spec under these settings."""
    return {
        "schemaVersion": SCHEMA_VERSION,
        "tickloopVersion": __version__,
        "experiment": spec.name,
        "specSha256": spec.sha256,
        "openingSha256": {
            name: ["sha256:" + hashlib.sha256(line.encode()).hexdigest() for line in lines]
            for name, lines in spec_openings(spec).items()
        },
        "policies": {pid: "sha256:" + spec.policies[pid].time_step_sha256 for pid in spec.policy_ids},
        "models": {name: model_settings(name, settings) for name in spec.models},
        "steps": spec.steps,
    }


def write_run_record(spec: Spec, settings: Settings, out: Path) -> None:
    """Write ``run.json``, or check that a resumed run uses the same models and policies."""
    record, path = run_record(spec, settings), out / RUN_FILE
    if path.is_file():
        held = read_run_record(out)
        changed = [k for k in _FIXED if held.get(k) != record[k]]
        if changed:
            raise ConfigError(
                f"{out}: this run began with other {', '.join(changed)} ({path}); "
                "resuming it now would mix two experiments: use another --out"
            )
        return
    tmp = path.with_name(f".{RUN_FILE}.{os.getpid()}.tmp")  # processes starting at once never share it
    tmp.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(path)


def read_run_record(directory: Path) -> dict[str, Any]:
    """``run.json`` of a run directory ({} for a run made before it existed)."""
    path = directory / RUN_FILE
    if not path.is_file():
        return {}
    try:
        held = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        raise ConfigError(f"{path}: not JSON") from None
    if not isinstance(held, dict):
        raise ConfigError(f"{path}: not a JSON object")
    return held


def provenance(directories: Iterable[Path], returned: dict[str, set[str]] | None = None) -> dict[str, Any]:
    """The provenance of an export over run directories of one spec (shards share it).

    ``returned``: the model ids providers returned, by endpoint; read from the manifests if None."""
    directories = list(directories)
    if returned is None:
        from tickloop.experiment.dataset import returned_models  # noqa: PLC0415  (dataset imports this module)

        returned = returned_models(directories)
    records = [read_run_record(d) for d in directories]
    first = next((r for r in records if r), {})
    models = {
        name: {**fields, "returnedModelIds": sorted(returned.get(name, ()))}
        for name, fields in sorted(first.get("models", {}).items())
    }
    return {
        "schemaVersion": SCHEMA_VERSION,
        "tickloopVersion": first.get("tickloopVersion"),
        "exportedBy": __version__,
        "experiment": first.get("experiment"),
        "specSha256": first.get("specSha256"),
        "openingSha256": first.get("openingSha256", {}),
        "policies": first.get("policies", {}),
        "models": models,
    }


def run_rows(prov: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The ``runs`` table: one row per model."""
    for name, fields in prov["models"].items():
        yield {
            "experiment": prov["experiment"],
            "schema_version": prov["schemaVersion"],
            "tickloop_version": prov["tickloopVersion"],
            "spec_sha256": prov["specSha256"],
            "opening_sha256": json.dumps(prov["openingSha256"], sort_keys=True),
            "model": name,
            "model_id": fields.get("modelId"),
            "returned_model_ids": ",".join(fields["returnedModelIds"]) or None,
            "temperature": fields.get("temperature"),
            "top_p": fields.get("topP"),
            "seed": fields.get("seed"),
            "max_tokens": fields.get("maxTokens"),
        }


def scrubbed(prov: dict[str, Any], scrub: Callable[[str], str]) -> dict[str, Any]:
    """``prov`` with each model id scrubbed: a server may name its model by a path on its machine
    (llama.cpp answers with the GGUF file's path), and a config may too."""
    models = {
        name: {
            **fields,
            "modelId": None if fields.get("modelId") is None else scrub(str(fields["modelId"])),
            "returnedModelIds": [scrub(i) for i in fields.get("returnedModelIds", [])],
        }
        for name, fields in prov["models"].items()
    }
    return {**prov, "models": models}
