"""The kinds of algorithm and what each one is, as data: :class:`Kind`, its
:class:`KindRules`, the :class:`Direction` an operation goes and the :class:`Check` of
its known answers.  :mod:`pytest_qcrypto.algorithms.catalog` re-exports every name; read it there.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

class Kind(str, Enum):
    """A kind of algorithm.  A ``str``, so ``Kind.DIGEST == "digest"`` and saved files keep
    their plain words; its rules (:class:`KindRules`) are :attr:`rules`."""

    DIGEST = "digest"
    CIPHER = "cipher"
    AEAD = "aead"
    MAC = "mac"
    SIGNATURE = "signature"
    KEX = "kex"
    KEM = "kem"
    PKE = "pke"
    KDF = "kdf"
    CALLABLE = "callable"

    __str__ = str.__str__
    __format__ = str.__format__

    @property
    def rules(self) -> KindRules:
        """What this kind is and does (:data:`RULES`)."""
        return RULES[self]


class Direction(str, Enum):
    """Which way an operation goes (a ``str``): a digest, an encryption, a decryption, a MAC,
    or a round trip (one encryption then one decryption of the same buffer, as FreeBSD's
    cryptotest times them: it counts as two operations); for the public-key and KDF kinds
    (which have no buffer size) a signature, a verification, a key-pair generation, a
    derivation (a key agreement's shared secret, a KDF's key), an encapsulation or a
    decapsulation."""

    DIGEST = "digest"
    ENCRYPT = "encrypt"
    DECRYPT = "decrypt"
    MAC = "mac"
    ROUNDTRIP = "roundtrip"
    SIGN = "sign"
    VERIFY = "verify"
    KEYGEN = "keygen"
    DERIVE = "derive"
    ENCAPS = "encaps"
    DECAPS = "decaps"
    CALL = "call"

    __str__ = str.__str__
    __format__ = str.__format__

    @property
    def verb(self) -> str:
        """The noun of qcrypto's verbose lines: ``digests``, ``encryptions``, ``decryptions``."""
        return _VERBS[self]


_VERBS = {Direction.DIGEST: "digests", Direction.ENCRYPT: "encryptions",
          Direction.DECRYPT: "decryptions", Direction.MAC: "MACs",
          Direction.ROUNDTRIP: "round trips", Direction.SIGN: "signs",
          Direction.VERIFY: "verifies", Direction.KEYGEN: "keygens",
          Direction.DERIVE: "derives", Direction.ENCAPS: "encaps",
          Direction.DECAPS: "decaps", Direction.CALL: "calls"}
#: What one iteration of a round trip is (saved as a round-trip measurement's ``operation``).
ROUNDTRIP_OPERATION = ("one encryption then one decryption of one buffer with the same key "
                       "(AEADs: a fresh nonce, the decryption verifies the tag): two operations, "
                       "as FreeBSD cryptotest counts them")
#: How many operations one iteration of each direction is: a round trip is an encryption
#: and a decryption (FreeBSD cryptotest counts ``2 x count`` crypts).
OPERATIONS_PER_ITERATION = {Direction.ROUNDTRIP: 2}


class Check(str, Enum):
    """One check of a known-answer vector (``known_answers`` runs them in this order)."""

    DIGEST = "digest"  # the digest of the input is the output
    ENCRYPT = "encrypt"  # the encryption of the input is the output (AEAD: ciphertext || tag)
    DECRYPT = "decrypt"  # the decryption of the output is the input
    REJECTS_BAD_TAG = "rejects a bad tag"  # a tampered tag raises AuthenticationError
    MAC = "mac"  # the MAC of the input under the vector's key is the output
    # the public-key and KDF kinds (pytest_qcrypto.checks.pkey_checks runs these)
    SIGNATURE = "signature"  # a vector's signature verifies (is made, when deterministic)
    REJECTS_BAD_SIGNATURE = "rejects a bad signature"  # a tampered signature does not verify
    AGREEMENT = "agreement"  # the shared secret of a vector's two keys
    KEM = "kem"  # a vector's keys and encapsulation from seeds (FIPS 203)
    PKE = "pke"  # a public-key encryption decrypts to its plaintext
    KDF = "kdf"  # the key derived from a vector's password and salt
    CROSS = "cross-plugin"  # another plugin verifies, decapsulates, agrees, decrypts

    __str__ = str.__str__
    __format__ = str.__format__


