"""KDF cells' names: each KDF's parameters, their defaults and limits, and the names that
carry them (``scrypt-n16384-r8-p1``).  :mod:`pytest_qcrypto.algorithms.catalog` re-exports the
public names; its KDF entries are built from :data:`KDF_PARAMETERS`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class KdfParameter:
    """One parameter of a KDF: its letter in a cell's name, its word, its default and the
    range it may take (inclusive)."""

    letter: str
    word: str
    default: int
    low: int
    high: int


#: The parameters of each KDF, in the order they follow its name (``scrypt-n16384-r8-p1``),
#: with their defaults: PBKDF2-HMAC-SHA256 600000 iterations (OWASP's password storage
#: advice), scrypt N=2^14 r=8 p=1 (RFC 7914's interactive-login figure), Argon2id with
#: RFC 9106's second recommended set (64 MiB, 3 passes, 4 lanes), bcrypt cost 12; HKDF
#: (RFC 5869, SHA-256) has none.  The limits keep one derivation under 16 GiB of memory
#: (what it may take here is checked before it runs: :mod:`pytest_qcrypto.measure.memory`)
#: and Argon2id's passes over its memory under :data:`MAX_ARGON2_PASSES_KIB`.
KDF_PARAMETERS: dict[str, tuple[KdfParameter, ...]] = {
    "pbkdf2-sha256": (KdfParameter("i", "iterations", 600_000, 1, 100_000_000),),
    "scrypt": (KdfParameter("n", "N", 16_384, 2, 2**22), KdfParameter("r", "r", 8, 1, 32),
               KdfParameter("p", "p", 1, 1, 16)),
    "argon2id": (KdfParameter("m", "memory KiB", 65_536, 8, 2**22),
                 KdfParameter("t", "passes", 3, 1, 100),
                 KdfParameter("p", "lanes", 4, 1, 64)),
    "bcrypt": (KdfParameter("c", "cost", 12, 4, 20),),
    "hkdf-sha256": (),
}
#: Argon2id's memory (KiB) x passes at most: 16 GiB of memory passed over (2^22 KiB 4 times,
#: RFC 9106's first recommended set 2^21 KiB once), so that one derivation takes seconds.
MAX_ARGON2_PASSES_KIB = 2**24
#: The length of every KDF's derived key, bytes (bcrypt's is its 23-byte hash, fixed).
KDF_OUTPUT = 32


def kdf_name(family: str, params: tuple[tuple[str, int], ...]) -> str:
    """``scrypt-n16384-r8-p1``: a KDF cell's name, its parameters in it."""
    return family + "".join(f"-{letter}{value}" for letter, value in params)


_PARAMETERIZED = re.compile(r"^(?P<family>[a-z0-9-]+?)(?P<params>(?:-[a-z][0-9]+)+)$")


def kdf_problem(name: str) -> str | None:
    """Why ``name`` is not a KDF with valid parameters (``scrypt-n1000``: N must be a power of
    two), or None when it is one, or is no KDF name at all."""
    found = _PARAMETERIZED.match(name.strip().lower())
    if found is None or found["family"] not in KDF_PARAMETERS:
        return None
    family, spec = found["family"], KDF_PARAMETERS[found["family"]]
    given = re.findall(r"-([a-z])([0-9]+)", found["params"])
    letters = [p.letter for p in spec]
    how = (f"write {family}" + "".join(f"-{p.letter}N" for p in spec) +
           " (" + ", ".join(f"{p.letter}: {p.word} from {p.low} to {p.high}" for p in spec) + ")"
           if spec else f"{family} takes no parameters")
    if [letter for letter, _ in given] != letters[:len(given)] or len(given) > len(letters):
        return f"{name.strip()}: {how}"
    values = {letter: int(text) if len(text) < 12 else 0 for letter, text in given}
    for p in spec[:len(given)]:
        if not p.low <= values[p.letter] <= p.high or len(dict(given)[p.letter]) >= 12:
            return (f"{name.strip()}: {p.word} must be from {p.low} to {p.high}, not "
                    f"{dict(given)[p.letter][:12]}")
    if family == "scrypt" and values["n"] & (values["n"] - 1):
        return f"{name.strip()}: scrypt's N must be a power of two (RFC 7914), not {values['n']}"
    if family == "argon2id" and "p" in values and values["m"] < 8 * values["p"]:
        return (f"{name.strip()}: Argon2id needs at least 8 KiB of memory per lane "
                f"(RFC 9106), not {values['m']} KiB for {values['p']} lanes")
    if family == "argon2id" and "t" in values and values["m"] * values["t"] > MAX_ARGON2_PASSES_KIB:
        return (f"{name.strip()}: Argon2id's memory x passes must be at most "
                f"{MAX_ARGON2_PASSES_KIB} KiB (16 GiB passed over), not {values['m']} x "
                f"{values['t']}: lower m or t")
    return None


def memory_needed(family: str, params: tuple[tuple[str, int], ...]) -> int:
    """Bytes of memory one derivation of ``family`` with ``params`` takes: scrypt 128·r·N for
    its V array plus 128·r·p for B (RFC 7914 section 5), Argon2id m KiB (RFC 9106 section
    3.1); 0 for the KDFs that need next to none (PBKDF2, bcrypt's 4 KiB, HKDF)."""
    values = dict(params)
    if family == "scrypt":
        return 128 * values["r"] * values["n"] + 128 * values["r"] * values["p"]
    if family == "argon2id":
        return values["m"] * 1024
    return 0


def memory_advice(family: str) -> str:
    """What to lower when ``family`` needs too much memory: ``lower N or r``."""
    return {"scrypt": "lower N or r", "argon2id": "lower m"}.get(family, "")


def parse(name: str) -> tuple[str, tuple[tuple[str, int], ...]] | None:
    """``scrypt-n1024`` -> ``("scrypt", (("n", 1024), ("r", 8), ("p", 1)))``: the family and
    every parameter (the ones not given take their defaults), or None when ``name`` is not a
    KDF with parameters or they are invalid (:func:`kdf_problem` says why)."""
    found = _PARAMETERIZED.match(name.strip().lower())
    if found is None or found["family"] not in KDF_PARAMETERS or kdf_problem(name):
        return None
    given = dict(re.findall(r"-([a-z])([0-9]+)", found["params"]))
    spec = KDF_PARAMETERS[found["family"]]
    return found["family"], tuple((p.letter, int(given.get(p.letter, p.default))) for p in spec)
