"""The cells of a speed matrix, as data: which algorithm, crypto plugin, buffer size (bytes) or
operation, and direction one benchmark item measures.  Made by the pytest side's matrix and by
the ``qcrypto`` marker; read by the fixtures and the ledger.  Imports nothing."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    """One cell of a speed matrix: algorithm x plugin (as typed) x buffer size x direction
    (``decrypt`` or ``roundtrip`` set only for an algorithm that has that direction); for
    the kinds without a buffer size, algorithm x plugin x ``operation`` (size 0)."""

    algorithm: str
    plugin: str
    size: int
    decrypt: bool = False
    roundtrip: bool = False
    #: the direction of a size-less cell (``sign``, ``encaps``...; its size is 0), else empty
    operation: str = ""

    @property
    def id(self) -> str:
        """The test id inside the brackets: ``openssl-16``."""
        return f"{self.plugin}-{self.operation or self.size}"
