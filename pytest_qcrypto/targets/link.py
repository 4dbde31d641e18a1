"""The controller's link to one ``--qcrypto-target``: open it, ask it, give up on it.

A :class:`Link` speaks to one target through an execnet gateway
(https://execnet.readthedocs.io; the library under pytest-xdist): it opens the
gateway from its spec (``popen//python=.venv-old/bin/python``,
``ssh=user@board//python=python3``), sends :mod:`pytest_qcrypto.targets.remote` there and
asks ``hello``.  :class:`LocalLink` is the local process (``local``): the same
:class:`~pytest_qcrypto.targets.remote.Server`, called in-process with the run's registry.

A target that cannot be used says why in one line (:attr:`Link.problem`): the gateway
could not be opened (no such Python, host unreachable, within
:data:`OPEN_TIMEOUT` seconds), pytest-qcrypto is not installed there, or its version
differs from this one.  A request waits at most its limit plus :data:`GRACE` seconds
(the target's own deadline answers first); past that, or when the connection is
lost, the gateway is terminated and the target is gone (:class:`TargetGone`): its
later requests fail at once with the same reason.  Ctrl-C while waiting terminates
the gateway too, so no measurement is left running on the target.  Errors the target
reports come back as the same kinds of exception (:func:`rebuilt`).  No pytest here.
"""

from __future__ import annotations

import tempfile

import threading
from typing import Any

import pytest_qcrypto
from pytest_qcrypto.measure import isolate, jobs, limits, procs
from pytest_qcrypto.targets import remote
from pytest_qcrypto.backends.base import AuthenticationError, Unavailable, Unsupported
from pytest_qcrypto.measure.harness import Measurement, TimerError
from pytest_qcrypto.checks.known_answers import KnownAnswerError

#: Seconds to open a gateway and get the first answer (ssh connecting, Python starting,
#: the target probing its crypto plugins, each probe bounded by limits.QUERY_TIMEOUT) when
#: --qcrypto-timeout is off; else --qcrypto-timeout.
OPEN_TIMEOUT = 60.0
#: Seconds a target gets beyond a measurement's limit to send its own timeout answer.
GRACE = limits.CLOSE_TIMEOUT
#: Seconds of one wait on the channel: Ctrl-C is seen at least this often.
POLL = 0.5


class TargetGone(Exception):
    """The target stopped answering or its connection was lost; ``str()`` says which."""


class RemoteFailure(Exception):
    """An error of a kind this side does not know; ``str()`` is ``Type: message``."""


def rebuilt(error: dict[str, Any]) -> BaseException:
    """The exception of an error reply (:func:`pytest_qcrypto.targets.remote.error_to_dict`)."""
    kinds, message = error.get("kinds") or [error.get("type", "")], str(error.get("message", ""))
    if "MeasurementTimeout" in kinds:
        return limits.MeasurementTimeout(float(error.get("seconds", 0)))
    if "CallTimeout" in kinds:
        return limits.CallTimeout(str(error.get("call", "a call")), float(error.get("seconds", 0)))
    if "OSError" in kinds and isinstance(error.get("errno"), int):
        return OSError(error["errno"], str(error.get("strerror") or message))
    for cls in (KnownAnswerError, Unsupported, Unavailable, AuthenticationError, TimerError,
                jobs.JobsError, isolate.IsolatedError):
        if cls.__name__ in kinds:
            return cls(message)
    exc = RemoteFailure(f"{error.get('type', 'Exception')}: {message}")
    if error.get("origin"):
        exc.qcrypto_origin = error["origin"]  # type: ignore[attr-defined]
    return exc


class LocalLink:
    """The local process as a target: its :class:`remote.Server` runs here."""

    name = "local"
    spec = "this process"

    def __init__(self, registry: Any) -> None:
        self.server = remote.Server(registry)
        self.problem: str | None = None
        self.gone: str | None = None
        self._hello: dict[str, Any] | None = None

    def hello(self) -> dict[str, Any]:
        if self._hello is None:
            self._hello = self.server.hello()
        return self._hello

    def connect(self, timeout: float | None = None) -> None:
        """Nothing to open here."""

    def open(self, ident: int, algorithm: str, plugin: str, seed: int | None, isolate: bool,
             timeout: float | None) -> str | None:
        limits.call_with_deadline(
            lambda: self.server.open(ident, algorithm, plugin, seed, isolate), timeout)
        return self.server.driver(ident)

    def measure(self, ident: int, size: int, options: dict[str, Any]) -> Measurement:
        return self.server.measure(ident, size, options)

    def close(self, ident: int) -> None:
        self.server.close(ident)

    def implementations(self, plugin: str, algorithms: list[str]) -> dict[str, str]:
        return self.server.implementations(plugin, algorithms)

    def shutdown(self) -> None:
        self.server.close_all()


