"""Where a run's keys, IVs, nonces and buffers come from: ``os.urandom``, or a seeded
generator (``--qcrypto-seed``) for reproducible runs.  Plain Python: no pytest.
"""

from __future__ import annotations

import os
import random

from pytest_qcrypto.algorithms import settings
from pytest_qcrypto.algorithms.catalog import Algorithm


class Randomness:
    """Keys, IVs, nonces and data for a run: ``os.urandom``, or seeded (reproducible)."""

    def __init__(self, seed: int | None = None) -> None:
        """``seed``: None (``os.urandom``) or a whole number in ``settings.SEED_RANGE``,
        through the one parser (``SettingsError``, a ``ValueError``, for ``"abc"``, 1.5,
        True or 2**10000)."""
        if seed is not None:
            seed = settings.parse_seed(seed, "seed")
        self.seed = seed
        self._rng = random.Random(seed) if seed is not None else None

    def bytes(self, n: int) -> bytes:
        return self._rng.randbytes(n) if self._rng is not None else os.urandom(n)

    def key(self, alg: Algorithm) -> bytes:
        """A random key of ``alg.key_size`` bytes; XTS halves and 3DES thirds differ."""
        while True:
            key = self.bytes(alg.key_size)
            third = alg.key_size // 3
            if alg.mode == "xts" and key[: alg.key_size // 2] == key[alg.key_size // 2:]:
                continue
            if alg.family == "des" and alg.key_size == 24 and (key[:third] == key[third:2 * third]
                                        or key[third:2 * third] == key[2 * third:]):
                continue
            return key
