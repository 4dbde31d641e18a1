"""The ``openssl`` plugin: pyca/cryptography and the OpenSSL it links.

Timed call paths (the fastest honest ones, see the project's measurement notes):

* digest: ``h = pristine.copy(); h.update(buf); h.finalize()``: a fresh
  context per operation without re-resolving the algorithm;
* cipher: one ``Cipher(...).encryptor()`` (or decryptor) for the whole
  measurement, ``update_into(buf, out)`` into a preallocated output;
* MAC: HMAC and CMAC as the digest: ``m = pristine.copy(); m.update(buf);
  m.finalize()`` on a keyed object built once (the key schedule is not redone per
  operation); Poly1305 ``Poly1305.generate_tag(key, buf)``, one call per message
  (pyca cannot copy a keyed Poly1305, and its one-time key is set per message anyway);
* AEAD: ``AESGCM(key)`` / ``ChaCha20Poly1305(key)`` built once,
  ``encrypt_into(nonce, buf, None, out)`` per message (``decrypt_into`` verifies
  the tag).  ``encrypt_into`` and ``decrypt_into`` exist from cryptography 47;
  with an older cryptography the loop calls ``encrypt(nonce, buf, None)`` (or
  ``decrypt``), which also allocates and fills a new ``bytes`` object of
  ``size + 16`` (or ``size``) bytes per message, so the figure includes that
  allocation and copy: :meth:`OpenSSLPlugin.implementation` says so for those
  algorithms, and saved results record it.

``des-ede3-cbc``, ``bf-cbc`` and ``cast5-cbc`` are pyca's TripleDES, Blowfish and
CAST5, from ``cryptography.hazmat.decrepit`` (cryptography 43 and later) or from
``primitives.ciphers.algorithms`` (before 43); OpenSSL 3 serves Blowfish and CAST5
from its legacy provider, which pyca loads (``backend.cipher_supported`` says when
it could not).  ``des-cbc`` is not supported: pyca has no single DES, and a
TripleDES with one 8-byte key repeated computes DES at three times its cost.

The public-key kinds and KDFs (signatures, key agreement, KEMs, RSA-OAEP, PBKDF2, scrypt,
Argon2id, HKDF) are in :mod:`pytest_qcrypto.backends.openssl_pkey`, which says what one
operation is for each.

The alias ``openssl-3`` is accepted, as in qcrypto's own example; the OpenSSL
version really used is what :meth:`OpenSSLPlugin.version` reports.
"""

from __future__ import annotations

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


def _hash_algorithm(name: str) -> Any:
    from cryptography.hazmat.primitives import hashes

    table = {
        "md5": hashes.MD5, "sha1": hashes.SHA1, "sha224": hashes.SHA224,
        "sha256": hashes.SHA256, "sha384": hashes.SHA384, "sha512": hashes.SHA512,
        "sha512-224": hashes.SHA512_224, "sha512-256": hashes.SHA512_256,
        "sha3-224": hashes.SHA3_224, "sha3-256": hashes.SHA3_256,
        "sha3-384": hashes.SHA3_384, "sha3-512": hashes.SHA3_512, "sm3": hashes.SM3,
    }
    if name == "blake2b512":
        return hashes.BLAKE2b(64)
    if name == "blake2s256":
        return hashes.BLAKE2s(32)
    return table[name]() if name in table else None


def _cipher_parts(alg: Algorithm, key: bytes, iv: bytes) -> tuple[Any, Any]:
    """(algorithm object, mode object) of pyca for a catalog cipher."""
    from cryptography.hazmat.primitives.ciphers import algorithms, modes

    if alg.family == "aes" and alg.mode in ("cbc", "ctr", "xts", "ecb"):
        mode = {"cbc": modes.CBC, "ctr": modes.CTR, "xts": modes.XTS}.get(alg.mode)
        return algorithms.AES(key), (modes.ECB() if alg.mode == "ecb" else mode(iv))
    if alg.name == "chacha20":
        return algorithms.ChaCha20(key, iv), None
    if alg.name in _DECREPIT:
        return _decrepit(_DECREPIT[alg.name])(key), modes.CBC(iv)
    if alg.name == "des-cbc":
        raise Unsupported(NO_SINGLE_DES)
    raise Unsupported(f"openssl plugin has no mapping for {alg.name}")


