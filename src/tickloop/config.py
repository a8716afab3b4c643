"""Settings: defaults < TOML file < ``TICKLOOP_*`` environment variables. Validated, then frozen.

TOML keys are camelCase as in the spec (``[tick] defaultTicks = 6``). Environment variables are the
explicit table ``ENV_VARS`` below, which ``--help`` and the README print. Secrets (API keys, SMTP
passwords) are never settings: they come from the environment or the env file named here.
"""

# No `from __future__ import annotations` here: msgspec resolves string annotations with eval() when
# it first decodes a type, about 75 compiles per tick process; real annotations cost nothing then.

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

import msgspec

from tickloop.errors import ConfigError

if TYPE_CHECKING:  # the one-shot ticks never import pathlib (tickloop.dirs says why): str paths here
    from pathlib import Path

#: A file name as the functions here take it: ``str`` or a ``Path``.
FileName = str | os.PathLike[str]

_STRUCT = {"frozen": True, "forbid_unknown_fields": True, "rename": "camel", "kw_only": True}


class TickSettings(msgspec.Struct, **_STRUCT):
    """The tick plugin's options."""

    #: time steps a bare ``/tick`` runs
    default_ticks: Annotated[int, msgspec.Meta(ge=1, le=64)] = 6
    #: milliseconds between a completed terminal and the next enqueue
    delay_ms: Annotated[int, msgspec.Meta(ge=0, le=60_000)] = 1000
    #: JSONL audit directory, relative to the working directory
    audit_dir: str = ".tickloop-audit"
    #: policy a ``/tick`` without ``--policy`` uses
    default_policy: str = "default"
    #: extra policies: id -> time-step text (``default`` is built in: ``tick``)
    policies: dict[str, str] = msgspec.field(default_factory=dict)
    #: put a sha256 hash chain on every ledger record
    chain: bool = False
    #: name of the environment variable holding the ledger's HMAC key (keyed chain); empty: no key
    audit_key_env: str = ""
    #: stop a run (``stop.token_budget``) once its steps' tokens pass this many (0: no budget)
    max_tokens_per_run: Annotated[int, msgspec.Meta(ge=0)] = 0


class OfflineModelSettings(msgspec.Struct, **_STRUCT):
    """The built-in deterministic model's options (for demos and tests)."""

    #: fixed reply text
    reply: str = "(offline model) noted."
    #: reply ``echo: <last user message>`` instead of the fixed text
    echo: bool = False
    #: milliseconds between streamed words (lets a person or a test interrupt a turn)
    token_delay_ms: Annotated[int, msgspec.Meta(ge=0, le=60_000)] = 0
    #: 1-based call numbers that fail with a scripted provider error
    fail_on_calls: list[Annotated[int, msgspec.Meta(ge=1)]] = msgspec.field(default_factory=list)


class EndpointSettings(msgspec.Struct, **_STRUCT):
    """One OpenAI-compatible endpoint (``[model.endpoints.NAME]``). The key is never a setting:
    ``apiKeyEnv`` names the environment variable (or env-file entry) that holds it."""

    #: ``https://api.deepseek.com/v1``, ``http://127.0.0.1:11434/v1`` (Ollama), ...
    base_url: str
    #: the model id the server expects (``deepseek-chat``, ``gpt-4o-mini``, ``llama3.2``)
    model: str
    #: variable holding the API key; empty for servers without keys (llama.cpp, Ollama, vLLM)
    api_key_env: str = ""
    #: seconds to wait on the server: connecting, the first byte, and each read while streaming
    timeout_s: Annotated[float, msgspec.Meta(gt=0, le=3600)] = 60.0
    #: what the UI shows next to the output; empty: ``NAME (model)``
    label: str = ""
    #: how structured output is requested: ``json_schema``, ``json_object_schema`` (llama-cpp-python),
    #: ``json_object`` (DeepSeek) or ``none``; unset: ``json_object_schema`` for the ``local`` model
    #: (llama-cpp-python's server) and for a llama.cpp server on this machine (asked once for its
    #: ``GET /props``), ``json_schema`` for every other endpoint
    response_format: Literal["json_schema", "json_object_schema", "json_object", "none"] | None = None
    #: sampling temperature sent with every request; unset: the server's default
    temperature: Annotated[float, msgspec.Meta(ge=0, le=2)] | None = None
    #: answer length cap sent with every request; unset: the server's default
    max_tokens: Annotated[int, msgspec.Meta(ge=1)] | None = None
    #: the model accepts images: images from MCP tools reach it as image parts (else a placeholder)
    vision: bool = False


