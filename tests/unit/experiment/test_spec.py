"""Experiment specs are validated up front (errors name the key), and shards split the grid exactly."""

from __future__ import annotations

import json

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tickloop.config import Settings
from tickloop.errors import ConfigError
from tickloop.experiment.k8s import indexed_job
from tickloop.experiment.spec import Shard, parse_spec

GOOD = """
name = "grid"
opening = ["Tidy the README, then wait."]
policies = ["default", "brief"]
models = ["offline", "other"]
steps = 4
replicates = 3
[inlinePolicies]
brief = "tick (one sentence)"
"""


def test_a_valid_spec_enumerates_its_grid() -> None:
    """2 policies x 2 models x 3 replicates is 12 sessions with unique keys and session ids."""
    spec = parse_spec(GOOD.encode(), where="spec")
    sessions = spec.sessions()
    assert len(sessions) == 12
    assert len({s.key for s in sessions}) == 12
    assert len({s.session_id(spec.name, 1) for s in sessions}) == 12
    assert spec.sha256.startswith("sha256:")
    assert spec.policies["brief"].time_step_text == "tick (one sentence)"


@pytest.mark.parametrize(
    ("text", "names"),
    [
        (GOOD.replace("steps = 4", "steps = 0"), "$.steps"),
        (GOOD.replace("steps = 4", "steps = 257"), "$.steps"),
        (GOOD.replace("replicates = 3", "replicates = -1"), "$.replicates"),
        (GOOD.replace('name = "grid"', 'name = "../etc"'), "$.name"),
        (GOOD.replace('models = ["offline", "other"]', "models = []"), "$.models"),
        (GOOD.replace('["default", "brief"]', '["default", "nope"]'), "unknown policy 'nope'"),
        (GOOD.replace('["default", "brief"]', '["default", "default"]'), "listed twice: default"),
        (GOOD.replace('opening = ["Tidy the README, then wait."]', 'opening = ["/tick 5"]'), "opening[0]"),
        ("colour = 1\n" + GOOD, "colour"),
        (GOOD + "\nbrief2 = 1\n", "$.inlinePolicies"),
        (GOOD.replace("steps = 4", 'steps = "four"'), "$.steps"),
        (GOOD.replace('brief = "tick (one sentence)"', 'brief = " "'), "blank"),
        ("name = [", "not valid TOML"),
        ('tools = ["shell"]\n' + GOOD, "unknown toolset 'shell' (known: workspace)"),
    ],
)
def test_bad_specs_name_the_key(text: str, names: str) -> None:
    """Every invalid spec is refused before anything runs, with an error that names what is wrong."""
    with pytest.raises(ConfigError, match=None) as caught:
        parse_spec(text.encode(), where="spec.toml")
    assert names in str(caught.value)
    assert str(caught.value).startswith("spec.toml")


def test_binary_spec_is_refused_clearly() -> None:
    """A spec that is not UTF-8 says so, with the byte offset."""
    with pytest.raises(ConfigError, match="not UTF-8"):
        parse_spec(b"name = \xff\xfe", where="spec.toml")


@given(st.integers(min_value=1, max_value=12), st.integers(min_value=1, max_value=40))
def test_shards_are_disjoint_and_complete(count: int, replicates: int) -> None:
    """For any N, the N shards' sessions are pairwise disjoint and together are the whole grid."""
    spec = parse_spec(GOOD.replace("replicates = 3", f"replicates = {replicates}").encode(), where="s")
    everything = {p.key for p in spec.sessions()}
    parts = [{p.key for p in spec.sessions() if Shard(k, count).owns(p)} for k in range(1, count + 1)]
    assert set().union(*parts) == everything
    assert sum(len(p) for p in parts) == len(everything)


@pytest.mark.parametrize("text", ["0/3", "4/3", "3", "a/b", "1/0", "-1/2", "1/3/4"])
def test_bad_shards_are_refused(text: str) -> None:
    """--shard takes K/N with 1 <= K <= N."""
    with pytest.raises(ConfigError, match="--shard"):
        Shard.parse(text)


def test_k8s_manifest_is_an_indexed_job_over_the_shards() -> None:
    """The generated Job runs N indexed pods, each taking its shard from JOB_COMPLETION_INDEX."""
    spec = parse_spec(GOOD.replace('"other"', '"offline2"').replace('"offline", ', "").encode(), where="s")
    settings = msgspec.convert(
        {"model": {"endpoints": {"offline2": {"baseUrl": "http://m:1/v1", "model": "m"}}}}, Settings
    )
    manifest = indexed_job(spec, settings, image="ghcr.io/me/tickloop:1", shards=5)
    items = json.loads(manifest[manifest.index("{") :])["items"]  # JSON after the comment header
    config_map, job = items
    assert config_map["data"]["spec.toml"] == spec.source.decode()
    assert (job["spec"]["completionMode"], job["spec"]["completions"]) == ("Indexed", 5)
    command = job["spec"]["template"]["spec"]["containers"][0]["command"][-1]
    assert '--shard "$((JOB_COMPLETION_INDEX + 1))/5"' in command
    with pytest.raises(ConfigError, match="--image"):
        indexed_job(spec, settings, image="x; rm -rf /", shards=2)
