"""Slow fsyncs on purpose: an LD_PRELOAD shim, compiled with gcc at run time, that sleeps before the
real ``fsync``/``fdatasync`` (found with ``dlsym(RTLD_NEXT)``), the way a loaded disk or a network
volume answers. And what the scratch directory's filesystem is, so a figure says what it measured."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SHIM_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>

static void nap(void) {
    static long ns = -1;
    if (ns < 0) {
        const char *us = getenv("BENCH_FSYNC_DELAY_US");
        ns = (us ? atol(us) : 5000) * 1000L;
    }
    struct timespec t = {ns / 1000000000L, ns % 1000000000L};
    nanosleep(&t, NULL);
}

int fsync(int fd) {
    static int (*real)(int) = 0;
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    nap();
    return real(fd);
}

int fdatasync(int fd) {
    static int (*real)(int) = 0;
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    nap();
    return real(fd);
}
"""


def build_shim(directory: Path) -> Path:
    """Compile the shim into ``directory``; its path (for ``LD_PRELOAD``)."""
    source, library = directory / "slow_fsync.c", directory / "slow_fsync.so"
    source.write_text(SHIM_C, encoding="utf-8")
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-O2", "-o", str(library), str(source), "-ldl"], check=True, timeout=120
    )
    return library


def filesystem(path: Path) -> str:
    """The type of the filesystem holding ``path`` (the longest mount point above it)."""
    best, kind = "", "unknown"
    resolved = str(path.resolve())
    for line in Path("/proc/mounts").read_text(encoding="utf-8").splitlines():
        fields = line.split()
        point = fields[1]
        inside = resolved == point or resolved.startswith(point.rstrip("/") + "/")
        if inside and len(point) > len(best):
            best, kind = point, fields[2]
    return kind


def fsync_ms(directory: Path, env: dict[str, str], count: int = 20) -> float:
    """Median ms of one fsync in a child with ``env`` (so an LD_PRELOAD in it applies)."""
    code = (
        "import os,statistics,sys,time\n"
        "fd=os.open(sys.argv[1],os.O_WRONLY|os.O_CREAT,0o600);t=[]\n"
        f"for _ in range({count}):\n"
        "    os.write(fd,b'x');s=time.perf_counter();os.fsync(fd);t.append(time.perf_counter()-s)\n"
        "print(statistics.median(t)*1000)\n"
    )
    probe = directory / "fsync-probe"
    out = subprocess.run(
        [sys.executable, "-c", code, str(probe)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    probe.unlink(missing_ok=True)
    return float(out.stdout.strip())


def preload_env(library: Path | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TICKLOOP_")}
    if library is not None:
        env["LD_PRELOAD"] = str(library)
    return env