@dataclass(frozen=True)
class KindRules:
    """The rules of one :class:`Kind`, as data: everything the package asks of a kind.

    ``word`` names the kind in messages (``AEAD``); ``table_word`` is the word of the
    qcrypto table header (``Benchmark results for 'sha256' digest``, ``... 'aes-128-gcm'
    AEAD``, as ``qcrypto list`` groups them); ``option`` the word of the option that selects it (``--qcrypto-cipher``,
    ``--qcrypto-mac``; empty: no option, a callable).  ``directions`` are the ways it is
    measured, the first being the default.  ``operation`` is what one timed operation is
    (the unit of ``count``),
    ``size_means`` what the buffer size (bytes) counts.  ``keyed``: takes a key and an IV
    or nonce; ``nonce_per_operation``: each operation takes a fresh nonce from
    ``Workload.nonces`` (else the one ``Workload.iv``); ``tag``: the ciphertext carries a
    tag of ``Algorithm.tag_size`` bytes.  ``checks``: how its known answers are checked.
    ``sized``: a cell has a buffer size and its figure is a throughput (KiB/s); a kind
    that is not sized (public-key operations, KDFs) has cells with no size (``size`` 0),
    one per direction, figures in operations per second (:attr:`unit`).  ``declared``: the
    directions a plugin has only when it declares them (a signature's ``keygen``: only a plugin
    whose ``CryptoPlugin.generates_signature_keys`` is true gets that cell); every other
    direction is measured in every plugin.
    """

    kind: Kind
    word: str
    table_word: str
    option: str
    directions: tuple[Direction, ...]
    operation: str
    size_means: str
    keyed: bool
    nonce_per_operation: bool
    tag: bool
    checks: tuple[Check, ...]
    sized: bool = True
    declared: tuple[Direction, ...] = ()

    @property
    def unit(self) -> str:
        """The unit of its figures: ``KiB/s`` for the kinds with a buffer size, ``ops/s``
        for those without (:attr:`sized`)."""
        return "KiB/s" if self.sized else "ops/s"


#: Each kind's rules.
RULES: dict[Kind, KindRules] = {
    Kind.DIGEST: KindRules(
        Kind.DIGEST, "digest", "digest", "digest", (Direction.DIGEST,),
        operation=("hash one buffer from a fresh context and finalize "
                   "(what openssl speed times with its one-shot EVP_Digest)"),
        size_means="bytes hashed per operation", keyed=False, nonce_per_operation=False,
        tag=False, checks=(Check.DIGEST,)),
    Kind.CIPHER: KindRules(
        Kind.CIPHER, "cipher", "cipher", "cipher",
        (Direction.ENCRYPT, Direction.DECRYPT, Direction.ROUNDTRIP),
        operation=("encrypt (or decrypt) one buffer through one keyed context kept for the "
                   "whole measurement: a streaming update (what openssl speed does for CBC/CTR)"),
        size_means="bytes of plaintext (or ciphertext) per operation", keyed=True,
        nonce_per_operation=False, tag=False, checks=(Check.ENCRYPT, Check.DECRYPT)),
    Kind.AEAD: KindRules(
        Kind.AEAD, "AEAD", "AEAD", "cipher",
        (Direction.ENCRYPT, Direction.DECRYPT, Direction.ROUNDTRIP),
        operation=("one whole message with the key set up once: new nonce, encrypt, tag; "
                   "decrypt verifies the tag (openssl speed re-keys GCM per operation and "
                   "streams ChaCha20-Poly1305 without a tag)"),
        size_means="bytes of plaintext per message (the tag not counted)", keyed=True,
        nonce_per_operation=True, tag=True,
        checks=(Check.ENCRYPT, Check.DECRYPT, Check.REJECTS_BAD_TAG)),
    Kind.MAC: KindRules(
        Kind.MAC, "MAC", "MAC", "mac", (Direction.MAC,),
        operation=("MAC one buffer under a key set up once: a fresh keyed state per "
                   "operation, update, finalize (what openssl speed -mac does)"),
        size_means="bytes authenticated per operation", keyed=True,
        nonce_per_operation=False, tag=False, checks=(Check.MAC,)),
    Kind.SIGNATURE: KindRules(
        Kind.SIGNATURE, "signature", "signature", "pkey",
        (Direction.SIGN, Direction.VERIFY, Direction.KEYGEN),
        operation=("sign (or verify the signature of) one 32-byte message under a key pair "
                   "generated once: RSA and ECDSA sign it as a SHA-256 (P-384: SHA-384) digest "
                   "already computed, as openssl speed signs a digest; EdDSA and ML-DSA sign "
                   "the message itself (pure mode, empty context); keygen: one key pair, "
                   "ready to sign with (openssl speed 3.5's keygen/s; not RSA, and only in "
                   "plugins that declare it)"),
        size_means="no buffer size: one signature, verification or key pair per operation",
        keyed=True, nonce_per_operation=False, tag=False,
        checks=(Check.SIGNATURE, Check.REJECTS_BAD_SIGNATURE, Check.CROSS), sized=False,
        declared=(Direction.KEYGEN,)),
    Kind.KEX: KindRules(
        Kind.KEX, "key agreement", "key agreement", "pkey", (Direction.KEYGEN, Direction.DERIVE),
        operation=("keygen: one key pair; derive: one shared secret from the context's private "
                   "key and a peer's public key made once (what openssl speed's ecdh times)"),
        size_means="no buffer size: one key pair or one shared secret per operation",
        keyed=True, nonce_per_operation=False, tag=False,
        checks=(Check.AGREEMENT, Check.CROSS), sized=False),
    Kind.KEM: KindRules(
        Kind.KEM, "KEM", "KEM", "pkey", (Direction.KEYGEN, Direction.ENCAPS, Direction.DECAPS),
        operation=("keygen: one key pair; encaps: one ciphertext and shared secret to the "
                   "context's public key; decaps: one shared secret from a ciphertext made once"),
        size_means="no buffer size: one key pair, encapsulation or decapsulation per operation",
        keyed=True, nonce_per_operation=False, tag=False,
        checks=(Check.KEM, Check.CROSS), sized=False),
    Kind.PKE: KindRules(
        Kind.PKE, "public-key encryption", "public-key encryption", "pkey",
        (Direction.ENCRYPT, Direction.DECRYPT),
        operation=("encrypt one 32-byte message to the context's public key, or decrypt a "
                   "ciphertext made once (RSA-OAEP with SHA-256 and MGF1-SHA-256, no label)"),
        size_means="no buffer size: one encryption or decryption per operation",
        keyed=True, nonce_per_operation=False, tag=False,
        checks=(Check.PKE, Check.CROSS), sized=False),
    Kind.KDF: KindRules(
        Kind.KDF, "KDF", "KDF", "kdf", (Direction.DERIVE,),
        operation=("derive one key from a 16-byte password and a 16-byte salt with the "
                   "cell's parameters (its name holds them: pbkdf2-sha256-i600000)"),
        size_means="no buffer size: one derivation per operation",
        keyed=False, nonce_per_operation=False, tag=False,
        checks=(Check.KDF, Check.CROSS), sized=False),
    # your own code (pytest_qcrypto.measure.callables): named by the caller, in no catalog list,
    # chosen by no option (option ""), no known answers (an optional check of its own)
    Kind.CALLABLE: KindRules(
        Kind.CALLABLE, "callable", "callable", "", (Direction.CALL,),
        operation="one call of the user's callable on `size` bytes, as the caller declares",
        size_means="bytes the caller declares one call processes", keyed=False,
        nonce_per_operation=False, tag=False, checks=()),
}