class ModelSettings(msgspec.Struct, **_STRUCT):
    """Which model the harness and the operator talk to."""

    #: ``offline`` (built in, deterministic), ``local`` or a name from ``[model.endpoints]``
    name: str = "offline"
    #: options of the built-in offline model
    offline: OfflineModelSettings = msgspec.field(default_factory=OfflineModelSettings)
    #: user-defined OpenAI-compatible endpoints by name
    endpoints: dict[str, EndpointSettings] = msgspec.field(default_factory=dict)
    #: base URL of the ``env`` model (set by ``TICKLOOP_MODEL_BASE_URL``)
    base_url: str = ""
    #: model id of the ``env`` model (set by ``TICKLOOP_MODEL_ID``)
    model_id: str = ""


class StoreSettings(msgspec.Struct, **_STRUCT):
    """Where the operator keeps its state."""

    #: ``sqlite:///path``, ``postgresql://...``, ``memory://``; empty: SQLite in the user data dir
    url: str = ""


class Settings(msgspec.Struct, **_STRUCT):
    """All of tickloop's settings."""

    tick: TickSettings = msgspec.field(default_factory=TickSettings)
    model: ModelSettings = msgspec.field(default_factory=ModelSettings)
    store: StoreSettings = msgspec.field(default_factory=StoreSettings)
    #: a ``KEY=value`` file read for secrets; its values never override the real environment
    env_file: str = ""
    # Operator sections stay raw tables here and are validated by ``section()`` when a tick first
    # needs them: their types live in packages that are too heavy to import on every tick's start.
    sources: dict[str, Any] = msgspec.field(default_factory=dict)
    handlers: dict[str, Any] = msgspec.field(default_factory=dict)
    smtp: dict[str, Any] = msgspec.field(default_factory=dict)
    notify: dict[str, Any] = msgspec.field(default_factory=dict)
    gate: dict[str, Any] = msgspec.field(default_factory=dict)
    attention: dict[str, Any] = msgspec.field(default_factory=dict)
    monitor: dict[str, Any] = msgspec.field(default_factory=dict)
    schedule: dict[str, Any] = msgspec.field(default_factory=dict)
    executor: dict[str, Any] = msgspec.field(default_factory=dict)
    #: ``[tools]``: tool calling in the chat (validated by ``tickloop.harness.tools.tools_settings``)
    tools: dict[str, Any] = msgspec.field(default_factory=dict)
    #: the dashboard (``tickloop web``): ``baseUrl`` for links in notices
    web: dict[str, Any] = msgspec.field(default_factory=dict)
    #: the MCP face (``tickloop mcp serve``): ``autoAllow`` (validated by ``tickloop.mcp.face``)
    mcp: dict[str, Any] = msgspec.field(default_factory=dict)
    #: per-profile overrides of the operator sections: ``[profiles.NAME.attention]`` and the like
    profiles: dict[str, Any] = msgspec.field(default_factory=dict)


T = TypeVar("T")


def section(settings: Settings, name: str, kind: type[T]) -> T:
    """Validate one operator section (``[sources]``, ``[smtp]``, ...) into its type.

    Raises ``ConfigError`` naming the section and the key, e.g. ``[attention] Expected `int` <= 23 -
    at `$.quietStart```.
    """
    raw = getattr(settings, name)
    try:
        return msgspec.convert(raw, kind, strict=False)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"invalid configuration in [{name}]: {exc}") from None


