"""The tick plugin's options, validated at startup. A bad value fails naming its key."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from tickloop.config import TickSettings
from tickloop.errors import ConfigError, PolicyError
from tickloop.protocol.policy import PolicySet


@dataclass(frozen=True, slots=True)
class TickOptions:
    """The options: ``defaultTicks`` 1..64 (6), ``delayMs`` 0..60,000 (1000), ``auditDir``, policies."""

    default_ticks: int
    delay_ms: int
    audit_dir: Path
    default_policy: str
    policies: PolicySet  #: compiled and frozen at startup: later config edits cannot reach a run
    chain: bool = False
    audit_key_env: str = ""  #: the variable's name; the key itself is read only when the ledger opens
    max_tokens_per_run: int = 0  #: 0: no budget; else ``stop.token_budget`` once a run spends more

    @classmethod
    def from_settings(cls, settings: TickSettings, *, cwd: Path | None = None) -> TickOptions:
        """Compile the policies and check ``defaultPolicy`` names one of them."""
        policies = _policies(settings)
        audit_dir = Path(settings.audit_dir).expanduser()
        return cls(
            default_ticks=settings.default_ticks,
            delay_ms=settings.delay_ms,
            audit_dir=audit_dir if audit_dir.is_absolute() else (cwd or Path.cwd()) / audit_dir,
            default_policy=settings.default_policy,
            policies=policies,
            chain=settings.chain,
            audit_key_env=settings.audit_key_env,
            max_tokens_per_run=settings.max_tokens_per_run,
        )

    @classmethod
    def from_mapping(cls, config: Mapping[str, Any], *, cwd: Path | None = None) -> TickOptions:
        """Options from a plugin config mapping (camelCase keys, as in the spec's YAML)."""
        try:
            settings = msgspec.convert(dict(config), TickSettings)
        except msgspec.ValidationError as exc:
            raise ConfigError(f"tick plugin option: {exc}") from None
        return cls.from_settings(settings, cwd=cwd)


def _policies(settings: TickSettings) -> PolicySet:
    """The compiled policies; ``ConfigError`` if one is invalid or ``defaultPolicy`` names none of them."""
    try:
        policies = PolicySet(settings.policies)
    except PolicyError as exc:
        raise ConfigError(f"tick plugin option policies: {exc.message} [{exc.rule}]") from None
    if settings.default_policy not in policies:
        known = ", ".join(sorted(policies))
        raise ConfigError(
            f"tick plugin option defaultPolicy: unknown policy {settings.default_policy!r} (known: {known})"
        )
    return policies
