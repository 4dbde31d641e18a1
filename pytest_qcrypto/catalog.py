"""The algorithm catalog: every algorithm qcrypto can measure, as data.

Each :class:`Algorithm` carries its canonical OpenSSL-style name, its aliases,
its sizes (key, IV or nonce, tag, block) in bytes, and the conventions that
make every crypto plugin agree byte for byte:

* ChaCha20 (RFC 8439 section 2.4): the 16-byte IV is a 4-byte little-endian
  block counter followed by the 12-byte nonce, as OpenSSL lays it out.
* AES-XTS (IEEE 1619-2007): the key is two AES keys of equal length
  (32 or 64 bytes in all) whose halves must differ; the 16-byte IV is the tweak.
* GCM (NIST SP 800-38D) and ChaCha20-Poly1305 (RFC 8439 section 2.8): 12-byte
  nonce, 16-byte tag, appended to the ciphertext.

What one *operation* is (the unit of ``count`` in a Measurement) is fixed per
kind of algorithm, see :class:`KindRules`.  MACs and public-key algorithms will
be further kinds; the lookup functions here do not assume only three.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from enum import Enum

class Kind(str, Enum):
    """A kind of algorithm.  A ``str``, so ``Kind.DIGEST == "digest"`` and saved files keep
    their plain words; its rules (:class:`KindRules`) are :attr:`rules`."""

    DIGEST = "digest"
    CIPHER = "cipher"
    AEAD = "aead"
    MAC = "mac"
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
    cryptotest times them: it counts as two operations)."""

    DIGEST = "digest"
    ENCRYPT = "encrypt"
    DECRYPT = "decrypt"
    MAC = "mac"
    ROUNDTRIP = "roundtrip"
    CALL = "call"

    __str__ = str.__str__
    __format__ = str.__format__

    @property
    def verb(self) -> str:
        """The noun of qcrypto's verbose lines: ``digests``, ``encryptions``, ``decryptions``."""
        return _VERBS[self]


_VERBS = {Direction.DIGEST: "digests", Direction.ENCRYPT: "encryptions",
          Direction.DECRYPT: "decryptions", Direction.MAC: "MACs",
          Direction.ROUNDTRIP: "round trips", Direction.CALL: "calls"}
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

    __str__ = str.__str__
    __format__ = str.__format__


