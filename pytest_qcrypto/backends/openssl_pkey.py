"""The ``openssl`` plugin's public-key and KDF contexts (pyca/cryptography).

:class:`~pytest_qcrypto.backends.openssl.OpenSSLPlugin` dispatches the kinds without a
buffer size here (:func:`supported_names`, :func:`open_context`).  Every import is inside
a function and guarded: with an old cryptography (the minimum-versions job runs 35) a
scheme it lacks is simply not supported.  Keys are made when a context opens.

What one timed operation is (the call in the loop; its arguments made before it):

* RSA (PSS with a 32-byte salt, or PKCS#1 v1.5) and ECDSA: ``priv.sign(digest, padding,
  Prehashed(SHA256()))`` / ``ec.ECDSA(Prehashed(...))`` over the 32-byte message's
  digest computed once (SHA-256; P-384: SHA-384), as ``openssl speed`` signs a digest;
  verify is ``pub.verify(signature, digest, ...)``.  The one-shot :meth:`sign` hashes
  the message first, so its signatures are the standard ones over the message.
* Ed25519, Ed448, ML-DSA: ``priv.sign(message)`` (pure, empty context; pyca's ML-DSA
  is hedged), ``pub.verify(signature, message)``.
* Signature keygen (not RSA): ``Ed25519PrivateKey.generate()`` (``ec.generate_private_key
  (SECP256R1())``, ``MLDSA65PrivateKey.generate()``): OpenSSL's keygen computes the public
  key too, so the key is ready to sign with.
* X25519, X448, ECDH P-256: keygen ``X25519PrivateKey.generate()`` (``ec.generate_private_key
  (SECP256R1())``), derive ``priv.exchange(peer)`` (``exchange(ECDH(), peer)``) with a peer
  key made once.
* ML-KEM: keygen ``MLKEM768PrivateKey.generate()``, encaps ``pub.encapsulate()``, decaps
  ``priv.decapsulate(ciphertext)`` of a ciphertext made once.
* RSA-OAEP (SHA-256, MGF1-SHA-256, no label): ``pub.encrypt(message, oaep)``,
  ``priv.decrypt(ciphertext, oaep)``.
* KDFs: a new one-use KDF object per derivation, then ``.derive(password)``:
  ``PBKDF2HMAC(SHA256(), 32, salt, i)``, ``Scrypt(salt, 32, n, r, p)``, ``Argon2id(salt=...,
  length=32, iterations=t, lanes=p, memory_cost=m)`` (pyca computes the lanes in one
  thread: it sets no thread count), ``HKDF(SHA256(), 32, salt, None)``.  pyca has no
  bcrypt.
"""

from __future__ import annotations

from functools import partial
from itertools import repeat
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


def _hash(name: str) -> Any:
    from cryptography.hazmat.primitives import hashes

    return {"sha256": hashes.SHA256, "sha384": hashes.SHA384}[name]()


def _curve(name: str) -> Any:
    from cryptography.hazmat.primitives.asymmetric import ec

    return {"secp256r1": ec.SECP256R1, "secp384r1": ec.SECP384R1}[name]()


def _classes(alg: Algorithm) -> tuple[Any, Any]:
    """pyca's (private key class, public key class) of the raw-key schemes."""
    if alg.family in ("eddsa", "xdh"):
        import importlib

        module = importlib.import_module(
            f"cryptography.hazmat.primitives.asymmetric.{alg.curve}")
        stem = alg.curve.capitalize()
        return getattr(module, f"{stem}PrivateKey"), getattr(module, f"{stem}PublicKey")
    if alg.family == "ml-kem":
        from cryptography.hazmat.primitives.asymmetric import mlkem

        level = alg.name.rsplit("-", 1)[1]
        return getattr(mlkem, f"MLKEM{level}PrivateKey"), getattr(mlkem, f"MLKEM{level}PublicKey")
    if alg.family == "ml-dsa":
        from cryptography.hazmat.primitives.asymmetric import mldsa

        level = alg.name.rsplit("-", 1)[1]
        return getattr(mldsa, f"MLDSA{level}PrivateKey"), getattr(mldsa, f"MLDSA{level}PublicKey")
    raise Unsupported(f"the openssl plugin has no raw-key scheme {alg.name}")


