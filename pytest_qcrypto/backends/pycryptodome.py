"""The ``pycryptodome`` plugin: PyCryptodome's own C implementations.

Supported algorithms are found by asking the package: a digest is supported
when its ``Crypto.Hash`` module imports, a cipher mode when ``Crypto.Cipher``
has the module and the ``MODE_*`` constant (PyCryptodome has no XTS, so the
XTS rows of this plugin are skipped with that reason).

Timed call paths:

* digest: the hash class called with the buffer (``SHA256Hash(buf).digest()``),
  which builds the object once (``SHA256.new(buf)`` builds it twice);
* cipher: one cipher object for the whole measurement,
  ``encrypt(buf, output=out)`` into a preallocated buffer;
* AEAD: a new GCM / ChaCha20-Poly1305 object per message (PyCryptodome has no
  way to re-nonce one), then ``encrypt(buf, output=out)`` and ``digest()``;
  decrypt is ``decrypt(ct, output=out)`` and ``verify(tag)``;
* MAC: ``m = pristine.copy(); m.update(buf); m.digest()`` on an ``HMAC.new(key,
  digestmod=...)`` or ``CMAC.new(key, ciphermod=AES)`` object keyed once (its HMAC and
  CMAC are Python code over its C hashes and AES).

The public-key kinds and KDFs are in :mod:`pytest_qcrypto.backends.pycryptodome_pkey`,
which says what one operation is for each.

``des-cbc``, ``bf-cbc`` and ``cast5-cbc`` are ``Crypto.Cipher`` ``DES``, ``Blowfish``
and ``CAST`` in ``MODE_CBC``.  ``poly1305`` is not supported: PyCryptodome's
``Crypto.Hash.Poly1305.new`` always derives the one-time key (r, s) from AES or
ChaCha20 and a nonce; it has no public way to MAC under a given 32-byte key as RFC 8439
section 2.5 (and the benchmark) does.
"""

from __future__ import annotations

import importlib
from functools import partial
from itertools import cycle, islice, repeat
from typing import Any

from pytest_qcrypto.algorithms import catalog
from pytest_qcrypto.backends.base import (
    AuthenticationError,
    Context,
    CryptoPlugin,
    Runner,
    Unavailable,
    Unsupported,
    Workload,
    piecewise_runner,
)
from pytest_qcrypto.algorithms.catalog import Algorithm, Kind

#: catalog name -> (Crypto.Hash module, hash class, keyword arguments besides the data)
_DIGESTS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "md5": ("MD5", "MD5Hash", {}),
    "sha1": ("SHA1", "SHA1Hash", {}),
    "sha224": ("SHA224", "SHA224Hash", {}),
    "sha256": ("SHA256", "SHA256Hash", {}),
    "sha384": ("SHA384", "SHA384Hash", {}),
    "sha512": ("SHA512", "SHA512Hash", {"truncate": None}),
    "sha512-224": ("SHA512", "SHA512Hash", {"truncate": "224"}),
    "sha512-256": ("SHA512", "SHA512Hash", {"truncate": "256"}),
    "sha3-224": ("SHA3_224", "SHA3_224_Hash", {"update_after_digest": False}),
    "sha3-256": ("SHA3_256", "SHA3_256_Hash", {"update_after_digest": False}),
    "sha3-384": ("SHA3_384", "SHA3_384_Hash", {"update_after_digest": False}),
    "sha3-512": ("SHA3_512", "SHA3_512_Hash", {"update_after_digest": False}),
    "blake2b512": ("BLAKE2b", "BLAKE2b_Hash",
                   {"key": b"", "digest_bytes": 64, "update_after_digest": False}),
    "blake2s256": ("BLAKE2s", "BLAKE2s_Hash",
                   {"key": b"", "digest_bytes": 32, "update_after_digest": False}),
}

#: AES mode -> PyCryptodome's constant name
_AES_MODES = {"cbc": "MODE_CBC", "ctr": "MODE_CTR", "ecb": "MODE_ECB", "xts": "MODE_XTS",
              "gcm": "MODE_GCM"}
