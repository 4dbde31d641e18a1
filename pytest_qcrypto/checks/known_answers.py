"""Known-answer tests: every (plugin, algorithm) pair is checked before it is timed.

The vectors live in ``vectors/vectors.json`` inside the package (so they ship
in the wheel); each entry's ``name`` cites the standard it comes from: FIPS
180-4 and FIPS 202 (SHA-1/2/3), RFC 1321 (MD5), RFC 7693 (BLAKE2), GB/T 32905
(SM3), NIST SP 800-38A (AES CBC/CTR/ECB), IEEE 1619-2007 (XTS), McGrew & Viega's
GCM specification, RFC 8439 (ChaCha20, ChaCha20-Poly1305, Poly1305: section 2.5.2 and
appendix A.3), NIST SP 800-67 (TDEA), FIPS 81 appendix C (DES CBC), Eric Young's
Blowfish CBC vector from Schneier's test vectors, RFC 2144 appendix B.1 (CAST-128),
RFC 2202 (HMAC-MD5, HMAC-SHA-1), RFC 4231 (HMAC-SHA-256/384/512; the truncated-output
case 5 is left out) and RFC 4493 / NIST SP 800-38B appendix D.1 (AES-CMAC).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from itertools import cycle, islice, repeat
from importlib import resources

from pytest_qcrypto.backends.base import AuthenticationError, Context, Workload
from pytest_qcrypto.algorithms.catalog import Algorithm, Check


class KnownAnswerError(Exception):
    """A plugin gave a wrong answer; ``str()`` names plugin, algorithm and vector."""


class WrongTypeError(KnownAnswerError):
    """A plugin returned something that is not bytes (or not a runner); ``str()`` names
    the plugin, the type and the method: ``plugin X returned str from digest(), expected
    bytes``."""


#: What a one-shot method of a context may return: bytes, or a bytes-like object that
#: compares and prints as bytes do.
BYTES_LIKE = (bytes, bytearray, memoryview)


def returned(plugin: str, method: str, value: object) -> bytes:
    """``value``, returned by ``method`` of ``plugin``'s context; :class:`WrongTypeError`
    unless it is bytes (or a ``bytearray`` / ``memoryview``)."""
    if not isinstance(value, BYTES_LIKE):
        raise WrongTypeError(f"plugin {plugin} returned {type(value).__name__} from "
                             f"{method}(), expected bytes")
    return value  # type: ignore[return-value]


@dataclass(frozen=True)
class Vector:
    """One known answer.  For AEADs ``output`` is the ciphertext followed by the tag; for
    MACs ``input`` is the message and ``output`` the MAC under ``key`` (an HMAC key may
    be of any length: RFC 4231 cases 6 and 7 take 131 bytes)."""

    algorithm: str
    name: str
    input: bytes
    output: bytes
    key: bytes = b""
    iv: bytes = b""
    aad: bytes = b""


@cache
def _all_vectors() -> dict[str, tuple[Vector, ...]]:
    raw = json.loads(resources.files("pytest_qcrypto.checks.vectors").joinpath("vectors.json").read_text())
    found: dict[str, list[Vector]] = {}
    h = bytes.fromhex
    for v in raw["digests"]:
        found.setdefault(v["algorithm"], []).append(
            Vector(v["algorithm"], v["name"], h(v["message"]), h(v["digest"])))
    for v in raw["ciphers"]:
        found.setdefault(v["algorithm"], []).append(
            Vector(v["algorithm"], v["name"], h(v["plaintext"]), h(v["ciphertext"]),
                   h(v["key"]), h(v["iv"])))
    for v in raw["aeads"]:
        found.setdefault(v["algorithm"], []).append(
            Vector(v["algorithm"], v["name"], h(v["plaintext"]), h(v["ciphertext"]) + h(v["tag"]),
                   h(v["key"]), h(v["nonce"]), h(v["aad"])))
    for v in raw.get("macs", ()):
        found.setdefault(v["algorithm"], []).append(
            Vector(v["algorithm"], v["name"], h(v["message"]), h(v["tag"]), h(v["key"])))
    return {k: tuple(v) for k, v in found.items()}


def vectors(algorithm: str) -> tuple[Vector, ...]:
    """The known-answer vectors of one catalog algorithm (canonical name)."""
    return _all_vectors().get(algorithm, ())


def _fail(plugin: str, alg: Algorithm, vector: Vector, what: str, got: bytes, want: bytes) -> None:
    raise KnownAnswerError(
        f"{plugin} gave a wrong answer for {alg.name} {what} on vector '{vector.name}': "
        f"got {got.hex()[:64]}, expected {want.hex()[:64]}")


def check_vectors(plugin: str, alg: Algorithm, open_context: Callable[[bytes], Context],
                  close: Callable[[Context], None] | None = None) -> int:
    """Run every vector of ``alg`` through contexts from ``open_context(key)``, each
    closed by ``close(ctx)`` (default ``ctx.close()``; the harness bounds it in time).

    Runs the checks of the kind's rules (:attr:`KindRules.checks
    <pytest_qcrypto.algorithms.catalog.KindRules.checks>`): the digest; the MAC under the vector's
    key; or the encryption and the decryption, and for AEADs that a tampered tag is
    rejected.  Returns how many vectors ran.
    Raises :class:`KnownAnswerError` on the first wrong answer
    (:class:`WrongTypeError` for an answer that is not bytes; plugin errors
    such as ``Unsupported`` or ``OSError`` propagate as they are).
    """
    ran = 0
    for vector in vectors(alg.name):
        ctx = open_context(vector.key)
        try:
            for check in alg.rules.checks:
                CHECKS[check](plugin, alg, vector, ctx)
        finally:
            if close is None:
                ctx.close()
            else:
                close(ctx)
        ran += 1
    return ran


def _check_digest(plugin: str, alg: Algorithm, vector: Vector, ctx: Context) -> None:
    got = returned(plugin, "digest", ctx.digest(vector.input))
    if got != vector.output:
        _fail(plugin, alg, vector, "digest", got, vector.output)


def _check_mac(plugin: str, alg: Algorithm, vector: Vector, ctx: Context) -> None:
    got = returned(plugin, "mac", ctx.mac(vector.input))
    if got != vector.output:
        _fail(plugin, alg, vector, "MAC", got, vector.output)


def _check_encrypt(plugin: str, alg: Algorithm, vector: Vector, ctx: Context) -> None:
    got = returned(plugin, "encrypt", ctx.encrypt(vector.iv, vector.input, vector.aad))
    if got != vector.output:
        _fail(plugin, alg, vector, "encryption", got, vector.output)


def _check_decrypt(plugin: str, alg: Algorithm, vector: Vector, ctx: Context) -> None:
    back = returned(plugin, "decrypt", ctx.decrypt(vector.iv, vector.output, vector.aad))
    if back != vector.input:
        _fail(plugin, alg, vector, "decryption", back, vector.input)


def _check_rejects_bad_tag(plugin: str, alg: Algorithm, vector: Vector, ctx: Context) -> None:
    tampered = bytearray(vector.output)
    tampered[-1] ^= 1
    try:
        ctx.decrypt(vector.iv, bytes(tampered), vector.aad)
    except AuthenticationError:
        return
    raise KnownAnswerError(
        f"{plugin} accepted a tampered {alg.name} tag on vector '{vector.name}'")


#: How each :class:`~pytest_qcrypto.algorithms.catalog.Check` of a kind's rules is done.
CHECKS: dict[Check, Callable[[str, Algorithm, Vector, Context], None]] = {
    Check.DIGEST: _check_digest,
    Check.ENCRYPT: _check_encrypt,
    Check.DECRYPT: _check_decrypt,
    Check.REJECTS_BAD_TAG: _check_rejects_bad_tag,
    Check.MAC: _check_mac,
}


def check_round_trip(plugin: str, alg: Algorithm, ctx: Context, work: Workload) -> None:
    """Check that decrypting the benchmark's ciphertext gives its plaintext back
    (:class:`KnownAnswerError` if not, :class:`WrongTypeError` for what is not bytes)."""
    if not alg.can_decrypt:
        return
    iv = work.nonces[0] if alg.rules.nonce_per_operation else work.iv
    aad = (work.aad,) if work.aad and alg.rules.nonce_per_operation else ()  # (only if given)
    sealed = work.ciphertext or returned(plugin, "encrypt", ctx.encrypt(iv, work.data, *aad))
    if returned(plugin, "decrypt", ctx.decrypt(iv, sealed, *aad)) != work.data:
        raise KnownAnswerError(
            f"{plugin} {alg.name}: decrypting the {work.size}-byte benchmark buffer "
            "did not give the plaintext back")


def checked_roundtrip_runner(typed: str, alg: Algorithm, ctx: Context,
                             work: Workload) -> Callable[[int], None]:
    """A round-trip loop that checks every iteration (FreeBSD cryptotest's ``-c``): one-shot
    ``ctx.encrypt`` of ``work.data`` (AEADs: the next nonce of ``work.nonces``) must differ
    from the plaintext, and ``ctx.decrypt`` of it must give the plaintext back; else
    ``KnownAnswerError`` (one line: plugin, algorithm, size, which iteration)."""
    data, n = work.data, work.size
    ivs = cycle(work.nonces) if alg.rules.nonce_per_operation else repeat(work.iv)
    done = [0]

    def run(count: int) -> None:
        for iv in islice(ivs, count):
            done[0] += 1
            sealed = ctx.encrypt(iv, data)
            if bytes(sealed[:n]) == data:
                raise KnownAnswerError(
                    f"{typed} {alg.name}: cipher text unchanged: the encryption of the "
                    f"{n}-byte buffer equals the plaintext (round trip {done[0]})")
            if bytes(ctx.decrypt(iv, sealed)) != data:
                raise KnownAnswerError(
                    f"{typed} {alg.name}: decrypt mismatch: the {n}-byte buffer did not "
                    f"decrypt back to the plaintext (round trip {done[0]})")

    return run
