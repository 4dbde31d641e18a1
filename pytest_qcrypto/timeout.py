"""Per-measurement time limits: a SIGALRM deadline, or a child process that can be abandoned.

A crypto plugin can hang: a Python loop that never ends, a ``read`` on a
socket or pipe that never gets data, an ``ioctl`` on a kernel driver that
waits for hardware.  ``--qcrypto-timeout SECONDS`` bounds each measurement
(the known-answer check, the round trip and the timed rounds together); when
it expires the item fails with ``timed out after N s in PLUGIN ALGORITHM at
SIZE bytes`` and the run goes on.  Two ways to enforce it:

* In the process (the default), :func:`deadline`: a one-shot ``ITIMER_REAL``
  timer whose ``SIGALRM`` handler raises :class:`MeasurementTimeout`.  The
  signal interrupts a blocking system call (``read``, ``recv``, ``ioctl``,
  ``sleep``: they fail with EINTR and Python runs the handler) as well as a
  Python loop.  It cannot stop C code that retries on EINTR or never returns
  to Python, nor a call stuck in an uninterruptible kernel wait (state ``D``):
  the handler only runs once control is back in Python.  It works in the main
  thread only (elsewhere the measurement runs without a limit), and restores
  any ``SIGALRM`` handler and timer that was there before, so it nests with
  other users of the alarm (pytest-timeout's signal method).
* In a child process (``--qcrypto-isolate``), :func:`run_isolated`: each
  measurement runs in a forked child that sends its result back over a pipe.
  On timeout the parent kills the child (``SIGKILL``) and does not wait for a
  child that cannot die (a process in an uninterruptible kernel wait ignores
  even ``SIGKILL`` until the kernel lets it go; a crashed driver may never),
  so the run still ends.  The child (and the ``--qcrypto-jobs`` workers it
  forks) is killed by the kernel when the parent dies (Linux; see
  :func:`pytest_qcrypto.jobs.die_with_parent`).  A child that crashes
  (``SIGSEGV`` in a C library) fails only its item.  It costs a ``fork`` per
  measurement and needs ``os.fork`` (POSIX).

Nothing here imports pytest; :func:`parse_timeout` and :func:`check_isolate`
raise :class:`~pytest_qcrypto.settings.SettingsError` for a usage error.
"""

from __future__ import annotations

import gc
import math
import os
import pickle
import select
import signal
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any, TypeVar

from pytest_qcrypto.jobs import die_with_parent, libc_prctl
from pytest_qcrypto.settings import SettingsError, decimal_number, shown

T = TypeVar("T")

#: ``--qcrypto-timeout`` when not given, seconds (longer when the run's
#: ``--qcrypto-min-time`` and ``--qcrypto-rounds`` need it, see :func:`default_timeout`).
DEFAULT_TIMEOUT = 60.0
#: The longest timeout accepted, seconds (one day).
MAX_TIMEOUT = 86400.0
#: What ``--qcrypto-timeout`` takes to mean no limit at all.
OFF = "off"
#: Seconds an abandoned context gets to close (interruptible waits only, like the deadline).
CLOSE_TIMEOUT = 5.0
#: Seconds to wait for a killed child to be reaped before abandoning it.
REAP_WAIT = 1.0


class MeasurementTimeout(BaseException):
    """A measurement did not finish within its time limit.

    A ``BaseException`` (like ``KeyboardInterrupt``), so that a plugin's own
    ``except Exception`` cannot swallow it and carry on hanging.  ``seconds``
    is the limit that expired.
    """

    def __init__(self, seconds: float) -> None:
        super().__init__(f"timed out after {seconds:g} s")
        self.seconds = seconds


class IsolatedError(RuntimeError):
    """The measurement process died without a result, or its error could not be sent back."""


def origin(exc: BaseException) -> str | None:
    """Where ``exc`` was raised, ``file:line in function``, or None when unknown.

    Also for an exception raised in an isolated child: tracebacks do not pickle,
    so the child records this before sending the exception back.
    """
    recorded = getattr(exc, "qcrypto_origin", None)
    if isinstance(recorded, str):
        return recorded
    frames = traceback.extract_tb(exc.__traceback__)
    return f"{frames[-1].filename}:{frames[-1].lineno} in {frames[-1].name}" if frames else None


# -- options -----------------------------------------------------------------------


def add_options(group: Any, parser: Any) -> None:
    """``--qcrypto-timeout`` and ``--qcrypto-isolate`` (called from ``pytest_addoption``)."""
    group.addoption("--qcrypto-timeout", metavar="SECONDS", default=None,
                    help=f"fail a measurement (known-answer check and timed rounds) that takes "
                         f"longer than this and go on with the next item (default "
                         f"{DEFAULT_TIMEOUT:g}, or more when --qcrypto-min-time x "
                         f"--qcrypto-rounds needs it; '{OFF}': no limit).")
    group.addoption("--qcrypto-isolate", action="store_true", default=False,
                    help="run each measurement in a child process that is killed on timeout: "
                         "also stops plugins stuck in the kernel or crashing (POSIX only).")
    parser.addini("qcrypto_timeout", default=None, help="default --qcrypto-timeout, seconds.")


