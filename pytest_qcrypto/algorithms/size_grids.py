"""Named buffer-size grids: ``--qcrypto-size=openssl`` instead of a hand-typed list.

Each :class:`Grid` is the sizes (bytes) another tool measures at, with where they come from:

* ``qnx``: qcrypto's own default (QNX ``qcrypto speed``), 16 to 32768 bytes.
* ``openssl``: ``openssl speed``'s default ``lengths_list`` (apps/speed.c): 16, 64, 256,
  1024, 8192 and 16384 bytes.
* ``tls``: ``openssl speed -aead``'s ``aead_lengths_list`` (apps/speed.c, OpenSSL 3.0 on):
  2, 31, 136, 1024, 8192 and 16384 bytes, TLS-record-like.  As there, every AEAD then
  authenticates a 13-byte AAD beside each record (``EVP_AEAD_TLS1_AAD_LEN``, the TLS 1.2
  record header: sequence number, type, version, length); other kinds take no AAD.
* ``supercop``: the lengths SUPERCOP's ``crypto_hash/measure.c`` (and the other
  ``measure.c`` files of its message-taking primitives) walks when built on its own,
  ``for (mlen = 0; mlen <= 4096; mlen += 1 + mlen / 8)``: every length to 8, then steps of
  about 1/8, 56 sizes from 1 to 3799 (0 is left out: qcrypto's sizes start at 1 byte).
  Inside a full SUPERCOP run ``MGAP`` is 8192, every length from 0 to 4096; eBASH's tables
  then quote 8, 64, 576, 1536 and 4096 bytes of those.

A named grid may be given alone or among sizes (``--qcrypto-size=openssl,4096``).  With a
named grid, a size that an algorithm cannot take (2 bytes of AES-CBC) is a skipped cell with
the reason, as ``openssl speed`` leaves it out, not a usage error.  Pure data: imports nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


def _supercop_lengths(top: int = 4096, gap: int = 8) -> tuple[int, ...]:
    """SUPERCOP ``measure.c``'s ``mlen += 1 + mlen / MGAP`` from 0 to ``top``, without 0."""
    lengths, mlen = [], 0
    while mlen <= top:
        lengths.append(mlen)
        mlen += 1 + mlen // gap
    return tuple(n for n in lengths if n > 0)


@dataclass(frozen=True)
class Grid:
    """A named grid: ``sizes`` in bytes (ascending), ``aad`` the AAD bytes every AEAD
    authenticates beside each buffer (0: none), ``source`` where the sizes come from."""

    name: str
    sizes: tuple[int, ...]
    source: str
    aad: int = 0


#: The AAD of a TLS 1.2 record (``EVP_AEAD_TLS1_AAD_LEN`` of OpenSSL's evp.h): 13 bytes.
TLS_AAD = 13

#: Every named grid, by name (the order of the help text).
GRIDS: dict[str, Grid] = {g.name: g for g in (
    Grid("qnx", (16, 64, 256, 1024, 4096, 8192, 32768), "QNX qcrypto speed (the default)"),
    Grid("openssl", (16, 64, 256, 1024, 8192, 16384), "openssl speed (apps/speed.c lengths_list)"),
    Grid("tls", (2, 31, 136, 1024, 8192, 16384),
         "openssl speed -aead (apps/speed.c aead_lengths_list), AEADs with a 13-byte AAD",
         aad=TLS_AAD),
    Grid("supercop", _supercop_lengths(),
         "SUPERCOP crypto_hash/measure.c: mlen += 1 + mlen / 8 up to 4096"),
)}


def tokens(values: Iterable[object] | None) -> list[str]:
    """The comma-separated elements of ``values``, stripped, lower case."""
    return [part.strip().lower() for v in values or () for part in str(v).split(",")
            if part.strip()]


def named(values: Iterable[object] | None) -> list[Grid]:
    """The grids named among ``values`` (``["openssl,4096"]`` -> the openssl grid)."""
    return [GRIDS[t] for t in dict.fromkeys(tokens(values)) if t in GRIDS]


def expanded(values: Iterable[object] | None) -> list[str]:
    """``values`` with every grid name replaced by its sizes (other elements as given,
    so that the size parser names a bad one)."""
    out: list[str] = []
    for value in values or ():
        parts = [p.strip() for p in str(value).split(",")]
        out.append(",".join(",".join(map(str, GRIDS[p.lower()].sizes)) if p.lower() in GRIDS
                            else p for p in parts))
    return out


def aad_of(values: Iterable[object] | None) -> int:
    """The AAD bytes AEADs take under the grids named in ``values`` (13 with ``tls``, else 0)."""
    return max((g.aad for g in named(values)), default=0)


def choices() -> str:
    """``qnx, openssl, tls or supercop`` for help texts and messages."""
    names = list(GRIDS)
    return f"{', '.join(names[:-1])} or {names[-1]}"