#: Environment variable -> (section, TOML key). ``TICKLOOP_CONFIG`` names the TOML file itself.
ENV_VARS: dict[str, tuple[str, str]] = {
    "TICKLOOP_DEFAULT_TICKS": ("tick", "defaultTicks"),
    "TICKLOOP_DELAY_MS": ("tick", "delayMs"),
    "TICKLOOP_AUDIT_DIR": ("tick", "auditDir"),
    "TICKLOOP_DEFAULT_POLICY": ("tick", "defaultPolicy"),
    "TICKLOOP_MODEL": ("model", "name"),
    "TICKLOOP_MODEL_BASE_URL": ("model", "baseUrl"),
    "TICKLOOP_MODEL_ID": ("model", "modelId"),
    "TICKLOOP_STORE": ("store", "url"),
    "TICKLOOP_ENV_FILE": ("", "envFile"),
}
CONFIG_ENV = "TICKLOOP_CONFIG"


def default_config_path() -> "Path":
    """``$XDG_CONFIG_HOME/tickloop/config.toml`` (tickloop.dirs)."""
    from pathlib import Path  # noqa: PLC0415

    return Path(_default_config_file())


def _default_config_file() -> str:
    from tickloop.dirs import user_dir  # noqa: PLC0415

    return os.path.join(user_dir("config"), "config.toml")


def load_settings(env: Mapping[str, str] | None = None, path: FileName | None = None) -> Settings:
    """Build validated, frozen settings. ``env`` defaults to ``os.environ``."""
    env = os.environ if env is None else env
    if path is None and env.get(CONFIG_ENV):
        path = env[CONFIG_ENV]
    data: dict[str, Any] = {}
    if path is not None or os.path.isfile(_default_config_file()):
        data = _read_toml(path or _default_config_file(), required=path is not None)
    for var, (section, key) in ENV_VARS.items():
        if var in env:
            target = data.setdefault(section, {}) if section else data
            if not isinstance(target, dict):
                raise ConfigError(f"config: [{section}] must be a table")
            target[key] = env[var]
    try:
        return msgspec.convert(data, Settings, strict=False)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"invalid configuration: {exc}{_sources(path, env)}") from None


def _read_toml(path: FileName, *, required: bool) -> dict[str, Any]:
    """The file's tables: none for an empty file, else a previous start's parse of exactly these
    bytes (``tickloop.config_cache``), else the TOML parser's, kept for the next start."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        if required:
            raise ConfigError(f"config file {path} does not exist") from None
        return {}
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror}") from None
    if not raw.strip():  # an empty file: no TOML parser (it costs a tick ~0.3x a bare python)
        return {}
    from tickloop import config_cache  # noqa: PLC0415

    data = config_cache.cached_parse(raw)
    if data is None:
        data = _parse_toml(path, raw)
        config_cache.keep_parse(raw, data)
    return data


def _parse_toml(path: FileName, raw: bytes) -> dict[str, Any]:
    import tomllib  # noqa: PLC0415  (an unchanged or empty config file needs no parser)

    try:
        return tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"config file {path} is not valid TOML: not UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None


def _sources(path: FileName | None, env: Mapping[str, str]) -> str:
    used = [var for var in ENV_VARS if var in env]
    where = [f"file {path}"] if path else []
    if used:
        where.append("env " + ", ".join(used))
    return f" (from {'; '.join(where)})" if where else ""


def read_env_file(path: FileName) -> dict[str, str]:
    """Parse a ``KEY=value`` env file (``#`` comments, optional quotes). Errors name the line."""
    values: dict[str, str] = {}
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read env file {path}: {exc}") from None
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.removeprefix("export ").partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise ConfigError(f"env file {path}, line {lineno}: expected KEY=value")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[key] = value
    return values


def secret(name: str, settings: Settings, env: Mapping[str, str] | None = None) -> str | None:
    """A secret from the environment, else from the configured env file; never from argv."""
    env = os.environ if env is None else env
    if name in env:
        return env[name]
    if settings.env_file:
        return read_env_file(os.path.expanduser(settings.env_file)).get(name)
    return None
