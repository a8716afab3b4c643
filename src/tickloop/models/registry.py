"""Model names -> providers.

- ``offline``: built in, deterministic, no key, no network (the default).
- ``local``: llama.cpp's OpenAI-compatible server on ``http://127.0.0.1:8087/v1`` serving
  ``smollm2`` (``tickloop models serve-local``); no key; structured output as
  ``responseFormat = "json_object_schema"`` (the form llama-cpp-python turns into a grammar; it
  refuses the standard ``json_schema``). ``[model.endpoints.local]`` overrides it, keeping that
  default unless it sets ``responseFormat``.
- ``env``: ``TICKLOOP_MODEL_BASE_URL`` + ``TICKLOOP_MODEL_ID``, key from ``TICKLOOP_MODEL_API_KEY``
  (optional): one endpoint configured from the environment alone.
- every ``[model.endpoints.NAME]`` in the settings.

Building a registry entry never imports a model SDK; only calling the model does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from tickloop.config import EndpointSettings, Settings, secret
from tickloop.errors import ConfigError, ModelError
from tickloop.models.base import ChatModel

if TYPE_CHECKING:
    from tickloop.models.openai_compat import FormatChoice
from tickloop.models.offline import OfflineModel

LOCAL_BASE_URL = "http://127.0.0.1:8087/v1"
LOCAL_MODEL_ID = "smollm2"
ENV_MODEL_KEY = "TICKLOOP_MODEL_API_KEY"

_VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MODEL_NAME = re.compile(r"[A-Za-z][A-Za-z0-9._-]{0,63}")


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """What ``tickloop models list`` shows about a configured model (no secrets)."""

    name: str
    label: str
    #: empty for the built-in offline model
    base_url: str = ""
    model: str = ""
    #: the variable that holds the key, if the endpoint needs one
    api_key_env: str = ""


def endpoints(settings: Settings) -> dict[str, EndpointSettings]:
    """Every OpenAI-compatible endpoint by name: ``local``, ``env`` (if set), then the settings'."""
    found = {"local": EndpointSettings(base_url=LOCAL_BASE_URL, model=LOCAL_MODEL_ID, label="local")}
    model = settings.model
    if model.base_url or model.model_id:
        found["env"] = EndpointSettings(
            base_url=model.base_url, model=model.model_id or "default", api_key_env=ENV_MODEL_KEY
        )
    for name, endpoint in model.endpoints.items():
        if name == "offline":
            raise ConfigError(
                "[model.endpoints.offline]: 'offline' is the built-in model's name; choose another name"
            )
        found[name] = endpoint
    return found


def known_models(settings: Settings) -> list[ModelInfo]:
    """The configured models, ``offline`` first (for listings and error messages)."""
    infos = [ModelInfo(name="offline", label="offline")]
    for name, ep in endpoints(settings).items():
        label = ep.label or f"{name} ({ep.model})"
        infos.append(ModelInfo(name, label, ep.base_url, ep.model, ep.api_key_env))
    return infos


def in_use(settings: Settings) -> set[str]:
    """The models the configuration uses: ``[model] name``, every ``[model.endpoints.NAME]`` it
    defines, and ``env`` when the environment configures it. The built-in ``offline`` and ``local``
    count only when ``[model] name`` picks them (or the config redefines ``local``)."""
    names = {settings.model.name, *settings.model.endpoints}
    if settings.model.base_url or settings.model.model_id:
        names.add("env")
    return names


def get_model(name: str, settings: Settings, env: Mapping[str, str] | None = None) -> ChatModel:
    """The provider for ``name``. ``ConfigError`` for an unknown name, a bad endpoint or a missing
    key (naming the variable, never its value). ``env`` (default ``os.environ``) supplies keys."""
    if name == "offline":
        return _offline(settings)
    found = endpoints(settings)
    if name not in found:
        known = ", ".join(["offline", *found])
        raise ConfigError(
            f"unknown model {name!r}: known models are: {known}. "
            "Define others under [model.endpoints.NAME] in the config file."
        )
    return openai_compat_model(name, found[name], settings, env)


