"""The ``hashlib`` plugin: Python's standard library digests and HMACs (no ciphers).

Supported digests are those in ``hashlib.algorithms_available`` that the
catalog knows.  The code that does each one is found at run time
(:func:`implementation_of`): ``hashlib.new(name)`` gives an object of
``_hashlib`` (the OpenSSL that CPython links, ``ssl.OPENSSL_VERSION``) or of
one of CPython's own modules: ``_blake2`` always serves BLAKE2, and ``_sha3``,
``_sha256`` (``_sha2`` from 3.12), ``_md5``, ``_sha1`` serve the others in
builds without OpenSSL or where OpenSSL refuses them.
Timed call path: ``h = pristine.copy(); h.update(buf); h.digest()``, on that
same object.

HMACs (``hmac-md5`` ... ``hmac-sha512``) come from the standard library's
``hmac`` module over those digests: ``m = pristine.copy(); m.update(buf);
m.digest()`` on an ``hmac.new(key, digestmod=name)`` object keyed once, as the
MAC rules ask (a key set up once).  The one-shot ``hmac.digest(key, buf, name)``
re-derives the keyed state on every call and was slower here (CPython 3.11,
OpenSSL 3: 2.6 us against 1.1 us per 16-byte HMAC-SHA256), so it is not timed.
CMAC and Poly1305 are not in the standard library.

KDFs: ``pbkdf2-sha256`` is ``hashlib.pbkdf2_hmac("sha256", password, salt, i, 32)`` and
``scrypt`` is ``hashlib.scrypt(password, salt=..., n=..., r=..., p=..., maxmem=...,
dklen=32)`` (OpenSSL's, where this hashlib has it), with ``maxmem`` the 128 * r * (N + p + 2)
bytes the derivation needs plus 1 MiB; CPython caps ``maxmem`` below 2 GiB, so a larger
scrypt cell is not supported here.  One operation is one such call.  Nothing else of the
public-key kinds is in the standard library.
"""

from __future__ import annotations

import hashlib
import hmac
from functools import partial
from itertools import repeat
from typing import Any

from pytest_qcrypto.algorithms import catalog
from pytest_qcrypto.backends.base import (
    Context,
    CryptoPlugin,
    Runner,
    Unsupported,
    Workload,
    call_loop,
    piecewise_runner,
)
from pytest_qcrypto.algorithms.catalog import Algorithm, Kind

#: hashlib's spelling of catalog names where they differ (blake2 defaults are the full sizes).
_HASHLIB_NAME = {
    "sha512-224": "sha512_224", "sha512-256": "sha512_256",
    "sha3-224": "sha3_224", "sha3-256": "sha3_256", "sha3-384": "sha3_384",
    "sha3-512": "sha3_512", "blake2b512": "blake2b", "blake2s256": "blake2s",
}


def _hashlib_name(name: str) -> str:
    return _HASHLIB_NAME.get(name, name)


def openssl_name() -> str:
    """``OpenSSL 3.0.19``: the name and version of the OpenSSL that CPython links.

    From ``ssl.OPENSSL_VERSION`` (``_hashlib`` links the same library); when
    this Python has no ``ssl`` module, ``OpenSSL (version unknown: no ssl module)``.
    """
    try:
        import ssl
    except ImportError:
        return "OpenSSL (version unknown: no ssl module)"
    return " ".join(ssl.OPENSSL_VERSION.split()[:2])


def implementation_of(name: str) -> str:
    """The code behind ``hashlib.new(name)``: ``OpenSSL 3.0.19`` or ``CPython's _blake2``.

    Told by the module of the object's type: ``_hashlib`` is CPython's OpenSSL
    binding, any other module is CPython's own code.  Raises ``ValueError``
    for a name this hashlib does not have.
    """
    module = type(hashlib.new(name)).__module__
    return openssl_name() if module == "_hashlib" else f"CPython's {module}"


def hmac_implementation_of(name: str) -> str:
    """The code behind ``hmac.new(key, digestmod=name)``: ``OpenSSL 3.0.19`` when CPython
    hands the HMAC to OpenSSL (its ``_hashlib``), ``CPython's _hmac`` for CPython's own
    C HMAC (3.14+), else ``CPython's hmac.py over`` the digest's code."""
    inner = getattr(hmac.new(b"k", digestmod=name), "_hmac", None)
    module = type(inner).__module__ if inner is not None else ""
    if module == "_hashlib":
        return openssl_name()
    if module:
        return f"CPython's {module}"
    return f"CPython's hmac.py over {implementation_of(name)}"


