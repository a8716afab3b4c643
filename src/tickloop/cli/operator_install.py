"""``tickloop operator install``: write systemd units and timers, print crontab lines, or write
Kubernetes CronJobs. Secrets stay out of every file; the executor is written disabled and dry."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import click

from tickloop.cli.operator import profile_option


@click.command()
@click.option("--systemd", "target", flag_value="systemd", help="Write user units and timers.")
@click.option("--cron", "target", flag_value="cron", help="Print crontab lines.")
@click.option("--kubernetes", "target", flag_value="kubernetes", help="Write CronJob manifests (PostgreSQL).")
@profile_option
@click.option(
    "--dir", "directory", type=click.Path(path_type=Path, file_okay=False), help="Where to write files."
)
@click.option(
    "--env-file", default="~/.config/tickloop/env", show_default=True, help="Secrets file the units read."
)
@click.option("--image", default="tickloop:latest", show_default=True, help="Container image (kubernetes).")
def install(target: str | None, profile: str, directory: Path | None, env_file: str, image: str) -> None:
    """Write deployment files for the operator's timers (pick one of --systemd, --cron, --kubernetes)."""
    from tickloop.config import load_settings, section  # noqa: PLC0415
    from tickloop.operator import install as generate  # noqa: PLC0415
    from tickloop.operator.schedule import ScheduleSettings  # noqa: PLC0415

    if target is None:
        raise click.UsageError("pick one of --systemd, --cron, --kubernetes")
    settings = load_settings()
    schedule, why = generate.pick_timezone(
        section(settings, "schedule", ScheduleSettings),
        configured="timezone" in settings.schedule,
        profile=profile,
        profile_zone=_profile_zone(profile),
    )
    click.echo(why, err=True)  # stderr: --cron's stdout is the crontab itself
    env_path = str(Path(env_file).expanduser())
    if target == "cron":
        click.echo(
            generate.crontab_lines(schedule, profile=profile, python=sys.executable, env_file=env_path),
            nl=False,
        )
        return
    if target == "kubernetes":
        out = (directory or Path.cwd()) / f"tickloop-{profile}-cronjobs.yaml"
        out.write_text(generate.kubernetes_manifests(schedule, profile=profile, image=image))
        click.echo(
            f"wrote {out}; create the Secret first: kubectl create secret generic tickloop-secrets "
            "--from-literal=TICKLOOP_STORE=postgresql://... ; then kubectl apply -f it"
        )
        return
    target_dir = directory or Path("~/.config/systemd/user").expanduser()
    target_dir.mkdir(parents=True, exist_ok=True)
    units = generate.systemd_units(schedule, python=sys.executable, env_file=env_path)
    for unit in units:
        (target_dir / unit.name).write_text(unit.text)
    click.echo(f"wrote {len(units)} units to {target_dir}")
    _verify(target_dir, [u.name for u in units], profile)
    timers = " ".join(f"tickloop-{k}@{profile}.timer" for k in ("fast", "slow", "consolidate", "monitor"))
    click.echo(f"enable: systemctl --user daemon-reload && systemctl --user enable --now {timers}")
    click.echo("the executor timer is written but NOT enabled, and pinned to dry-run (TICKLOOP_DRY_RUN=1)")


def _profile_zone(profile: str) -> str | None:
    """The profile's stored timezone if the store has the profile and the zone is valid, else None."""
    from tickloop.errors import TickloopError  # noqa: PLC0415
    from tickloop.operator.service import open_configured_store  # noqa: PLC0415

    try:
        with open_configured_store() as store:
            found = store.get_profile(profile)
            found.zone()
    except TickloopError:
        return None
    return found.timezone


def _verify(directory: Path, names: list[str], profile: str) -> None:
    """Run `systemd-analyze verify` on each unit instantiated for the profile, where it exists."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        click.echo("systemd-analyze not found: units not verified")
        return
    scratch = directory / ".verify"
    scratch.mkdir(exist_ok=True)
    try:
        paths = []
        for name in names:
            instance = scratch / name.replace("@.", f"@{profile}.")
            instance.write_text((directory / name).read_text())
            paths.append(str(instance))
        result = subprocess.run(  # noqa: S603  (argv list, no shell: systemd-analyze from PATH)
            [analyze, "verify", "--man=no", *paths], capture_output=True, text=True, check=False
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if result.returncode != 0:
        raise click.ClickException(f"systemd-analyze verify failed:\n{result.stderr}")
    click.echo("systemd-analyze verify: ok")