@dataclass(frozen=True)
class KindRules:
    """The rules of one :class:`Kind`, as data: everything the package asks of a kind.

    ``word`` names the kind in messages (``AEAD``); ``table_word`` is the word of the
    qcrypto table header (``Benchmark results for 'sha256' digest``: AEADs are ciphers
    there); ``option`` the word of the option that selects it (``--qcrypto-cipher``,
    ``--qcrypto-mac``; empty: no option, a callable).  ``directions`` are the ways it is
    measured, the first being the default.  ``operation`` is what one timed operation is
    (the unit of ``count``),
    ``size_means`` what the buffer size (bytes) counts.  ``keyed``: takes a key and an IV
    or nonce; ``nonce_per_operation``: each operation takes a fresh nonce from
    ``Workload.nonces`` (else the one ``Workload.iv``); ``tag``: the ciphertext carries a
    tag of ``Algorithm.tag_size`` bytes.  ``checks``: how its known answers are checked.
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
        Kind.AEAD, "AEAD", "cipher", "cipher",
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
    # your own code (pytest_qcrypto.callables): named by the caller, in no catalog list,
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
#: ``{"digest": (Kind.DIGEST,), "cipher": (Kind.CIPHER, Kind.AEAD), "MAC": (Kind.MAC,)}``.
TABLE_GROUPS: dict[str, tuple[Kind, ...]] = {}
#: The kinds each selection option word covers (``--qcrypto-mac``):
#: ``{"digest": (Kind.DIGEST,), "cipher": (Kind.CIPHER, Kind.AEAD), "mac": (Kind.MAC,)}``.
OPTION_GROUPS: dict[str, tuple[Kind, ...]] = {}
for _kind in KINDS:
    TABLE_GROUPS[_kind.rules.table_word] = TABLE_GROUPS.get(_kind.rules.table_word, ()) + (_kind,)
    if _kind.rules.option:  # callables are chosen by no option
        OPTION_GROUPS[_kind.rules.option] = OPTION_GROUPS.get(_kind.rules.option, ()) + (_kind,)

# Old names, kept for callers not yet moved to the enums.
DIGEST = Kind.DIGEST
CIPHER = Kind.CIPHER
AEAD = Kind.AEAD
MAC = Kind.MAC
#: What one timed operation is, per kind (``RULES[kind].operation``).
OPERATION = {kind: kind.rules.operation for kind in KINDS}


def group_word(kinds: tuple[str, ...]) -> str:
    """The table word of exactly these kinds (``cipher`` for cipher and AEAD), else ``algorithm``."""
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


@dataclass(frozen=True)
class Algorithm:
    """One algorithm of the catalog.

    Sizes are in bytes.  ``block_size`` is the cipher's block; ``granularity``
    is what a buffer size must be a multiple of (16 for CBC/ECB/XTS data, 1 for
    CTR, GCM and ChaCha20); ``min_size`` is the smallest buffer the mode takes
    (16 for XTS).  For digests ``digest_size`` is the output length and
    ``block_size`` the compression block.  For MACs ``tag_size`` is the
    length of the MAC (not appended to anything: :attr:`has_tag` is for AEADs),
    ``key_size`` the benchmark's key (an HMAC takes a key of any length; the
    digest's output length, as RFC 2104 recommends), ``block_size`` that of the
    underlying digest or cipher, ``family`` the underlying digest (``sha256``) or
    cipher (``aes``).
    """

    name: str
    kind: Kind
    aliases: tuple[str, ...] = ()
    digest_size: int = 0
    block_size: int = 1
    key_size: int = 0
    iv_size: int = 0
    tag_size: int = 0
    mode: str = ""
    granularity: int = 1
    min_size: int = 1
    family: str = ""
    notes: str = field(default="", compare=False)

    @property
    def rules(self) -> KindRules:
        """The rules of this algorithm's kind."""
        return RULES[self.kind]

    @property
    def operation(self) -> str:
        """What one operation of this algorithm is (:attr:`KindRules.operation`)."""
        return self.rules.operation

    @property
    def table_kind(self) -> str:
        """The word the qcrypto table uses: ``digest`` or ``cipher`` (AEADs are ciphers)."""
        return self.rules.table_word

    @property
    def word(self) -> str:
        """The kind in messages: ``digest``, ``cipher`` or ``AEAD``."""
        return self.rules.word

    @property
    def directions(self) -> tuple[Direction, ...]:
        """The directions it is measured in; the first is the default."""
        return self.rules.directions

    def direction(self, decrypt: bool = False, roundtrip: bool = False) -> Direction:
        """``roundtrip`` or ``decrypt`` when asked and the kind has it (a round trip before a
        decryption), else the kind's default direction (``digest`` for digests, ``encrypt``
        for ciphers and AEADs, ``mac`` for MACs)."""
        if roundtrip and self.can_roundtrip:
            return Direction.ROUNDTRIP
        if decrypt and self.can_decrypt:
            return Direction.DECRYPT
        return self.directions[0]

    @property
    def can_roundtrip(self) -> bool:
        """Whether it has a round-trip direction (ciphers and AEADs)."""
        return Direction.ROUNDTRIP in self.directions

    @property
    def can_decrypt(self) -> bool:
        """Whether it has a decrypt direction (ciphers and AEADs)."""
        return Direction.DECRYPT in self.directions

    @property
    def keyed(self) -> bool:
        """Whether it takes a key (and an IV or nonce)."""
        return self.rules.keyed

    @property
    def has_tag(self) -> bool:
        """Whether its ciphertext carries a tag (AEADs): ``tag_size`` bytes, appended."""
        return self.rules.tag

    def is_of(self, kinds: tuple[str, ...]) -> bool:
        """Whether its kind is one of ``kinds``."""
        return self.kind in kinds

    def size_problem(self, size: int) -> str | None:
        """Why ``size`` (bytes) is not a valid buffer for this algorithm, or None."""
        if size < self.min_size:
            return (f"{self.name} needs a buffer of at least {plural(self.min_size, 'byte')}, "
                    f"not {size}")
        if size % self.granularity:
            return (
                f"{self.name} is a {self.block_size * 8}-bit block cipher in {self.mode.upper()} mode "
                f"without padding: the buffer size must be a multiple of its {self.granularity}-byte "
                f"block, not {size}"
            )
        return None