def _has(alg: Algorithm) -> bool:
    """Whether the installed pyca (and its OpenSSL) does ``alg``; False on any missing import."""
    from cryptography.hazmat.backends.openssl import backend

    fam = alg.family
    if fam == "rsa":
        from cryptography.hazmat.primitives.asymmetric import padding, utils  # noqa: F401

        return True
    if fam in ("ecdsa", "ecdh"):
        from cryptography.hazmat.primitives.asymmetric import ec

        if fam == "ecdsa":
            return backend.elliptic_curve_signature_algorithm_supported(
                ec.ECDSA(_hash(alg.hash)), _curve(alg.curve))
        return backend.elliptic_curve_exchange_algorithm_supported(ec.ECDH(), _curve(alg.curve))
    if fam in ("eddsa", "xdh", "ml-kem", "ml-dsa"):
        _classes(alg)
        probe = {"ml-kem": "mlkem_supported", "ml-dsa": "mldsa_supported"}.get(
            fam, f"{alg.curve}_supported")
        return bool(getattr(backend, probe, lambda: True)())
    if fam == "pbkdf2-sha256":
        from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC  # noqa: F401

        return True
    if fam == "scrypt":
        from cryptography.hazmat.primitives.kdf.scrypt import Scrypt  # noqa: F401

        return bool(getattr(backend, "scrypt_supported", lambda: True)())
    if fam == "argon2id":
        from cryptography.hazmat.primitives.kdf.argon2 import Argon2id  # noqa: F401

        return bool(backend.argon2_supported())
    if fam == "hkdf-sha256":
        from cryptography.hazmat.primitives.kdf.hkdf import HKDF  # noqa: F401

        return True
    return False


def supports(alg: Algorithm) -> bool:
    """Whether this plugin does ``alg`` (any KDF parameters of a family it has)."""
    try:
        return not alg.rules.sized and _has(alg)
    except (ImportError, AttributeError, KeyError, Unsupported):
        return False


def supported_names() -> set[str]:
    """The catalog's public-key and KDF names the installed pyca does."""
    return {alg.name for alg in catalog.ALGORITHMS if supports(alg)}


def open_context(alg: Algorithm, key: bytes) -> Context:
    """A context of ``alg`` with a key pair made now; :class:`Unsupported` (with the reason)
    when the installed pyca lacks it."""
    if not supports(alg):
        import cryptography

        raise Unsupported(f"pyca/cryptography {cryptography.__version__} (or the OpenSSL "
                          f"it runs on) has no {alg.name}")
    return _CONTEXTS[alg.kind](alg, key)


