"""Which crypto plugins exist, which can run here, and what a typed name means.

The registry is built from the ``pytest_qcrypto_plugins`` hook (the built-in
plugins answer it too) or from a plain list in Python code.  It never probes a
plugin until asked, and asks each plugin at most once per run.

A typed name is what the user wrote after ``--qcrypto-plugin``: a plugin's
name or alias (``openssl``, ``openssl-3``), optionally followed by ``:VARIANT``
for plugins that pin a driver (``afalg:sha256-generic``).  The typed name is
kept for display; :class:`Selection` carries both.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from functools import cache, cached_property

from pytest_qcrypto.algorithms import catalog
from pytest_qcrypto.measure import limits, pkey_bench
from pytest_qcrypto.algorithms import settings
from pytest_qcrypto.backends.base import CryptoPlugin, Unavailable, describe_implementations


class RegistryError(ValueError):
    """A typed name that matches no plugin, or a plugin that declares nonsense."""


#: Kernel crypto names (``crypto_alg.cra_driver_name``) are shorter than this many bytes
#: (``CRYPTO_MAX_ALG_NAME``, include/linux/crypto.h).
MAX_DRIVER_NAME = 128


def _shorten(typed: str, keep: int = 60) -> str:
    """``typed`` quoted for a message, cut to ``keep`` characters with the full length said."""
    if len(typed) <= keep:
        return repr(typed)
    return f"{typed[:keep]!r}... ({len(typed)} characters)"


@dataclass(frozen=True)
class Selection:
    """A plugin as the user chose it: ``typed`` as written, the plugin, the pinned variant."""

    typed: str
    plugin: CryptoPlugin
    variant: str | None = None

    @property
    def canonical(self) -> str:
        """The plugin's own name, with the variant: ``afalg:sha256-generic``, ``openssl``."""
        return f"{self.plugin.name}:{self.variant}" if self.variant else self.plugin.name


def _check_plugin(p: object) -> CryptoPlugin:
    if not isinstance(p, CryptoPlugin):
        raise RegistryError(
            f"pytest_qcrypto_plugins returned {p!r}, which is not a pytest_qcrypto CryptoPlugin")
    name = getattr(p, "name", None)
    if not isinstance(name, str) or not name or ":" in name or name != name.strip() \
            or any(c.isspace() for c in name):
        raise RegistryError(
            f"crypto plugin {type(p).__name__} has an unusable name {name!r}: "
            "it must be a non-empty string without spaces or ':'")
    aliases = getattr(p, "aliases", ())
    if not isinstance(aliases, (tuple, list)) or not all(isinstance(a, str) and a for a in aliases):
        raise RegistryError(f"crypto plugin {name!r} declares aliases {aliases!r}: "
                            "they must be a tuple of non-empty strings")
    return p