#: Why ``des-cbc`` is not an openssl row (:meth:`OpenSSLPlugin.open` raises it).
NO_SINGLE_DES = ("pyca/cryptography has no single DES: a TripleDES with one 8-byte key "
                 "repeated computes DES at three times its cost, so des-cbc is not measured "
                 "here (pycryptodome has it)")
#: catalog name -> pyca's class name of the decrepit CBC ciphers
_DECREPIT = {"des-ede3-cbc": "TripleDES", "bf-cbc": "Blowfish", "cast5-cbc": "CAST5"}


def _decrepit(name: str) -> Any:
    """pyca's class ``name`` (TripleDES, Blowfish, CAST5): from ``hazmat.decrepit``
    (cryptography 43+), else from ``primitives.ciphers.algorithms``."""
    try:
        from cryptography.hazmat.decrepit.ciphers import algorithms
    except ImportError:  # cryptography before 43
        from cryptography.hazmat.primitives.ciphers import algorithms
    return getattr(algorithms, name)


def _mac_supported(alg: Algorithm) -> bool:
    """Whether the OpenSSL under pyca computes the MAC ``alg``."""
    from cryptography.hazmat.backends.openssl import backend

    if alg.name == "poly1305":
        return backend.poly1305_supported()
    if alg.name == "cmac-aes-128":
        from cryptography.hazmat.primitives.ciphers import algorithms

        return backend.cmac_algorithm_supported(algorithms.AES(bytes(16)))
    h = _hash_algorithm(alg.family)
    return h is not None and backend.hmac_supported(h)


