"""`experiment k8s`: a manifest the Kubernetes schema accepts, whose pods can run configured models.

The pods are simulated as a kubelet would run them: the container's own command with the manifest's
env, the ConfigMap written to a directory as a mounted volume, the Secret's values as env vars."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import msgspec
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tickloop.config import Settings
from tickloop.errors import ConfigError
from tickloop.experiment.k8s import DATA_DIR, SPEC_DIR, dns_label, indexed_job
from tickloop.experiment.spec import parse_spec
from tickloop.testing.openai_server import OpenAIServer, Reply

SPEC = """
name = "pods"
opening = ["Wait for time steps."]
policies = ["default", "house"]
models = ["offline", "mock"]
steps = 2
replicates = 2
"""
LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
KEY_VAR = "MOCK_API_KEY"


def _settings(base_url: str = "http://mock.example:8000/v1", **endpoint: Any) -> Settings:
    raw = {
        "tick": {"policies": {"house": "tick (the house style)", "unused": "tick (never sent)"}},
        "model": {
            "offline": {"echo": True},
            "endpoints": {"mock": {"baseUrl": base_url, "model": "mock-1", "apiKeyEnv": KEY_VAR, **endpoint}},
        },
    }
    return msgspec.convert(raw, Settings)


def _manifest(text: str) -> list[dict[str, Any]]:
    parsed = yaml.safe_load(text)  # the comment header and the JSON body are one YAML document
    assert parsed == json.loads(text[text.index("{") :])
    return list(parsed["items"])


def _spec(text: str = SPEC, s: Settings | None = None) -> Any:
    return parse_spec(text.encode(), where="spec", configured=dict((s or _settings()).tick.policies))


def test_the_manifest_validates_against_the_kubernetes_schema() -> None:
    """The ConfigMap and the Job pass kubernetes-validate's offline OpenAPI schemas, strictly."""
    text = indexed_job(_spec(), _settings(), image="ghcr.io/me/tickloop:1", shards=3, secret="model-keys")
    for item in _manifest(text):
        kubernetes_validate.validate(item, "1.33", strict=True)


