"""The ``pycryptodome`` plugin's public-key and KDF contexts (PyCryptodome's own code).

:class:`~pytest_qcrypto.backends.pycryptodome.PyCryptodomePlugin` dispatches the kinds
without a buffer size here.  Every import is guarded: the minimum-versions job runs
PyCryptodome 3.7.1, which has RSA, ECDSA on P-256 only, PBKDF2, scrypt and HKDF; EdDSA
came in 3.15, bcrypt in 3.9, ``Crypto.Protocol.DH.key_agreement`` (X25519, X448, ECDH)
in 3.20 and 3.21, ML-KEM and ML-DSA in 4.4.  It has no Argon2.  Keys are made when a
context opens.

What one timed operation is (the call in the loop; its arguments made before it):

* RSA: ``pss.new(key).sign(h)`` (salt as long as the digest) or ``pkcs1_15.new(key).sign(h)``
  on a signer object and a ``SHA256.new(message)`` hash object both made once (the digest
  is computed before the loop, as ``openssl speed`` signs a digest); verify is
  ``verifier.verify(h, signature)``.
* ECDSA: ``DSS.new(key, 'fips-186-3', encoding='der').sign(h)`` (P-384: SHA-384), the same way.
* EdDSA: ``eddsa.new(key, 'rfc8032').sign(message)``; ML-DSA: ``mldsa.new(key).sign(message)``
  (hedged, empty context).
* Signature keygen (not RSA): ``ECC.generate(curve=...)`` (``MLDSA.generate(param_set=...)``)
  and its ``public_key()``, as for key agreement: the key pair ready to sign with.
* X25519, X448, ECDH P-256: keygen ``ECC.generate(curve=...).public_key()`` (a key pair with
  its public point: PyCryptodome computes a NIST key's point only when asked, OpenSSL in
  keygen); derive ``DH.key_agreement(static_priv=..., static_pub=peer, kdf=bytes)``.
* ML-KEM: keygen ``MLKEM.generate(param_set=...)``; encaps and decaps are the key's
  ``_encaps()`` and ``_decaps(ciphertext)``: PyCryptodome 4.4 has no public
  encapsulation API (its HPKE calls these two), so the plugin supports ML-KEM only where
  the key object has them.
* RSA-OAEP: ``PKCS1_OAEP.new(key, hashAlgo=SHA256)`` (MGF1 with the same hash) made once,
  ``encrypt(message)`` / ``decrypt(ciphertext)``.
* KDFs: ``PBKDF2(password, salt, 32, count=i, hmac_hash_module=SHA256)``, ``scrypt(password,
  salt, 32, N, r, p)``, ``bcrypt(password, cost, salt)`` (its modular-crypt string:
  :meth:`derive_key` returns the 23-byte hash decoded from it), ``HKDF(password, 32, salt,
  SHA256)``.  bcrypt refuses a password with a zero byte (:class:`Unsupported` says so).
"""

from __future__ import annotations

import base64
import importlib
from functools import partial
from typing import Any

from pytest_qcrypto.algorithms import catalog
from pytest_qcrypto.backends.base import (
    AuthenticationError,
    Context,
    Runner,
    Unsupported,
    Workload,
    call_loop,
)
from pytest_qcrypto.algorithms.catalog import Algorithm, Kind

#: catalog curve -> PyCryptodome's curve name
_CURVES = {"secp256r1": "P-256", "secp384r1": "P-384", "ed25519": "Ed25519", "ed448": "Ed448",
           "x25519": "Curve25519", "x448": "Curve448"}
#: bcrypt's radix-64 alphabet (OpenBSD) and the standard one, for decoding its hash
_BCRYPT_B64 = bytes.maketrans(
    b"./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")


def _hash_module(name: str) -> Any:
    return importlib.import_module(f"Crypto.Hash.{name.upper()}")


def _ml(alg: Algorithm) -> tuple[Any, Any]:
    """(the Crypto.PublicKey module, the parameter set) of ML-KEM or ML-DSA."""
    module = importlib.import_module(f"Crypto.PublicKey.{alg.family.replace('-', '').upper()}")
    return module, getattr(module, alg.curve.replace("-", "_"))


