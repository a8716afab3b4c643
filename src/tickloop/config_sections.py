"""Every configuration section checked when a process starts: unknown keys and wrong types exit 2.

``Settings`` keeps the operator's sections as raw tables, so a tick does not import every section's
type just to start. :func:`check_config` converts each of them into its own type, whose
``forbid_unknown_fields`` makes the check schema-driven: a key added to a section's struct needs no
list here, and a typo (``[smtp] hots``, ``[handlers.workspace] jali``) fails naming the key instead
of being ignored or failing the first execution. Only the sections the file has are imported and
checked, so a tick with no ``[tools]`` table never pays for the harness's import; sections that
passed at an earlier start are not checked again (``tickloop.config_cache``). Every face calls
it right after ``load_settings``: ``chat``, each ``operator tick KIND``, ``web`` and ``mcp serve``
(not ``operator monitor``, which never fails: it reports a bad section on stderr and exits 0).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

import msgspec

from tickloop.config import Settings, section
from tickloop.errors import ConfigError

#: Raw section -> ``module:Type`` of its struct, imported only when checked.
SECTION_TYPES: Mapping[str, str] = {
    "sources": "tickloop.operator.sources.settings:SourcesSettings",
    "handlers": "tickloop.operator.handlers.settings:HandlerSettings",
    "smtp": "tickloop.notify.smtp:SmtpSettings",
    "notify": "tickloop.notify.settings:NotifySettings",
    "gate": "tickloop.operator.gate:GateSettings",
    "attention": "tickloop.operator.attention:AttentionSettings",
    "monitor": "tickloop.operator.conditions:MonitorSettings",
    "schedule": "tickloop.operator.schedule:ScheduleSettings",
    "executor": "tickloop.operator.ticks.executor:ExecutorSettings",
    "tools": "tickloop.harness.tools:ToolsSettings",
    "web": "tickloop.operator.notices:DashboardSettings",
    "mcp": "tickloop.mcp.face:McpSettings",
}
#: Sections a ``[profiles.NAME]`` table may override.
PROFILE_SECTIONS = ("attention", "monitor", "notify")


def section_type(name: str) -> type[Any]:
    """The struct of section ``name``."""
    module, _, attr = SECTION_TYPES[name].partition(":")
    kind: type[Any] = getattr(importlib.import_module(module), attr)
    return kind


def check_config(settings: Settings, *, model: str | None = None) -> None:
    """Validate every section (and each profile's overrides); with ``model``, that it names a model.

    Raises ``ConfigError`` naming the section and the key (``invalid configuration in [smtp]:
    Object contains unknown field `hots` - at `$`)``. Sections that passed at an earlier start, byte
    for byte, are not checked again (``tickloop.config_cache``)."""
    present = {
        name: getattr(settings, name) for name in (*SECTION_TYPES, "profiles") if getattr(settings, name)
    }
    if present:  # an absent table is every default: nothing to import or check
        _check_sections(settings, present)
    if model is not None:
        check_model(settings, model)


def _check_sections(settings: Settings, present: dict[str, Any]) -> None:
    from tickloop import config_cache  # noqa: PLC0415

    sections = msgspec.msgpack.encode(present)
    exact = msgspec.msgpack.decode(sections) == present  # a TOML date comes back a string: no cache
    if exact and config_cache.was_checked(sections):
        return
    for name in SECTION_TYPES:
        if name in present:
            section(settings, name, section_type(name))
    for profile, table in settings.profiles.items():
        _check_profile(settings, profile, table)
    if exact:
        config_cache.keep_checked(sections)


def _check_profile(settings: Settings, profile: str, table: object) -> None:
    if not isinstance(table, dict):
        raise ConfigError(f"invalid configuration in [profiles.{profile}]: must be a table")
    unknown = sorted(set(table) - set(PROFILE_SECTIONS))
    if unknown:
        raise ConfigError(
            f"invalid configuration in [profiles.{profile}]: unknown sections {unknown}; "
            f"a profile may override {list(PROFILE_SECTIONS)}"
        )
    for name, extra in table.items():
        base = getattr(settings, name)
        try:
            msgspec.convert(
                {**base, **extra} if isinstance(extra, dict) else extra, section_type(name), strict=False
            )
        except msgspec.ValidationError as exc:
            raise ConfigError(f"invalid configuration in [profiles.{profile}.{name}]: {exc}") from None


def check_model(settings: Settings, name: str) -> None:
    """``ConfigError`` unless ``name`` is a model the configuration has: ``offline``, ``local``,
    ``env`` (when ``TICKLOOP_MODEL_BASE_URL``/``_ID`` set it) or a ``[model.endpoints.NAME]``.

    The same names as ``tickloop.models.registry.endpoints``, read without importing the model
    providers (asyncio among them): a tick checks this before its signal handler is installed."""
    model = settings.model
    known = ["offline", "local", *(["env"] if model.base_url or model.model_id else []), *model.endpoints]
    if name not in known:
        raise ConfigError(
            f"[model] name (or TICKLOOP_MODEL): unknown model {name!r}: known models are: "
            f"{', '.join(dict.fromkeys(known))}. Define others under [model.endpoints.NAME] in the config."
        )