def test_keys_come_from_the_secret_and_the_config_map_says_it_is_not_secret() -> None:
    """Each apiKeyEnv is an env entry with a secretKeyRef into --secret; the ConfigMap carries the
    endpoint and the policies the spec uses (no key, no unused policy), and the header warns."""
    text = indexed_job(_spec(), _settings(), image="img:1", shards=2, secret="model-keys")
    assert "NOT secret" in text.splitlines()[1]
    config_map, job = _manifest(text)
    env = {e["name"]: e for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env[KEY_VAR]["valueFrom"] == {"secretKeyRef": {"name": "model-keys", "key": KEY_VAR}}
    config = config_map["data"]["config.toml"]
    assert 'apiKeyEnv = "MOCK_API_KEY"' in config
    assert "tick (the house style)" in config
    assert "never sent" not in config


@pytest.mark.parametrize(
    ("spec_text", "settings_", "secret", "message"),
    [
        (SPEC, _settings(), None, "name the Secret holding them with --secret"),
        (SPEC.replace('"mock"', '"env"'), _settings(), "k", "'env' is set by this machine's environment"),
        (SPEC + 'tools = ["workspace"]\n', _settings(), "k", "cannot carry it into the pods"),
    ],
)
def test_specs_the_pods_could_not_run_are_refused(
    spec_text: str, settings_: Settings, secret: str | None, message: str
) -> None:
    """A model defined by this machine's environment, a workspace, or a key without --secret: refused."""
    with pytest.raises(ConfigError, match=re.escape(message)):
        indexed_job(_spec(spec_text), settings_, image="img:1", shards=2, secret=secret)


@settings(max_examples=200, deadline=None)
@given(name=st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z"))
def test_every_generated_name_is_a_dns_1123_label(name: str) -> None:
    """Whatever the spec's name, the Job, ConfigMap and volume names are valid DNS-1123 labels."""
    spec = _spec(SPEC.replace('name = "pods"', f'name = "{name}"'))
    config_map, job = _manifest(indexed_job(spec, _settings(), image="img:1", shards=2, secret="k"))
    for value in (config_map["metadata"]["name"], job["metadata"]["name"]):
        assert LABEL.match(value), value
        assert len(value) <= 63
    assert len(dns_label(name)) <= 40


def test_a_long_name_does_not_end_in_a_dash() -> None:
    """A name cut at its limit where a '-' falls keeps no trailing '-', and two long names differ."""
    a, b = dns_label("x" * 30 + "-" * 20 + "a"), dns_label("x" * 30 + "-" * 20 + "b")
    assert LABEL.match(a)
    assert LABEL.match(b)
    assert a != b


def _pod(job: dict[str, Any], index: int, mounts: Path, secrets: dict[str, str]) -> subprocess.Popen[str]:
    """One pod: the container's command, its env with the volumes' paths and the Secret's values."""
    container = job["spec"]["template"]["spec"]["containers"][0]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TICKLOOP_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"  # the image's tickloop
    for entry in container["env"]:
        if "valueFrom" in entry:
            ref = entry["valueFrom"]["secretKeyRef"]
            env[entry["name"]] = secrets[ref["key"]]
        else:  # the mount points, as the volumes appear to this process
            value = (
                entry["value"]
                .replace(SPEC_DIR, str(mounts / "spec"), 1)
                .replace(DATA_DIR, str(mounts / "data"), 1)
            )
            env[entry["name"]] = value
    env["JOB_COMPLETION_INDEX"] = str(index)
    return subprocess.Popen(
        container["command"], env=env, cwd=mounts, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _hashes(out: Path) -> dict[str, list[str]]:
    rows = [json.loads(line) for line in (out / "steps.jsonl").read_text(encoding="utf-8").splitlines()]
    found: dict[str, list[str]] = {}
    for row in sorted(rows, key=lambda r: (r["session"], r["step"])):
        found.setdefault(row["session"], []).append(row["text_hash"])
    return found


@pytest.mark.timeout(300)
def test_the_manifests_own_command_runs_each_shard_and_the_shards_merge(tmp_path: Path) -> None:
    """Run the container's command once per JOB_COMPLETION_INDEX with only the ConfigMap's config and
    the Secret's key: the merged shards hold the same session keys and digests as one process."""
    with OpenAIServer(default=Reply.echo_user(chunks=2)) as server:
        s = _settings(server.base_url)
        spec = _spec(SPEC, s)
        config_map, job = _manifest(indexed_job(spec, s, image="img:1", shards=3, secret="model-keys"))
        mounts = tmp_path / "mounts"
        (mounts / "spec").mkdir(parents=True)
        (mounts / "data").mkdir()
        for key, value in config_map["data"].items():
            (mounts / "spec" / key).write_text(value, encoding="utf-8")
        pods = [_pod(job, i, mounts, {KEY_VAR: "sk-test-pod-key"}) for i in range(job["spec"]["completions"])]
        for pod in pods:
            _, err = pod.communicate(timeout=240)
            assert pod.returncode == 0, err
        assert {r.headers.get("authorization") for r in server.requests if r.body} == {
            "Bearer sk-test-pod-key"
        }
        # the same spec in one process, against the same server, with the same config
        (tmp_path / "one").mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith("TICKLOOP_")}
        env.update(TICKLOOP_CONFIG=str(mounts / "spec" / "config.toml"), **{KEY_VAR: "sk-test-pod-key"})
        spec_file = str(mounts / "spec" / "spec.toml")
        one = subprocess.run(
            [sys.executable, "-m", "tickloop", "experiment", "run", spec_file, "--out", "one"],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240, check=False,
        )  # fmt: skip
        assert one.returncode == 0, one.stderr
    shards = sorted((mounts / "data" / "pods").iterdir())
    assert [p.name for p in shards] == ["shard-0", "shard-1", "shard-2"]
    export = [sys.executable, "-m", "tickloop", "experiment", "export", "--format", "jsonl", "--no-redact"]
    for dirs, out in (([str(p) for p in shards], "merged"), ([str(tmp_path / "one")], "single")):
        done = subprocess.run(
            [*export, *dirs, "--out", str(tmp_path / out)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
    merged, single = _hashes(tmp_path / "merged"), _hashes(tmp_path / "single")
    assert len(single) == 2 * 2 * 2
    assert merged == single


@pytest.mark.parametrize(
    ("flag", "value"), [("secret", "Model_Keys"), ("claim", "data; rm -rf /"), ("secret", "-x")]
)
def test_names_given_on_the_command_line_must_be_kubernetes_names(flag: str, value: str) -> None:
    """--secret and --claim are refused unless they are DNS-1123 labels (they go into the manifest)."""
    with pytest.raises(ConfigError, match=f"--{flag}"):
        indexed_job(_spec(), _settings(), image="img:1", shards=2, **{flag: value})