class Registry:
    """All known crypto plugins, in registration order (built-ins first)."""

    def __init__(self, plugins: Iterable[object]) -> None:
        self.plugins: list[CryptoPlugin] = []
        self._by_name: dict[str, CryptoPlugin] = {}
        for p in plugins:
            plugin = _check_plugin(p)
            for n in (plugin.name, *plugin.aliases):
                other = self._by_name.get(n.lower())
                if other is not None and other is not plugin:
                    raise RegistryError(
                        f"two crypto plugins claim the name {n!r}: "
                        f"{type(other).__name__} and {type(plugin).__name__}")
                self._by_name[n.lower()] = plugin
            self.plugins.append(plugin)
        self._status: dict[str, str | None] = {}
        self._supported: dict[str, frozenset[str]] = {}

    @cached_property
    def names(self) -> list[str]:
        """Every plugin's name, in registration order."""
        return [p.name for p in self.plugins]

    def resolve(self, typed: str) -> Selection:
        """The :class:`Selection` for a typed name; :class:`RegistryError` with suggestions."""
        base, sep, variant = typed.strip().partition(":")
        plugin = self._by_name.get(base.lower())
        shown = _shorten(typed)
        if plugin is None:
            close = difflib.get_close_matches(base.lower(), list(self._by_name), n=6, cutoff=0.5)
            names = list(dict.fromkeys(self._by_name[c].name for c in close))[:3]  # aliases: once
            hint = f"; did you mean {', '.join(map(repr, names))}?" if names else "."
            raise RegistryError(
                f"unknown crypto plugin {shown}{hint} Valid plugins: {', '.join(self.names)} "
                f"{settings.LIST_HINT}")
        if sep and not variant:
            raise RegistryError(f"plugin name {shown} ends in ':' without a driver name")
        if len(variant.encode()) >= MAX_DRIVER_NAME:
            raise RegistryError(f"plugin name {shown}: the driver name is "
                                f"{len(variant.encode())} bytes; kernel crypto driver names are "
                                f"under {MAX_DRIVER_NAME} (CRYPTO_MAX_ALG_NAME)")
        return Selection(typed.strip(), plugin, variant or None)

    def unavailable(self, plugin: CryptoPlugin) -> str | None:
        """Why ``plugin`` cannot run here, or None when it can (probed once).

        A ``probe()`` that raises, or does not return within
        ``limits.QUERY_TIMEOUT`` seconds, makes the plugin unavailable with
        that reason (``probe() did not return within 10 s``).
        """
        if plugin.name not in self._status:
            try:
                limits.call_bounded(plugin.probe, "probe()", limits.QUERY_TIMEOUT)
                self._status[plugin.name] = None
            except Unavailable as exc:
                self._status[plugin.name] = str(exc) or "unavailable"
            except limits.CallTimeout as exc:
                self._status[plugin.name] = str(exc)
            except Exception as exc:  # a third-party probe that breaks is unavailable, not a crash
                self._status[plugin.name] = f"probe failed: {type(exc).__name__}: {exc}"
        return self._status[plugin.name]

    def supported(self, plugin: CryptoPlugin) -> frozenset[str]:
        """Catalog names ``plugin`` supports (empty when unavailable; asked once).

        A ``supported()`` that raises or does not return within
        ``limits.QUERY_TIMEOUT`` seconds makes the plugin unavailable
        (``could not list its algorithms: supported() did not return within 10 s``).
        """
        if plugin.name not in self._supported:
            found: frozenset[str] = frozenset()
            if self.unavailable(plugin) is None:
                try:
                    found = limits.call_bounded(lambda: _names(plugin.supported()),
                                                "supported()", limits.QUERY_TIMEOUT)
                except limits.CallTimeout as exc:
                    self._status[plugin.name] = f"could not list its algorithms: {exc}"
                except Exception as exc:
                    self._status[plugin.name] = (
                        f"could not list its algorithms: {type(exc).__name__}: {exc}")
            self._supported[plugin.name] = found
        return self._supported[plugin.name]

    def lacks(self, plugin: CryptoPlugin, typed: str, alg: catalog.Algorithm) -> str:
        """Why ``plugin`` (as ``typed``) has no cell of ``alg``: ``typed: unavailable: why``,
        or :meth:`not_supported`'s line; "" when it has (a KDF's other parameters count as its
        family's, :func:`~pytest_qcrypto.measure.pkey_bench.listed_as`)."""
        why = self.unavailable(plugin)
        if why is not None:
            return f"{typed}: unavailable: {why}"
        if pkey_bench.listed_as(alg) in self.supported(plugin):
            return ""
        return self.not_supported(plugin, typed, alg.name)

    def not_supported(self, plugin: CryptoPlugin, typed: str, name: str) -> str:
        """Why ``plugin`` (as ``typed``) has no ``name``: unavailable, or ``openssl does not
        support x`` with the plugin's :meth:`~CryptoPlugin.why_unsupported` after a colon
        (asked within ``limits.QUERY_TIMEOUT`` seconds; nothing added when it fails)."""
        why = self.unavailable(plugin)
        if why is not None:
            return f"{typed}: unavailable: {why}"
        try:
            reason = str(limits.call_bounded(lambda: plugin.why_unsupported(name),
                                             "why_unsupported()", limits.QUERY_TIMEOUT) or "")
        except Exception:  # (a third-party plugin's bug must not hide the skip)
            reason = ""
        return f"{typed} does not support {name}" + (f": {reason}" if reason else "")

    def version(self, plugin: CryptoPlugin) -> str:
        """``plugin.version()``, or ``unknown (why)`` when it raises or does not return
        within ``limits.QUERY_TIMEOUT`` seconds."""
        try:
            return str(limits.call_bounded(plugin.version, "version()", limits.QUERY_TIMEOUT))
        except limits.CallTimeout as exc:
            return f"unknown ({exc})"
        except Exception as exc:  # a third-party plugin's version() must not stop a run
            return f"unknown ({type(exc).__name__}: {exc})"

    def details(self, plugin: CryptoPlugin) -> list[str]:
        """``plugin.details()`` for ``--qcrypto-list``; one line saying why when it raises
        or does not return within ``limits.QUERY_TIMEOUT`` seconds."""
        try:
            return limits.call_bounded(lambda: [str(x) for x in plugin.details()], "details()",
                                       limits.QUERY_TIMEOUT)
        except limits.CallTimeout as exc:
            return [f"details unavailable: {exc}"]
        except Exception as exc:
            return [f"details unavailable: {type(exc).__name__}: {exc}"]

    def implementations(self, plugin: CryptoPlugin, names: Iterable[str]) -> dict[str, str]:
        """:func:`bounded_implementations` of ``plugin`` (for ``--qcrypto-list``)."""
        return bounded_implementations(plugin, names)

    def default(self) -> Selection | None:
        """The first available plugin in registration order, or None."""
        for p in self.plugins:
            if self.unavailable(p) is None:
                return Selection(p.name, p)
        return None


