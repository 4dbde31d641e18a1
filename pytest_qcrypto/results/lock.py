"""The lock of a results path: two runs saving to one file must not lose one run's results.

A run that saves (``--qcrypto-save=PATH``) holds an advisory lock (``flock``, exclusive) on the
sidecar file ``PATH.lock`` from its start until its file is written, and writes into it who it
is (pid, start time, command).  A second run that asks for the same path waits up to
:data:`WAIT` seconds for it, then fails with :class:`LockBusy` naming the other run; when the
other run ends within the wait having written the file, it fails too, saying so (it would
replace that run's results); it goes on only when the other run left the file as it was.  It
never measures for a file another run is about to replace, nor replaces that run's file.  The lock
goes with the process that held it (a crash or ``SIGKILL`` releases it), so it is never
stale; the sidecar is removed when the lock is released.  Nothing here imports pytest.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
from datetime import datetime
from pathlib import Path

from pytest_qcrypto.results.files import real_target

#: Seconds a second run waits for the lock before it gives up.
WAIT = 10.0
#: Seconds between tries.
POLL = 0.1


class LockBusy(Exception):
    """Another run holds the lock of a results path; ``str()`` names it."""


def lock_path(path: Path) -> Path:
    """``PATH.lock`` beside the file ``path`` is (a symbolic link: the file it points to)."""
    target = real_target(Path(path))
    return target.with_name(target.name + ".lock")


class SaveLock:
    """The held lock of one results path; :meth:`release` ends it (closing twice does nothing)."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.unlink(self.path)  # while held: a waiter that opened it sees a new inode
        except OSError:
            pass
        os.close(fd)  # releases the lock

    __del__ = release  # a run that ends in a usage error after taking it


def _holder(path: Path) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read(300).strip()
    except OSError:
        text = ""
    return text or "unknown"


def _version(path: Path) -> tuple[int, int, int] | None:
    """Which file ``path`` is now (inode, modification time in ns, size; None: none): a
    save replaces it by a rename, so a new one differs."""
    try:
        st = os.stat(real_target(Path(path)))
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.fstat(fd).st_ino == os.stat(path).st_ino
    except OSError:
        return False


def acquire(path: Path, wait: float | None = None) -> SaveLock:
    """Take the lock of the results path ``path``, waiting up to ``wait`` seconds (default
    :data:`WAIT`); :class:`LockBusy` naming the other run past it, ``OSError`` when the
    sidecar cannot be made."""
    sidecar = lock_path(path)
    wait = WAIT if wait is None else wait
    ends = time.monotonic() + wait
    waited_for: str | None = None  # the run that held the lock when this one first asked
    before = None
    while True:
        fd = os.open(sidecar, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            if waited_for is None:
                waited_for, before = _holder(sidecar), _version(path)
            if time.monotonic() >= ends:
                raise LockBusy(f"{path} is being saved by another run ({_holder(sidecar)}); "
                               f"waited {wait:g} s: save to another path, or run one after "
                               "the other") from None
            time.sleep(POLL)
            continue
        except BaseException:
            os.close(fd)
            raise
        if not _same_file(fd, sidecar):  # released and removed meanwhile: take the new one
            os.close(fd)
            continue
        if waited_for is not None and _version(path) != before:
            SaveLock(sidecar, fd).release()
            raise LockBusy(f"{path} was saved by another run ({waited_for}) while this run "
                           "waited for it; this run would replace those results: save to "
                           "another path, or run one after the other")
        started = datetime.now().astimezone().strftime("%Y-%m-%d %H:%M:%S %z")
        command = " ".join(os.path.basename(a) if i == 0 else a
                           for i, a in enumerate(sys.argv))[:160]
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()}, started {started}: {command}\n".encode())
        return SaveLock(sidecar, fd)