#: Every kind, in catalog order.
KINDS: tuple[Kind, ...] = tuple(Kind)
#: Every direction.
DIRECTIONS: tuple[Direction, ...] = tuple(Direction)

#: The kinds each table word covers, in catalog order:
#: ``{"digest": (Kind.DIGEST,), "cipher": (Kind.CIPHER,), "AEAD": (Kind.AEAD,), ...}``.
TABLE_GROUPS: dict[str, tuple[Kind, ...]] = {}
#: The kinds each selection option word covers (``--qcrypto-mac``):
#: ``{"digest": (Kind.DIGEST,), "cipher": (Kind.CIPHER, Kind.AEAD), "mac": (Kind.MAC,)}``.
OPTION_GROUPS: dict[str, tuple[Kind, ...]] = {}
for _kind in KINDS:
    TABLE_GROUPS[_kind.rules.table_word] = TABLE_GROUPS.get(_kind.rules.table_word, ()) + (_kind,)
    if _kind.rules.option:  # callables are chosen by no option
        OPTION_GROUPS[_kind.rules.option] = OPTION_GROUPS.get(_kind.rules.option, ()) + (_kind,)

def group_word(kinds: tuple[str, ...]) -> str:
    """The table word of exactly these kinds, ``cipher`` for cipher and AEAD together (what
    ``--qcrypto-cipher`` selects), else ``algorithm``."""
    if tuple(kinds) == (Kind.CIPHER, Kind.AEAD):
        return "cipher"
    for word, group in TABLE_GROUPS.items():
        if tuple(kinds) == group:
            return word
    return "algorithm"


def kind_words(kinds: tuple[str, ...]) -> str:
    """``digest``, ``cipher or AEAD``, ``digest, cipher or AEAD``: the kinds in messages."""
    words = [Kind(k).rules.word for k in kinds]
    return " or ".join(words) if len(words) < 3 else f"{', '.join(words[:-1])} or {words[-1]}"


def plural(n: int, one: str, many: str | None = None) -> str:
    """``1 byte``, ``16 bytes``: a count and its noun (``many`` when not just ``one + "s"``)."""
    return f"{n} {one if n == 1 else many or one + 's'}"
