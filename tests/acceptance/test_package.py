"""The package as a user installs it: a wheel and an sdist built from the checkout, the wheel installed in
a fresh venv (no checkout on its path), and the commands a newcomer runs first, run from that venv.

The wheel must carry every data file the code reads at run time: the dashboard's templates and static
files, the store's SQL, the ticks' prompts, and ``py.typed`` so library users get tickloop's types.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "tickloop"


def _data_files() -> set[str]:
    """Every non-Python file git tracks under src/tickloop, as a path inside the wheel."""
    listed = subprocess.run(["git", "ls-files", "src/tickloop"], cwd=ROOT, capture_output=True, text=True,
                            check=True, timeout=60).stdout.split()  # fmt: skip
    return {name.removeprefix("src/") for name in listed if not name.endswith(".py")}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``python -m build`` of the checkout: one wheel and one sdist."""
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], check=True,
                   capture_output=True, text=True, timeout=600)  # fmt: skip
    return out


def test_the_wheel_carries_every_data_file_and_py_typed(built: Path) -> None:
    """Templates, static files, SQL, prompts and py.typed are all inside the wheel and the sdist."""
    [wheel] = built.glob("tickloop-*.whl")
    [sdist] = built.glob("tickloop-*.tar.gz")
    names = set(zipfile.ZipFile(wheel).namelist())
    wanted = _data_files()
    assert {"tickloop/py.typed", "tickloop/web/templates/base.html"} <= wanted
    assert any(n.startswith("tickloop/operator/store/sql/postgres/") for n in wanted)
    assert wanted - names == set()
    import tarfile  # noqa: PLC0415  (only this test reads the sdist)

    with tarfile.open(sdist) as tar:
        members = {m.name.split("/", 1)[1] for m in tar.getmembers() if "/" in m.name}
    assert {f"src/{name}" for name in wanted} - members == set()


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_installed_wheel_runs_the_first_commands_in_a_fresh_venv(built: Path, tmp_path: Path) -> None:
    """From a fresh venv with only the wheel installed, in a fresh HOME and outside the checkout:
    --version, operator init, web --help and mcp serve --help all work."""
    [wheel] = built.glob("tickloop-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, f"{wheel}[web,mcp]"], check=True, timeout=900)
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}
    env.update({k: v for k, v in os.environ.items() if k in ("TMPDIR",)})

    def tickloop(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([str(venv / "bin" / "tickloop"), *args], env=env, cwd=home,
                              capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done

    assert "tickloop" in tickloop("--version").stdout
    tickloop(
        "operator", "init", "--goal", "Ship the thesis", "--timezone", "Europe/Berlin", "--quiet", "22-7"
    )
    assert (home / ".local" / "share" / "tickloop" / "operator.sqlite3").exists()
    assert "--port" in tickloop("web", "--help").stdout
    assert "--transport" in tickloop("mcp", "serve", "--help").stdout
    probe = [str(venv / "bin" / "python"), "-c", "import tickloop; print(tickloop.__file__)"]
    imported = subprocess.run(
        probe, env=env, cwd=home, capture_output=True, text=True, timeout=60, check=True
    )
    assert str(venv) in imported.stdout