def _digest(name: str, size: int, block: int, *aliases: str) -> Algorithm:
    return Algorithm(name, DIGEST, aliases, digest_size=size, block_size=block)


def _hmac(digest: str, size: int, block: int) -> Algorithm:
    """HMAC (RFC 2104) over a catalog digest: key of the digest's length, tag as long as it."""
    return Algorithm(f"hmac-{digest}", MAC, (f"hmac({digest})", f"{digest}-hmac"),
                     block_size=block, key_size=size, tag_size=size, family=digest)


def _cbc64(name: str, key: int, family: str, *aliases: str) -> Algorithm:
    """A 64-bit block cipher in CBC mode (8-byte block and IV), as FreeBSD cryptotest has them."""
    return Algorithm(name, CIPHER, aliases, block_size=8, key_size=key, iv_size=8, mode="cbc",
                     granularity=8, family=family)


def _aes(bits: int, mode: str) -> Algorithm:
    key = bits // 8
    if mode == "xts":
        # IEEE 1619: two AES keys; aes-128-xts takes 32 bytes, aes-256-xts 64.
        return Algorithm(f"aes-{bits}-xts", CIPHER, (f"xts-aes-{bits}",),
                         block_size=16, key_size=2 * key, iv_size=16, mode="xts",
                         granularity=1, min_size=16, family="aes")
    if mode == "gcm":
        return Algorithm(f"aes-{bits}-gcm", AEAD, (f"id-aes{bits}-gcm",),
                         block_size=16, key_size=key, iv_size=12, tag_size=16, mode="gcm",
                         family="aes")
    iv = 0 if mode == "ecb" else 16
    gran = 16 if mode in ("cbc", "ecb") else 1
    aliases = (f"aes{bits}",) if mode == "cbc" else ()  # OpenSSL: aes128 = aes-128-cbc
    return Algorithm(f"aes-{bits}-{mode}", CIPHER, aliases, block_size=16, key_size=key, iv_size=iv, mode=mode, granularity=gran,
                     family="aes")