def _has(alg: Algorithm) -> bool:
    """Whether the installed PyCryptodome does ``alg``; False on any missing import."""
    fam = alg.family
    if fam in ("ecdsa", "ecdh", "eddsa", "xdh"):
        from Crypto.PublicKey import ECC

        # PyCryptodome before 3.9 has one curve, P-256 (ECC._curve), and no ECC._curves table
        curves = getattr(ECC, "_curves", {"P-256": None} if hasattr(ECC, "_curve") else {})
        if _CURVES[alg.curve] not in curves:
            return False
        if fam == "ecdsa":
            from Crypto.Signature import DSS  # noqa: F401
        elif fam == "eddsa":
            from Crypto.Signature import eddsa  # noqa: F401
        else:
            from Crypto.Protocol.DH import key_agreement  # noqa: F401
            if fam == "xdh":
                from Crypto.Protocol import DH

                return hasattr(DH, f"import_{alg.curve}_private_key")
        return True
    if fam == "rsa":
        if alg.mode == "oaep":
            from Crypto.Cipher import PKCS1_OAEP  # noqa: F401
        else:
            from Crypto.Signature import pkcs1_15, pss  # noqa: F401
        return True
    if fam == "ml-kem":
        return hasattr(_ml(alg)[0].MLKEMKey, "_encaps")
    if fam == "ml-dsa":
        from Crypto.Signature import mldsa  # noqa: F401

        return _ml(alg)[0] is not None
    from Crypto.Protocol import KDF

    if fam == "pbkdf2-sha256":  # hmac_hash_module (PBKDF2 with a C HMAC) is a later addition
        import inspect

        return "hmac_hash_module" in inspect.signature(KDF.PBKDF2).parameters
    return hasattr(KDF, {"pbkdf2-sha256": "PBKDF2", "scrypt": "scrypt", "bcrypt": "bcrypt",
                         "hkdf-sha256": "HKDF"}.get(fam, "-"))


def supports(alg: Algorithm) -> bool:
    """Whether this plugin does ``alg`` (any KDF parameters of a family it has)."""
    try:
        return not alg.rules.sized and _has(alg)
    except (ImportError, AttributeError, KeyError):
        return False


def supported_names() -> set[str]:
    """The catalog's public-key and KDF names the installed PyCryptodome does."""
    return {alg.name for alg in catalog.ALGORITHMS if supports(alg)}


def open_context(alg: Algorithm, key: bytes) -> Context:
    """A context of ``alg`` with a key pair made now; :class:`Unsupported` (with the reason)
    when the installed PyCryptodome lacks it."""
    if not supports(alg):
        import Crypto

        why = " (it has no Argon2)" if alg.family == "argon2id" else ""
        raise Unsupported(f"PyCryptodome {Crypto.__version__} has no {alg.name}{why}")
    return _CONTEXTS[alg.kind](alg, key)


def _public(key: Any) -> Any:
    """The public key of ``key`` (``publickey()`` for RSA: PyCryptodome before 3.9 has no
    ``public_key()`` there)."""
    return key.publickey() if hasattr(key, "publickey") else key.public_key()


