"""The measuring side of ``--qcrypto-target``: the same bench code, in another interpreter.

The controller (:mod:`pytest_qcrypto.pytest_side.targets`) sends this module's source through an
execnet gateway (``gateway.remote_exec(remote)``); there it runs as ``__channelexec__``
and :func:`serve` answers requests, one reply per request, plain dicts only::

    {"op": "hello", "version": V} -> {"version", "machine", "plugins": {...}} or {"problem": ...}
    {"op": "open", "id": N, "algorithm": "sha256", "plugin": "hashlib", "seed": None}
    {"op": "measure", "id": N, "size": 16, "options": {...}}  -> {"measurement": {...}}
    {"op": "close", "id": N}
    a reply that failed:  {"error": {"type": "KnownAnswerError", "message": ..., ...}}

A measurement opens the context with :func:`pytest_qcrypto.measure.bench.open_context` and
times it with :meth:`~pytest_qcrypto.measure.bench.BenchContext.measure`, known-answer checks
included, on the target.  The target's package must be installed there: this file
imports only the standard library at the top, so that a target without it answers
``hello`` with the reason instead of failing to start.  The registry there holds the
built-in crypto plugins, and those named in the environment variable
:data:`PLUGINS_ENV` (``module:function`` items, comma-separated: each function returns
plugin objects, as ``pytest_qcrypto_plugins`` does; a pytest conftest is not read
there).  The local process runs the same :class:`Server` in-process with the run's
registry.  Nothing here imports pytest.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
from typing import Any

#: ``module:function[,module:function]``: extra crypto plugins of a target.
PLUGINS_ENV = "QCRYPTO_TARGET_PLUGINS"


def measurement_to_dict(m: Any) -> dict[str, Any]:
    """A :class:`~pytest_qcrypto.measure.harness.Measurement` as plain data (lists, dicts, the
    direction a plain string): what execnet's channels carry."""
    return json.loads(json.dumps(dataclasses.asdict(m)))


def measurement_from_dict(d: dict[str, Any]) -> Any:
    """The :class:`~pytest_qcrypto.measure.harness.Measurement` of :func:`measurement_to_dict`."""
    from pytest_qcrypto.measure.harness import Measurement, WorkerRecord

    fields = dict(d)
    for key in ("rounds_s", "cpu_s"):
        fields[key] = tuple(fields.get(key, ()))
    fields["workers"] = tuple(
        WorkerRecord(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in w.items()})
        for w in fields.get("workers", ()))
    return Measurement(**fields)


def error_to_dict(exc: BaseException) -> dict[str, Any]:
    """What went wrong, as data the controller turns back into the same kind of error."""
    from pytest_qcrypto.measure import bench, limits

    if isinstance(exc, bench.OpenError):  # opened in an isolated child
        out = error_to_dict(exc.cause)
        out["opening"] = True
        return out
    out: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc),
                           "kinds": [c.__name__ for c in type(exc).__mro__]}
    for key in ("seconds", "errno", "strerror", "call"):
        value = getattr(exc, key, None)
        if isinstance(value, (int, float, str)):
            out[key] = value
    where = limits.origin(exc)
    if where:
        out["origin"] = where
    return out


def _extra_plugins() -> list[Any]:
    found: list[Any] = []
    for item in filter(None, (p.strip() for p in os.environ.get(PLUGINS_ENV, "").split(","))):
        module, _, name = item.partition(":")
        answer = getattr(importlib.import_module(module), name or "pytest_qcrypto_plugins")()
        found.extend(answer if isinstance(answer, (list, tuple)) else [answer])
    return found


