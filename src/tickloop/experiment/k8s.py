"""``tickloop experiment k8s``: the run as a Kubernetes Indexed Job writing to a shared volume.

Each pod runs ``tickloop experiment run`` with ``--shard $((JOB_COMPLETION_INDEX+1))/N`` into its own
directory on the volume; ``tickloop experiment export`` merges the shard directories afterwards.
The manifest is written as JSON, which every YAML parser reads (no YAML library needed).
"""

from __future__ import annotations

import json
import re

from tickloop.errors import ConfigError
from tickloop.experiment.spec import Spec

_IMAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:@-]{0,254}$")


def indexed_job(spec: Spec, *, image: str, shards: int, claim: str = "tickloop-experiments") -> str:
    """A ConfigMap with the spec and an Indexed Job of ``shards`` completions, as one JSON list."""
    if not _IMAGE.match(image):
        raise ConfigError(f"--image {image!r}: not an image reference")
    if not 1 <= shards <= 10_000:
        raise ConfigError(f"--shards {shards}: expected 1..10000")
    name = re.sub(r"[^a-z0-9-]", "-", spec.name.lower()).strip("-")[:40] or "experiment"
    run_dir = f"/data/{name}/shard-$(JOB_COMPLETION_INDEX)"
    command = (
        f'tickloop experiment run /spec/spec.toml --out "{run_dir}" '
        f'--shard "$((JOB_COMPLETION_INDEX + 1))/{shards}"'
    )
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{name}-spec"},
        "data": {"spec.toml": spec.source.decode("utf-8")},
    }
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/name": "tickloop-experiment"}},
        "spec": {
            "completionMode": "Indexed",
            "completions": shards,
            "parallelism": shards,
            "backoffLimitPerIndex": 2,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "run",
                            "image": image,
                            "command": ["/bin/sh", "-c", command],
                            "volumeMounts": [
                                {"name": "data", "mountPath": "/data"},
                                {"name": "spec", "mountPath": "/spec", "readOnly": True},
                            ],
                        }
                    ],
                    "volumes": [
                        {"name": "data", "persistentVolumeClaim": {"claimName": claim}},
                        {"name": "spec", "configMap": {"name": f"{name}-spec"}},
                    ],
                }
            },
        },
    }
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": [config_map, job]}, indent=2) + "\n"
