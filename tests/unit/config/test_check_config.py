"""Every configuration section is checked when a process starts: an unknown key or a wrong type names
its section and key, driven by each section's own struct."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from tickloop.config import Settings
from tickloop.config_sections import PROFILE_SECTIONS, SECTION_TYPES, check_config, section_type
from tickloop.errors import ConfigError

#: A value no scalar, list-of-scalars or table field accepts.
WRONG = [[["not", "this"]]]


def _raw_sections() -> list[str]:
    """The raw operator tables of ``Settings`` (each validated later into its own type)."""
    typed = {"tick", "model", "store", "env_file", "profiles"}
    return [f.name for f in msgspec.structs.fields(Settings) if f.name not in typed]


def _wrong_field(name: str) -> str:
    """The TOML name of the first field of section ``name`` that ``WRONG`` is the wrong type for."""
    for field in msgspec.structs.fields(section_type(name)):
        try:
            msgspec.convert({field.encode_name: WRONG}, section_type(name), strict=False)
        except msgspec.ValidationError:
            return field.encode_name
    raise AssertionError(f"[{name}] has no field a nested list is wrong for")


def test_every_raw_section_has_a_type() -> None:
    """A new raw table on Settings must name its struct, or its typos would go unchecked."""
    assert sorted(_raw_sections()) == sorted(SECTION_TYPES)


@pytest.mark.parametrize("name", sorted(SECTION_TYPES))
def test_an_unknown_key_in_any_section_names_the_section_and_key(name: str) -> None:
    """`[NAME] zzTypo = 1` fails naming [NAME] and zzTypo."""
    settings = msgspec.structs.replace(Settings(), **{name: {"zzTypo": 1}})
    with pytest.raises(ConfigError, match=rf"\[{name}\].*zzTypo"):
        check_config(settings)


@pytest.mark.parametrize("name", sorted(SECTION_TYPES))
def test_a_wrong_type_in_any_section_names_the_section_and_key(name: str) -> None:
    """A value of the wrong type under any section fails naming the section and the key's path."""
    key = _wrong_field(name)
    settings = msgspec.structs.replace(Settings(), **{name: {key: WRONG}})
    with pytest.raises(ConfigError, match=rf"\[{name}\].*{key}"):
        check_config(settings)


@pytest.mark.parametrize("name", PROFILE_SECTIONS)
def test_a_typo_in_a_profile_override_names_the_profile_section(name: str) -> None:
    """`[profiles.me.NAME] zzTypo` fails naming [profiles.me.NAME]."""
    settings = Settings(profiles={"me": {name: {"zzTypo": 1}}})
    with pytest.raises(ConfigError, match=rf"\[profiles\.me\.{name}\].*zzTypo"):
        check_config(settings)


@pytest.mark.parametrize(
    ("profiles", "fragment"),
    [({"me": {"smtp": {}}}, "unknown sections"), ({"me": 3}, "must be a table")],
)
def test_a_profile_may_only_override_its_sections(profiles: dict[str, Any], fragment: str) -> None:
    """A profile table overriding something else, or not a table, is refused."""
    with pytest.raises(ConfigError, match=fragment):
        check_config(Settings(profiles=profiles))


def test_a_typo_nested_in_a_section_is_caught() -> None:
    """`[handlers.workspace] jali` (a typo the fast tick used to ignore) names the nested path."""
    settings = Settings(handlers={"workspace": {"jali": "/tmp"}})
    with pytest.raises(ConfigError, match=r"\[handlers\].*jali.*workspace"):
        check_config(settings)


def test_the_defaults_and_a_valid_file_pass() -> None:
    """No tables, or valid ones, raise nothing."""
    check_config(Settings())
    check_config(Settings(smtp={"host": "127.0.0.1"}, executor={"batch": 3}), model="offline")


@pytest.mark.parametrize("name", ["nope", "", "OFFLINE"])
def test_a_model_nothing_defines_is_refused_naming_the_known_ones(name: str) -> None:
    """TICKLOOP_MODEL=nope fails at start, saying which models exist."""
    with pytest.raises(ConfigError, match=r"unknown model .*known models are: offline, local"):
        check_config(Settings(), model=name)


def test_the_model_check_knows_the_registrys_names() -> None:
    """Every name the model registry resolves passes the start-up check."""
    from tickloop.models.registry import endpoints  # noqa: PLC0415

    model = {"baseUrl": "http://127.0.0.1:1/v1", "endpoints": {"mine": {"baseUrl": "x", "model": "m"}}}
    settings = msgspec.convert({"model": model}, Settings)
    assert {"local", "env", "mine"} <= set(endpoints(settings))
    for name in ["offline", *endpoints(settings)]:
        check_config(settings, model=name)