#: Every algorithm, canonical name first.  Sources of the parameters:
#: FIPS 180-4 (SHA-1, SHA-2), FIPS 202 (SHA-3), RFC 1321 (MD5), RFC 7693 (BLAKE2),
#: GB/T 32905-2016 (SM3), FIPS 197 + SP 800-38A (AES modes), SP 800-38D (GCM),
#: IEEE 1619-2007 (XTS), RFC 8439 (ChaCha20, Poly1305), SP 800-67 (TDEA),
#: FIPS 46-3 (DES), Schneier 1993 (Blowfish), RFC 2144 (CAST-128), RFC 2104 (HMAC),
#: SP 800-38B (CMAC).  Blowfish and CAST5 use OpenSSL's default 16-byte key (FreeBSD
#: cryptotest uses 30 and 10 bytes; a CAST5 key of 10 bytes or less runs 12 rounds, not 16).
ALGORITHMS: tuple[Algorithm, ...] = (
    _digest("md5", 16, 64),
    _digest("sha1", 20, 64, "sha-1"),
    _digest("sha224", 28, 64, "sha-224", "sha2-224"),
    _digest("sha256", 32, 64, "sha-256", "sha2-256"),
    _digest("sha384", 48, 128, "sha-384", "sha2-384"),
    _digest("sha512", 64, 128, "sha-512", "sha2-512"),
    _digest("sha512-224", 28, 128, "sha-512/224", "sha512/224", "sha2-512/224"),
    _digest("sha512-256", 32, 128, "sha-512/256", "sha512/256", "sha2-512/256"),
    _digest("sha3-224", 28, 144),
    _digest("sha3-256", 32, 136),
    _digest("sha3-384", 48, 104),
    _digest("sha3-512", 64, 72),
    _digest("blake2b512", 64, 128, "blake2b", "blake2b-512"),
    _digest("blake2s256", 32, 64, "blake2s", "blake2s-256"),
    _digest("sm3", 32, 64),
    _aes(128, "cbc"), _aes(192, "cbc"), _aes(256, "cbc"),
    _aes(128, "ctr"), _aes(192, "ctr"), _aes(256, "ctr"),
    _aes(128, "ecb"), _aes(256, "ecb"),
    _aes(128, "gcm"), _aes(256, "gcm"),
    _aes(128, "xts"), _aes(256, "xts"),
    Algorithm("chacha20", CIPHER, ("chacha",), block_size=64, key_size=32, iv_size=16,
              mode="stream", family="chacha20"),
    Algorithm("chacha20-poly1305", AEAD, ("chachapoly", "chacha20poly1305"), block_size=64,
              key_size=32, iv_size=12, tag_size=16, mode="aead", family="chacha20"),
    Algorithm("des-ede3-cbc", CIPHER, ("3des", "3des-cbc", "des3", "tdes", "tdea", "triple-des"),
              block_size=8, key_size=24, iv_size=8, mode="cbc", granularity=8, family="des"),
    _cbc64("des-cbc", 8, "des", "des"),
    _cbc64("bf-cbc", 16, "blowfish", "bf", "blowfish", "blowfish-cbc"),
    _cbc64("cast5-cbc", 16, "cast5", "cast", "cast5", "cast-cbc", "cast128-cbc"),
    _hmac("md5", 16, 64), _hmac("sha1", 20, 64), _hmac("sha256", 32, 64),
    _hmac("sha384", 48, 128), _hmac("sha512", 64, 128),
    Algorithm("cmac-aes-128", MAC, ("cmac(aes)", "aes-128-cmac", "cmac-aes128", "aes-cmac"),
              block_size=16, key_size=16, tag_size=16, family="aes"),
    Algorithm("poly1305", MAC, (), block_size=16, key_size=32, tag_size=16, family="poly1305",
              notes="RFC 8439 section 2.5: a one-time key; a benchmark reuses one key"),
)

def _compact(name: str) -> str:
    """The lookup key of a name: lower case without separators (``SHA_256`` -> ``sha256``)."""
    return re.sub(r"[-_/\s]+", "", name.strip().lower())


_BY_NAME: dict[str, Algorithm] = {}
for _alg in ALGORITHMS:
    for _n in (_alg.name, *_alg.aliases):
        _BY_NAME[_compact(_n)] = _alg


def lookup(name: str) -> Algorithm | None:
    """The algorithm called ``name`` (canonical name or alias, any case or separator), or None."""
    return _BY_NAME.get(_compact(name))


def algorithms(kinds: tuple[str, ...] | None = None) -> tuple[Algorithm, ...]:
    """The algorithms of ``kinds`` (all if None), in catalog order."""
    return tuple(a for a in ALGORITHMS if kinds is None or a.kind in kinds)


def names(kind: str | None = None) -> list[str]:
    """Canonical names, in catalog order; only one kind (``digest``, ``cipher``, ``aead``) if given."""
    return [a.name for a in ALGORITHMS if kind is None or a.kind == kind]


def suggest(name: str, kinds: tuple[str, ...]) -> list[str]:
    """Up to three canonical names of the given kinds closest to ``name``."""
    pool = {n: a.name for n, a in _BY_NAME.items() if a.kind in kinds}
    close = difflib.get_close_matches(_compact(name), list(pool), n=6, cutoff=0.5)
    out: list[str] = []
    for n in close:
        if pool[n] not in out:
            out.append(pool[n])
    return out[:3]
