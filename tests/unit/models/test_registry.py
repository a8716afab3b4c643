"""The model registry: built-in names, endpoints from settings and env, and hostile configuration."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tickloop.config import Settings, load_settings
from tickloop.errors import ConfigError
from tickloop.models import ChatMessage, OfflineModel, OpenAICompatModel, get_model, known_models
from tickloop.testing.openai_server import OpenAIServer, Reply

KEY = "sk-deepseek-0123456789SECRET"


def settings_from(tmp_path: Path, toml: str, env: dict[str, str] | None = None) -> Settings:
    path = tmp_path / "config.toml"
    path.write_text(toml, encoding="utf-8")
    return load_settings(env or {}, path)


DEEPSEEK = """
[model.endpoints.deepseek]
baseUrl = "https://api.deepseek.com/v1"
model = "deepseek-chat"
apiKeyEnv = "DEEPSEEK_API_KEY"
timeoutS = 30
responseFormat = "json_object"
temperature = 0
"""


def test_offline_is_the_default_and_needs_nothing() -> None:
    """With no configuration, the default model is the offline one, labelled offline."""
    settings = load_settings({})
    model = get_model(settings.model.name, settings, {})
    assert isinstance(model, OfflineModel)
    assert model.label == "offline"


def test_local_points_at_the_llama_cpp_server_without_a_key() -> None:
    """`local` is llama.cpp's server on 127.0.0.1:8087 serving smollm2, with no key needed."""
    model = get_model("local", load_settings({}), {})
    assert isinstance(model, OpenAICompatModel)
    assert (model.base_url, model.model) == ("http://127.0.0.1:8087/v1", "smollm2")
    assert model.label == "local"


def test_local_asks_for_structure_in_the_form_llama_cpp_python_compiles_to_a_grammar(tmp_path: Path) -> None:
    """`local` sends schemas as json_object_schema, also when [model.endpoints.local] moves it without
    saying otherwise; any other endpoint picks on its first call (``auto``: a llama.cpp server on
    loopback gets json_object_schema, everything else json_schema)."""
    moved = settings_from(
        tmp_path,
        '[model.endpoints.local]\nbaseUrl = "http://127.0.0.1:9000/v1"\nmodel = "smollm2"\n'
        '[model.endpoints.other]\nbaseUrl = "http://127.0.0.1:9001/v1"\nmodel = "m"\n',
    )
    for settings, name, expected in [
        (load_settings({}), "local", "json_object_schema"),
        (moved, "local", "json_object_schema"),
        (moved, "other", "auto"),
    ]:
        model = get_model(name, settings, {})
        assert isinstance(model, OpenAICompatModel)
        assert model.response_format == expected
    chosen = settings_from(
        tmp_path, '[model.endpoints.local]\nbaseUrl = "http://h/v1"\nmodel = "m"\nresponseFormat = "none"\n'
    )
    model = get_model("local", chosen, {})
    assert isinstance(model, OpenAICompatModel)
    assert model.response_format == "none"


def test_an_endpoint_from_toml_gets_its_key_from_the_environment(tmp_path: Path) -> None:
    """A [model.endpoints.NAME] table builds a provider with its URL, model, timeout and options."""
    settings = settings_from(tmp_path, DEEPSEEK)
    model = get_model("deepseek", settings, {"DEEPSEEK_API_KEY": KEY})
    assert isinstance(model, OpenAICompatModel)
    assert (model.base_url, model.model, model.timeout_s) == (
        "https://api.deepseek.com/v1",
        "deepseek-chat",
        30,
    )
    assert (model.response_format, model.temperature) == ("json_object", 0)
    assert model.vision is False
    assert KEY not in repr(model)


def test_vision_true_on_an_endpoint_reaches_its_provider(tmp_path: Path) -> None:
    """``vision = true`` on an endpoint makes its provider send tool images as image parts."""
    settings = settings_from(tmp_path, DEEPSEEK + "vision = true\n")
    model = get_model("deepseek", settings, {"DEEPSEEK_API_KEY": KEY})
    assert isinstance(model, OpenAICompatModel)
    assert model.vision is True


async def test_a_key_can_come_from_the_env_file(tmp_path: Path) -> None:
    """The key may live in the env file named by envFile instead of the environment: the request the
    provider sends carries exactly that key."""
    env_file = tmp_path / "secrets.env"
    env_file.write_text(f"DEEPSEEK_API_KEY={KEY}\n", encoding="utf-8")
    with OpenAIServer(default=Reply.text("hi")) as server:
        config = DEEPSEEK.replace("https://api.deepseek.com/v1", server.base_url)
        settings = settings_from(tmp_path, f'envFile = "{env_file}"\n{config}')
        model = get_model("deepseek", settings, {})
        assert isinstance(model, OpenAICompatModel)
        await model.complete([ChatMessage("user", "hello")])
        await model.aclose()
        [request] = server.requests
    assert request.headers["authorization"] == f"Bearer {KEY}"


def test_a_missing_key_names_the_variable_not_a_value(tmp_path: Path) -> None:
    """An endpoint whose key variable is unset fails with a ConfigError naming that variable."""
    settings = settings_from(tmp_path, DEEPSEEK)
    with pytest.raises(ConfigError, match="DEEPSEEK_API_KEY") as caught:
        get_model("deepseek", settings, {"OTHER": KEY})
    assert KEY not in str(caught.value)


