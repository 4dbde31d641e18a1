"""Correctness before timing for the kinds without a buffer size: signatures, key agreement,
KEMs, RSA encryption and KDFs.

:func:`check` runs one plugin's known answers (where a standard gives them) and its
cross-plugin checks against every peer plugin that has the algorithm.  The vectors live in
``vectors/pkey_vectors.json`` inside the package; each entry's ``name`` cites its source:
RFC 8032 sections 7.1 and 7.4 (Ed25519 TEST 1-3, Ed448 -----Blank and -----1 octet), RFC 7748
sections 6.1 and 6.2 (X25519, X448), RFC 7914 sections 11 and 12 (PBKDF2-HMAC-SHA256, scrypt),
RFC 9106 section 5.3 (Argon2id, with its secret and associated data), RFC 5869 appendix A.3
(HKDF-SHA256: test case 3, the one with an empty salt and info, as the benchmark's HKDF has no
info), the published bcrypt vectors PyCryptodome's tests use, and FIPS 203 / FIPS 204 key
generation from seeds (C2SP Wycheproof ``mlkem_512_keygen_seed_test.json`` and
``mlkem_768_keygen_seed_test.json`` tcId 1 and ``mldsa_65_sign_seed_test.json``; their public
keys, 800, 1184 and 1952 bytes, are stored as a SHA-256).  KDF keys are compared on their first 32 bytes: PBKDF2, scrypt (whose last step is
PBKDF2) and HKDF outputs are prefix-stable, so a 32-byte key is the prefix of the RFCs'
64- and 42-byte ones.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from functools import cache, partial
from importlib import resources
from typing import Any

from pytest_qcrypto.algorithms import catalog
from pytest_qcrypto.backends.base import AuthenticationError, Context, Unsupported
from pytest_qcrypto.algorithms.catalog import Algorithm, Kind
from pytest_qcrypto.checks.known_answers import KnownAnswerError, WrongTypeError, returned

#: What the self and cross-plugin checks sign, encrypt (32 bytes) and derive from (16 bytes
#: of password and of salt, no zero byte: bcrypt refuses one).
MESSAGE = b"pytest-qcrypto public-key check."
PASSWORD = b"qcrypto-password"
SALT = b"qcrypto-salt-16B"

Opener = Callable[[Algorithm], Context]


@cache
def _vectors() -> dict[str, Any]:
    text = resources.files("pytest_qcrypto.checks.vectors").joinpath("pkey_vectors.json").read_text()
    return json.loads(text)


def vectors(alg: Algorithm) -> list[dict[str, Any]]:
    """The known-answer vectors of ``alg`` (KDFs: every vector of its family, whatever its
    parameters), as the JSON has them (hex strings)."""
    raw = _vectors()
    if alg.is_of((Kind.KDF,)):
        found = []
        for v in raw["kdfs"]:
            other = catalog.lookup(v["algorithm"])
            if other is not None and other.family == alg.family:
                found.append(v)
        return found
    return [v for section in ("signatures", "agreements", "seeded_keys")
            for v in raw[section] if v["algorithm"] == alg.name]


def _short(data: bytes) -> str:
    return data.hex() if len(data) <= 8 else data.hex()[:16] + "..."


def _tampered(data: bytes) -> bytes:
    """``data`` with one bit flipped, in its middle byte."""
    out = bytearray(data)
    out[len(out) // 2] ^= 1
    return bytes(out)


def _verified(plugin: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise WrongTypeError(f"plugin {plugin} returned {type(value).__name__} from verify(), "
                             "expected bool")
    return value


class _Checker:
    """One run of :func:`check`: the plugin, the algorithm, and the contexts to close."""

    def __init__(self, plugin: str, alg: Algorithm, stack: ExitStack,
                 close: Callable[[Context], None] | None = None) -> None:
        self.plugin, self.alg, self.stack, self.close = plugin, alg, stack, close
        self.skipped: list[str] = []

    def fail(self, where: str, what: str, got: bytes | None = None,
             want: bytes | None = None) -> None:
        detail = f" (got {_short(got)}, want {_short(want)})" if got is not None and want is not None else ""
        raise KnownAnswerError(f"{self.plugin} {self.alg.name}: {where}: {what}{detail}")

    def open(self, opener: Opener, alg: Algorithm | None = None) -> Context:
        ctx = opener(alg or self.alg)
        self.stack.callback(ctx.close if self.close is None else partial(self.close, ctx))
        return ctx

    # -- known answers --------------------------------------------------------------------

    def known_answers(self, opener: Opener) -> None:
        for v in vectors(self.alg):
            if self.alg.is_of((Kind.KDF,)):
                self.kdf_vector(opener, v)
                continue
            ctx = self.open(opener)
            try:
                ctx.load_private(bytes.fromhex(v.get("private") or v["seed"]))
            except Unsupported as exc:
                self.skipped.append(f"{v['name']}: skipped ({exc})")
                continue
            public = returned(self.plugin, "public_key", ctx.public_key())
            if "public_sha256" in v:
                got = hashlib.sha256(public).digest()
                if got.hex() != v["public_sha256"]:
                    self.fail(v["name"], "the public key's SHA-256 differs", got,
                              bytes.fromhex(v["public_sha256"]))
            elif public.hex() != v["public"]:
                self.fail(v["name"], "the public key differs", public, bytes.fromhex(v["public"]))
            if "signature" in v:
                self.signature_vector(ctx, v, public)
            elif "shared" in v:
                got = returned(self.plugin, "agree", ctx.agree(bytes.fromhex(v["peer_public"])))
                if got.hex() != v["shared"]:
                    self.fail(v["name"], "the shared secret differs", got, bytes.fromhex(v["shared"]))

    def signature_vector(self, ctx: Context, v: dict[str, Any], public: bytes) -> None:
        message, want = bytes.fromhex(v["message"]), bytes.fromhex(v["signature"])
        got = returned(self.plugin, "sign", ctx.sign(message))
        if got != want:
            self.fail(v["name"], "the signature differs", got, want)
        if not _verified(self.plugin, ctx.verify(public, message, want)):
            self.fail(v["name"], "the standard's signature does not verify")
        if _verified(self.plugin, ctx.verify(public, message, _tampered(want))):
            self.fail(v["name"], "a tampered signature (one bit flipped) verifies")

    def kdf_vector(self, opener: Opener, v: dict[str, Any]) -> None:
        alg = catalog.lookup(v["algorithm"])
        assert alg is not None, v["algorithm"]
        extra = {k: bytes.fromhex(v[k]) for k in ("secret", "associated_data") if v.get(k)}
        try:
            ctx = self.open(opener, alg)
            got = returned(self.plugin, "derive_key", ctx.derive_key(
                bytes.fromhex(v["password"]), bytes.fromhex(v["salt"]), **extra))
        except Unsupported as exc:
            self.skipped.append(f"{v['name']}: skipped ({exc})")
            return
        want = bytes.fromhex(v["key"])
        if got[:len(want)] != want or len(got) != alg.digest_size:
            self.fail(v["name"], "the derived key differs", got, want)

    # -- the plugin against itself and against its peers ----------------------------------

    def signatures(self, ctx: Context, peers: list[tuple[str, Context]]) -> None:
        public = returned(self.plugin, "public_key", ctx.public_key())
        sig = returned(self.plugin, "sign", ctx.sign(MESSAGE))
        if not _verified(self.plugin, ctx.verify(public, MESSAGE, sig)):
            self.fail("self check", "its own signature does not verify")
        bad = _tampered(sig)
        if _verified(self.plugin, ctx.verify(public, MESSAGE, bad)):
            self.fail("self check", "a tampered signature (one bit flipped) verifies")
        for name, peer in peers:
            if not _verified(name, peer.verify(public, MESSAGE, sig)):
                self.fail("cross-plugin check", f"{name} does not verify {self.plugin}'s signature")
            if _verified(name, peer.verify(public, MESSAGE, bad)):
                self.fail("cross-plugin check",
                          f"{name} accepts {self.plugin}'s signature with one bit flipped")
            theirs = returned(name, "sign", peer.sign(MESSAGE))
            peer_public = returned(name, "public_key", peer.public_key())
            if not _verified(self.plugin, ctx.verify(peer_public, MESSAGE, theirs)):
                self.fail("cross-plugin check", f"{self.plugin} does not verify {name}'s signature")
            if _verified(self.plugin, ctx.verify(peer_public, MESSAGE, _tampered(theirs))):
                self.fail("cross-plugin check",
                          f"{self.plugin} accepts {name}'s signature with one bit flipped")

    def agreements(self, ctx: Context, others: list[tuple[str, Context]]) -> None:
        mine = returned(self.plugin, "public_key", ctx.public_key())
        for name, other in others:
            theirs = returned(name, "public_key", other.public_key())
            ours = returned(self.plugin, "agree", ctx.agree(theirs))
            if ours != returned(name, "agree", other.agree(mine)):
                where = "self check" if name == self.plugin else "cross-plugin check"
                self.fail(where, f"{name} and {self.plugin} derive different shared secrets")

    def kems(self, ctx: Context, others: list[tuple[str, Context]]) -> None:
        mine = returned(self.plugin, "public_key", ctx.public_key())
        for name, other in others:
            where = "self check" if name == self.plugin else "cross-plugin check"
            ct, secret = self.pair(self.plugin, ctx.encapsulate(
                returned(name, "public_key", other.public_key())))
            if returned(name, "decapsulate", other.decapsulate(ct)) != secret:
                self.fail(where, f"{name} decapsulates {self.plugin}'s ciphertext to a "
                                 "different shared secret")
            ct, secret = self.pair(name, other.encapsulate(mine))
            if returned(self.plugin, "decapsulate", ctx.decapsulate(ct)) != secret:
                self.fail(where, f"{self.plugin} decapsulates {name}'s ciphertext to a "
                                 "different shared secret")

    @staticmethod
    def pair(plugin: str, value: object) -> tuple[bytes, bytes]:
        """``(ciphertext, shared secret)`` from ``encapsulate``, or :class:`WrongTypeError`."""
        if not isinstance(value, tuple) or len(value) != 2:
            raise WrongTypeError(f"plugin {plugin} returned {type(value).__name__} from "
                                 "encapsulate(), expected a (ciphertext, secret) pair of bytes")
        return returned(plugin, "encapsulate", value[0]), returned(plugin, "encapsulate", value[1])

    def encryptions(self, ctx: Context, others: list[tuple[str, Context]]) -> None:
        mine = returned(self.plugin, "public_key", ctx.public_key())
        for name, other in others:
            where = "self check" if name == self.plugin else "cross-plugin check"
            ct = returned(self.plugin, "public_encrypt",
                          ctx.public_encrypt(other.public_key(), MESSAGE))
            if returned(name, "private_decrypt", other.private_decrypt(ct)) != MESSAGE:
                self.fail(where, f"{name} does not decrypt {self.plugin}'s ciphertext")
            ct = returned(name, "public_encrypt", other.public_encrypt(mine, MESSAGE))
            if returned(self.plugin, "private_decrypt", ctx.private_decrypt(ct)) != MESSAGE:
                self.fail(where, f"{self.plugin} does not decrypt {name}'s ciphertext")
            try:
                ctx.private_decrypt(_tampered(ct))
            except AuthenticationError:
                continue
            self.fail(where, "a tampered ciphertext (one bit flipped) decrypts")

    def kdfs(self, ctx: Context, peers: list[tuple[str, Context]]) -> None:
        key = returned(self.plugin, "derive_key", ctx.derive_key(PASSWORD, SALT))
        if len(key) != self.alg.digest_size:
            self.fail("self check", f"the key is {len(key)} bytes, not {self.alg.digest_size}")
        for name, peer in peers:
            theirs = returned(name, "derive_key", peer.derive_key(PASSWORD, SALT))
            if theirs != key:
                self.fail(f"cross-plugin check ({self.alg.params_text or 'no parameters'})",
                          f"{name} derives a different key", theirs, key)


class _Blamed:
    """A peer's context in the cross-plugin checks: what its methods raise (but the
    ``AuthenticationError`` of a tampered ciphertext) fails the check naming the peer, not
    the plugin being checked (``liar raised RuntimeError in sign(): ...``)."""

    def __init__(self, ctx: Context, name: str, checker: _Checker) -> None:
        self._ctx, self._name, self._checker = ctx, name, checker

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self._ctx, attr)
        if not callable(value):
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return value(*args, **kwargs)
            except AuthenticationError:
                raise
            except Exception as exc:  # noqa: BLE001  (the peer's fault, said as such)
                self._checker.fail("cross-plugin check", f"{self._name} raised "
                                   f"{type(exc).__name__} in {attr}(): {str(exc)[:200]}")
        return call


def check(plugin: str, alg: Algorithm, open_context: Opener,
          peers: Sequence[tuple[str, Opener]], *, context: Context | None = None,
          close: Callable[[Context], None] | None = None) -> list[str]:
    """Check ``plugin``'s ``alg`` before it is timed (a kind without a buffer size).

    ``open_context(algorithm)`` opens this plugin's context (a KDF vector may need other
    parameters: ``scrypt-n1024-r8-p16``); ``peers`` are the other plugins that have the
    algorithm, by name, with their openers (one that fails to open is left out).  Every
    context opened here is closed here, by ``close(ctx)`` when given (a quick run keeps
    its key pairs: :mod:`pytest_qcrypto.measure.reuse`).  ``context``: the plugin's
    context checked against itself and its peers (the timed one; not closed here), else
    one opened here; the known answers always open their own.

    Runs the known answers of :func:`vectors` (the standard's keys, signatures, shared
    secrets, derived keys), then the checks of the plugin against itself and against each
    peer: a signature made here verifies there and one made there verifies here, and a
    signature with one bit flipped is rejected on both sides; both sides of an agreement
    derive the same secret; a ciphertext encapsulated (or RSA-OAEP-encrypted) on one side
    decapsulates (decrypts) on the other to the same secret (message); a KDF derives the
    same key from the same password, salt and parameters (the cell's own, once).

    Raises :class:`~pytest_qcrypto.checks.known_answers.KnownAnswerError` naming the plugin, the
    algorithm and the vector or check (``doubleplug ed25519: RFC 8032 section 7.1 TEST 1:
    the signature differs (got ..., want ...)``), or
    :class:`~pytest_qcrypto.checks.known_answers.WrongTypeError` for an answer of the wrong type;
    a plugin's own errors propagate.  Returns the vectors it skipped, each with the reason
    (a plugin that cannot load a private key or take Argon2's secret raises
    :class:`Unsupported` for it); an empty list when every vector ran.
    """
    with ExitStack() as stack:
        checker = _Checker(plugin, alg, stack, close)
        checker.known_answers(open_context)
        ctx = checker.open(open_context) if context is None else context
        opened: list[tuple[str, Context]] = []
        for name, opener in peers:
            try:
                opened.append((name, _Blamed(checker.open(opener), name, checker)))
            except Exception:  # noqa: BLE001  (a peer that cannot open is left out, as the contract says)
                continue
        if alg.is_of((Kind.SIGNATURE, Kind.KDF)):  # against its peers only
            mine = opened
        else:
            # the self check: a second context for an agreement (keys are cheap); a KEM or
            # RSA-OAEP context encapsulates (encrypts) to its own public key
            me = checker.open(open_context) if alg.is_of((Kind.KEX,)) else ctx
            mine = [(plugin, me)] + opened
        {Kind.SIGNATURE: checker.signatures, Kind.KDF: checker.kdfs,
         Kind.KEX: checker.agreements, Kind.KEM: checker.kems,
         Kind.PKE: checker.encryptions}[alg.kind](ctx, mine)
        return checker.skipped


def check_keygen(plugin: str, ctx: Context) -> None:
    """A signature's keygen in ``plugin``, checked on the context about to time it (what one
    operation makes: :meth:`~pytest_qcrypto.backends.base.Context.generate_key_pair`): the
    new key pair's public key differs from the one before, it signs :data:`MESSAGE`, the
    signature verifies under that public key, and one with a bit flipped does not.

    Raises :class:`~pytest_qcrypto.checks.known_answers.KnownAnswerError` (``openssl
    ed25519: keygen check: its new key's signature does not verify``) or
    :class:`~pytest_qcrypto.checks.known_answers.WrongTypeError`; the plugin's own errors
    (:class:`Unsupported` from a context that cannot) propagate.
    """
    def fail(what: str) -> None:
        raise KnownAnswerError(f"{plugin} {ctx.algorithm.name}: keygen check: {what}")

    before = returned(plugin, "public_key", ctx.public_key())
    ctx.generate_key_pair()
    public = returned(plugin, "public_key", ctx.public_key())
    if public == before:
        fail("generate_key_pair() left the key pair as it was (the same public key)")
    sig = returned(plugin, "sign", ctx.sign(MESSAGE))
    if not _verified(plugin, ctx.verify(public, MESSAGE, sig)):
        fail("its new key's signature does not verify")
    if _verified(plugin, ctx.verify(public, MESSAGE, _tampered(sig))):
        fail("its new key's signature verifies with one bit flipped")