def _has_aead_into() -> bool:
    """Whether pyca's AEADs have ``encrypt_into`` / ``decrypt_into`` (cryptography 47+)."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    return hasattr(AESGCM, "encrypt_into") and hasattr(AESGCM, "decrypt_into")


class OpenSSLPlugin(CryptoPlugin):
    name = "openssl"
    default_rank = 10
    aliases = ("openssl-3", "pyca", "cryptography")
    library = "pyca/cryptography"
    description = "OpenSSL through pyca/cryptography"
    generates_signature_keys = True  # keygen beside sign and verify (openssl_pkey)

    def probe(self) -> None:
        try:
            import cryptography.hazmat.primitives.ciphers  # noqa: F401
        except ImportError as exc:
            raise Unavailable(f"pyca/cryptography is not installed ({exc})") from None

    def version(self) -> str:
        import cryptography
        from cryptography.hazmat.backends.openssl import backend

        return f"{backend.openssl_version_text()} (cryptography {cryptography.__version__})"

    def implementation(self, algorithm: Algorithm) -> str:
        """The OpenSSL that pyca/cryptography runs on: ``OpenSSL 3.5.4 via cryptography 46.0.7``.

        pyca's wheels bundle their own OpenSSL (not the one ``ssl`` and
        ``hashlib`` use); a distribution's package may link the system's: the
        version is asked of the loaded library either way.  pyca's decrepit TripleDES
        (``des-ede3-cbc``) and an AEAD timed through ``encrypt()`` (cryptography
        before 47, see the module docstring) say so in parentheses.
        """
        import cryptography
        from cryptography.hazmat.backends.openssl import backend

        openssl = " ".join(backend.openssl_version_text().split()[:2])
        text = f"{openssl} via cryptography {cryptography.__version__}"
        if algorithm.name in _DECREPIT:
            text += f" (pyca's decrepit {_DECREPIT[algorithm.name]})"
        elif algorithm.has_tag and not _has_aead_into():
            text += (" (timed through encrypt()/decrypt(): a new bytes object per message; "
                     "encrypt_into needs cryptography 47)")
        return text

    def supported(self) -> frozenset[str]:
        from cryptography.hazmat.backends.openssl import backend

        from pytest_qcrypto.backends.openssl_pkey import supported_names

        found = supported_names()
        for alg in catalog.ALGORITHMS:
            if not alg.rules.sized:
                continue
            if alg.is_of((Kind.MAC,)):
                if _mac_supported(alg):
                    found.add(alg.name)
            elif not alg.keyed:
                h = _hash_algorithm(alg.name)
                if h is not None and backend.hash_supported(h):
                    found.add(alg.name)
            elif alg.has_tag:
                found.add(alg.name)  # AESGCM and ChaCha20Poly1305 are always built in
            else:
                key = bytes(range(1, alg.key_size + 1))
                try:
                    cipher, mode = _cipher_parts(alg, key, bytes(alg.iv_size))
                except (ImportError, ValueError, Unsupported):
                    continue
                if backend.cipher_supported(cipher, mode):
                    found.add(alg.name)
        return frozenset(found)

    def open(self, algorithm: Algorithm, key: bytes, variant: str | None = None) -> Context:
        if variant:
            raise Unsupported(f"the openssl plugin has no drivers to pin (got ':{variant}')")
        if algorithm.name == "des-cbc":
            raise Unsupported(NO_SINGLE_DES)
        if not algorithm.rules.sized:  # public-key kinds and KDFs: openssl_pkey.py
            from pytest_qcrypto.backends.openssl_pkey import open_context

            return open_context(algorithm, key)
        return _CONTEXTS[algorithm.kind](algorithm, key)


class _DigestContext(Context):
    places_buffers = True  # --qcrypto-misalign: input as given, outputs by work.output()
    feeds_pieces = True  # --qcrypto-update-size: runner() feeds work.pieces()

    def __init__(self, algorithm: Algorithm, key: bytes) -> None:
        from cryptography.hazmat.primitives import hashes

        super().__init__(algorithm, key)
        self._pristine = hashes.Hash(_hash_algorithm(algorithm.name))

    def digest(self, data: bytes) -> bytes:
        h = self._pristine.copy()
        h.update(data)
        return h.finalize()

    def runner(self, work: Workload) -> Runner:
        if work.update_size:
            return piecewise_runner(self._pristine.copy, work, "finalize")

        def run(count: int, copy: Any = self._pristine.copy, buf: bytes = work.data) -> None:
            for _ in repeat(None, count):
                h = copy()
                h.update(buf)
                h.finalize()

        return run


class _CipherContext(Context):
    places_buffers = True  # --qcrypto-misalign: input as given, outputs by work.output()

    def _context(self, iv: bytes, decrypt: bool) -> Any:
        from cryptography.hazmat.primitives.ciphers import Cipher

        cipher = Cipher(*_cipher_parts(self.algorithm, self.key, iv))
        return cipher.decryptor() if decrypt else cipher.encryptor()

    def encrypt(self, iv: bytes, data: bytes, aad: bytes = b"") -> bytes:
        ctx = self._context(iv, False)
        return ctx.update(data) + ctx.finalize()

    def decrypt(self, iv: bytes, data: bytes, aad: bytes = b"") -> bytes:
        ctx = self._context(iv, True)
        return ctx.update(data) + ctx.finalize()

    def runner(self, work: Workload) -> Runner:
        ctx = self._context(work.iv, work.decrypt)
        buf = work.ciphertext if work.decrypt else work.data
        out = work.output(len(buf) + self.algorithm.block_size)

        def run(count: int, update_into: Any = ctx.update_into, buf: bytes = buf,
                out: Any = out) -> None:
            for _ in repeat(None, count):
                update_into(buf, out)

        return run


class _MacContext(Context):
    """HMAC or CMAC: a keyed pristine object, copied per operation; Poly1305: one call."""

    places_buffers = True  # --qcrypto-misalign: input as given, outputs by work.output()
    feeds_pieces = True  # --qcrypto-update-size: runner() feeds work.pieces()

    def __init__(self, algorithm: Algorithm, key: bytes) -> None:
        super().__init__(algorithm, key)
        self._pristine: Any = None
        if algorithm.name == "poly1305":
            from cryptography.hazmat.primitives.poly1305 import Poly1305

            Poly1305(key)  # a wrong key length fails here, not in the timed loop
            self._tag = Poly1305.generate_tag
        elif algorithm.name == "cmac-aes-128":
            from cryptography.hazmat.primitives import cmac
            from cryptography.hazmat.primitives.ciphers import algorithms

            self._pristine = cmac.CMAC(algorithms.AES(key))
        else:
            from cryptography.hazmat.primitives import hmac

            self._pristine = hmac.HMAC(key, _hash_algorithm(algorithm.family))

    def mac(self, data: bytes) -> bytes:
        if self._pristine is None:
            return self._tag(self.key, data)
        m = self._pristine.copy()
        m.update(data)
        return m.finalize()

    def runner(self, work: Workload) -> Runner:
        if work.update_size:  # Poly1305: a fresh one-key object, fed piece by piece
            from cryptography.hazmat.primitives.poly1305 import Poly1305

            new = self._pristine.copy if self._pristine is not None else partial(Poly1305, self.key)
            return piecewise_runner(new, work, "finalize")
        if self._pristine is None:
            def run_poly(count: int, tag: Any = self._tag, key: bytes = self.key,
                         buf: bytes = work.data) -> None:
                for _ in repeat(None, count):
                    tag(key, buf)

            return run_poly

        def run(count: int, copy: Any = self._pristine.copy, buf: bytes = work.data) -> None:
            for _ in repeat(None, count):
                m = copy()
                m.update(buf)
                m.finalize()

        return run


class _AeadContext(Context):
    places_buffers = True  # --qcrypto-misalign: input as given, outputs by work.output()
    takes_aad = True  # the timed loops pass work.aad (None when empty, as before)

    def __init__(self, algorithm: Algorithm, key: bytes) -> None:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305

        super().__init__(algorithm, key)
        self._aead = AESGCM(key) if algorithm.family == "aes" else ChaCha20Poly1305(key)

    def encrypt(self, iv: bytes, data: bytes, aad: bytes = b"") -> bytes:
        return self._aead.encrypt(iv, data, aad or None)

    def decrypt(self, iv: bytes, data: bytes, aad: bytes = b"") -> bytes:
        from cryptography.exceptions import InvalidTag

        try:
            return self._aead.decrypt(iv, data, aad or None)
        except InvalidTag:
            raise AuthenticationError("tag did not verify") from None

    def runner(self, work: Workload) -> Runner:
        if not hasattr(self._aead, "encrypt_into"):
            return self._allocating_runner(work)
        tag, aad = self.algorithm.tag_size, work.aad or None
        if work.decrypt:
            out = work.output(len(work.ciphertext) - tag)

            def run_decrypt(count: int, decrypt_into: Any = self._aead.decrypt_into,
                            nonce: bytes = work.nonces[0], buf: bytes = work.ciphertext,
                            out: Any = out, aad: bytes | None = aad) -> None:
                for _ in repeat(None, count):
                    decrypt_into(nonce, buf, aad, out)

            return run_decrypt
        out = work.output(len(work.data) + tag)
        nonces = cycle(work.nonces)

        def run(count: int, encrypt_into: Any = self._aead.encrypt_into,
                buf: bytes = work.data, out: Any = out,
                aad: bytes | None = aad) -> None:
            for nonce in islice(nonces, count):
                encrypt_into(nonce, buf, aad, out)

        return run

    def _allocating_runner(self, work: Workload) -> Runner:
        """cryptography before 47: ``encrypt`` / ``decrypt``, a new bytes object per message."""
        aad = work.aad or None
        if work.decrypt:
            def run_decrypt(count: int, decrypt: Any = self._aead.decrypt,
                            nonce: bytes = work.nonces[0], buf: bytes = work.ciphertext,
                            aad: bytes | None = aad) -> None:
                for _ in repeat(None, count):
                    decrypt(nonce, buf, aad)

            return run_decrypt
        nonces = cycle(work.nonces)

        def run(count: int, encrypt: Any = self._aead.encrypt, buf: bytes = work.data,
                aad: bytes | None = aad) -> None:
            for nonce in islice(nonces, count):
                encrypt(nonce, buf, aad)

        return run

#: The context class of each kind of algorithm.
_CONTEXTS: dict[Kind, type[Context]] = {
    Kind.DIGEST: _DigestContext, Kind.CIPHER: _CipherContext, Kind.AEAD: _AeadContext,
    Kind.MAC: _MacContext}



#: The built-in plugin of this module (found by :func:`pytest_qcrypto.backends.builtin_plugins`).
PLUGINS = [OpenSSLPlugin]
