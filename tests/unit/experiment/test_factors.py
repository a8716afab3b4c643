"""Factorial specs: models x policies x openings x tools x temperature, and old specs unchanged."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tickloop.errors import ConfigError
from tickloop.experiment.spec import Shard, parse_spec

OLD = """
name = "grid"
opening = ["Tidy the README, then wait."]
policies = ["default", "brief"]
models = ["offline", "other"]
steps = 4
replicates = 2
tools = ["workspace"]
[inlinePolicies]
brief = "tick (one sentence)"
"""

FACTORIAL = """
name = "fx"
policies = ["default"]
models = ["offline", "other"]
steps = 2
replicates = 2
tools = ["none", "ws"]
temperature = [0.0, 0.7]
[openings]
terse = ["Wait for time steps."]
chatty = ["Hello there.", "Then wait for time steps."]
[toolsets]
ws = ["workspace"]
"""


def test_a_spec_without_factors_keeps_its_keys_session_ids_and_levels() -> None:
    """A model x policy spec written before factors existed gives the same keys, session ids and
    order as before, one opening named default, its tools as one level, and no temperature."""
    spec = parse_spec(OLD.encode(), where="spec")
    assert [s.key for s in spec.sessions()] == [
        f"{m}/{p}/r00{r}" for m in ("offline", "other") for p in ("default", "brief") for r in (1, 2)
    ]
    assert spec.sessions()[0].session_id("grid", 1) == "grid-offline-default-r001"
    assert spec.sessions()[0].session_id("grid", 2) == "grid-offline-default-r001-a2"
    assert {c.name for c in spec.cells()} == {
        "offline/default",
        "offline/brief",
        "other/default",
        "other/brief",
    }
    assert spec.opening("default") == ("Tidy the README, then wait.",)
    assert spec.tools("workspace") == ("workspace",)
    assert {(c.opening, c.tools, c.temperature) for c in spec.cells()} == {("default", "workspace", None)}


def test_no_tools_is_one_level_named_none() -> None:
    """A spec without ``tools`` runs every session without tools, under the level ``none``."""
    spec = parse_spec(OLD.replace('tools = ["workspace"]\n', "").encode(), where="spec")
    assert {c.tools for c in spec.cells()} == {"none"}
    assert spec.tools("none") == ()
    assert spec.every_toolset == frozenset()


def test_a_factorial_spec_is_the_product_of_its_levels() -> None:
    """2 models x 1 policy x 2 openings x 2 tools levels x 2 temperatures x 2 replicates is 32
    sessions; each varying factor's level is in the key and the session id."""
    spec = parse_spec(FACTORIAL.encode(), where="spec")
    sessions = spec.sessions()
    assert len(sessions) == 32
    assert len({s.key for s in sessions}) == len({s.session_id("fx", 1) for s in sessions}) == 32
    assert sessions[0].key == "offline/default/terse/none/t0/r001"
    assert sessions[-1].session_id("fx", 1) == "fx-other-default-chatty-ws-t0.7-r002"
    levels = {(c.opening, c.tools, c.temperature) for c in spec.cells()}
    assert len(levels) == 8
    assert spec.tools("ws") == ("workspace",)
    assert spec.every_toolset == {"workspace"}
    assert spec.opening("chatty") == ("Hello there.", "Then wait for time steps.")
    assert sessions[0].cell.factors() == {
        "model": "offline", "policy": "default", "opening": "terse", "tools": "none", "temperature": 0.0,
    }  # fmt: skip


def test_one_temperature_applies_to_every_session_without_changing_keys() -> None:
    """``temperature = 0.3`` is one level: every session gets it, and no key changes."""
    spec = parse_spec(OLD.replace("steps = 4", "steps = 4\ntemperature = 0.3").encode(), where="spec")
    assert {c.temperature for c in spec.cells()} == {0.3}
    assert spec.sessions()[0].key == "offline/default/r001"


@pytest.mark.parametrize(
    ("edit", "names"),
    [
        (lambda s: s.replace("[openings]", 'opening = ["x"]\n[openings]'), "either opening"),
        (
            lambda s: s.replace('terse = ["Wait for time steps."]', "terse = []"),
            "openings.terse: expected 1 to 32 lines",
        ),
        (lambda s: s.replace('terse = ["Wait', 'terse = ["/tick 3", "Wait'), "openings.terse[0]"),
        (lambda s: s.replace('["none", "ws"]', '["none", "shell"]'), "tools: unknown toolset 'shell'"),
        (lambda s: s.replace('["none", "ws"]', '["ws", "ws"]'), "tools: listed twice: ws"),
        (lambda s: s.replace('ws = ["workspace"]', 'ws = ["shell"]'), "toolsets.ws: unknown toolset 'shell'"),
        (lambda s: s.replace('ws = ["workspace"]', 'none = ["workspace"]'), "toolsets.none"),
        (lambda s: s.replace("[0.0, 0.7]", "[0.0, 2.5]"), "$.temperature"),
        (lambda s: s.replace("[0.0, 0.7]", "[0.7, 0.70]"), "temperature: listed twice: t0.7"),
        (lambda s: s.replace("[0.0, 0.7]", "[]"), "$.temperature"),
        (lambda s: s.replace("[0.0, 0.7]", '"hot"'), "$.temperature"),
        (lambda s: s.replace("[openings]", "[openings]\n'bad name' = [\"x\"]"), "$.openings"),
    ],
)
def test_bad_factors_name_the_key(edit: object, names: str) -> None:
    """Every invalid factor is refused before anything runs, naming the key that is wrong."""
    with pytest.raises(ConfigError) as caught:
        parse_spec(edit(FACTORIAL).encode(), where="spec.toml")  # type: ignore[operator]
    assert names in str(caught.value)
    assert str(caught.value).startswith("spec.toml")


_NAMES = st.lists(st.from_regex(r"[a-z][a-z0-9]{0,5}", fullmatch=True), min_size=1, max_size=3, unique=True)


@given(
    openings=_NAMES,
    temps=st.lists(st.integers(0, 20), min_size=1, max_size=3, unique=True),
    tools=st.sampled_from([["none"], ["none", "workspace"], ["workspace"]]),
    replicates=st.integers(1, 3),
    count=st.integers(1, 4),
)
def test_any_grid_is_the_product_and_shards_split_it_exactly(
    openings: list[str], temps: list[int], tools: list[str], replicates: int, count: int
) -> None:
    """For any levels, the grid has the product's size, unique keys and session ids, and the shards
    of ``--shard K/N`` are disjoint and cover it."""
    body = "\n".join(f'{name} = ["Wait {name}."]' for name in openings)
    spec = parse_spec(
        (
            'name = "p"\npolicies = ["default"]\nmodels = ["offline"]\nsteps = 1\n'
            f"replicates = {replicates}\n"
            f"tools = {tools!r}\ntemperature = {[t / 10 for t in temps]!r}\n[openings]\n{body}\n"
        ).encode(),
        where="p",
    )
    sessions = spec.sessions()
    assert len(sessions) == math.prod((len(openings), len(tools), len(temps), replicates))
    assert len({s.key for s in sessions}) == len({s.session_id("p", 1) for s in sessions}) == len(sessions)
    owned = [[s.key for s in sessions if Shard(k, count).owns(s)] for k in range(1, count + 1)]
    assert sorted(k for part in owned for k in part) == sorted(s.key for s in sessions)