#: catalog name -> the Crypto.Cipher module of the other CBC ciphers
_CBC = {"des-ede3-cbc": "DES3", "des-cbc": "DES", "bf-cbc": "Blowfish", "cast5-cbc": "CAST"}
#: Why ``poly1305`` is not a pycryptodome row (:meth:`PyCryptodomePlugin.open` raises it).
NO_RAW_POLY1305 = ("PyCryptodome's Poly1305 derives its one-time key from AES or ChaCha20 "
                   "and a nonce (Crypto.Hash.Poly1305.new); it has no public way to MAC under "
                   "a given 32-byte key as RFC 8439 section 2.5 does")


def _hash_factory(name: str) -> Any:
    """A callable that hashes its one argument: ``factory(buf).digest()``."""
    module, cls, kwargs = _DIGESTS[name]
    ctor = getattr(importlib.import_module(f"Crypto.Hash.{module}"), cls)
    return partial(ctor, **kwargs) if kwargs else ctor


class PyCryptodomePlugin(CryptoPlugin):
    name = "pycryptodome"
    default_rank = 30
    aliases = ("pycryptodomex", "cryptodome")
    library = "PyCryptodome"
    description = "PyCryptodome's own C implementations"
    generates_signature_keys = True  # keygen beside sign and verify (pycryptodome_pkey)

    def probe(self) -> None:
        try:
            import Crypto  # noqa: F401
            from Crypto.Cipher import AES  # noqa: F401
        except ImportError as exc:
            raise Unavailable(f"PyCryptodome is not installed ({exc})") from None

    def version(self) -> str:
        import Crypto

        return f"PyCryptodome {Crypto.__version__}"

    def implementation(self, algorithm: Algorithm) -> str:
        """``PyCryptodome 3.20.0 (its own C code)``: no algorithm goes to OpenSSL; its HMAC
        and CMAC are ``(Python HMAC/CMAC over its own C code)``."""
        if algorithm.is_of((Kind.MAC,)):
            return f"{self.version()} (Python HMAC/CMAC over its own C code)"
        return f"{self.version()} (its own C code)"

    def supported(self) -> frozenset[str]:
        from Crypto.Cipher import AES

        found = set()
        for name in _DIGESTS:
            try:
                _hash_factory(name)
            except (ImportError, AttributeError):
                continue
            found.add(name)
        for alg in catalog.ALGORITHMS:
            if alg.family == "aes" and alg.mode in _AES_MODES and hasattr(AES, _AES_MODES[alg.mode]):
                found.add(alg.name)
        for name, module in (("chacha20", "ChaCha20"), ("chacha20-poly1305", "ChaCha20_Poly1305"),
                             *_CBC.items()):
            try:
                importlib.import_module(f"Crypto.Cipher.{module}")
            except ImportError:
                continue
            found.add(name)
        for alg in catalog.algorithms((Kind.MAC,)):
            if alg.name.startswith("hmac-") and alg.family in found:
                found.add(alg.name)
            elif alg.name == "cmac-aes-128" and "aes-128-cbc" in found:
                found.add(alg.name)
        from pytest_qcrypto.backends.pycryptodome_pkey import supported_names

        return frozenset(found | supported_names())

    def open(self, algorithm: Algorithm, key: bytes, variant: str | None = None) -> Context:
        if variant:
            raise Unsupported(f"the pycryptodome plugin has no drivers to pin (got ':{variant}')")
        if algorithm.name == "poly1305":
            raise Unsupported(NO_RAW_POLY1305)
        if not algorithm.rules.sized:  # public-key kinds and KDFs: pycryptodome_pkey.py
            from pytest_qcrypto.backends.pycryptodome_pkey import open_context

            return open_context(algorithm, key)
        if algorithm.name not in self.supported():
            raise Unsupported(f"PyCryptodome has no {algorithm.name}")
        return _CONTEXTS[algorithm.kind](algorithm, key)


