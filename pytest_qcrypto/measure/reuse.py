"""A quick run's key pairs, made once and lent to every cell of their algorithm (issue 26).

A plugin makes a key pair when it opens a context of a kind without a buffer size
(signatures, key agreement, KEMs, RSA encryption), and PyCryptodome without GMP takes
seconds for an RSA-4096 key.  A normal run opens a context for each cell and, for its
checks, another of its own and one of each peer plugin: four RSA keys of the plugin and
two of each peer for a sign and a verify cell.  A quick run (``--qcrypto-quick``, a smoke
test) lends them instead: :meth:`KeyPairs.lend` opens a (plugin, algorithm)'s context the
first time and hands it out again once it is given back (:meth:`KeyPairs.keep`), so each
(plugin, algorithm) makes one key pair for its measured cells and its checks, and each
peer one.  Every cell still runs all of its checks (known answers on contexts of their own,
since loading a standard's private key changes a context; the self and cross-plugin checks
on the lent ones) and its timed round; what is timed (sign, verify, encaps, ...) never
includes making the key, so the figures of a quick run mean what they meant before.  A
normal run lends nothing: each of its cells opens its own contexts, as before.

:meth:`KeyPairs.close` closes the contexts kept at the end of the run.  Plain Python.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pytest_qcrypto.algorithms.catalog import Algorithm
from pytest_qcrypto.backends.base import Context
from pytest_qcrypto.measure import pkey_bench

#: Opens a context of an algorithm (a fresh key pair).
Opener = Callable[[Algorithm], Context]


class KeyPairs:
    """The contexts of one quick run, by (plugin name, algorithm name): lent, kept, closed."""

    def __init__(self) -> None:
        self._kept: dict[tuple[str, str], list[Context]] = {}
        #: id of each context lent out -> its (plugin, algorithm) and itself (so that the
        #: id stays its own while it is out)
        self._lent: dict[int, tuple[tuple[str, str], Context]] = {}
        #: how many contexts the openers made (each a key pair)
        self.made = 0

    def lend(self, plugin: str, opener: Opener) -> Opener:
        """``opener`` of ``plugin``'s contexts, taking a kept one of the algorithm first."""
        def take(alg: Algorithm) -> Context:
            kept = self._kept.get((plugin, alg.name))
            if kept:
                ctx = kept.pop()
            else:
                ctx = opener(alg)
                self.made += 1
            self._lent[id(ctx)] = ((plugin, alg.name), ctx)
            return ctx
        return take

    def lent(self, peers: Sequence[tuple[str, Opener]]) -> list[tuple[str, Opener]]:
        """The checks' peers (name, opener), each opener lending."""
        return [(name, self.lend(name, opener)) for name, opener in peers]

    def check(self, context: Context | None, typed: str, alg: Algorithm, open_context: Opener,
              peers: Sequence[tuple[str, Opener]]) -> None:
        """:func:`pytest_qcrypto.measure.pkey_bench.check` of ``context`` (the timed one) with
        the peers' contexts lent: the same checks as a normal run's, on kept key pairs."""
        pkey_bench.check(typed, alg, open_context, self.lent(peers), context=context,
                         close=lambda ctx: self.keep(ctx) or ctx.close())

    def keep(self, ctx: Context) -> bool:
        """Keep ``ctx`` for the next cell of its algorithm, if it was lent (True); False for
        a context this run did not lend, which the caller closes."""
        entry = self._lent.pop(id(ctx), None)
        if entry is None:
            return False
        self._kept.setdefault(entry[0], []).append(ctx)
        return True

    def close(self, close: Callable[[Context], None]) -> BaseException | None:
        """``close(ctx)`` for every kept context, also when one raises; the first error."""
        first: BaseException | None = None
        while self._kept:
            for ctx in self._kept.popitem()[1]:
                try:
                    close(ctx)
                except Exception as exc:  # noqa: BLE001  (the others are closed all the same)
                    first = first or exc
        return first
