"""Deployment files for the operator: systemd user units and timers, crontab lines, Kubernetes CronJobs.

Secrets never appear in these files: systemd reads them from ``EnvironmentFile=``, cron from the env
file named by ``TICKLOOP_ENV_FILE``, Kubernetes from a Secret. The executor is shipped dry-run and
not enabled: its systemd timer is written but not enabled, its cron line is commented out, and its
CronJob is suspended, each with ``TICKLOOP_DRY_RUN=1`` pinned.
"""

from __future__ import annotations

import json
import re
import shlex

import msgspec

from tickloop.errors import ConfigError
from tickloop.operator.schedule import ScheduleSettings

#: the Kubernetes Secret the CronJobs read TICKLOOP_STORE and API keys from (a name, not a secret)
DEFAULT_SECRET_REF = "tickloop-secrets"  # noqa: S105
TIMER_KINDS = ("fast", "slow", "executor", "consolidate", "monitor")
_WEEKDAYS = ("Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat")
_K8S_NAME = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?")
_FIELDS = (("minute", 0, 59), ("hour", 0, 23), ("day", 1, 31), ("month", 1, 12), ("weekday", 0, 7))


def command_for(kind: str, profile: str, python: str) -> list[str]:
    """The one-shot command a unit, a cron line or a CronJob runs."""
    if kind == "monitor":
        return [python, "-m", "tickloop", "operator", "monitor", "--profile", profile]
    return [python, "-m", "tickloop", "operator", "tick", kind, "--profile", profile]


def cron_to_oncalendar(expr: str) -> str:
    """Translate a 5-field cron expression to systemd's ``OnCalendar=`` form.

    Supports ``*``, ``*/n``, numbers, ``a-b``, ``a-b/n`` and comma lists (weekday 0 and 7 are
    Sunday). Ranges with steps are expanded to lists, which systemd accepts. Cron's rule that a
    restricted day AND weekday match either is not expressible in systemd, so that is refused.
    """
    fields = expr.split()
    if len(fields) != 5:
        raise ConfigError(f"cron expression {expr!r} must have 5 fields")
    minute, hour, day, month, weekday = (
        _expand(value, name, lo, hi) for value, (name, lo, hi) in zip(fields, _FIELDS, strict=True)
    )
    if day != "*" and weekday != "*":
        raise ConfigError(
            f"cron expression {expr!r}: day-of-month AND weekday together cannot map to systemd"
        )
    date = f"*-{month}-{day}"
    time = f"{hour}:{minute}:00"
    if weekday == "*":
        return f"{date} {time}"
    names = sorted({_WEEKDAYS[int(d) % 7] for d in weekday.split(",")}, key=_WEEKDAYS.index)
    return f"{','.join(names)} {date} {time}"


def _expand(value: str, name: str, lo: int, hi: int) -> str:
    if value == "*":
        return "*"
    if value.startswith("*/"):
        step = _int(value[2:], name, 1, hi)
        return f"{lo:02d}/{step}" if name != "weekday" else ",".join(str(d) for d in range(0, 7, step))
    numbers: set[int] = set()
    for part in value.split(","):
        span, _, step_text = part.partition("/")
        first, _, last = span.partition("-")
        start = _int(first, name, lo, hi)
        stop = _int(last, name, lo, hi) if last else (hi if step_text else start)
        step = _int(step_text, name, 1, hi) if step_text else 1
        if stop < start:
            raise ConfigError(f"cron {name} range {part!r} runs backwards")
        numbers.update(range(start, stop + 1, step))
    return ",".join(f"{n:02d}" if name in ("minute", "hour") else str(n) for n in sorted(numbers))


def _int(text: str, name: str, lo: int, hi: int) -> int:
    if not text.isascii() or not text.isdigit() or not lo <= int(text) <= hi:
        raise ConfigError(f"cron {name} value {text!r} is not a number from {lo} to {hi}")
    return int(text)


class UnitFile(msgspec.Struct, frozen=True):
    """One file to write: a name relative to the target directory, and its text."""

    name: str
    text: str


