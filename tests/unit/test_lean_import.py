"""Importing tickloop loads msgspec without typing_extensions, and both keep working afterwards."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def run(code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout


def test_a_fresh_process_validates_config_without_typing_extensions_or_inspect() -> None:
    """Settings still validate (constraints, camelCase keys) with typing_extensions and inspect unloaded."""
    out = run(
        "import sys, tickloop.config as c\n"
        "ok = c.load_settings({'TICKLOOP_DEFAULT_TICKS': '3'})\n"
        "try:\n"
        "    c.load_settings({'TICKLOOP_DEFAULT_TICKS': '0'})\n"
        "except Exception as exc:\n"
        "    print('REFUSED', type(exc).__name__, 'tick.defaultTicks' in str(exc))\n"
        "print('TICKS', ok.tick.default_ticks)\n"
        "print('LOADED', sorted(m for m in ('typing_extensions', 'inspect') if m in sys.modules))\n"
    )
    assert "TICKS 3" in out
    assert "REFUSED ConfigError True" in out
    assert "LOADED []" in out


def test_typing_extensions_imports_normally_after_tickloop() -> None:
    """A library that needs typing_extensions later in the same process (openai, psycopg) still gets it."""
    out = run(
        "import tickloop.config, typing_extensions\nprint('OK', typing_extensions.Required is not None)\n"
    )
    assert "OK True" in out


def test_an_already_loaded_typing_extensions_is_left_alone() -> None:
    """If the host program loaded typing_extensions first, tickloop does not touch sys.modules."""
    out = run(
        "import sys, typing_extensions\n"
        "before = sys.modules['typing_extensions']\n"
        "import tickloop.config\n"
        "print('SAME', sys.modules['typing_extensions'] is before)\n"
    )
    assert "SAME True" in out


MCP_FAMILY = "('mcp', 'mcp_types', 'starlette', 'uvicorn', 'sse_starlette', 'httpx2')"


def test_the_tick_path_never_imports_the_mcp_sdk(tmp_path: Path) -> None:
    """A one-shot operator tick, and `tickloop mcp --help`, run without importing the MCP SDK or a server."""
    env = {**os.environ, "TICKLOOP_STORE": f"sqlite://{tmp_path}/s.db"}
    subprocess.run(
        [sys.executable, "-m", "tickloop", "operator", "init", "--profile", "me", "--goal", "g"],
        env=env,
        check=True,
        capture_output=True,
        timeout=120,
    )
    for args in (["operator", "tick", "fast", "--profile", "me"], ["mcp", "--help"]):
        code = (
            "import sys\nfrom tickloop.cli import main\n"
            f"try:\n    main({args!r})\nexcept SystemExit:\n    pass\n"
            f"print('LOADED', [m for m in {MCP_FAMILY} if m in sys.modules])\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, timeout=120
        )
        assert "LOADED []" in done.stdout, (args, done.stdout, done.stderr)


def test_the_executor_staging_and_monitor_modules_load_without_smtplib_ssl_email_or_click() -> None:
    """Importing the executor tick, the one staging path (the fast tick's) and the monitor's fast path
    loads no smtplib, ssl, email or click: those load only when a mail is built or sent."""
    out = run(
        "import sys\n"
        "import tickloop.operator.ticks.executor, tickloop.operator.staging\n"
        "import tickloop.cli.monitor_once, tickloop.cli.tick_once, tickloop.notify.base\n"
        "heavy = ('smtplib', 'ssl', 'email.message', 'email.parser', 'click')\n"
        "print('LOADED', sorted(m for m in heavy if m in sys.modules))\n"
    )
    assert "LOADED []" in out


#: What each one-shot path stopped importing (issue 25, section 4): the modules that would bring the
#: start-up back over its instruction target if they crept back.
LEAN_PATHS = {
    "observe": (
        ["operator", "tick", "observe"],
        # pathlib and json: issue 25's last 0.5x; no [sources] table: no source module either
        (
            "tomllib",
            "platform",
            "asyncio",
            "click",
            "smtplib",
            "pathlib",
            "urllib.parse",
            "json",
            "tickloop.operator.sources",
        ),
    ),
    "fast": (
        ["operator", "tick", "fast"],
        ("tomllib", "platform", "asyncio", "ssl", "tickloop.models.openai_compat"),
    ),
    "executor": (["operator", "tick", "executor"], ("tomllib", "platform", "asyncio", "smtplib", "click")),
    "monitor": (["operator", "monitor"], ("tomllib", "platform", "asyncio", "click")),
}


#: The config file a real installation has (what ``operator init`` writes), and what an unchanged one
#: must not load once a start has kept its parse and check (``tickloop.config_cache``): the parser,
#: and on the ticks that need neither, the types of ``[attention]`` (zoneinfo) and ``[notify]``.
REAL_CONFIG_INIT = ["--quiet", "22-7", "--channel", "console"]
REAL_CONFIG_HEAVY = {
    "observe": ("zoneinfo", "tickloop.notify.settings"),
    "fast": ("zoneinfo", "tickloop.notify.settings"),
}


@pytest.mark.parametrize("config", ["empty", "real"])
def test_each_one_shot_path_leaves_its_heavy_modules_unloaded(tmp_path: Path, config: str) -> None:
    """With an empty config file, or an unchanged real one, and the offline model, no tick and no
    monitor pass imports the TOML parser, ``platform``, asyncio, click, ssl or the OpenAI provider, and
    an observe tick with no sources imports neither pathlib (nor its urllib.parse), json nor a source; the
    import-time objects are frozen out of the cyclic collector, which is back on when the tick's work
    runs."""
    (tmp_path / "config.toml").write_text("\n")
    env = {
        **os.environ,
        "TICKLOOP_STORE": f"sqlite://{tmp_path}/s.db",
        "TICKLOOP_CONFIG": str(tmp_path / "config.toml"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
    }
    init = ["operator", "init", "--profile", "default", "--goal", "g"]
    init += REAL_CONFIG_INIT if config == "real" else []
    subprocess.run(
        [sys.executable, "-m", "tickloop", *init], env=env, check=True, capture_output=True, timeout=120
    )
    assert ("[attention]" in (tmp_path / "config.toml").read_text()) == (config == "real")
    for name, (args, lean) in LEAN_PATHS.items():
        heavy = lean
        if config == "real":  # the first start on the file parses and checks it, and keeps both
            first = [sys.executable, "-m", "tickloop", *args]
            subprocess.run(first, env=env, capture_output=True, check=False, timeout=120)
            heavy = (*lean, *REAL_CONFIG_HEAVY.get(name, ()))
        code = (
            "import gc, sys\nfrom tickloop.cli import main\n"
            f"code = main({args!r})\n"
            f"loaded = [m for m in {heavy!r} if m in sys.modules]\n"
            "print('LOADED', loaded, code, gc.isenabled(), gc.get_freeze_count() > 0)\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, timeout=120
        )
        assert "LOADED [] 0 True True" in done.stdout, (name, done.stdout, done.stderr)


def test_a_config_file_with_content_is_still_parsed(tmp_path: Path) -> None:
    """Only an empty file skips the TOML parser: one with a key is read, and bad TOML is refused."""
    good, bad = tmp_path / "good.toml", tmp_path / "bad.toml"
    good.write_text("[tick]\ndefaultTicks = 4\n")
    bad.write_text("[tick\n")
    out = run(
        "import tickloop.config as c\nfrom pathlib import Path\n"
        f"print('TICKS', c.load_settings({{}}, path=Path({str(good)!r})).tick.default_ticks)\n"
        "try:\n"
        f"    c.load_settings({{}}, path=Path({str(bad)!r}))\n"
        "except c.ConfigError as exc:\n"
        "    print('REFUSED', 'not valid TOML' in str(exc))\n"
    )
    assert "TICKS 4" in out
    assert "REFUSED True" in out
    bad.write_bytes(b'[tick]\nx = "\xff"\n')  # not UTF-8: refused in words, not a traceback
    again = run(
        "import tickloop.config as c\nfrom pathlib import Path\n"
        "try:\n"
        f"    c.load_settings({{}}, path=Path({str(bad)!r}))\n"
        "except c.ConfigError as exc:\n"
        "    print('REFUSED', str(exc).endswith('not valid TOML: not UTF-8'))\n"
    )
    assert "REFUSED True" in again


def test_the_uuid_msgspec_loaded_knows_the_platform_and_platform_imports_normally() -> None:
    """msgspec's ``uuid`` saw the real system name through the stand-in, and ``platform`` afterwards is
    the real module."""
    out = run(
        "import tickloop, uuid, os, sys\n"
        "print('SHIM', 'platform' in sys.modules, uuid._LINUX == (os.uname().sysname == 'Linux'))\n"
        "import platform\n"
        "print('REAL', platform.system() == os.uname().sysname, hasattr(platform, 'machine'))\n"
    )
    assert "SHIM False True" in out
    assert "REAL True True" in out
