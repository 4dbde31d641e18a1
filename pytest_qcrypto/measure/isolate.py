"""Measurements in a child process that can be killed and abandoned (``--qcrypto-isolate``).

:func:`run_isolated` runs a measurement (with ``--qcrypto-isolate``: opening
the plugin's context, the known-answer check, the timed rounds and the close)
in a forked child that sends its result back over a pipe.  On timeout the
parent kills the child (``SIGKILL``) and does not wait for a child that cannot
die (a process in an uninterruptible kernel wait ignores even ``SIGKILL``
until the kernel lets it go; a crashed driver may never), so the run still
ends.  The child (and the ``--qcrypto-jobs`` workers it forks) is killed by the
kernel when the parent dies (Linux; see :func:`pytest_qcrypto.measure.procs.die_with_parent`).
A child that crashes (``SIGSEGV`` in a C library) fails only its item.  It
costs a ``fork`` per measurement and needs ``os.fork`` (POSIX).
"""

from __future__ import annotations

import faulthandler
import gc
import math
import os
import pickle
import select
import signal
import time
from collections.abc import Callable
from typing import Any, TypeVar

from pytest_qcrypto.measure import limits, procs
from pytest_qcrypto.measure.limits import CallTimeout, MeasurementTimeout, call_bounded, origin

T = TypeVar("T")

#: Signals by which a process dies of its own fault (a bad memory access, an illegal
#: instruction, a failed assertion in C): a measurement child ended so, the plugin crashed.
CRASH_SIGNALS = frozenset(getattr(signal, name) for name in
                          ("SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGABRT", "SIGSYS")
                          if hasattr(signal, name))
#: Seconds to wait for a killed child to be reaped before abandoning it.
REAP_WAIT = 1.0


class IsolatedError(RuntimeError):
    """The measurement process died without a result, or its error could not be sent back."""


#: Children killed on timeout that had not exited yet; reaped when they can be.
_abandoned: set[int] = set()


def abandoned_children() -> frozenset[int]:
    """Process ids of killed measurement children not yet reaped (stuck in the kernel)."""
    _reap_abandoned()
    return frozenset(_abandoned)


def _reap_abandoned() -> None:
    for pid in list(_abandoned):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            _abandoned.discard(pid)


#: The byte an isolated child sends when ``fn`` is done and its ``close`` starts
#: (a pickle never starts with it: protocol 2 and later begin with 0x80).
CLOSING = b"C"


def run_isolated(fn: Callable[[], T], seconds: float | None,
                 close: Callable[[], None] | None = None) -> T:
    """Run ``fn()`` in a forked child and return its result (pickled back over a pipe).

    What ``fn`` raises is raised here (as :class:`IsolatedError` when it cannot
    be pickled).  Past ``seconds`` (None: no limit) the child is killed with
    ``SIGKILL`` and :class:`MeasurementTimeout` raised; a child that cannot be
    reaped within :data:`REAP_WAIT` seconds is left behind (see
    :func:`abandoned_children`).  A child that dies without a result raises
    :class:`IsolatedError` naming its exit code or signal.  Interrupting the
    parent (Ctrl-C) kills the child too.

    ``close`` runs in the child after ``fn``, whatever ``fn`` did, under a limit
    of its own: :data:`limits.CLOSE_TIMEOUT` seconds, enforced by :func:`deadline` in
    the child and by the parent, which kills the child :data:`REAP_WAIT`
    seconds later (a hang in C code too) and raises :class:`CallTimeout` for
    ``close()``.  What ``close`` raises is raised here when ``fn`` succeeded.
    """
    _reap_abandoned()
    procs.libc_prctl()  # loaded here, not in the child
    parent = os.getpid()
    read_fd, write_fd = os.pipe()
    gc.freeze()  # the child's collector leaves the parent's objects (and their finalizers) be
    try:
        pid = os.fork()
    except BaseException:
        gc.unfreeze()
        os.close(read_fd)
        os.close(write_fd)
        raise
    if pid == 0:  # the child: never returns
        os.close(read_fd)
        _child(fn, close, write_fd, parent)
    gc.unfreeze()
    os.close(write_fd)
    ends = None if seconds is None else time.monotonic() + seconds
    close_limit = limits.CLOSE_TIMEOUT if close is not None else None
    try:
        data, closing = _read_until_eof(read_fd, ends, close_limit)
    except BaseException:  # Ctrl-C, SIGTERM: the child goes too
        os.close(read_fd)
        _kill(pid)
        raise
    os.close(read_fd)
    if data is None:
        _kill(pid)
        if closing:
            raise CallTimeout("close()", close_limit or 0.0)
        raise MeasurementTimeout(seconds or 0.0)
    # the child closed its end: it is exiting (if it does not, it is killed)
    return _outcome(data, _kill(pid, first_wait=REAP_WAIT))


