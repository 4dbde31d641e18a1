"""The ``hashlib`` plugin: Python's standard library digests (no ciphers).

Supported digests are those in ``hashlib.algorithms_available`` that the
catalog knows; the library is the OpenSSL that CPython was built against
(``ssl.OPENSSL_VERSION``), or CPython's own HACL* code for builds without it.
Timed call path: ``h = pristine.copy(); h.update(buf); h.digest()``.
"""

from __future__ import annotations

import hashlib
from itertools import repeat
from typing import Any

from pytest_qcrypto import catalog
from pytest_qcrypto.backends import Context, CryptoPlugin, Runner, Unsupported, Workload
from pytest_qcrypto.catalog import Algorithm

#: hashlib's spelling of catalog names where they differ (blake2 defaults are the full sizes).
_HASHLIB_NAME = {
    "sha512-224": "sha512_224", "sha512-256": "sha512_256",
    "sha3-224": "sha3_224", "sha3-256": "sha3_256", "sha3-384": "sha3_384",
    "sha3-512": "sha3_512", "blake2b512": "blake2b", "blake2s256": "blake2s",
}


def _hashlib_name(name: str) -> str:
    return _HASHLIB_NAME.get(name, name)


class HashlibPlugin(CryptoPlugin):
    name = "hashlib"
    aliases = ("python",)
    library = "Python hashlib"
    description = "Python's standard library digests"

    def version(self) -> str:
        import ssl
        import sys

        return f"{ssl.OPENSSL_VERSION} (Python {sys.version.split()[0]})"

    def supported(self) -> frozenset[str]:
        have = {n.lower() for n in hashlib.algorithms_available}
        return frozenset(n for n in catalog.names(catalog.DIGEST) if _hashlib_name(n) in have)

    def open(self, algorithm: Algorithm, key: bytes, variant: str | None = None) -> Context:
        if variant:
            raise Unsupported(f"the hashlib plugin has no drivers to pin (got ':{variant}')")
        if algorithm.kind != catalog.DIGEST:
            raise Unsupported(f"hashlib has digests only, not the {algorithm.kind} {algorithm.name}")
        return _DigestContext(algorithm, key)


class _DigestContext(Context):
    def __init__(self, algorithm: Algorithm, key: bytes) -> None:
        super().__init__(algorithm, key)
        self._pristine = hashlib.new(_hashlib_name(algorithm.name))

    def digest(self, data: bytes) -> bytes:
        h = self._pristine.copy()
        h.update(data)
        return h.digest()

    def runner(self, work: Workload) -> Runner:
        def run(count: int, copy: Any = self._pristine.copy, buf: bytes = work.data) -> None:
            for _ in repeat(None, count):
                h = copy()
                h.update(buf)
                h.digest()

        return run