class Link(LocalLink):
    """A target reached through an execnet gateway (``spec``: execnet's gateway spec)."""

    def __init__(self, name: str, spec: str, open_timeout: float | None = None) -> None:
        self.name, self.spec = name, spec
        #: seconds to open the gateway (--qcrypto-timeout; None: :data:`OPEN_TIMEOUT`)
        self.open_timeout = OPEN_TIMEOUT if open_timeout is None else open_timeout
        self.problem = None
        self.gone = None
        self._hello = None
        self._group: Any = None
        self._channel: Any = None
        #: the processes the gateway started here (ssh, or the popen interpreter)
        self._started: set[int] = set()

    def connect(self, timeout: float | None = None) -> None:
        """Open the gateway and say hello (once), within ``timeout`` seconds (--qcrypto-timeout;
        None: :attr:`open_timeout`); sets :attr:`problem` when it cannot."""
        if self._hello is not None or self.problem is not None:
            return
        limit = self.open_timeout if timeout is None else timeout
        result: dict[str, Any] = {"limit": limit}
        before = procs.children()
        opener = threading.Thread(target=self._open, args=(result,), daemon=True,
                                  name=f"qcrypto-target-{self.name}")
        opener.start()
        opener.join(limit)
        self._started = procs.children() - before
        if opener.is_alive():
            self.problem = (f"no answer within {limit:g} s (--qcrypto-timeout) while opening "
                            f"the gateway {self.spec}; its processes were killed")
            self._terminate()
            return
        if "problem" in result:
            self.problem = result["problem"]
            self._terminate()
            return
        hello = result["hello"]
        if "problem" in hello:
            self.problem = hello["problem"]
        elif "error" in hello:
            self.problem = f"hello failed there: {rebuilt(hello['error'])}"
        else:
            self._hello = hello
            return
        self._terminate()

    def _open(self, result: dict[str, Any]) -> None:
        import execnet

        spec = self.spec if "execmodel=" in self.spec else f"{self.spec}//execmodel=main_thread_only"
        if spec.startswith("popen") and "chdir=" not in spec:  # not the source tree of a clone
            spec += f"//chdir={tempfile.gettempdir()}"  # run from: it would shadow the install
        try:
            self._group = execnet.Group()
            gateway = self._group.makegateway(spec)
            self._channel = gateway.remote_exec(remote)
            self._channel.send({"op": "hello", "version": pytest_qcrypto.__version__})
            result["hello"] = self._channel.receive(result["limit"])
        except Exception as exc:  # any way a gateway can fail to open: said in one line
            text = " ".join(str(exc).split()) or "no reason given"
            if type(exc).__name__ == "HostNotFound":  # ssh exited: unreachable, or refused us
                text = (f"ssh could not connect to {text} (unreachable or the login was "
                        "refused; ssh's own message is on standard error)")
            if len(text) > 200:
                text = text[:197] + "..."
            result["problem"] = f"cannot open the gateway {self.spec}: {type(exc).__name__}: {text}"

    def hello(self) -> dict[str, Any]:
        self.connect()
        return self._hello or {}

    def call(self, request: dict[str, Any], timeout: float | None) -> dict[str, Any]:
        """Send ``request``; its reply within ``timeout`` + :data:`GRACE` seconds (None: no
        limit).  :class:`TargetGone` when the target does not answer or the link broke;
        the error of an error reply raised as its kind (:func:`rebuilt`)."""
        if self.gone:
            raise TargetGone(self.gone)
        limit = None if timeout is None else timeout + GRACE
        waited = 0.0
        try:
            self._channel.send(request)
            while True:
                step = POLL if limit is None else min(POLL, max(limit - waited, 0.01))
                try:
                    reply = self._channel.receive(step)
                    break
                except self._channel.TimeoutError:
                    waited += step
                    if limit is not None and waited >= limit:
                        self._lost(f"target {self.name} stopped answering: no reply within "
                                   f"{limit:g} s (--qcrypto-timeout {timeout:g} s + {GRACE:g} s); "
                                   "its gateway was closed")
        except TargetGone:
            raise
        except (Exception, limits.MeasurementTimeout) as exc:  # the channel closed under us
            self._lost(f"target {self.name}: the connection was lost "
                       f"({type(exc).__name__}: {' '.join(str(exc).split())[:150]})")
        except BaseException:  # Ctrl-C, SIGTERM: the target's measurement stops too
            self.gone = f"target {self.name}: interrupted; its gateway was closed"
            self._terminate()
            raise
        if "error" in reply:
            raise rebuilt(reply["error"])
        return reply

    def _lost(self, why: str) -> None:
        self.gone = why
        self._terminate()
        raise TargetGone(why)

    def open(self, ident: int, algorithm: str, plugin: str, seed: int | None, isolate: bool,
             timeout: float | None) -> str | None:
        reply = self.call({"op": "open", "id": ident, "algorithm": algorithm, "plugin": plugin,
                           "seed": seed, "isolate": isolate}, timeout)
        return reply.get("driver")

    def measure(self, ident: int, size: int, options: dict[str, Any]) -> Measurement:
        reply = self.call({"op": "measure", "id": ident, "size": size, "options": options},
                          options.get("timeout"))
        return remote.measurement_from_dict(reply["measurement"])

    def close(self, ident: int) -> None:
        if not self.gone:
            self.call({"op": "close", "id": ident}, limits.CLOSE_TIMEOUT)

    def implementations(self, plugin: str, algorithms: list[str]) -> dict[str, str]:
        return self.call({"op": "implementations", "plugin": plugin, "algorithms": algorithms},
                         limits.QUERY_TIMEOUT)["implementations"]

    def _terminate(self) -> None:
        """Close the gateway; every process it started here, and theirs, is killed."""
        group, self._group = self._group, None
        started = procs.tree(self._started)  # before they die: orphans lose their parent
        if group is not None:
            try:
                group.terminate(timeout=1.0)
            except Exception:
                pass  # already gone
        procs.kill_tree(started)

    def shutdown(self) -> None:
        """Say goodbye and close the gateway (killed after a second if it does not exit)."""
        if self._channel is not None and not self.gone:
            try:
                self._channel.send(None)
            except Exception:
                pass  # the channel is closed already
        self._terminate()