class _KeyPairContext(Context):
    def __init__(self, algorithm: Algorithm, key: bytes) -> None:
        super().__init__(algorithm, key)
        self._priv = self._generator()()

    def _generator(self) -> Any:
        """A callable of no argument that makes a new private key."""
        alg = self.algorithm
        if alg.family == "rsa":
            from Crypto.PublicKey import RSA

            return partial(RSA.generate, alg.bits)
        if alg.family in ("ml-kem", "ml-dsa"):
            module, param_set = _ml(alg)
            return partial(module.generate, param_set=param_set)
        from Crypto.PublicKey import ECC

        return partial(ECC.generate, curve=_CURVES[alg.curve])

    def public_key(self) -> bytes:
        alg, pub = self.algorithm, _public(self._priv)
        if alg.family == "rsa":
            return pub.export_key("DER")
        if alg.family == "ml-kem":
            return pub.ek
        if alg.family == "ml-dsa":
            return pub.pk
        if alg.family in ("ecdsa", "ecdh"):  # SEC1 uncompressed, built by hand (3.7.1 has no 'SEC1')
            n = (alg.bits + 7) // 8
            return b"\x04" + int(pub.pointQ.x).to_bytes(n, "big") + int(pub.pointQ.y).to_bytes(n, "big")
        return pub.export_key(format="raw")

    def _load_public(self, data: bytes) -> Any:
        alg = self.algorithm
        if alg.family == "rsa":
            from Crypto.PublicKey import RSA

            return RSA.import_key(data)
        if alg.family in ("ml-kem", "ml-dsa"):
            module, param_set = _ml(alg)
            field = "ek" if alg.family == "ml-kem" else "pk"
            return module.construct(param_set=param_set, **{field: data})
        if alg.family in ("ecdsa", "ecdh"):
            from Crypto.PublicKey import ECC

            n = (len(data) - 1) // 2
            if len(data) != 2 * n + 1 or data[:1] != b"\x04":
                raise ValueError("not an uncompressed SEC1 point")
            return ECC.construct(curve=_CURVES[alg.curve], point_x=int.from_bytes(data[1:1 + n], "big"),
                                 point_y=int.from_bytes(data[1 + n:], "big"))
        if alg.family == "eddsa":
            from Crypto.Signature import eddsa

            return eddsa.import_public_key(data)
        from Crypto.Protocol import DH

        return getattr(DH, f"import_{alg.curve}_public_key")(data)

    def load_private(self, private: bytes) -> None:
        alg = self.algorithm
        if alg.family == "rsa":
            from Crypto.PublicKey import RSA

            self._priv = RSA.import_key(private)
        elif alg.family in ("ecdsa", "ecdh"):
            from Crypto.PublicKey import ECC

            self._priv = ECC.import_key(private)
        elif alg.family in ("ml-kem", "ml-dsa"):
            module, param_set = _ml(alg)
            self._priv = module.construct(param_set=param_set, seed=private)
        else:
            from Crypto.PublicKey import ECC

            self._priv = ECC.construct(curve=_CURVES[alg.curve], seed=private)

    def close(self) -> None:
        self._priv = None


class _SignatureContext(_KeyPairContext):
    def _scheme(self, key: Any) -> Any:
        """PyCryptodome's signer (or verifier) object of ``key``."""
        fam, mode = self.algorithm.family, self.algorithm.mode
        if fam == "rsa":
            from Crypto.Signature import pkcs1_15, pss

            return pkcs1_15.new(key) if mode == "pkcs1v15" else pss.new(key)
        if fam == "ecdsa":
            from Crypto.Signature import DSS

            return DSS.new(key, "fips-186-3", encoding="der")
        if fam == "eddsa":
            from Crypto.Signature import eddsa

            return eddsa.new(key, "rfc8032")
        from Crypto.Signature import mldsa

        return mldsa.new(key)

    def _prepare(self, message: bytes) -> Any:
        """RSA and ECDSA: the message's hash object (digest computed now); else ``message``."""
        if self.algorithm.family in ("rsa", "ecdsa"):
            return _hash_module(self.algorithm.hash).new(message)
        return message

    def sign(self, message: bytes) -> bytes:
        return self._scheme(self._priv).sign(self._prepare(message))

    def verify(self, public_key: bytes, message: bytes, signature: bytes) -> bool:
        try:
            verifier = self._scheme(self._load_public(public_key))
            if self.algorithm.family in ("rsa", "ecdsa", "ml-dsa"):
                verifier.verify(self._prepare(message), signature)
            else:
                verifier.verify(message, signature)
        except (ValueError, TypeError):
            return False
        return True

    def generate_key_pair(self) -> None:
        self._priv = _key_pair(self._generator())

    def runner(self, work: Workload) -> Runner:
        if work.operation == "keygen":  # what generate_key_pair() does, the generator bound once
            return call_loop(_key_pair, self._generator())
        prepared = self._prepare(work.data)
        if work.operation == "verify":
            signature = self._scheme(self._priv).sign(prepared)
            return call_loop(self._scheme(_public(self._priv)).verify, prepared, signature)
        return call_loop(self._scheme(self._priv).sign, prepared)


def _key_pair(generate: Any) -> Any:
    """A new private key with its public key computed (``generate()``, then its
    ``public_key()``): the key pair one keygen makes."""
    priv = generate()
    _public(priv)
    return priv