def _child(fn: Callable[[], Any], close: Callable[[], None] | None, write_fd: int,
           parent: int) -> None:
    """In the forked child: run ``fn``, then ``close``; send ``("ok", result)`` or
    ``("error", exception)``; exit."""
    code = 0
    try:
        procs.become_child(parent)  # a parent killed outright takes the child along
        faulthandler.disable()  # a crash is the parent's one-line failure, not a stack dump
        outcome = _run_in_child(fn)
        if close is not None:
            os.write(write_fd, CLOSING)  # the parent now allows the close its own limit
            closed = _run_in_child(lambda: call_bounded(close, "close()", limits.CLOSE_TIMEOUT))
            if outcome[0] == "ok" and closed[0] == "error":
                outcome = closed
        try:
            payload = pickle.dumps(outcome) if outcome[0] == "ok" else _pickled_error(outcome[1])
        except Exception as exc:  # a result that cannot be sent
            payload = _pickled_error(exc)
        view = memoryview(payload)
        while view:
            view = view[os.write(write_fd, view):]
    except BaseException:
        code = 70  # EX_SOFTWARE: the parent reports the exit code
    finally:
        os._exit(code)


def _run_in_child(fn: Callable[[], Any]) -> tuple[str, Any]:
    """``("ok", fn())``, or ``("error", exception)`` with where it was raised recorded."""
    try:
        return ("ok", fn())
    except Exception as exc:
        try:
            exc.qcrypto_origin = origin(exc)  # type: ignore[attr-defined]
        except Exception:
            pass  # an exception type without attributes: sent without its origin
        return ("error", exc)
    except BaseException as exc:  # SystemExit, KeyboardInterrupt: not for the parent to raise
        return ("error", IsolatedError(f"{type(exc).__name__}: {exc}"))


def _pickled_error(exc: BaseException) -> bytes:
    try:
        payload = pickle.dumps(("error", exc))
        pickle.loads(payload)  # some exceptions pickle but cannot be rebuilt
        return payload
    except Exception:
        return pickle.dumps(("error", IsolatedError(f"{type(exc).__name__}: {exc}")))


def _read_until_eof(fd: int, ends: float | None,
                    close_limit: float | None = None) -> tuple[bytes | None, bool]:
    """Everything until the child closes its end (None once the limit has passed), and
    whether the child had reached its close.

    On the :data:`CLOSING` byte (expected first when ``close_limit`` is set) the
    limit becomes ``close_limit`` + :data:`REAP_WAIT` seconds from then.
    """
    chunks = []
    closing = False
    poller = select.poll()  # not select(): it cannot watch a descriptor above 1023
    poller.register(fd, select.POLLIN)
    while True:
        left = None if ends is None else ends - time.monotonic()
        if left is not None and left <= 0:
            return None, closing
        if not poller.poll(None if left is None else max(1, math.ceil(left * 1000))):
            return None, closing
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks), closing
        if close_limit is not None and not closing and not chunks and chunk[:1] == CLOSING:
            closing = True
            ends = time.monotonic() + close_limit + REAP_WAIT
            chunk = chunk[1:]
        chunks.append(chunk)


def _kill(pid: int, first_wait: float = 0.0) -> int | None:
    """Reap the child, killing it first (or after ``first_wait`` seconds); its wait status.

    A child that cannot be reaped within :data:`REAP_WAIT` seconds of the kill
    (stuck in the kernel) is left in :data:`_abandoned`; then None.
    """
    status, stuck = procs.kill_and_reap(pid, first_wait, REAP_WAIT)
    if stuck:
        _abandoned.add(pid)
    return status


def _outcome(data: bytes, status: int | None) -> Any:
    try:
        tag, value = pickle.loads(data) if data else (None, None)
    except Exception:
        tag, value = None, None
    if tag == "ok":
        return value
    if tag == "error":
        raise value
    if status is None:
        raise IsolatedError("the measurement process ended without a result")
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        try:
            name = f"{signal.Signals(-code).name} (signal {-code})"
        except ValueError:
            name = f"signal {-code}"
        crashed = "the plugin crashed: " if -code in CRASH_SIGNALS else ""
        raise IsolatedError(f"{crashed}the measurement process was killed by {name} "
                            "without a result")
    raise IsolatedError(f"the measurement process exited with code {code} without a result")