class _DigestContext(Context):
    places_buffers = True  # --qcrypto-misalign: input as given, outputs by work.output()
    feeds_pieces = True  # --qcrypto-update-size: runner() feeds work.pieces()

    def __init__(self, algorithm: Algorithm, key: bytes) -> None:
        super().__init__(algorithm, key)
        self._new = _hash_factory(algorithm.name)

    def digest(self, data: bytes) -> bytes:
        return self._new(data).digest()

    def runner(self, work: Workload) -> Runner:
        if work.update_size:
            return piecewise_runner(partial(self._new, b""), work)  # (SHA-3's takes data)

        def run(count: int, new: Any = self._new, buf: bytes = work.data) -> None:
            for _ in repeat(None, count):
                new(buf).digest()

        return run


class _CipherContext(Context):
    places_buffers = True  # --qcrypto-misalign: input as given, outputs by work.output()

    def _cipher(self, iv: bytes) -> Any:
        alg = self.algorithm
        if alg.family == "aes":
            from Crypto.Cipher import AES

            mode = getattr(AES, _AES_MODES[alg.mode])
            if alg.mode == "ecb":
                return AES.new(self.key, mode)
            if alg.mode == "ctr":  # the whole 16-byte IV is a 128-bit big-endian counter
                return AES.new(self.key, mode, nonce=b"", initial_value=iv)
            if alg.mode == "xts":  # PyCryptodome 4.5 (its first XTS) takes the tweak by name
                return AES.new(self.key, mode, tweak=iv)
            return AES.new(self.key, mode, iv)
        if alg.name == "chacha20":  # RFC 8439: IV = LE32 block counter || 12-byte nonce
            from Crypto.Cipher import ChaCha20

            c = ChaCha20.new(key=self.key, nonce=iv[4:])
            c.seek(int.from_bytes(iv[:4], "little") * 64)
            return c
        if alg.name in _CBC:
            module = importlib.import_module(f"Crypto.Cipher.{_CBC[alg.name]}")
            return module.new(self.key, module.MODE_CBC, iv)
        raise Unsupported(f"PyCryptodome has no {alg.name}")

    def _xts(self) -> tuple[Any, bytes, Any]:
        from Crypto.Cipher import AES

        return AES.new, self.key, AES.MODE_XTS

    def encrypt(self, iv: bytes, data: bytes, aad: bytes = b"") -> bytes:
        return self._cipher(iv).encrypt(data)

    def decrypt(self, iv: bytes, data: bytes, aad: bytes = b"") -> bytes:
        return self._cipher(iv).decrypt(data)

    def runner(self, work: Workload) -> Runner:
        buf = work.ciphertext if work.decrypt else work.data
        out = work.output(len(buf))
        if self.algorithm.mode == "xts":  # one XTS data unit an operation: a cipher object each
            new, key, mode = self._xts()
            iv, decrypt = work.iv, work.decrypt

            def run_xts(count: int, buf: bytes = buf, out: Any = out) -> None:
                for _ in repeat(None, count):
                    c = new(key, mode, tweak=iv)
                    (c.decrypt if decrypt else c.encrypt)(buf, output=out)

            return run_xts
        c = self._cipher(work.iv)

        def run(count: int, op: Any = c.decrypt if work.decrypt else c.encrypt,
                buf: bytes = buf, out: Any = out) -> None:
            for _ in repeat(None, count):
                op(buf, output=out)

        return run


class _MacContext(Context):
    """HMAC over a PyCryptodome hash, or AES-CMAC: a keyed pristine object, copied per MAC."""

    places_buffers = True  # --qcrypto-misalign: input as given, outputs by work.output()
    feeds_pieces = True  # --qcrypto-update-size: runner() feeds work.pieces()

    def __init__(self, algorithm: Algorithm, key: bytes) -> None:
        super().__init__(algorithm, key)
        if algorithm.name == "cmac-aes-128":
            from Crypto.Cipher import AES
            from Crypto.Hash import CMAC

            self._pristine = CMAC.new(key, ciphermod=AES)
        else:
            from Crypto.Hash import HMAC

            module = importlib.import_module(f"Crypto.Hash.{_DIGESTS[algorithm.family][0]}")
            self._pristine = HMAC.new(key, digestmod=module)

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


