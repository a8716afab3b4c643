"""A store location with a password in it: no message, output or log line ever shows the password."""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tickloop.cli import main
from tickloop.operator.store import redact_url

#: Characters a person may put in a password; URL forms percent-encode nothing here on purpose.
PASSWORD_CHARS = st.characters(
    min_codepoint=0x21, max_codepoint=0x7E, blacklist_characters="@/?#&'\\ "
) | st.sampled_from("é€")
#: A distinctive prefix, so the planted secret cannot occur by chance in other output.
MARK = "Zx7"


def _forms(secret: str) -> list[str]:
    """The ways a password reaches a store location: userinfo, query parameter, libpq keywords."""
    quoted = secret.replace("\\", "\\\\").replace("'", "\\'")
    return [
        f"postgresql://alice:{secret}@127.0.0.1:1/db",
        f"postgres://alice:{secret}@127.0.0.1:1/db?sslmode=disable",
        f"postgresql://127.0.0.1:1/db?user=alice&password={secret}",
        f"postgresql://127.0.0.1:1/db?sslpassword={secret}&connect_timeout=1",
        f"host=127.0.0.1 port=1 password={secret}",
        f"password={secret} host=127.0.0.1 port=1",
        f"host=127.0.0.1 port=1 password = '{quoted} with space'",
        f"mysql://alice:{secret}@db.example/db",
    ]


@given(st.text(PASSWORD_CHARS, min_size=1, max_size=24).map(lambda s: MARK + s))
def test_redaction_masks_a_planted_password_in_every_form(secret: str) -> None:
    """Whatever the password and whichever form carries it, the redacted location does not contain it."""
    for form in _forms(secret):
        redacted = redact_url(form)
        assert MARK not in redacted, (form, redacted)
        assert "***" in redacted


@pytest.mark.parametrize(
    "form",
    [
        "postgresql://127.0.0.1:1/db?PASSWORD=Zx7secret",
        "postgresql://127.0.0.1:1/db?pa\u017f\u017fword=Zx7secret",  # U+017F is an "s" to IGNORECASE
        "host=127.0.0.1 PaSSWord=Zx7secret",
    ],
)
def test_the_shortcut_for_urls_without_a_password_misses_no_spelling(form: str) -> None:
    """``redact_url`` skips its patterns for a URL with no ``@`` and no ``password`` in any case."""
    assert "Zx7" not in redact_url(form)


def test_a_url_without_a_password_is_returned_as_it_is() -> None:
    assert redact_url("sqlite:///tmp/x.db") == "sqlite:///tmp/x.db"


COMMANDS = [["operator", "board"], ["operator", "status"], ["operator", "migrate"], ["doctor"]]


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(secret=st.text(PASSWORD_CHARS, min_size=1, max_size=16).map(lambda s: MARK + s))
def test_no_command_output_or_log_line_shows_a_planted_password(
    secret: str, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """Run in process with TICKLOOP_STORE holding a secret: stdout, stderr and every log record stay clean."""
    caplog.set_level(logging.DEBUG)
    for form in _forms(secret):
        os.environ["TICKLOOP_STORE"] = form
        try:
            for command in COMMANDS:
                with contextlib.suppress(SystemExit):  # `doctor` exits 1 on a failed check
                    main(command)
                out, err = capsys.readouterr()
                assert MARK not in out + err, (form, command, out, err)
        finally:
            del os.environ["TICKLOOP_STORE"]
    assert MARK not in caplog.text
    caplog.clear()


@pytest.mark.parametrize(
    "store",
    [
        "host=127.0.0.1 port=1 password=SECRETpw1",
        "postgresql://alice:SECRETpw1@127.0.0.1:1/db",
        "postgresql://127.0.0.1:1/db?password=SECRETpw1",
    ],
)
@pytest.mark.parametrize(
    "command", [["operator", "board"], ["operator", "tick", "fast"], ["doctor"], ["operator", "migrate"]]
)
def test_a_real_process_never_prints_the_store_password(
    tmp_path: Path, store: str, command: list[str]
) -> None:
    """`tickloop` as a subprocess (the one-shot tick path too) fails naming the store, never its password."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TICKLOOP_")}
    env["TICKLOOP_STORE"] = store
    result = subprocess.run(
        [sys.executable, "-m", "tickloop.cli", *command],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0
    assert "SECRETpw1" not in result.stdout + result.stderr
    assert "***" in result.stdout + result.stderr