@cache
def _builtin_registry() -> Registry:
    from pytest_qcrypto.backends import builtin_plugins

    return Registry(builtin_plugins())


def builtin_canonical(typed: str) -> str:
    """The canonical name of a typed name of a built-in plugin (``pyca`` -> ``openssl``,
    ``AF_ALG:sha256-generic`` -> ``afalg:sha256-generic``); any other name as it is.

    For code that has no run's registry (``qcrypto report``); a run maps the names of
    its conftest plugins too, with :meth:`Registry.resolve`.  Probes nothing.
    """
    try:
        return _builtin_registry().resolve(typed).canonical
    except RegistryError:
        return typed


def _names(answer: object) -> frozenset[str]:
    """The algorithm names of a ``supported()`` answer: an iterable of strings (a set, as
    :meth:`CryptoPlugin.supported` documents, or a list).  A string, bytes or anything
    else that is not a collection of names raises ``TypeError`` saying what it was."""
    if isinstance(answer, (str, bytes)) or not hasattr(answer, "__iter__"):
        raise TypeError(f"supported() returned {type(answer).__name__}, expected a set of "
                        "algorithm names")
    return frozenset(n for n in answer if isinstance(n, str))


def bounded_implementations(plugin: CryptoPlugin, names: Iterable[str]) -> dict[str, str]:
    """``plugin.implementation`` of each catalog algorithm in ``names``, never raising.

    All of them are asked within one ``timeout.QUERY_TIMEOUT`` (seconds): the
    default :meth:`CryptoPlugin.implementation` calls ``version()``, which may
    hang.  Past the limit every name gets ``unknown (implementation() did not
    return within 10 s)``.
    """
    from pytest_qcrypto.backends.base import implementation_text

    wanted = list(names)
    try:
        return limits.call_bounded(lambda: {n: implementation_text(plugin, n) for n in wanted},
                                   "implementation()", limits.QUERY_TIMEOUT)
    except limits.CallTimeout as exc:
        return {n: f"unknown ({exc})" for n in wanted}


#: The ``--qcrypto-list`` word of a kind where it is not the kind and an ``s`` (``digests``).
_LIST_WORDS = {catalog.Kind.MAC: "MACs"}


def list_plugins(registry: Registry) -> list[str]:
    """The ``--qcrypto-list`` text: each plugin, its state, library, algorithms, details."""
    lines = ["crypto plugins (first available is the default):"]
    for p in registry.plugins:
        supported = registry.supported(p)  # first: a supported() that fails makes p unavailable
        why = registry.unavailable(p)
        aliases = f" (aliases: {', '.join(p.aliases)})" if p.aliases else ""
        lines.append(f"{p.name}{aliases}: {'available' if why is None else 'unavailable: ' + why}")
        lines.append(f"  library: {p.library}")
        if why is None:
            lines.append(f"  version: {registry.version(p)}")
        for kind in catalog.KINDS:
            names = [n for n in catalog.names(kind) if n in supported]
            if names:
                lines.append(f"  {_LIST_WORDS.get(kind, kind + 's')}: {', '.join(names)}")
        if why is None and supported:
            done = registry.implementations(p, [n for n in catalog.names() if n in supported])
            lines.append(f"  implementations: {describe_implementations(done)}")
        lines.extend(f"  {line}" for line in registry.details(p))
    return lines


#: The reference plugin shipped with the package: every size-less cell's cross-plugin checks
#: include it, whether the run chose it or not.
REFERENCE_PLUGIN = "openssl"


def is_reference(plugin: object) -> bool:
    """Whether ``plugin`` is :data:`REFERENCE_PLUGIN` as shipped with this package (a plugin
    of that name from a conftest or another package is not)."""
    return (getattr(plugin, "name", None) == REFERENCE_PLUGIN
            and type(plugin).__module__.startswith("pytest_qcrypto."))


def peers_of(registry: Registry, selection: Selection, alg: catalog.Algorithm,
             asked: Collection[object] | None = None) -> list[tuple[str, pkey_bench.Opener]]:
    """The other plugins, available and with ``alg``, that the cross-plugin checks of a
    size-less algorithm cross with (``pkey_bench.check``): those the run asked for
    (``asked``, the plugin objects; None: every registered one) and the reference plugin
    shipped with the package (:data:`REFERENCE_PLUGIN`), never a plugin nobody asked for.
    Each is (name, a function that opens its context of an algorithm with a fresh key pair)."""
    return [(p.name, lambda a, p=p: p.open(a, b"", None)) for p in registry.plugins
            if p is not selection.plugin and registry.unavailable(p) is None
            and (asked is None or any(p is q for q in asked) or is_reference(p))
            and pkey_bench.listed_as(alg) in registry.supported(p)]
