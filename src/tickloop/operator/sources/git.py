"""Git working trees: branch changes, new commits since the cursor's head, and dirty/clean changes.

``git`` runs as a subprocess with a timeout and no shell. The repository is untrusted: its config
could name an fsmonitor hook that ``git status`` would run, so that is switched off, and optional
locks are skipped so observing never collides with the person's own git commands.

Cursor: ``{"head": sha | null, "branch": name | null, "dirty": "sha256:..." | null}``.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from tickloop.errors import SourceError
from tickloop.operator.sources.ids import git_id
from tickloop.operator.sources.observation import Observation
from tickloop.operator.sources.settings import GitSource
from tickloop.operator.sources.text import one_line
from tickloop.sha256 import sha256

#: the first dirty paths listed in a ``git.dirty`` observation
MAX_DIRTY_PATHS = 20
_SAFE_CONFIG = ("-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false", "-c", "color.ui=false")


def observe(
    settings: GitSource, cursor: dict[str, Any] | None
) -> tuple[list[Observation], dict[str, Any], list[str]]:
    """Observations since ``cursor`` (a first run records a ``git.baseline``) and the new cursor."""
    git = _Git(Path(settings.path).expanduser(), settings.timeout_seconds)
    head, branch = git.head(), git.branch()
    status = git.status()
    dirty = _fingerprint(status) if status else None
    src = git_id(settings)
    if cursor is None:
        payload = {"head": head, "branch": branch, "dirty": bool(status)}
        return (
            [Observation(src, "git.baseline", payload)],
            {"head": head, "branch": branch, "dirty": dirty},
            [],
        )
    found: list[Observation] = []
    if branch != cursor.get("branch"):
        payload = {"from": cursor.get("branch"), "to": branch, "head": head}
        found.append(Observation(src, "git.branch_changed", payload))
    old = cursor.get("head")
    if head is not None and head != old:
        # only a hex object name from the cursor ever reaches git's argv
        found += _commits(git, src, old if _is_sha(old) else None, head, settings.max_commits)
    if dirty != cursor.get("dirty"):
        found.append(_status_observation(src, branch, status))
    return found, {"head": head, "branch": branch, "dirty": dirty}, []


def _commits(git: _Git, src: str, old: str | None, head: str, limit: int) -> list[Observation]:
    """New commits, newest first, plus a count of any beyond ``limit``."""
    # An old head that no longer exists (rebased away, gc'd) can't bound the range: report the tip.
    since = old if old and git.has_commit(old) else None
    commits = git.log(since, head, limit)
    found = [Observation(src, "git.commit", commit) for commit in commits]
    total = git.count(since, head) if len(commits) == limit else len(commits)
    if total > len(commits):
        found.append(Observation(src, "git.commits_omitted", {"count": total - len(commits), "head": head}))
    if since is None and old:
        found.append(Observation(src, "git.history_rewritten", {"from": old, "to": head}))
    return found


def _status_observation(src: str, branch: str | None, status: list[str]) -> Observation:
    if not status:
        return Observation(src, "git.clean", {"branch": branch})
    payload = {"branch": branch, "count": len(status), "paths": status[:MAX_DIRTY_PATHS]}
    return Observation(src, "git.dirty", payload)


def _is_sha(value: object) -> bool:
    return isinstance(value, str) and len(value) in (40, 64) and all(c in "0123456789abcdef" for c in value)


def _fingerprint(lines: list[str]) -> str:
    return "sha256:" + sha256("\n".join(lines).encode("utf-8")).hexdigest()


class _Git:
    """``git -C <repo>`` with a timeout, a scrubbed environment and untrusted-repo hardening."""

    def __init__(self, repo: Path, timeout: float) -> None:
        if not repo.is_dir():
            raise SourceError(f"git: {repo} is not a directory; check the path in [[sources.git]]")
        self.repo = repo
        self.timeout = timeout

    def run(self, *args: str, check: bool = True) -> tuple[int, bytes]:
        argv = ["git", "-C", str(self.repo), *_SAFE_CONFIG, *args]
        try:
            done = subprocess.run(  # noqa: S603  (fixed argv, no shell; the repo path is one argument)
                argv, capture_output=True, timeout=self.timeout, env=_git_env(), check=False
            )
        except FileNotFoundError:
            raise SourceError("git: the git executable was not found on PATH") from None
        except subprocess.TimeoutExpired:
            raise SourceError(f"git {args[0]} in {self.repo} took longer than {self.timeout:g}s") from None
        if check and done.returncode != 0:
            detail = one_line(done.stderr.decode("utf-8", "replace"), 300)
            raise SourceError(f"git {args[0]} in {self.repo} failed: {detail}")
        return done.returncode, done.stdout

    def head(self) -> str | None:
        """The HEAD commit, or None in a repository with no commits yet."""
        self.run("rev-parse", "--git-dir")  # fails clearly when this is not a repository
        code, out = self.run("rev-parse", "--verify", "-q", "HEAD^{commit}", check=False)
        return out.decode("ascii", "replace").strip() if code == 0 else None

    def branch(self) -> str | None:
        """The checked-out branch, or None when HEAD is detached."""
        code, out = self.run("symbolic-ref", "-q", "--short", "HEAD", check=False)
        return one_line(out.decode("utf-8", "replace"), 250) if code == 0 else None

    def has_commit(self, sha: str) -> bool:
        code, _ = self.run("cat-file", "-e", f"{sha}^{{commit}}", check=False)
        return code == 0

    def status(self) -> list[str]:
        """``XY path`` lines of ``git status --porcelain`` (paths as text, bounded)."""
        _, out = self.run("status", "--porcelain=v1", "-z", "--untracked-files=normal")
        entries = iter(out.split(b"\0"))
        lines = []
        for entry in entries:
            if len(entry) < 4:
                continue
            code = entry[:2].decode("ascii", "replace")
            if code[0] in "RC":
                next(entries, None)  # -z puts a rename's source path in the next field
            lines.append(code + " " + one_line(entry[3:].decode("utf-8", "replace"), 300))
        return sorted(lines)

    def log(self, since: str | None, head: str, limit: int) -> list[dict[str, Any]]:
        """Up to ``limit`` commits in ``since..head``, newest first."""
        spec = f"{since}..{head}" if since else head
        fields = "%H%x00%an%x00%ae%x00%aI%x00%s"
        _, out = self.run("log", "-z", f"--format={fields}", f"--max-count={limit}", spec, "--")
        parts = out.decode("utf-8", "replace").split("\0")
        commits = [parts[i : i + 5] for i in range(0, len(parts) - 4, 5)]
        return [_commit_payload(*commit) for commit in commits]

    def count(self, since: str | None, head: str) -> int:
        _, out = self.run("rev-list", "--count", f"{since}..{head}" if since else head, "--")
        return int(out.strip() or b"0")


def _commit_payload(sha: str, name: str, email: str, date: str, subject: str) -> dict[str, Any]:
    return {
        "hash": one_line(sha, 64),
        "author": one_line(name, 200),
        "email": one_line(email, 200),
        "date": one_line(date, 40),
        "subject": one_line(subject, 500),
    }


def _git_env() -> dict[str, str]:
    """The caller's environment minus anything that would redirect git, plus no prompts and no locks."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({"GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"})
    return env