class Server:
    """Opens, measures and closes contexts on request; one per target (and one local).

    ``registry``: the crypto plugins to use (None: the built-in ones and
    :data:`PLUGINS_ENV`'s, built when first asked).  Methods raise what the bench
    raises; :func:`serve` turns that into error replies.
    """

    def __init__(self, registry: Any = None) -> None:
        self._registry = registry
        self._contexts: dict[int, Any] = {}

    @property
    def registry(self) -> Any:
        if self._registry is None:
            from pytest_qcrypto.backends import builtin_plugins
            from pytest_qcrypto.measure.registry import Registry

            self._registry = Registry([*builtin_plugins(), *_extra_plugins()])
        return self._registry

    def hello(self) -> dict[str, Any]:
        """The package version, the machine's fingerprint and, per crypto plugin, its
        library, version (or why it is unavailable) and algorithms."""
        import pytest_qcrypto
        from pytest_qcrypto.measure import machine

        registry = self.registry
        plugins: dict[str, Any] = {}
        for p in registry.plugins:
            why = registry.unavailable(p)
            supported = sorted(registry.supported(p)) if why is None else []
            why = registry.unavailable(p)
            plugins[p.name] = {"library": str(p.library or ""), "unavailable": why,
                               "version": registry.version(p) if why is None else "",
                               "aliases": list(p.aliases), "supported": supported}
        return {"version": pytest_qcrypto.__version__, "machine": machine.fingerprint(),
                "plugins": plugins}

    def implementations(self, plugin: str, algorithms: list[str]) -> dict[str, str]:
        """Per algorithm, the code of ``plugin`` that does it (``registry.implementations``)."""
        registry = self.registry
        return registry.implementations(registry.resolve(plugin).plugin, algorithms)

    def open(self, ident: int, algorithm: str, plugin: str, seed: int | None = None,
             isolate: bool = False) -> None:
        """Open the context ``ident`` of ``algorithm`` in ``plugin`` (a name as typed)."""
        from pytest_qcrypto.measure import bench, pkey_bench
        from pytest_qcrypto.backends.base import Unavailable, Unsupported

        registry = self.registry
        selection = registry.resolve(plugin)
        alg = bench.resolve_algorithm(algorithm)
        why = registry.unavailable(selection.plugin)
        if why is not None:
            raise Unavailable(f"unavailable: {why}")
        if pkey_bench.listed_as(alg) not in registry.supported(selection.plugin):
            raise Unsupported(f"does not support {alg.name}")
        rng = bench.Randomness(seed)
        self._contexts[ident] = bench.open_context(selection, alg, rng, isolate=isolate)

    def measure(self, ident: int, size: int, options: dict[str, Any]) -> Any:
        """:meth:`BenchContext.measure` of context ``ident`` (``options``: its keywords)."""
        return self._contexts[ident].measure(size, **options)

    def driver(self, ident: int) -> str | None:
        ctx = self._contexts.get(ident)
        return ctx.driver if ctx is not None else None

    def close(self, ident: int) -> None:
        ctx = self._contexts.pop(ident, None)
        if ctx is not None:
            ctx.close()

    def close_all(self) -> None:
        for ident in list(self._contexts):
            try:
                self.close(ident)
            except Exception:
                pass  # the target is going away; its contexts' close errors do not matter

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        """One request as data, its reply as data (errors too)."""
        from pytest_qcrypto.measure import limits

        op = request.get("op")
        try:
            if op == "hello":
                return self.hello()
            if op == "open":
                self.open(request["id"], request["algorithm"], request["plugin"],
                          request.get("seed"), bool(request.get("isolate")))
                return {"driver": self.driver(request["id"])}
            if op == "measure":
                m = self.measure(request["id"], request["size"], request["options"])
                return {"measurement": measurement_to_dict(m)}
            if op == "implementations":
                return {"implementations": self.implementations(request["plugin"],
                                                                request["algorithms"])}
            if op == "close":
                self.close(request["id"])
                return {}
            return {"error": {"type": "ValueError", "message": f"unknown request {op!r}",
                              "kinds": ["ValueError"]}}
        except (Exception, limits.MeasurementTimeout) as exc:
            return {"error": error_to_dict(exc)}


def serve(channel: Any) -> None:
    """Answer the controller's requests until it sends None or closes the channel."""
    try:
        import pytest_qcrypto
    except ImportError as exc:
        channel.send({"problem": f"pytest-qcrypto is not installed there ({exc})"})
        return
    hello = channel.receive()
    there, here = getattr(pytest_qcrypto, "__version__", "unknown"), hello.get("version")
    if there != here:  # this file's code may not match the package there: go no further
        channel.send({"problem": f"pytest-qcrypto {there} is installed there, {here} here: "
                                 f"install {here} there"})
        return
    server = Server()
    channel.send(server.handle(hello))
    try:
        for request in channel:
            if request is None:
                break
            channel.send(server.handle(request))
    finally:
        server.close_all()


if __name__ == "__channelexec__":  # sent by the controller (execnet's remote_exec)
    serve(channel)  # type: ignore[name-defined]  # noqa: F821
