"""The tick plugin's options: defaults from the spec, and startup failures that name the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from tickloop.errors import ConfigError
from tickloop.harness import TickOptions


def test_defaults_match_the_spec(tmp_path: Path) -> None:
    """defaultTicks 6, delayMs 1000, auditDir .tickloop-audit under the working directory."""
    options = TickOptions.from_mapping({}, cwd=tmp_path)
    assert (options.default_ticks, options.delay_ms) == (6, 1000)
    assert options.audit_dir == tmp_path / ".tickloop-audit"
    assert list(options.policies) == ["default"]


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({"defaultTicks": 0}, "defaultTicks"),
        ({"defaultTicks": 65}, "defaultTicks"),
        ({"defaultTicks": "six"}, "defaultTicks"),
        ({"delayMs": -1}, "delayMs"),
        ({"delayMs": 60_001}, "delayMs"),
        ({"auditDir": 3}, "auditDir"),
        ({"delaysMs": 5}, "delaysMs"),
        ({"policies": {"1bad": "x"}}, "policies"),
        ({"policies": {"blank": "   "}}, "policies"),
        ({"policies": {"default": "override"}}, "policies"),
        ({"defaultPolicy": "nosuch"}, "defaultPolicy"),
    ],
)
def test_invalid_configuration_fails_at_startup_naming_the_key(config: dict[str, object], key: str) -> None:
    """Every invalid option is refused before the plugin starts, with the offending key in the message."""
    with pytest.raises(ConfigError, match=key):
        TickOptions.from_mapping(config)


def test_policies_are_frozen_at_startup() -> None:
    """Mutating the configuration mapping afterwards cannot change a compiled policy."""
    policies = {"calm": "a quiet time step"}
    options = TickOptions.from_mapping({"policies": policies})
    policies["calm"] = "something else"
    assert options.policies["calm"].time_step_text == "a quiet time step"