class HashlibPlugin(CryptoPlugin):
    name = "hashlib"
    default_rank = 20
    aliases = ("python",)
    library = "Python hashlib"
    description = "Python's standard library digests and HMACs"

    def version(self) -> str:
        import ssl
        import sys

        return f"{ssl.OPENSSL_VERSION} (Python {sys.version.split()[0]})"

    def implementation(self, algorithm: Algorithm) -> str:
        """``CPython's _blake2`` or ``OpenSSL 3.0.19``, see :func:`implementation_of`
        (HMACs: :func:`hmac_implementation_of`; PBKDF2 and scrypt: the OpenSSL CPython links)."""
        if algorithm.is_of((Kind.MAC,)):
            return hmac_implementation_of(algorithm.family)
        if algorithm.is_of((Kind.KDF,)):  # pbkdf2_hmac and scrypt: CPython's OpenSSL calls
            return openssl_name()
        return implementation_of(_hashlib_name(algorithm.name))

    def supported(self) -> frozenset[str]:
        have = {n.lower() for n in hashlib.algorithms_available}
        digests = {n for n in catalog.names(Kind.DIGEST) if _hashlib_name(n) in have}
        hmacs = {a.name for a in catalog.algorithms((Kind.MAC,))
                 if a.name.startswith("hmac-") and a.family in digests}
        kdfs = {"pbkdf2-sha256-i600000"} | (
            {"scrypt-n16384-r8-p1"} if hasattr(hashlib, "scrypt") else set())
        return frozenset(digests | hmacs | kdfs)

    def open(self, algorithm: Algorithm, key: bytes, variant: str | None = None) -> Context:
        if variant:
            raise Unsupported(f"the hashlib plugin has no drivers to pin (got ':{variant}')")
        if not algorithm.rules.sized:
            return _KdfContext(algorithm, key)
        if algorithm.is_of((Kind.MAC,)) and algorithm.name.startswith("hmac-"):
            return _HmacContext(algorithm, key)
        if algorithm.keyed:
            raise Unsupported(f"hashlib has digests and HMACs only, not the {algorithm.word} "
                              f"{algorithm.name}")
        return _DigestContext(algorithm, key)


class _DigestContext(Context):
    places_buffers = True  # --qcrypto-misalign: input as given, outputs by work.output()
    feeds_pieces = True  # --qcrypto-update-size: runner() feeds work.pieces()

    def __init__(self, algorithm: Algorithm, key: bytes) -> None:
        super().__init__(algorithm, key)
        self._pristine = hashlib.new(_hashlib_name(algorithm.name))

    def digest(self, data: bytes) -> bytes:
        h = self._pristine.copy()
        h.update(data)
        return h.digest()

    def runner(self, work: Workload) -> Runner:
        if work.update_size:
            return piecewise_runner(self._pristine.copy, work)

        def run(count: int, copy: Any = self._pristine.copy, buf: bytes = work.data) -> None:
            for _ in repeat(None, count):
                h = copy()
                h.update(buf)
                h.digest()

        return run


class _HmacContext(Context):
    places_buffers = True  # --qcrypto-misalign: input as given, outputs by work.output()
    feeds_pieces = True  # --qcrypto-update-size: runner() feeds work.pieces()

    def __init__(self, algorithm: Algorithm, key: bytes) -> None:
        super().__init__(algorithm, key)
        self._pristine = hmac.new(key, digestmod=_hashlib_name(algorithm.family))

    def mac(self, data: bytes) -> bytes:
        m = self._pristine.copy()
        m.update(data)
        return m.digest()

    def runner(self, work: Workload) -> Runner:
        if work.update_size:
            return piecewise_runner(self._pristine.copy, work)

        def run(count: int, copy: Any = self._pristine.copy, buf: bytes = work.data) -> None:
            for _ in repeat(None, count):
                m = copy()
                m.update(buf)
                m.digest()

        return run


#: The most ``hashlib.scrypt`` takes as ``maxmem`` (CPython: below INT_MAX bytes).
_SCRYPT_MAXMEM = 2**31 - 1


class _KdfContext(Context):
    """PBKDF2-HMAC-SHA256 and scrypt from hashlib (:class:`Unsupported` for the rest)."""

    def __init__(self, algorithm: Algorithm, key: bytes) -> None:
        super().__init__(algorithm, key)
        if algorithm.family not in ("pbkdf2-sha256", "scrypt") or (
                algorithm.family == "scrypt" and not hasattr(hashlib, "scrypt")):
            raise Unsupported(f"hashlib has no {algorithm.name}: of the public-key kinds and "
                              "KDFs it has PBKDF2 (pbkdf2_hmac) and scrypt (where its OpenSSL "
                              "has it) only")
        if algorithm.family == "scrypt" and self._maxmem() > _SCRYPT_MAXMEM:
            raise Unsupported(f"{algorithm.name} needs {self._maxmem()} bytes of memory; "
                              f"hashlib.scrypt takes at most {_SCRYPT_MAXMEM} (maxmem)")

    def _maxmem(self) -> int:
        n, r, p = (self.algorithm.param(x) for x in "nrp")
        return 128 * r * (n + p + 2) + 2**20

    def _derivation(self, password: bytes, salt: bytes) -> Any:
        alg = self.algorithm
        if alg.family == "pbkdf2-sha256":
            return partial(hashlib.pbkdf2_hmac, "sha256", password, salt, alg.param("i"),
                           alg.digest_size)
        return partial(hashlib.scrypt, password, salt=salt, n=alg.param("n"), r=alg.param("r"),
                       p=alg.param("p"), maxmem=self._maxmem(), dklen=alg.digest_size)

    def derive_key(self, password: bytes, salt: bytes, *, secret: bytes = b"",
                   associated_data: bytes = b"") -> bytes:
        if secret or associated_data:
            raise Unsupported(f"{self.algorithm.name} takes no secret or associated data")
        return self._derivation(password, salt)()

    def runner(self, work: Workload) -> Runner:
        return call_loop(self._derivation(work.data, work.iv))


#: The built-in plugin of this module (found by :func:`pytest_qcrypto.backends.builtin_plugins`).
PLUGINS = [HashlibPlugin]
