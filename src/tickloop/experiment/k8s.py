"""``tickloop experiment k8s``: the run as a Kubernetes Indexed Job writing to a shared volume.

Each pod runs ``tickloop experiment run`` with ``--shard $((JOB_COMPLETION_INDEX+1))/N`` into its own
directory on the volume; ``tickloop experiment export`` merges the shard directories afterwards.

The ConfigMap carries the spec and a config with just what the pod needs to resolve the spec's
models and policies: their ``[model.endpoints.NAME]`` tables, ``[model.offline]`` and the
``[tick] policies`` the spec uses. Keys never enter it: each ``apiKeyEnv`` becomes an ``env`` entry
whose ``secretKeyRef`` names the Secret given by ``--secret``. The ConfigMap is not secret (the
opening and the policies are in it verbatim); the output's header says so.

The manifest is JSON after a YAML comment header, which every YAML parser reads (no YAML library).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import msgspec

from tickloop.config import Settings
from tickloop.errors import ConfigError
from tickloop.experiment.preflight import spec_toolsets
from tickloop.experiment.spec import Spec, parse_spec

_IMAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:@-]{0,254}$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
#: Where the pod sees its volumes; the command reads them from these variables.
SPEC_DIR, DATA_DIR = "/spec", "/data"

HEADER = """\
# tickloop experiment {name}: a ConfigMap and an Indexed Job ({shards} pods). Apply with kubectl apply -f -
# The ConfigMap is NOT secret: it holds the spec (the opening and the policies verbatim) and the
# endpoints' base URLs and model ids. API keys come only from the Secret {secret}.
"""


def dns_label(text: str, max_len: int = 40) -> str:
    """A valid DNS-1123 label from ``text``: lower case, ``[a-z0-9-]``, starting and ending with an
    alphanumeric, at most ``max_len``; a shortened name keeps a hash of the whole, so two long
    names do not collide."""
    name = re.sub(r"-+", "-", re.sub(r"[^a-z0-9-]", "-", text.lower())).strip("-") or "experiment"
    if len(name) > max_len:
        digest = hashlib.sha256(text.encode()).hexdigest()[:8]
        name = name[: max_len - 9].rstrip("-") + "-" + digest
    return name


def pod_config(spec: Spec, settings: Settings) -> tuple[str, dict[str, str]]:
    """The config.toml the pods read, and each key variable an endpoint needs (variable -> model).

    ``ConfigError`` for a model the pod could not resolve (``env``, defined by this machine's
    environment; an unknown name) or a spec that needs this machine's files (``tools``)."""
    from tickloop.models.registry import endpoints  # noqa: PLC0415

    if spec_toolsets(spec):
        raise ConfigError(
            f"tools {list(spec_toolsets(spec))}: the workspace is a directory of this machine; "
            "experiment k8s cannot carry it into the pods"
        )
    found, lines, keys = endpoints(settings), [], {}
    for name in spec.models:
        if name == "offline":
            continue
        if name == "env" or name not in found:
            why = "is set by this machine's environment" if name == "env" else "is not configured"
            raise ConfigError(
                f"models: {name!r} {why}; define it under [model.endpoints.{name}] to run it in pods"
            )
        raw = {k: v for k, v in msgspec.to_builtins(found[name]).items() if v not in (None, "")}
        lines += [
            f"[model.endpoints.{json.dumps(name)}]",
            *(f"{k} = {json.dumps(v)}" for k, v in raw.items()),
            "",
        ]
        if raw.get("apiKeyEnv"):
            keys[str(raw["apiKeyEnv"])] = name
    offline = msgspec.to_builtins(settings.model.offline)
    lines += ["[model.offline]", *(f"{k} = {json.dumps(v)}" for k, v in offline.items()), ""]
    used = {p: t for p, t in settings.tick.policies.items() if p in spec.policy_ids}
    lines += ["[tick.policies]", *(f"{json.dumps(p)} = {json.dumps(t)}" for p, t in sorted(used.items()))]
    return "\n".join(lines) + "\n", keys