def needed_seconds(min_time: float, rounds: int) -> float:
    """About the longest a fast operation's measurement takes: calibration up to
    ``2 * min_time``, ``min_time`` before it, then ``rounds - 1`` rounds of up to
    ``2 * min_time`` each (seconds)."""
    return min_time * (2 * rounds + 1)


def default_timeout(min_time: float, rounds: int) -> float:
    """:data:`DEFAULT_TIMEOUT`, or twice :func:`needed_seconds` when that is longer."""
    return max(DEFAULT_TIMEOUT, 2 * needed_seconds(min_time, rounds))


def parse_timeout(text: object, min_time: float, rounds: int,
                  option: str = "--qcrypto-timeout") -> float | None:
    """Seconds from ``text``, or None for :data:`OFF`; the default when ``text`` is None
    (an empty text is an error: ``--qcrypto-timeout=``).

    Valid: a number of seconds more than 0 and at most :data:`MAX_TIMEOUT`, no
    shorter than :func:`needed_seconds` of the run's ``min_time`` and ``rounds``.
    """
    if text is None:
        return default_timeout(min_time, rounds)
    value = str(text).strip()
    if value.lower() == OFF:
        return None
    valid = (f"give a number of seconds more than 0 and at most {MAX_TIMEOUT:g}, "
             f"or '{OFF}' for no limit")
    if not value:  # --qcrypto-timeout= : a value forgotten, not the default
        raise SettingsError(f"{option}: the value is empty; {valid}")
    try:
        seconds = decimal_number(value)
    except ValueError:
        raise SettingsError(f"{option}: {shown(value)} is not a number of seconds; "
                            f"{valid}") from None
    if not 0 < seconds <= MAX_TIMEOUT:  # also false for NaN
        raise SettingsError(f"{option}: {value} is out of range; {valid}")
    need = needed_seconds(min_time, rounds)
    if seconds < need:
        raise SettingsError(
            f"{option}: {seconds:g} s is shorter than a measurement needs at a min-time of "
            f"{min_time:g} s and {rounds} round{'s' if rounds != 1 else ''} (about {need:g} s); "
            f"give at least {need:g}, or lower the min-time or rounds")
    return seconds


def check_isolate(isolate: bool) -> None:
    """``--qcrypto-isolate`` needs ``os.fork``; raises ``SettingsError`` where there is none."""
    if isolate and not hasattr(os, "fork"):
        raise SettingsError("--qcrypto-isolate needs os.fork, which this platform lacks; "
                            "run without it (the in-process timeout still applies)")


# -- in the process: the SIGALRM deadline -------------------------------------------


def can_interrupt() -> bool:
    """Whether :func:`deadline` can enforce a limit here (SIGALRM, in the main thread)."""
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
    """Raise :class:`MeasurementTimeout` in the body once ``seconds`` have passed.

    ``None`` (or where :func:`can_interrupt` is false) sets no limit.  The
    ``SIGALRM`` handler and ``ITIMER_REAL`` timer found on entry are put back
    on exit; an earlier timer that is due sooner than ours still fires first,
    on its own handler, and one that came due meanwhile fires right after.
    """
    if seconds is None or not can_interrupt():
        yield
        return
    ends = time.monotonic() + seconds
    armed = True
    earlier_due: float | None = None
    earlier_interval = 0.0

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        nonlocal earlier_due
        if not armed:
            return
        now = time.monotonic()
        if now >= ends - 0.001:
            raise MeasurementTimeout(seconds)
        # the earlier timer is due first: hand it its alarm, then wait for the next one
        earlier_due = earlier_due + earlier_interval if earlier_interval > 0 else None
        _call_handler(earlier_handler, signum, frame)
        _arm(ends if earlier_due is None else min(ends, earlier_due))

    earlier_handler = signal.signal(signal.SIGALRM, on_alarm)
    earlier_delay, earlier_interval = signal.setitimer(signal.ITIMER_REAL, 0)
    earlier_due = time.monotonic() + earlier_delay if earlier_delay > 0 else None
    _arm(ends if earlier_due is None else min(ends, earlier_due))
    try:
        yield
    finally:
        try:
            armed = False
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, earlier_handler)
            if earlier_due is not None:  # it fires at once if it came due meanwhile
                _arm(earlier_due, earlier_interval)


def _arm(due: float, interval: float = 0.0) -> None:
    """Set ``ITIMER_REAL`` to fire at ``due`` (``time.monotonic()`` seconds), or right away."""
    signal.setitimer(signal.ITIMER_REAL, max(due - time.monotonic(), 0.001), interval)


