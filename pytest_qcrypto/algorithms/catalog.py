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

from pytest_qcrypto.algorithms import kdf_names
from pytest_qcrypto.algorithms.kdf_names import KDF_OUTPUT, KDF_PARAMETERS, kdf_name, kdf_problem  # noqa: F401
from pytest_qcrypto.algorithms.kinds import (  # noqa: F401  (re-exported: the catalog's public names)
    DIRECTIONS,
    KINDS,
    OPERATIONS_PER_ITERATION,
    OPTION_GROUPS,
    ROUNDTRIP_OPERATION,
    RULES,
    TABLE_GROUPS,
    Check,
    Direction,
    Kind,
    KindRules,
    group_word,
    kind_words,
    plural,
)

# Old names, kept for callers not yet moved to the enums.
DIGEST = Kind.DIGEST
CIPHER = Kind.CIPHER
AEAD = Kind.AEAD
MAC = Kind.MAC
SIGNATURE, KEX, KEM, PKE, KDF = Kind.SIGNATURE, Kind.KEX, Kind.KEM, Kind.PKE, Kind.KDF
#: What one timed operation is, per kind (``RULES[kind].operation``).
OPERATION = {kind: kind.rules.operation for kind in KINDS}



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

    Public-key algorithms (signatures, key agreements, KEMs, RSA encryption) have no
    buffer size: ``family`` is the scheme (``rsa``, ``ecdsa``, ``eddsa``, ``ml-dsa``,
    ``ecdh``, ``xdh``, ``ml-kem``), ``bits`` the RSA modulus or the curve's field size,
    ``curve`` the curve (``secp256r1``, ``ed25519``) or parameter set (``ML-KEM-768``),
    ``hash`` the digest the scheme uses (``sha256``; empty for EdDSA and ML-DSA, which
    hash inside), ``mode`` the RSA padding (``pss``, ``pkcs1v15``, ``oaep``).  KDFs:
    ``family`` is the KDF (``pbkdf2-sha256``, ``scrypt``, ``argon2id``, ``bcrypt``,
    ``hkdf-sha256``), ``params`` its parameters as ``(letter, value)`` pairs in the
    order of :data:`KDF_PARAMETERS` (they are part of the name:
    ``scrypt-n16384-r8-p1``), ``digest_size`` the length of the derived key.
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
    bits: int = 0
    curve: str = ""
    hash: str = ""
    params: tuple[tuple[str, int], ...] = ()
    notes: str = field(default="", compare=False)

    def param(self, letter: str) -> int:
        """The value of a KDF parameter by its letter (``scrypt``'s ``"n"``); KeyError if none."""
        return dict(self.params)[letter]

    @property
    def params_text(self) -> str:
        """The parameters in words, ``N=16384, r=8, p=1`` (empty when it has none)."""
        words = {p.letter: p.word for p in KDF_PARAMETERS.get(self.family, ())}
        return ", ".join(f"{words.get(k, k)}={v}" for k, v in self.params)

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
        """The directions it can be measured in; the first is the default.  RSA signatures
        leave out ``keygen``: an RSA key is a search for two primes, up to seconds at 4096
        bits and varying widely from one key to the next, not a rate to time in rounds."""
        if self.family == "rsa":
            return tuple(d for d in self.rules.directions if d != Direction.KEYGEN)
        return self.rules.directions

    def directions_in(self, declares: bool) -> tuple[Direction, ...]:
        """The directions measured in one plugin: :attr:`directions` without the kind's
        ``declared`` ones (a signature's ``keygen``) unless the plugin ``declares`` them
        (``CryptoPlugin.generates_signature_keys``)."""
        return tuple(d for d in self.directions if declares or d not in self.rules.declared)

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


def _rsa(bits: int, padding: str) -> Algorithm:
    """RSA with a ``bits``-bit modulus and exponent 65537: PSS (salt as long as the SHA-256
    digest), PKCS#1 v1.5 signatures, or OAEP encryption (SHA-256, MGF1-SHA-256, no label)."""
    suffix = {"pss": "", "pkcs1v15": "-pkcs1", "oaep": "-oaep"}[padding]
    kind = PKE if padding == "oaep" else SIGNATURE
    aliases = (f"rsa{bits}-pss", f"rsa-{bits}") if padding == "pss" else (f"rsa-{bits}{suffix}",)
    return Algorithm(f"rsa{bits}{suffix}", kind, aliases, family="rsa", bits=bits,
                     hash="sha256", mode=padding)