def openai_compat_model(
    name: str, endpoint: EndpointSettings, settings: Settings, env: Mapping[str, str] | None = None
) -> ChatModel:
    """Validate one endpoint and build its provider (the SDK itself is imported on first call)."""
    from tickloop.models.openai_compat import OpenAICompatModel  # noqa: PLC0415  (keeps this light)

    _check_endpoint(name, endpoint)
    key = None
    if endpoint.api_key_env:
        key = secret(endpoint.api_key_env, settings, env)
        if not key:
            raise ConfigError(
                f"model {name!r} needs an API key: set {endpoint.api_key_env} in the environment "
                "or in the env file named by envFile (keys are never read from the command line)"
            )
    return OpenAICompatModel(
        name,
        base_url=endpoint.base_url,
        model=endpoint.model,
        api_key=key,
        api_key_env=endpoint.api_key_env or None,
        timeout_s=endpoint.timeout_s,
        label=endpoint.label or None,
        response_format=endpoint.response_format or _default_response_format(name),
        temperature=endpoint.temperature,
        max_tokens=endpoint.max_tokens,
        vision=endpoint.vision,
    )


@dataclass(frozen=True, slots=True)
class Reachability:
    """The answer of ``check_model``: could the endpoint be reached, and what did it say."""

    name: str
    ok: bool
    detail: str


async def check_model(
    info: ModelInfo, settings: Settings, env: Mapping[str, str] | None = None, timeout_s: float = 3.0
) -> Reachability:
    """``GET /models`` on an endpoint with a short timeout. Never raises for a provider problem."""
    if info.name == "offline":
        return Reachability(info.name, True, "built in")
    try:
        model = get_model(info.name, settings, env)
    except ConfigError as exc:
        return Reachability(info.name, False, exc.message)
    list_ids = getattr(model, "list_model_ids", None)
    if list_ids is None:
        return Reachability(info.name, True, "not an HTTP endpoint")
    try:
        ids: list[str] = await list_ids(timeout_s)
    except ModelError as exc:
        return Reachability(info.name, False, exc.message)
    finally:
        await model.aclose()  # the check runs in its own event loop; leave no connection behind it
    served = "serves it" if info.model in ids else f"does not list {info.model!r}"
    return Reachability(info.name, True, f"reachable, {served} ({len(ids)} models)")


def _check_endpoint(name: str, endpoint: EndpointSettings) -> None:
    where = "TICKLOOP_MODEL_BASE_URL" if name == "env" else f"[model.endpoints.{name}]"
    if not _MODEL_NAME.fullmatch(name):
        raise ConfigError(
            f"{where}: a model name is a letter, then up to 63 letters, digits, '.', '_' or '-'"
        )
    parts = urlsplit(endpoint.base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"{where} baseUrl {endpoint.base_url!r} is not an http(s) URL with a host; "
            "for example https://api.deepseek.com/v1 or http://127.0.0.1:11434/v1"
        )
    if parts.username or parts.password:
        raise ConfigError(f"{where} baseUrl must not contain credentials; put the key in apiKeyEnv")
    if not endpoint.model.strip():
        raise ConfigError(f"{where} model is empty; set the model id the server expects")
    if endpoint.api_key_env and not _VAR_NAME.fullmatch(endpoint.api_key_env):
        # Not echoed: a common mistake is pasting the key itself here.
        raise ConfigError(
            f"{where} apiKeyEnv must be the NAME of an environment variable (like DEEPSEEK_API_KEY), "
            "not the key itself"
        )


def _default_response_format(name: str) -> FormatChoice:
    """``local`` is llama-cpp-python's server, which takes the schema only as ``json_object_schema``;
    any other endpoint picks on its first structured call (``auto``: see ``openai_compat``)."""
    return "json_object_schema" if name == "local" else "auto"


def _offline(settings: Settings) -> OfflineModel:
    options = settings.model.offline
    return OfflineModel(
        reply=options.reply,
        echo=options.echo,
        token_delay=options.token_delay_ms / 1000,
        fail_on_call=frozenset(options.fail_on_calls),
    )