def _call_handler(handler: Any, signum: int, frame: FrameType | None) -> None:
    """Deliver a signal to a handler as ``signal.signal`` returned it."""
    if callable(handler):
        handler(signum, frame)
    elif handler == signal.SIG_DFL:
        # SIGALRM's default action ends the process: do what would have happened
        signal.signal(signum, signal.SIG_DFL)
        signal.raise_signal(signum)
    # SIG_IGN, or None (set from C): nothing to do


def call_with_deadline(fn: Callable[[], T], seconds: float | None) -> T:
    """``fn()`` under :func:`deadline`."""
    with deadline(seconds):
        return fn()


# -- in a child process --------------------------------------------------------------

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


def run_isolated(fn: Callable[[], T], seconds: float | None) -> T:
    """Run ``fn()`` in a forked child and return its result (pickled back over a pipe).

    What ``fn`` raises is raised here (as :class:`IsolatedError` when it cannot
    be pickled).  Past ``seconds`` (None: no limit) the child is killed with
    ``SIGKILL`` and :class:`MeasurementTimeout` raised; a child that cannot be
    reaped within :data:`REAP_WAIT` seconds is left behind (see
    :func:`abandoned_children`).  A child that dies without a result raises
    :class:`IsolatedError` naming its exit code or signal.  Interrupting the
    parent (Ctrl-C) kills the child too.
    """
    _reap_abandoned()
    libc_prctl()  # loaded here, not in the child
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
        _child(fn, write_fd, parent)
    gc.unfreeze()
    os.close(write_fd)
    ends = None if seconds is None else time.monotonic() + seconds
    try:
        data = _read_until_eof(read_fd, ends)
    except BaseException:  # Ctrl-C, SIGTERM: the child goes too
        os.close(read_fd)
        _kill(pid)
        raise
    os.close(read_fd)
    if data is None:
        _kill(pid)
        raise MeasurementTimeout(seconds or 0.0)
    # the child closed its end: it is exiting (if it does not, it is killed)
    return _outcome(data, _kill(pid, first_wait=REAP_WAIT))


def _child(fn: Callable[[], Any], write_fd: int, parent: int) -> None:
    """In the forked child: run, send ``("ok", result)`` or ``("error", exception)``, exit."""
    code = 0
    try:
        die_with_parent(parent)  # a parent killed outright takes the child along
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)  # a Ctrl-C or CI's SIGTERM ends the child
        try:
            payload = pickle.dumps(("ok", fn()))
        except Exception as exc:
            try:
                exc.qcrypto_origin = origin(exc)  # type: ignore[attr-defined]
            except Exception:
                pass  # an exception type without attributes: sent without its origin
            payload = _pickled_error(exc)
        except BaseException as exc:  # SystemExit, KeyboardInterrupt: not for the parent to raise
            payload = _pickled_error(IsolatedError(f"{type(exc).__name__}: {exc}"))
        view = memoryview(payload)
        while view:
            view = view[os.write(write_fd, view):]
    except BaseException:
        code = 70  # EX_SOFTWARE: the parent reports the exit code
    finally:
        os._exit(code)


def _pickled_error(exc: BaseException) -> bytes:
    try:
        payload = pickle.dumps(("error", exc))
        pickle.loads(payload)  # some exceptions pickle but cannot be rebuilt
        return payload
    except Exception:
        return pickle.dumps(("error", IsolatedError(f"{type(exc).__name__}: {exc}")))


def _read_until_eof(fd: int, ends: float | None) -> bytes | None:
    """Everything until the child closes its end, or None once ``ends`` has passed."""
    chunks = []
    poller = select.poll()  # not select(): it cannot watch a descriptor above 1023
    poller.register(fd, select.POLLIN)
    while True:
        left = None if ends is None else ends - time.monotonic()
        if left is not None and left <= 0:
            return None
        if not poller.poll(None if left is None else max(1, math.ceil(left * 1000))):
            return None
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _kill(pid: int, first_wait: float = 0.0) -> int | None:
    """Reap the child, killing it first (or after ``first_wait`` seconds); its wait status.

    A child that cannot be reaped within :data:`REAP_WAIT` seconds of the kill
    (stuck in the kernel) is left in :data:`_abandoned`; then None.
    """
    killed = False
    give_up = time.monotonic() + first_wait
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return None
        if done:
            return status
        now = time.monotonic()
        if now >= give_up:
            if killed:
                _abandoned.add(pid)
                return None
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            killed, give_up = True, now + REAP_WAIT
        time.sleep(0.002)


def _outcome(data: bytes, status: int | None) -> Any:
    try:
        kind, value = pickle.loads(data) if data else (None, None)
    except Exception:
        kind, value = None, None
    if kind == "ok":
        return value
    if kind == "error":
        raise value
    if status is None:
        raise IsolatedError("the measurement process ended without a result")
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        raise IsolatedError(f"the measurement process was killed by {name} without a result")
    raise IsolatedError(f"the measurement process exited with code {code} without a result")
