"""The source tree a run measured: its git commit and whether it had local changes.

A results file records it as ``"source": {"git_commit": "4affb20...", "git_dirty": false}``
when the run's rootdir is in a git checkout with a commit, so that a figure can be traced
to the code that produced it (pytest-benchmark's ``commit_info``).  ``git_commit`` is the
full hash of ``HEAD`` (``git rev-parse HEAD``); ``git_dirty`` is true when tracked files
differ from it (``git status --porcelain --untracked-files=no``: untracked files, such as
a results file written there, do not count), null when that could not be read.  Not a git
checkout, no commit yet, or no ``git`` installed: no ``source`` at all.  Each ``git`` call
has :data:`GIT_TIMEOUT` seconds; nothing here ever fails a save.  Plain Python.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

#: Seconds each ``git`` call may take (a huge or network-mounted checkout: no source then).
GIT_TIMEOUT = 5.0
#: A full commit hash: 40 (SHA-1) or 64 (SHA-256 repositories) hex digits.
COMMIT = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")
#: Variables that would point ``git`` at another repository than the rootdir's.
_GIT_REDIRECTS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR")


def _git(root: Path, *args: str) -> str | None:
    """``git -C root ARGS``'s standard output, or None when it fails, is missing or slow."""
    env = {k: v for k, v in os.environ.items() if k not in _GIT_REDIRECTS}
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                              timeout=GIT_TIMEOUT, env=env, stdin=subprocess.DEVNULL,
                              check=False)
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    return done.stdout if done.returncode == 0 else None


def git_source(root: Path | str) -> dict[str, Any] | None:
    """``{"git_commit": HASH, "git_dirty": bool | None}`` of the checkout ``root`` is in, or
    None (not a checkout, no commit, no ``git``, or ``git`` failed or took too long)."""
    try:
        commit = (_git(Path(root), "rev-parse", "--verify", "-q", "HEAD") or "").strip()
        if not COMMIT.fullmatch(commit):
            return None
        status = _git(Path(root), "status", "--porcelain", "--untracked-files=no")
        return {"git_commit": commit, "git_dirty": None if status is None else bool(status.strip())}
    except Exception:  # never lose a results file over its provenance
        return None


#: What :func:`valid` takes, for the loader's message (``source must be ...``).
WHAT = ("null or an object whose git_commit is null or 40 or 64 hex digits and git_dirty "
        "true, false or null")


def valid(value: object) -> bool:
    """A results file's ``source``: null, or an object whose ``git_commit`` is a full hash
    (or null) and ``git_dirty`` true, false or null (both optional; other keys are kept)."""
    if value is None:
        return True
    if not isinstance(value, dict):
        return False
    commit, dirty = value.get("git_commit"), value.get("git_dirty")
    return ((commit is None or (isinstance(commit, str) and bool(COMMIT.fullmatch(commit))))
            and (dirty is None or isinstance(dirty, bool)))