class _AgreementContext(_KeyPairContext):
    def agree(self, peer_public: bytes) -> bytes:
        from Crypto.Protocol.DH import key_agreement

        return key_agreement(static_priv=self._priv, static_pub=self._load_public(peer_public),
                             kdf=bytes)

    def runner(self, work: Workload) -> Runner:
        if work.operation == "keygen":
            return call_loop(_key_pair, self._generator())
        from Crypto.Protocol.DH import key_agreement

        peer = _public(self._generator()())
        return call_loop(partial(key_agreement, static_priv=self._priv, static_pub=peer,
                                 kdf=bytes))


class _KemContext(_KeyPairContext):
    def encapsulate(self, public_key: bytes) -> tuple[bytes, bytes]:
        secret, ciphertext = self._load_public(public_key)._encaps()
        return ciphertext, secret

    def decapsulate(self, ciphertext: bytes) -> bytes:
        return self._priv._decaps(ciphertext)

    def runner(self, work: Workload) -> Runner:
        if work.operation == "keygen":
            return call_loop(self._generator())
        pub = _public(self._priv)
        if work.operation == "encaps":
            return call_loop(pub._encaps)
        _secret, ciphertext = pub._encaps()
        return call_loop(self._priv._decaps, ciphertext)


def _oaep(key: Any) -> Any:
    from Crypto.Cipher import PKCS1_OAEP
    from Crypto.Hash import SHA256

    return PKCS1_OAEP.new(key, hashAlgo=SHA256)


class _PkeContext(_KeyPairContext):
    def public_encrypt(self, public_key: bytes, plaintext: bytes) -> bytes:
        return _oaep(self._load_public(public_key)).encrypt(plaintext)

    def private_decrypt(self, ciphertext: bytes) -> bytes:
        try:
            return _oaep(self._priv).decrypt(ciphertext)
        except ValueError:
            raise AuthenticationError("the OAEP ciphertext did not decrypt") from None

    def runner(self, work: Workload) -> Runner:
        if work.operation == "decrypt":
            ciphertext = _oaep(_public(self._priv)).encrypt(work.data)
            return call_loop(_oaep(self._priv).decrypt, ciphertext)
        return call_loop(_oaep(_public(self._priv)).encrypt, work.data)


def bcrypt_hash(crypt: bytes) -> bytes:
    """The 23-byte hash at the end of a bcrypt modular-crypt string (``$2a$12$`` + 22
    characters of salt + 31 of hash, in bcrypt's radix-64 alphabet)."""
    return base64.b64decode(crypt[-31:].translate(_BCRYPT_B64) + b"=")


class _KdfContext(Context):
    def _derivation(self, password: bytes, salt: bytes) -> Any:
        """A callable of no argument that derives this cell's key (bcrypt: its crypt string)."""
        alg, length = self.algorithm, self.algorithm.digest_size
        from Crypto.Hash import SHA256
        from Crypto.Protocol import KDF

        if alg.family == "bcrypt" and b"\0" in password:
            raise Unsupported("PyCryptodome's bcrypt refuses a password with a zero byte")
        if alg.family == "pbkdf2-sha256":
            return partial(KDF.PBKDF2, password, salt, length, alg.param("i"),
                           hmac_hash_module=SHA256)
        if alg.family == "scrypt":
            return partial(KDF.scrypt, password, salt, length, alg.param("n"), alg.param("r"),
                           alg.param("p"))
        if alg.family == "bcrypt":
            return partial(KDF.bcrypt, password, alg.param("c"), salt)
        return partial(KDF.HKDF, password, length, salt, SHA256)

    def derive_key(self, password: bytes, salt: bytes, *, secret: bytes = b"",
                   associated_data: bytes = b"") -> bytes:
        if secret or associated_data:
            raise Unsupported(f"{self.algorithm.name} takes no secret or associated data "
                              "in PyCryptodome")
        key = self._derivation(password, salt)()
        return bcrypt_hash(key) if self.algorithm.family == "bcrypt" else bytes(key)

    def runner(self, work: Workload) -> Runner:
        return call_loop(self._derivation(work.data, work.iv))


#: The context class of each kind without a buffer size.
_CONTEXTS: dict[Kind, type[Context]] = {
    Kind.SIGNATURE: _SignatureContext, Kind.KEX: _AgreementContext, Kind.KEM: _KemContext,
    Kind.PKE: _PkeContext, Kind.KDF: _KdfContext}