def _ml(scheme: str, level: int, kind: Kind) -> Algorithm:
    """ML-KEM (FIPS 203) or ML-DSA (FIPS 204) at one parameter set."""
    name = f"ml-{scheme}-{level}"
    return Algorithm(name, kind, (f"ml{scheme}{level}",), family=f"ml-{scheme}",
                     curve=name.upper())


def _kdf(family: str, params: tuple[tuple[str, int], ...] | None = None) -> Algorithm:
    """The KDF ``family`` with ``params`` (its defaults when None); the default one is also
    called by the bare family name (``scrypt``)."""
    spec = KDF_PARAMETERS[family]
    values = params if params is not None else tuple((p.letter, p.default) for p in spec)
    output = 23 if family == "bcrypt" else KDF_OUTPUT
    aliases = (family,) if params is None and spec else ()
    return Algorithm(kdf_name(family, values), KDF, aliases, digest_size=output,
                     family=family, hash="sha256" if family.endswith("sha256") else "",
                     params=values)


def _parameterized(name: str) -> Algorithm | None:
    """A KDF with parameters other than its defaults, from its name (missing trailing
    parameters take their defaults); None when the name is not one or is invalid."""
    parsed = kdf_names.parse(name)
    return _kdf(*parsed) if parsed is not None else None


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
    # Public-key algorithms: RFC 8017 (RSA, PSS, OAEP, PKCS#1 v1.5), FIPS 186-5 (ECDSA,
    # P-256, P-384), RFC 8032 (Ed25519, Ed448), RFC 7748 (X25519, X448), SP 800-56A (ECDH),
    # FIPS 203 (ML-KEM), FIPS 204 (ML-DSA).
    _rsa(2048, "pss"), _rsa(3072, "pss"), _rsa(4096, "pss"), _rsa(2048, "pkcs1v15"),
    Algorithm("ecdsa-p256", SIGNATURE, ("ecdsa-secp256r1", "ecdsa-prime256v1", "ecdsap256"),
              family="ecdsa", bits=256, curve="secp256r1", hash="sha256"),
    Algorithm("ecdsa-p384", SIGNATURE, ("ecdsa-secp384r1", "ecdsap384"),
              family="ecdsa", bits=384, curve="secp384r1", hash="sha384"),
    Algorithm("ed25519", SIGNATURE, (), family="eddsa", bits=255, curve="ed25519"),
    Algorithm("ed448", SIGNATURE, (), family="eddsa", bits=448, curve="ed448"),
    _ml("dsa", 44, SIGNATURE), _ml("dsa", 65, SIGNATURE), _ml("dsa", 87, SIGNATURE),
    Algorithm("x25519", KEX, (), family="xdh", bits=255, curve="x25519"),
    Algorithm("x448", KEX, (), family="xdh", bits=448, curve="x448"),
    Algorithm("ecdh-p256", KEX, ("ecdh-secp256r1", "ecdh-prime256v1", "ecdhp256"),
              family="ecdh", bits=256, curve="secp256r1"),
    _ml("kem", 512, KEM), _ml("kem", 768, KEM), _ml("kem", 1024, KEM),
    _rsa(2048, "oaep"),
    # KDFs and password hashes: RFC 8018 (PBKDF2), RFC 7914 (scrypt), RFC 9106 (Argon2id,
    # its second recommended parameters), Provos and Mazieres 1999 (bcrypt), RFC 5869 (HKDF).
    *(_kdf(family) for family in KDF_PARAMETERS),
)

def _compact(name: str) -> str:
    """The lookup key of a name: lower case without separators (``SHA_256`` -> ``sha256``)."""
    return re.sub(r"[-_/\s]+", "", name.strip().lower())


_BY_NAME: dict[str, Algorithm] = {}
for _alg in ALGORITHMS:
    for _n in (_alg.name, *_alg.aliases):
        _BY_NAME[_compact(_n)] = _alg


def lookup(name: str) -> Algorithm | None:
    """The algorithm called ``name`` (canonical name or alias, any case or separator), or None.

    A KDF may carry parameters other than its defaults in its name (``scrypt-n1024-r8-p1``,
    ``pbkdf2-sha256-i1000``; :data:`KDF_PARAMETERS`); :func:`kdf_problem` says what is
    wrong with one that does not parse."""
    return _BY_NAME.get(_compact(name)) or _parameterized(name)


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