def systemd_units(settings: ScheduleSettings, *, python: str, env_file: str) -> list[UnitFile]:
    """Template user units (``tickloop-KIND@PROFILE``) and their timers."""
    files = []
    for kind in TIMER_KINDS:
        command = shlex.join(command_for(kind, "%i", python))
        pre = ""
        if kind == "fast":  # observe right before each fast tick; its failure must not stop the doer
            pre = f"ExecStartPre=-{shlex.join(command_for('observe', '%i', python))}\n"
        dry = "Environment=TICKLOOP_DRY_RUN=1\n" if kind == "executor" else ""
        files.append(
            UnitFile(
                f"tickloop-{kind}@.service",
                f"[Unit]\nDescription=tickloop {kind} tick for profile %i\n\n"
                f"[Service]\nType=oneshot\nEnvironmentFile=-{env_file}\n{dry}{pre}ExecStart={command}\n"
                "TimeoutStopSec=10\n",
            )
        )
        disabled = "# Written but NOT enabled: enable it only after reading the executor docs.\n" * (
            kind == "executor"
        )
        files.append(
            UnitFile(
                f"tickloop-{kind}@.timer",
                f"{disabled}[Unit]\nDescription=tickloop {kind} timer for profile %i\n\n"
                f"[Timer]\nOnCalendar={cron_to_oncalendar(getattr(settings, kind))} {settings.timezone}\n"
                "Persistent=true\nRandomizedDelaySec=60\n\n[Install]\nWantedBy=timers.target\n",
            )
        )
    return files


def crontab_lines(settings: ScheduleSettings, *, profile: str, python: str, env_file: str) -> str:
    """Crontab lines (``CRON_TZ`` for the timezone); the executor's line is commented out."""
    lines = [f"CRON_TZ={settings.timezone}", f"TICKLOOP_ENV_FILE={env_file}"]
    for kind in TIMER_KINDS:
        command = shlex.join(command_for(kind, profile, python))
        if kind == "fast":
            command = f"{shlex.join(command_for('observe', profile, python))}; {command}"
        line = f"{getattr(settings, kind)} {command}"
        if kind == "executor":
            line = f"# enable deliberately (dry-run unless TICKLOOP_DRY_RUN=0):\n# {line}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def kubernetes_manifests(
    settings: ScheduleSettings, *, profile: str, image: str, secret_ref: str = DEFAULT_SECRET_REF
) -> str:
    """One CronJob per kind, for several machines sharing PostgreSQL. JSON is valid YAML; kubectl
    reads it as is. ``TICKLOOP_STORE`` and API keys come from the Secret, never from the manifest."""
    if not _K8S_NAME.fullmatch(profile) or len(profile) > 40:
        raise ConfigError(f"profile {profile!r} cannot name a CronJob: use lowercase letters, digits and '-'")
    documents = [
        _cronjob(kind, settings, profile=profile, image=image, secret=secret_ref) for kind in TIMER_KINDS
    ]
    return "\n---\n".join(json.dumps(doc, indent=2) for doc in documents) + "\n"


def _cronjob(
    kind: str, settings: ScheduleSettings, *, profile: str, image: str, secret: str
) -> dict[str, object]:
    args = command_for(kind, profile, "python")[1:]
    env = [{"name": "TICKLOOP_DRY_RUN", "value": "1"}] if kind == "executor" else []
    container = {
        "name": kind,
        "image": image,
        "command": ["python"],
        "args": args,
        "envFrom": [{"secretRef": {"name": secret}}],
        "env": env,
    }
    init = []
    if kind == "fast":
        init = [{**container, "name": "observe", "args": command_for("observe", profile, "python")[1:]}]
    pod = {"restartPolicy": "Never", "initContainers": init, "containers": [container]}
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": f"tickloop-{kind}-{profile}", "labels": {"app": "tickloop", "profile": profile}},
        "spec": {
            "schedule": getattr(settings, kind),
            "timeZone": settings.timezone,
            "concurrencyPolicy": "Forbid",
            "suspend": kind == "executor",
            "jobTemplate": {"spec": {"backoffLimit": 0, "template": {"spec": pod}}},
        },
    }


def pick_timezone(
    settings: ScheduleSettings, *, configured: bool, profile: str, profile_zone: str | None
) -> tuple[ScheduleSettings, str]:
    """The zone the written cadences are read in, and one line saying why.

    ``[schedule] timezone`` wins when the file sets it; otherwise the profile's own timezone (a
    person's "every day at 7" is their 7, not UTC's); UTC only when neither is known."""
    if configured:
        return settings, f"cadences read in {settings.timezone} ([schedule] timezone)"
    if profile_zone is not None:
        made = msgspec.structs.replace(settings, timezone=profile_zone)
        return made, f"cadences read in {profile_zone}: profile {profile}'s timezone ([schedule] overrides)"
    return settings, (
        f"cadences read in {settings.timezone}: [schedule] timezone is unset and profile {profile} is not "
        "in the store (run `tickloop operator init` first, or set [schedule] timezone)"
    )
