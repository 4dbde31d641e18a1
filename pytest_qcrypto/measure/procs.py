"""Process handling shared by the ``--qcrypto-jobs`` workers (:mod:`pytest_qcrypto.measure.jobs`) and the
``--qcrypto-isolate`` measurement children (:mod:`pytest_qcrypto.measure.isolate`).

Children never outlive the run.  On Linux a forked child asks the kernel to
``SIGKILL`` it when its parent dies (``prctl(PR_SET_PDEATHSIG)``; then it
checks that the parent is still the one that forked it), so a pytest process
killed outright takes its children with it (:func:`become_child`).  A parent
that gives up on a child kills it and waits a bounded time for it to be
reaped (:func:`kill_and_reap`, :func:`stop`): a child stuck in an
uninterruptible kernel wait ignores even ``SIGKILL`` until the kernel lets it
go, and the run must still end.  ``SIGINT``, ``SIGTERM`` and ``SIGALRM`` are
held (:func:`signals_held`) while a child is forked and while children are
killed, so an interrupt cannot land between a fork and the bookkeeping that
lets the child be killed.

Nothing here imports pytest.
"""

from __future__ import annotations

import errno
import functools
import os
import signal
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

#: Seconds to wait for killed children to be reaped before leaving them behind.
REAP_WAIT = 1.0
#: Signals held while a child is forked and while children are killed.
HELD_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM}
                         | ({signal.SIGALRM} if hasattr(signal, "SIGALRM") else set()))
#: ``PR_SET_PDEATHSIG`` of <linux/prctl.h>.
_PR_SET_PDEATHSIG = 1
#: What a failed fork's errno most likely means, for :func:`start_failure`.
_START_HINTS = {errno.EAGAIN: "too many processes (ulimit -u)",
                errno.EMFILE: "too many open files (ulimit -n)",
                errno.ENOMEM: "out of memory"}