def test_an_unknown_name_lists_the_known_ones(tmp_path: Path) -> None:
    """An unknown model name fails with a ConfigError listing every known name."""
    settings = settings_from(tmp_path, DEEPSEEK)
    with pytest.raises(ConfigError, match="unknown model 'gpt-9'") as caught:
        get_model("gpt-9", settings, {})
    assert "offline, local, deepseek" in str(caught.value)


@pytest.mark.parametrize(
    ("base_url", "problem"),
    [
        ("api.deepseek.com/v1", "not an http"),
        ("ftp://example.com/v1", "not an http"),
        ("http:///v1", "not an http"),
        ("https://user:pw@example.com/v1", "credentials"),
    ],
)
def test_bad_base_urls_are_refused_naming_the_endpoint(tmp_path: Path, base_url: str, problem: str) -> None:
    """A base URL that is not http(s) with a host, or carries credentials, is a ConfigError."""
    settings = settings_from(tmp_path, f'[model.endpoints.x]\nbaseUrl = "{base_url}"\nmodel = "m"\n')
    with pytest.raises(ConfigError, match=problem) as caught:
        get_model("x", settings, {})
    assert "[model.endpoints.x]" in str(caught.value)
    assert "pw" not in str(caught.value)


def test_a_key_pasted_into_api_key_env_is_refused_without_echoing_it(tmp_path: Path) -> None:
    """apiKeyEnv holding the key itself (a common mistake) is refused and the key is not shown."""
    toml = f'[model.endpoints.x]\nbaseUrl = "https://h/v1"\nmodel = "m"\napiKeyEnv = "{KEY}!"\n'
    with pytest.raises(ConfigError, match="NAME of an environment variable") as caught:
        get_model("x", settings_from(tmp_path, toml), {})
    assert KEY not in str(caught.value)


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        ('[model.endpoints.x]\nmodel = "m"\n', "baseUrl"),
        ('[model.endpoints.x]\nbaseUrl = "https://h/v1"\nmodel = "m"\ntimeoutS = 0\n', "timeoutS"),
        (
            '[model.endpoints.x]\nbaseUrl = "https://h/v1"\nmodel = "m"\nresponseFormat = "xml"\n',
            "responseFormat",
        ),
        ('[model.endpoints.x]\nbaseUrl = "https://h/v1"\nmodel = "m"\napiKey = "sk-1"\n', "apiKey"),
    ],
)
def test_invalid_endpoint_settings_fail_at_load_naming_the_key(tmp_path: Path, toml: str, key: str) -> None:
    """A missing or invalid endpoint setting (or a literal apiKey) fails at startup naming the key."""
    with pytest.raises(ConfigError, match=key):
        settings_from(tmp_path, toml)


def test_offline_cannot_be_redefined(tmp_path: Path) -> None:
    """An endpoint named offline is refused: the built-in model's name is reserved."""
    settings = settings_from(tmp_path, '[model.endpoints.offline]\nbaseUrl = "https://h/v1"\nmodel = "m"\n')
    with pytest.raises(ConfigError, match="offline"):
        get_model("local", settings, {})


def test_local_can_be_pointed_elsewhere(tmp_path: Path) -> None:
    """[model.endpoints.local] overrides where `local` points (another port, another model)."""
    toml = '[model.endpoints.local]\nbaseUrl = "http://127.0.0.1:9999/v1"\nmodel = "qwen"\n'
    model = get_model("local", settings_from(tmp_path, toml), {})
    assert isinstance(model, OpenAICompatModel)
    assert model.base_url == "http://127.0.0.1:9999/v1"


def test_env_model_from_environment_variables() -> None:
    """TICKLOOP_MODEL=env with TICKLOOP_MODEL_BASE_URL and _ID configures a model without a file."""
    env = {
        "TICKLOOP_MODEL": "env",
        "TICKLOOP_MODEL_BASE_URL": "http://127.0.0.1:11434/v1",
        "TICKLOOP_MODEL_ID": "llama3.2",
        "TICKLOOP_MODEL_API_KEY": KEY,
    }
    settings = load_settings(env)
    model = get_model(settings.model.name, settings, env)
    assert isinstance(model, OpenAICompatModel)
    assert (model.base_url, model.model) == ("http://127.0.0.1:11434/v1", "llama3.2")


def test_env_model_without_its_key_names_the_variable() -> None:
    """The env model asks for TICKLOOP_MODEL_API_KEY when it is missing."""
    env = {"TICKLOOP_MODEL_BASE_URL": "https://h/v1", "TICKLOOP_MODEL_ID": "m"}
    with pytest.raises(ConfigError, match="TICKLOOP_MODEL_API_KEY"):
        get_model("env", load_settings(env), env)


def test_known_models_lists_names_urls_and_labels(tmp_path: Path) -> None:
    """known_models shows every configured model with its URL, model id and label, no secrets."""
    infos = known_models(settings_from(tmp_path, DEEPSEEK))
    assert [i.name for i in infos] == ["offline", "local", "deepseek"]
    assert infos[2].base_url == "https://api.deepseek.com/v1"
    assert infos[2].label == "deepseek (deepseek-chat)"
    assert infos[2].api_key_env == "DEEPSEEK_API_KEY"


def test_the_offline_path_never_imports_the_openai_sdk() -> None:
    """Importing tickloop.models and building models does not import openai (~400 ms CPU)."""
    code = (
        "import sys, tickloop.models as m; from tickloop.config import Settings, load_settings; "
        "s = load_settings({}); m.get_model('offline', s, {}); m.get_model('local', s, {}); "
        "print('LOADED', 'openai' in sys.modules, 'httpx2' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert "LOADED False False" in out