def _check_resolves(spec: Spec, config: str) -> None:
    """Parse the spec again as a pod would: with the carried policies only."""
    import tomllib  # noqa: PLC0415

    carried = tomllib.loads(config)["tick"]["policies"]
    parse_spec(spec.source, where="the spec as the pods read it", configured=carried)


def _env(keys: dict[str, str], secret: str | None) -> list[dict[str, Any]]:
    if keys and not secret:
        needs = ", ".join(f"{var} (model {model!r})" for var, model in sorted(keys.items()))
        raise ConfigError(f"the pods need API keys: {needs}; name the Secret holding them with --secret")
    env: list[dict[str, Any]] = [
        {"name": "TICKLOOP_CONFIG", "value": f"{SPEC_DIR}/config.toml"},
        {"name": "EXPERIMENT_SPEC_DIR", "value": SPEC_DIR},
        {"name": "EXPERIMENT_DATA_DIR", "value": DATA_DIR},
    ]
    env += [
        {"name": var, "valueFrom": {"secretKeyRef": {"name": secret, "key": var}}} for var in sorted(keys)
    ]
    return env


def indexed_job(
    spec: Spec,
    settings: Settings,
    *,
    image: str,
    shards: int,
    claim: str = "tickloop-experiments",
    secret: str | None = None,
) -> str:
    """A ConfigMap (spec and pod config) and an Indexed Job of ``shards`` completions, as a List."""
    if not _IMAGE.match(image):
        raise ConfigError(f"--image {image!r}: not an image reference")
    if not 1 <= shards <= 10_000:
        raise ConfigError(f"--shards {shards}: expected 1..10000")
    for flag, value in (("--claim", claim), ("--secret", secret)):
        if value is not None and not (_LABEL.match(value) and len(value) <= 63):
            raise ConfigError(f"{flag} {value!r}: not a Kubernetes name (lower case letters, digits, '-')")
    config, keys = pod_config(spec, settings)
    _check_resolves(spec, config)
    name = dns_label(spec.name)
    items = [_config_map(name, spec, config), _job(name, image, shards, claim, _env(keys, secret))]
    body = json.dumps({"apiVersion": "v1", "kind": "List", "items": items}, indent=2)
    return HEADER.format(name=spec.name, shards=shards, secret=secret or "(none needed)") + body + "\n"


def _config_map(name: str, spec: Spec, config: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{name}-spec", "labels": {"app.kubernetes.io/name": "tickloop-experiment"}},
        "data": {"spec.toml": spec.source.decode("utf-8"), "config.toml": config},
    }


def _job(name: str, image: str, shards: int, claim: str, env: list[dict[str, Any]]) -> dict[str, Any]:
    command = (
        'exec tickloop experiment run "$EXPERIMENT_SPEC_DIR/spec.toml" '
        f'--out "$EXPERIMENT_DATA_DIR/{name}/shard-$JOB_COMPLETION_INDEX" '
        f'--shard "$((JOB_COMPLETION_INDEX + 1))/{shards}"'
    )
    container = {
        "name": "run",
        "image": image,
        "command": ["/bin/sh", "-c", command],
        "env": env,
        "volumeMounts": [
            {"name": "data", "mountPath": DATA_DIR},
            {"name": "spec", "mountPath": SPEC_DIR, "readOnly": True},
        ],
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/name": "tickloop-experiment"}},
        "spec": {
            "completionMode": "Indexed",
            "completions": shards,
            "parallelism": shards,
            "backoffLimitPerIndex": 2,
            # Exit 2 is a configuration error: the same pod fails the same way however often it runs.
            "podFailurePolicy": {
                "rules": [{"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [2]}}]
            },
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [container],
                    "volumes": [
                        {"name": "data", "persistentVolumeClaim": {"claimName": claim}},
                        {"name": "spec", "configMap": {"name": f"{name}-spec"}},
                    ],
                }
            },
        },
    }
