"""FreeBSD cryptotest's algorithm table and its rules for sizes, as data.

Source: FreeBSD ``tools/tools/crypto/cryptotest.c`` (its ``algorithms[]``
table, ``main()`` and ``runtest()``).  Each :class:`Name` is one row of that
table: cryptotest's ``-a`` name, the catalog algorithm it is here, the block
size a buffer must be a multiple of (bytes), and the key length cryptotest
uses (bytes; ``(min + max) / 2`` of its table).  The HMACs are cryptotest's
hashes (``md5`` is HMAC-MD5), with a block size of 8 as in its table.

Rules kept from cryptotest (:func:`sizes_of`): without sizes, the algorithm's
block size (8 when no ``-a``); with ``-z``, doubled from there up to
:data:`Z_MAX` (8192); at most :data:`MAX_SIZES` sizes; a size that is not a
multiple of an algorithm's block size is skipped for that algorithm
(:func:`skip_line`, printed only with ``-v``).  Nothing here imports pytest.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_qcrypto.algorithms import catalog
from pytest_qcrypto.algorithms.catalog import Algorithm


@dataclass(frozen=True)
class Name:
    """One algorithm as cryptotest names it.

    ``name`` is its ``-a`` name and the name in its result line; ``algorithm``
    the catalog name ("" when the catalog has no such algorithm: skipjack);
    ``block_size`` in bytes (buffer sizes must be a multiple of it);
    ``key_size`` the key length cryptotest uses, in bytes (ours is the
    catalog's ``key_size``: they differ for blf and cast, see :data:`NAMES`).
    """

    name: str
    algorithm: str
    block_size: int
    key_size: int

    @property
    def entry(self) -> Algorithm | None:
        """The catalog algorithm, or None (skipjack)."""
        return catalog.lookup(self.algorithm) if self.algorithm else None


#: cryptotest's table, in its order (the order of ``-z``).  Key lengths are cryptotest's:
#: blf 30 and cast 10 bytes, where this package uses OpenSSL's default 16 for both (a
#: CAST5 key of 10 bytes or less runs 12 rounds, not 16).  ``null`` is left out (it is not
#: a cipher); skipjack has no catalog entry, so ``-z`` skips it and ``-a skj`` is refused.
NAMES: tuple[Name, ...] = (
    Name("des", "des-cbc", 8, 8),
    Name("3des", "des-ede3-cbc", 8, 24),
    Name("blf", "bf-cbc", 8, 30),
    Name("cast", "cast5-cbc", 8, 10),
    Name("skj", "", 8, 10),
    Name("aes", "aes-128-cbc", 16, 16),
    Name("aes192", "aes-192-cbc", 16, 24),
    Name("aes256", "aes-256-cbc", 16, 32),
    Name("md5", "hmac-md5", 8, 16),
    Name("sha1", "hmac-sha1", 8, 20),
    Name("sha256", "hmac-sha256", 8, 32),
    Name("sha384", "hmac-sha384", 8, 48),
    Name("sha512", "hmac-sha512", 8, 64),
)
#: Other spellings cryptotest takes for ``-a`` (compared case-insensitively, as it does).
ALIASES = {"rijndael": "aes"}
#: The algorithm without ``-a`` or ``-z``.
DEFAULT = "3des"
#: The first size without ``-a`` (cryptotest: 8).
DEFAULT_SIZE = 8
#: ``-z`` doubles the first size up to this many bytes.
Z_MAX = 8192
#: cryptotest keeps at most this many sizes; each one past it is ignored with a line.
MAX_SIZES = 128

_BY_NAME = {n.name: n for n in NAMES}
_BY_ALGORITHM = {n.algorithm: n for n in NAMES if n.algorithm}


def lookup(text: str) -> Name | None:
    """cryptotest's name (any case, ``rijndael`` too), else a catalog name or alias as a
    :class:`Name` of its own (block size = the catalog's granularity); None if neither."""
    key = text.strip().lower()
    key = ALIASES.get(key, key)
    if key in _BY_NAME:
        return _BY_NAME[key]
    alg = catalog.lookup(text)
    if alg is None:
        return None
    return _BY_ALGORITHM.get(alg.name) or Name(alg.name, alg.name, alg.granularity, alg.key_size)


def display_name(algorithm: str) -> str:
    """The name of a catalog algorithm in cryptotest's line: its cryptotest name where it
    has one (``des-ede3-cbc`` -> ``3des``), else the catalog name."""
    found = _BY_ALGORITHM.get(algorithm)
    return found.name if found is not None else algorithm


def order(algorithm: str) -> int:
    """Where a catalog algorithm stands in cryptotest's order (``len(NAMES)`` when not there)."""
    for i, n in enumerate(NAMES):
        if n.algorithm == algorithm:
            return i
    return len(NAMES)


def valid_names() -> str:
    """``des, 3des, blf, cast, aes (rijndael), ...`` for messages: the names measured here
    (not skj)."""
    aliases = {v: k for k, v in ALIASES.items()}
    return ", ".join(f"{n.name} ({aliases[n.name]})" if n.name in aliases else n.name
                     for n in NAMES if n.algorithm)


def sizes_of(first: int, z: bool) -> tuple[int, ...]:
    """cryptotest's sizes when none are given: ``first``, and with ``-z`` doubled while
    under :data:`Z_MAX` (8 -> 8, 16, ..., 8192; 16 -> 16, ..., 8192)."""
    sizes = [first]
    while z and sizes[-1] < Z_MAX:
        sizes.append(sizes[-1] * 2)
    return tuple(sizes)


def size_problem(name: Name, size: int) -> str | None:
    """Why cryptotest skips ``size`` (bytes) for ``name``, or None: not a multiple of its
    block size (cryptotest's own words, :func:`skip_line`), or below the catalog
    algorithm's smallest buffer (AES-XTS: 16 bytes)."""
    if size % name.block_size:
        return skip_line(name, size)
    entry = name.entry
    if entry is not None and size < entry.min_size:
        return f"skipping blocksize {size}: {entry.size_problem(size)}"
    return None


def skip_line(name: Name, size: int) -> str:
    """cryptotest's ``-v`` line for a skipped size (its spelling: ``'cuz``)."""
    return (f"skipping blocksize {size} 'cuz not a multiple of {name.name} blocksize "
            f"{name.block_size}")