def _raw_public(pub: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization as s

    return pub.public_bytes(s.Encoding.Raw, s.PublicFormat.Raw)


class _KeyPairContext(Context):
    """A key pair made at open: RSA, ECDSA/ECDH, EdDSA, XDH, ML-KEM, ML-DSA."""

    def __init__(self, algorithm: Algorithm, key: bytes) -> None:
        super().__init__(algorithm, key)
        self._priv = self._generate()

    def _generator(self) -> Any:
        """A callable of no argument that makes a new private key."""
        alg = self.algorithm
        if alg.family == "rsa":
            from cryptography.hazmat.primitives.asymmetric import rsa

            return partial(rsa.generate_private_key, 65537, alg.bits)
        if alg.family in ("ecdsa", "ecdh"):
            from cryptography.hazmat.primitives.asymmetric import ec

            return partial(ec.generate_private_key, _curve(alg.curve))
        return _classes(alg)[0].generate

    def _generate(self) -> Any:
        return self._generator()()

    def public_key(self) -> bytes:
        from cryptography.hazmat.primitives import serialization as s

        pub = self._priv.public_key()
        if self.algorithm.family == "rsa":
            return pub.public_bytes(s.Encoding.DER, s.PublicFormat.SubjectPublicKeyInfo)
        if self.algorithm.family in ("ecdsa", "ecdh"):
            return pub.public_bytes(s.Encoding.X962, s.PublicFormat.UncompressedPoint)
        return _raw_public(pub)

    def _load_public(self, data: bytes) -> Any:
        alg = self.algorithm
        if alg.family == "rsa":
            from cryptography.hazmat.primitives.serialization import load_der_public_key

            return load_der_public_key(data)
        if alg.family in ("ecdsa", "ecdh"):
            from cryptography.hazmat.primitives.asymmetric import ec

            return ec.EllipticCurvePublicKey.from_encoded_point(_curve(alg.curve), data)
        return _classes(alg)[1].from_public_bytes(data)

    def load_private(self, private: bytes) -> None:
        alg = self.algorithm
        if alg.family in ("rsa", "ecdsa", "ecdh"):
            from cryptography.hazmat.primitives.serialization import load_der_private_key

            self._priv = load_der_private_key(private, None)
        elif alg.family in ("ml-kem", "ml-dsa"):
            self._priv = _classes(alg)[0].from_seed_bytes(private)
        else:
            self._priv = _classes(alg)[0].from_private_bytes(private)

    def close(self) -> None:
        self._priv = None


class _SignatureContext(_KeyPairContext):
    def _args(self) -> tuple[Any, ...]:
        """What follows the (prehashed) message in pyca's sign and verify."""
        alg = self.algorithm
        if alg.family == "rsa":
            from cryptography.hazmat.primitives.asymmetric import padding, utils

            h = _hash(alg.hash)
            pad = (padding.PKCS1v15() if alg.mode == "pkcs1v15" else
                   padding.PSS(mgf=padding.MGF1(h), salt_length=h.digest_size))
            return pad, utils.Prehashed(h)
        if alg.family == "ecdsa":
            from cryptography.hazmat.primitives.asymmetric import ec, utils

            return (ec.ECDSA(utils.Prehashed(_hash(alg.hash))),)
        return ()

    def _prepare(self, message: bytes) -> bytes:
        """The digest RSA and ECDSA sign (computed outside any timed loop); else ``message``."""
        if self.algorithm.family not in ("rsa", "ecdsa"):
            return message
        from cryptography.hazmat.primitives import hashes

        h = hashes.Hash(_hash(self.algorithm.hash))
        h.update(message)
        return h.finalize()

    def sign(self, message: bytes) -> bytes:
        return self._priv.sign(self._prepare(message), *self._args())

    def verify(self, public_key: bytes, message: bytes, signature: bytes) -> bool:
        from cryptography.exceptions import InvalidSignature

        try:
            pub = self._load_public(public_key)
            pub.verify(signature, self._prepare(message), *self._args())
        except (InvalidSignature, ValueError):
            return False
        return True

    def generate_key_pair(self) -> None:
        self._priv = self._generate()

    def runner(self, work: Workload) -> Runner:
        if work.operation == "keygen":  # what generate_key_pair() does, the generator bound once
            return call_loop(self._generator())
        digest, args = self._prepare(work.data), self._args()
        if work.operation == "verify":
            signature = self._priv.sign(digest, *args)
            return call_loop(self._priv.public_key().verify, signature, digest, *args)
        return call_loop(self._priv.sign, digest, *args)


class _AgreementContext(_KeyPairContext):
    def _exchange(self, priv: Any, pub: Any) -> bytes:
        if self.algorithm.family == "ecdh":
            from cryptography.hazmat.primitives.asymmetric import ec

            return priv.exchange(ec.ECDH(), pub)
        return priv.exchange(pub)

    def agree(self, peer_public: bytes) -> bytes:
        return self._exchange(self._priv, self._load_public(peer_public))

    def runner(self, work: Workload) -> Runner:
        if work.operation == "keygen":
            return call_loop(self._generator())
        peer = self._generate().public_key()
        if self.algorithm.family == "ecdh":
            from cryptography.hazmat.primitives.asymmetric import ec

            return call_loop(self._priv.exchange, ec.ECDH(), peer)
        return call_loop(self._priv.exchange, peer)


class _KemContext(_KeyPairContext):
    def encapsulate(self, public_key: bytes) -> tuple[bytes, bytes]:
        secret, ciphertext = self._load_public(public_key).encapsulate()
        return ciphertext, secret

    def decapsulate(self, ciphertext: bytes) -> bytes:
        return self._priv.decapsulate(ciphertext)

    def runner(self, work: Workload) -> Runner:
        if work.operation == "keygen":
            return call_loop(self._generator())
        pub = self._priv.public_key()
        if work.operation == "encaps":
            return call_loop(pub.encapsulate)
        _secret, ciphertext = pub.encapsulate()
        return call_loop(self._priv.decapsulate, ciphertext)


def _oaep(alg: Algorithm) -> Any:
    from cryptography.hazmat.primitives.asymmetric import padding

    return padding.OAEP(mgf=padding.MGF1(_hash(alg.hash)), algorithm=_hash(alg.hash), label=None)


class _PkeContext(_KeyPairContext):
    def public_encrypt(self, public_key: bytes, plaintext: bytes) -> bytes:
        return self._load_public(public_key).encrypt(plaintext, _oaep(self.algorithm))

    def private_decrypt(self, ciphertext: bytes) -> bytes:
        try:
            return self._priv.decrypt(ciphertext, _oaep(self.algorithm))
        except ValueError:
            raise AuthenticationError("the OAEP ciphertext did not decrypt") from None

    def runner(self, work: Workload) -> Runner:
        oaep, pub = _oaep(self.algorithm), self._priv.public_key()
        if work.operation == "decrypt":
            return call_loop(self._priv.decrypt, pub.encrypt(work.data, oaep), oaep)
        return call_loop(pub.encrypt, work.data, oaep)


class _KdfContext(Context):
    def _new(self, salt: bytes, secret: bytes = b"", associated_data: bytes = b"") -> Any:
        """A callable of no argument making pyca's one-use KDF object for ``salt``."""
        alg, length = self.algorithm, self.algorithm.digest_size
        if (secret or associated_data) and alg.family != "argon2id":
            raise Unsupported(f"{alg.name} takes no secret or associated data")
        if alg.family == "pbkdf2-sha256":
            from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC

            return partial(PBKDF2HMAC, _hash("sha256"), length, salt, alg.param("i"))
        if alg.family == "scrypt":
            from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

            return partial(Scrypt, salt, length, alg.param("n"), alg.param("r"), alg.param("p"))
        if alg.family == "argon2id":
            from cryptography.hazmat.primitives.kdf.argon2 import Argon2id

            return partial(Argon2id, salt=salt, length=length, iterations=alg.param("t"),
                           lanes=alg.param("p"), memory_cost=alg.param("m"),
                           ad=associated_data or None, secret=secret or None)
        from cryptography.hazmat.primitives.kdf.hkdf import HKDF

        return partial(HKDF, _hash("sha256"), length, salt, None)

    def derive_key(self, password: bytes, salt: bytes, *, secret: bytes = b"",
                   associated_data: bytes = b"") -> bytes:
        return self._new(salt, secret, associated_data)().derive(password)

    def runner(self, work: Workload) -> Runner:
        def run(count: int, new: Any = self._new(work.iv), password: bytes = work.data) -> None:
            for _ in repeat(None, count):
                new().derive(password)

        return run


#: The context class of each kind without a buffer size.
_CONTEXTS: dict[Kind, type[Context]] = {
    Kind.SIGNATURE: _SignatureContext, Kind.KEX: _AgreementContext, Kind.KEM: _KemContext,
    Kind.PKE: _PkeContext, Kind.KDF: _KdfContext}
