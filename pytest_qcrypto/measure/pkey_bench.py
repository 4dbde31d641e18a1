"""Measuring the kinds without a buffer size: signatures, key agreement, KEMs, RSA
encryption and KDFs (``KindRules.sized`` False).

Such a cell is (algorithm, plugin, operation) with size 0: every direction of the kind
(``sign``, ``verify`` and, where the plugin declares it, ``keygen``; ``keygen`` and
``derive``; ``keygen``, ``encaps`` and ``decaps``; ``encrypt`` and ``decrypt``; a KDF's
``derive``) is an operation of its own,
timed by the same doubling loop (:mod:`pytest_qcrypto.measure.harness`), its figure in
operations per second.  The work of one operation is fixed here: a 32-byte random
message (signatures, RSA encryption; :data:`MESSAGE_SIZE`), or a 16-byte password and
a 16-byte salt (KDFs; :data:`PASSWORD_SIZE`, :data:`SALT_SIZE`, the sizes OWASP's
password storage cheat sheet and RFC 9106 section 3.1 take for a salt).  The context
makes what else it needs (a signature to verify, a peer's key) before its loop.

Before timing, :func:`check` runs ``pytest_qcrypto.checks.pkey_checks.check``: the known answers
of the standards and the cross-plugin checks against every other available plugin that
has the algorithm (``peers``); a signature's keygen cell also :func:`check_keygen` on the
context it times.  Nothing here imports pytest.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pytest_qcrypto.algorithms import catalog, settings
from pytest_qcrypto.backends.base import Context, Workload
from pytest_qcrypto.algorithms.catalog import Algorithm, Direction

#: Bytes of the message signed, verified or encrypted in each operation.
MESSAGE_SIZE = 32
#: Bytes of a KDF's password and salt.
PASSWORD_SIZE = 16
SALT_SIZE = 16

#: Opens a context of an algorithm in one plugin (a random key pair made at open).
Opener = Callable[[Algorithm], Context]
#: The other plugins a known-answer check may cross with: (name, opener) pairs.
Peers = Sequence[tuple[str, Opener]]


def listed_as(alg: Algorithm) -> str:
    """The name a plugin's ``supported()`` lists ``alg`` by: its own, or for a KDF with
    parameters other than the defaults (``scrypt-n1024-r8-p1``), its family's default entry
    (``scrypt-n16384-r8-p1``): a plugin that has scrypt takes any of its parameters."""
    default = catalog.lookup(alg.family) if alg.params else None
    return default.name if default is not None and default.params else alg.name


def declares(selection: object) -> bool:
    """Whether the plugin of ``selection`` (a ``Selection``) generates signature keys
    (``CryptoPlugin.generates_signature_keys`` is True); a selection without a plugin here
    (a ``PLUGIN@NAME`` target's, which its target checks) counts as declaring."""
    plugin = getattr(selection, "plugin", None)
    return plugin is None or getattr(plugin, "generates_signature_keys", False) is True


def operation_problem(alg: Algorithm, size: object, operation: object,
                      declares: bool = True) -> str | None:
    """Why ``size`` and ``operation`` do not name a cell of ``alg``, or None.

    A size-less algorithm takes size 0 (or None) and one of its directions in the plugin
    (a KDF's only one may be left out; a signature's keygen only where the plugin
    ``declares`` it: ``CryptoPlugin.generates_signature_keys``); a sized one takes no
    operation (its direction comes from ``decrypt`` and ``roundtrip``)."""
    if alg.rules.sized:
        if operation not in (None, ""):
            return (f"operation={settings.shown_value(operation)}: {alg.name} is a "
                    f"{alg.word} measured by buffer size; give a size, and decrypt=True or "
                    "roundtrip=True for another direction")
        return None
    if size not in (None, 0) or isinstance(size, bool):
        return (f"{alg.name} is a {alg.word}: it has no buffer size (give no size, or 0), "
                f"not {settings.shown_value(size)}")
    words = [str(d) for d in alg.directions_in(declares)]
    if operation in (None, "") and len(words) == 1:
        return None
    if operation not in words:
        why = " (its plugin does not declare generates_signature_keys)" \
            if operation in alg.directions else ""
        return (f"{alg.name} is a {alg.word}: give operation= one of {', '.join(words)}, not "
                f"{settings.shown_value(operation)}{why}")
    return None


def direction(alg: Algorithm, operation: str | None) -> Direction:
    """The direction of a checked ``operation`` (:func:`operation_problem`); the kind's only
    one when it is left out."""
    return Direction(operation) if operation else alg.directions[0]


def workload(alg: Algorithm, operation: Direction, random_bytes: Callable[[int], bytes]
             ) -> Workload:
    """The work of one operation: a :data:`MESSAGE_SIZE`-byte message, or a KDF's
    :data:`PASSWORD_SIZE`-byte password (``data``) and :data:`SALT_SIZE`-byte salt
    (``iv``), from ``random_bytes(n)``; ``operation`` says which direction is timed."""
    if not alg.keyed:  # a KDF: no key pair, a password and a salt
        return Workload(random_bytes(PASSWORD_SIZE), iv=random_bytes(SALT_SIZE),
                        operation=str(operation))
    return Workload(random_bytes(MESSAGE_SIZE), operation=str(operation))


def check_keygen(typed: str, ctx: Context) -> None:
    """Before a signature's keygen cell is timed on ``ctx``: a key pair made as one keygen
    makes it signs and verifies (``pytest_qcrypto.checks.pkey_checks.check_keygen``)."""
    from pytest_qcrypto.checks import pkey_checks

    pkey_checks.check_keygen(typed, ctx)


def check(typed: str, alg: Algorithm, open_context: Opener, peers: Peers,
          **lent: Any) -> None:
    """The known answers and cross-plugin checks of ``alg`` in plugin ``typed``
    (``pytest_qcrypto.checks.pkey_checks.check``); raises ``KnownAnswerError`` naming the plugin,
    the scheme and the vector.  Contexts it opens, it closes (a quick run's ``lent``:
    ``context`` and ``close``, see :mod:`pytest_qcrypto.measure.reuse`)."""
    from pytest_qcrypto.checks import pkey_checks  # written beside the plugins' contexts

    checker: Any = pkey_checks.check
    checker(typed, alg, open_context, peers, **lent)