class _AeadContext(Context):
    places_buffers = True  # --qcrypto-misalign: input as given, outputs by work.output()
    takes_aad = True  # runner() authenticates work.aad

    def __init__(self, algorithm: Algorithm, key: bytes) -> None:
        super().__init__(algorithm, key)
        if algorithm.family == "aes":
            from Crypto.Cipher import AES

            self._new = partial(AES.new, key, AES.MODE_GCM, mac_len=algorithm.tag_size)
        else:
            from Crypto.Cipher import ChaCha20_Poly1305

            self._new = partial(ChaCha20_Poly1305.new, key=key)

    def encrypt(self, iv: bytes, data: bytes, aad: bytes = b"") -> bytes:
        c = self._new(nonce=iv)
        if aad:
            c.update(aad)
        ct, tag = c.encrypt_and_digest(data)
        return ct + tag

    def decrypt(self, iv: bytes, data: bytes, aad: bytes = b"") -> bytes:
        c = self._new(nonce=iv)
        if aad:
            c.update(aad)
        tag = self.algorithm.tag_size
        try:
            return c.decrypt_and_verify(data[:-tag], data[-tag:])
        except ValueError:
            raise AuthenticationError("tag did not verify") from None

    def runner(self, work: Workload) -> Runner:
        new, tag = self._new, self.algorithm.tag_size
        if work.aad:  # (its own loops: the ones without an AAD make no extra call)
            return self._aad_runner(work)
        if work.decrypt:
            ct, mac = work.ciphertext[:-tag], work.ciphertext[-tag:]
            out = work.output(len(ct))

            def run_decrypt(count: int, new: Any = new, nonce: bytes = work.nonces[0],
                            ct: bytes = ct, mac: bytes = mac, out: Any = out) -> None:
                for _ in repeat(None, count):
                    c = new(nonce=nonce)
                    c.decrypt(ct, output=out)
                    c.verify(mac)

            return run_decrypt
        out = work.output(len(work.data))
        nonces = cycle(work.nonces)

        def run(count: int, new: Any = new, buf: bytes = work.data, out: Any = out) -> None:
            for nonce in islice(nonces, count):
                c = new(nonce=nonce)
                c.encrypt(buf, output=out)
                c.digest()

        return run

    def _aad_runner(self, work: Workload) -> Runner:
        """The timed loops with ``work.aad`` authenticated first (``update``), as TLS does."""
        new, tag, aad = self._new, self.algorithm.tag_size, work.aad
        if work.decrypt:
            ct, mac = work.ciphertext[:-tag], work.ciphertext[-tag:]
            out = work.output(len(ct))

            def run_decrypt(count: int, nonce: bytes = work.nonces[0]) -> None:
                for _ in repeat(None, count):
                    c = new(nonce=nonce)
                    c.update(aad)
                    c.decrypt(ct, output=out)
                    c.verify(mac)

            return run_decrypt
        out = work.output(len(work.data))
        nonces, buf = cycle(work.nonces), work.data

        def run(count: int) -> None:
            for nonce in islice(nonces, count):
                c = new(nonce=nonce)
                c.update(aad)
                c.encrypt(buf, output=out)
                c.digest()

        return run

#: The context class of each kind of algorithm.
_CONTEXTS: dict[Kind, type[Context]] = {
    Kind.DIGEST: _DigestContext, Kind.CIPHER: _CipherContext, Kind.AEAD: _AeadContext,
    Kind.MAC: _MacContext}



#: The built-in plugin of this module (found by :func:`pytest_qcrypto.backends.builtin_plugins`).
PLUGINS = [PyCryptodomePlugin]
