"""Deployment files: cron -> systemd translation agrees with croniter; units verify; secrets stay out."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tickloop.errors import ConfigError
from tickloop.operator.install import (
    cron_to_oncalendar,
    crontab_lines,
    kubernetes_manifests,
    systemd_units,
)
from tickloop.operator.schedule import ScheduleSettings, next_fire

SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
needs_systemd = pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="systemd-analyze is not installed")
BASE = datetime(2026, 11, 30, 0, 7, tzinfo=UTC)


def systemd_next(calendar: str, n: int) -> list[datetime]:
    out = subprocess.run(
        [
            SYSTEMD_ANALYZE or "",
            "calendar",
            f"--iterations={n}",
            "--base-time=2026-11-30 00:07:00 UTC",
            calendar,
        ],
        capture_output=True,
        text=True,
        check=True,
        env={"TZ": "UTC", "PATH": "/usr/bin:/bin"},
        timeout=120,
    ).stdout
    stamps = re.findall(r"(?:Next elapse|Iter\. #\d+): \w+ (\S+ \S+) UTC", out)
    return [datetime.fromisoformat(s).replace(tzinfo=UTC) for s in stamps]


@needs_systemd
@pytest.mark.parametrize(
    "expr",
    [
        "*/15 * * * *",
        "*/30 * * * *",
        "30 6 * * *",
        "15 3 * * *",
        "0 9-17/2 * * 1-5",
        "5,35 */4 1 * *",
        "0 0 * * 0,7",
    ],
)
def test_systemd_calendar_fires_when_cron_does(expr: str) -> None:
    """The translated OnCalendar fires at exactly the next eight times croniter computes."""
    expected, moment = [], BASE
    for _ in range(8):
        moment = next_fire(expr, moment, "UTC")
        expected.append(moment)
    assert systemd_next(cron_to_oncalendar(expr) + " UTC", 8) == expected


@pytest.mark.parametrize(
    "expr", ["* * * *", "61 * * * *", "0 0 1 * 1", "0 24 * * *", "5-1 * * * *", "L * * * *", "0 0 * * \uff18"]
)
def test_untranslatable_cron_is_refused(expr: str) -> None:
    """An expression systemd cannot express the same way is refused, never approximated."""
    with pytest.raises(ConfigError):
        cron_to_oncalendar(expr)


@needs_systemd
def test_generated_units_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    """Every generated service and timer passes `systemd-analyze verify` (which does reject a bad one)."""
    for unit in systemd_units(ScheduleSettings(), python="/usr/bin/python3", env_file=str(tmp_path / "env")):
        (tmp_path / unit.name.replace("@.", "@demo.")).write_text(unit.text)
    bad = tmp_path / "tickloop-broken@demo.timer"
    bad.write_text("[Timer]\nOnCalendar=not a time\n")

    def verify(path: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [SYSTEMD_ANALYZE or "", "verify", "--man=no", str(path)],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )

    assert verify(bad).returncode != 0
    for path in sorted(tmp_path.glob("tickloop-*@demo.*")):
        if path != bad:
            result = verify(path)
            assert result.returncode == 0, (path.name, result.stderr)


def test_units_keep_secrets_out_and_the_executor_pinned_dry() -> None:
    """Secrets come from EnvironmentFile; the executor unit pins dry-run; its timer says it is not enabled."""
    units = {
        u.name: u.text for u in systemd_units(ScheduleSettings(), python="/py", env_file="/etc/tickloop/env")
    }
    assert all("EnvironmentFile=-/etc/tickloop/env" in t for n, t in units.items() if n.endswith(".service"))
    assert "Environment=TICKLOOP_DRY_RUN=1" in units["tickloop-executor@.service"]
    assert "NOT enabled" in units["tickloop-executor@.timer"]
    assert "Persistent=true" in units["tickloop-fast@.timer"]
    assert "RandomizedDelaySec=" in units["tickloop-fast@.timer"]
    assert (
        "ExecStartPre=-/py -m tickloop operator tick observe --profile %i" in units["tickloop-fast@.service"]
    )


def test_crontab_lines_comment_out_the_executor() -> None:
    """Cron runs observe before fast, reads its timezone from CRON_TZ, and leaves the executor off."""
    text = crontab_lines(
        ScheduleSettings(timezone="Europe/Berlin"), profile="ada", python="/py", env_file="/e"
    )
    active = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert active[0] == "CRON_TZ=Europe/Berlin"
    assert any(
        line.startswith("*/30 * * * * /py -m tickloop operator tick observe --profile ada; ")
        for line in active
    )
    assert not any("tick executor" in line for line in active)
    assert "# */15 * * * * /py -m tickloop operator tick executor --profile ada" in text


def test_kubernetes_cronjobs_take_secrets_from_a_secret_and_suspend_the_executor() -> None:
    """Each CronJob forbids overlap, reads env from the Secret, and the executor's is suspended and dry."""
    docs = [
        json.loads(d)
        for d in kubernetes_manifests(ScheduleSettings(), profile="ada", image="tickloop:1").split("\n---\n")
    ]
    by_name = {d["metadata"]["name"]: d for d in docs}
    assert set(by_name) == {
        f"tickloop-{k}-ada" for k in ("fast", "slow", "executor", "consolidate", "monitor")
    }
    for doc in docs:
        pod = doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        assert doc["spec"]["concurrencyPolicy"] == "Forbid"
        assert pod["containers"][0]["envFrom"] == [{"secretRef": {"name": "tickloop-secrets"}}]
        assert "postgresql://" not in json.dumps(doc)
    executor = by_name["tickloop-executor-ada"]
    assert executor["spec"]["suspend"] is True
    assert {"name": "TICKLOOP_DRY_RUN", "value": "1"} in executor["spec"]["jobTemplate"]["spec"]["template"][
        "spec"
    ]["containers"][0]["env"]
    fast_pod = by_name["tickloop-fast-ada"]["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert fast_pod["initContainers"][0]["args"][-3:] == ["observe", "--profile", "ada"]
    with pytest.raises(ConfigError, match="cannot name a CronJob"):
        kubernetes_manifests(ScheduleSettings(), profile="Ada Lovelace", image="x")