@functools.cache
def libc_prctl() -> Callable[..., int] | None:
    """libc's ``prctl`` through ctypes on Linux, else None (call it before forking)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
    prctl.restype = ctypes.c_int
    return prctl  # type: ignore[no-any-return]


def die_with_parent(parent: int) -> None:
    """In a forked child: be ``SIGKILL``ed when ``parent`` dies; exit now if it already has.

    ``parent`` is the pid of the parent, taken before ``fork``.  The check
    after ``prctl`` closes the race of a parent that died between ``fork`` and
    the request (the child was then reparented already).  Call
    :func:`libc_prctl` in the parent before forking, so that the child does
    not load libc itself.  Off Linux only the check is made.
    """
    prctl = libc_prctl()
    if prctl is not None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def become_child(parent: int, *, release_held: bool = False) -> None:
    """In a forked child: :func:`die_with_parent`, then let ``SIGINT`` and ``SIGTERM`` end it.

    The parent's handlers are for the parent: a child ends when interrupted or
    terminated (a Ctrl-C, CI's SIGTERM).  ``release_held`` unblocks
    :data:`HELD_SIGNALS`, for a child forked inside :func:`signals_held`.
    """
    die_with_parent(parent)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    if release_held and hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, HELD_SIGNALS)


@contextmanager
def signals_held() -> Iterator[None]:
    """Hold :data:`HELD_SIGNALS` in the body; they are delivered at its end.

    A child forked in the body inherits the mask (see :func:`become_child`).
    """
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    earlier = signal.pthread_sigmask(signal.SIG_BLOCK, HELD_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, earlier)


def errno_text(exc: OSError) -> str:
    """``[EAGAIN] Resource temporarily unavailable``: the errno's symbol and the OS's message
    (``str(exc)`` for an ``OSError`` without an errno)."""
    if not exc.errno:
        return str(exc)
    return f"[{errno.errorcode.get(exc.errno, '') or exc.errno}] {exc.strerror or exc}"


def start_failure(n: int, total: int, exc: OSError, what: str = "worker") -> str:
    """One line: which child (``n`` of ``total``) could not be started, the OS's reason with
    a hint, and what became of the ``n - 1`` started before it (they are killed)."""
    hint = _START_HINTS.get(exc.errno or 0)
    started = (f"the {n - 1} already started were killed" if n > 2 else
               "the 1 already started was killed" if n == 2 else "none had started")
    return (f"could not start {what} {n} of {total}: {errno_text(exc)}"
            f"{f': {hint}' if hint else ''}; {started}")


def kill_and_reap(pid: int, first_wait: float = 0.0,
                  reap_wait: float = REAP_WAIT) -> tuple[int | None, bool]:
    """Reap child ``pid``, killing it first (or after ``first_wait`` seconds if it has not
    exited): ``(wait status, False)``; ``(None, False)`` when it was reaped elsewhere.

    A child not reaped within ``reap_wait`` seconds of the ``SIGKILL`` (stuck in
    the kernel) is left running: ``(None, True)``; reap it later with
    ``os.waitpid(pid, os.WNOHANG)``.
    """
    killed = False
    give_up = time.monotonic() + first_wait
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return None, False
        if done:
            return status, False
        now = time.monotonic()
        if now >= give_up:
            if killed:
                return None, True
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            killed, give_up = True, now + reap_wait
        time.sleep(0.002)


def stop(children: Sequence[Any], grace: float, reap_wait: float = REAP_WAIT) -> None:
    """Let ``multiprocessing`` children exit for up to ``grace`` seconds, kill those left,
    reap them all.

    The kill cannot be skipped by an interrupt: one during the grace period
    goes on after the kill, and the kill and reaping run with
    :data:`HELD_SIGNALS` held.  A killed child not reaped within ``reap_wait``
    seconds (stuck in the kernel; it dies when the kernel lets it go) is
    reaped by ``multiprocessing`` later.
    """
    try:
        ends = time.monotonic() + grace
        for proc in children:
            proc.join(max(0.0, ends - time.monotonic()))
    finally:
        with signals_held():
            for proc in children:
                if proc.exitcode is None:
                    proc.kill()
            ends = time.monotonic() + reap_wait
            for proc in children:
                proc.join(max(0.0, ends - time.monotonic()))
                if proc.exitcode is not None:
                    proc.close()  # its sentinel descriptor


# -- process trees (Linux /proc; elsewhere nothing is found) -------------------------------


def _stat(pid: int) -> tuple[int, str] | None:
    """``(parent pid, start time)`` of ``pid`` from ``/proc/PID/stat``; None when it is gone
    (or a zombie: it has ended) or there is no /proc."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read(4096).decode("ascii", "replace")
        fields = text[text.rindex(")") + 2:].split()
        return None if fields[0] in ("Z", "X") else (int(fields[1]), fields[19])
    except (OSError, ValueError, IndexError):
        return None


def children(pid: int | None = None) -> set[int]:
    """The live child processes of ``pid`` (default: this process)."""
    parent = os.getpid() if pid is None else pid
    try:
        pids = [int(n) for n in os.listdir("/proc") if n.isdigit()]
    except OSError:
        return set()
    return {p for p in pids if (st := _stat(p)) is not None and st[0] == parent}


def tree(roots: Iterable[int]) -> dict[int, str]:
    """``roots`` and all their live descendants: pid -> start time (which tells a pid that
    was used again apart)."""
    found: dict[int, str] = {}
    todo = list(roots)
    while todo:
        pid = todo.pop()
        st = _stat(pid)
        if st is None or pid in found:
            continue
        found[pid] = st[1]
        todo.extend(children(pid))
    return found


def kill_tree(found: dict[int, str], reap_wait: float = REAP_WAIT) -> None:
    """``SIGKILL`` every process of ``found`` (:func:`tree`) that still runs, and wait up to
    ``reap_wait`` seconds for them to die, reaping this process's children (init reaps the
    others)."""
    for pid, started in found.items():
        st = _stat(pid)
        if st is not None and st[1] == started:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    ends = time.monotonic() + reap_wait
    for pid, started in found.items():
        while time.monotonic() < ends:
            try:
                if os.waitpid(pid, os.WNOHANG)[0]:
                    break
            except ChildProcessError:  # not ours: dead once /proc says so
                st = _stat(pid)
                if st is None or st[1] != started:
                    break
            time.sleep(0.02)
