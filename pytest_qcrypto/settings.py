"""Parsing and checking what the user asked for, before anything runs.

Every function here raises :class:`SettingsError` (a ``ValueError``) with a
one-line message a user can act on; the pytest plugin turns it into a usage
error (exit code 4).  Nothing here imports a crypto library.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pytest_qcrypto import catalog
from pytest_qcrypto.catalog import Algorithm

#: qcrypto's default buffer sizes, bytes.
DEFAULT_SIZES = (16, 64, 256, 1024, 4096, 8192, 32768)
#: qcrypto accepts at most this many -P plugins.
MAX_PLUGINS = 10
#: The largest buffer size accepted (bytes): 256 MiB, so that a typo cannot exhaust memory.
MAX_SIZE = 256 * 1024 * 1024
DEFAULT_MIN_TIME = 0.1
DEFAULT_ROUNDS = 3
#: The algorithm name that means every algorithm of the option's kinds (openssl speed
#: without an algorithm); the matrix keeps those a chosen plugin supports.
ALL = "all"


class SettingsError(ValueError):
    """A bad option value; ``str()`` is the one-line message for the user."""


def split_list(values: Iterable[str] | None) -> list[str]:
    """Repeated options and comma lists as one list: ``["a,b", "c"]`` -> ``["a", "b", "c"]``."""
    out: list[str] = []
    for value in values or ():
        out.extend(part.strip() for part in str(value).split(",") if part.strip())
    return out


def parse_sizes(values: Iterable[str] | None, option: str = "--qcrypto-size") -> tuple[int, ...]:
    """Buffer sizes in bytes, ascending and without repeats; the default when none given."""
    sizes: set[int] = set()
    for text in split_list(values):
        try:
            size = int(text, 10)
        except ValueError:
            raise SettingsError(f"{option}: {text!r} is not a whole number of bytes") from None
        if size <= 0:
            raise SettingsError(f"{option}: buffer size must be at least 1 byte, not {size}")
        if size > MAX_SIZE:
            raise SettingsError(f"{option}: {size} bytes is over the limit of {MAX_SIZE} (256 MiB)")
        sizes.add(size)
    return tuple(sorted(sizes)) or DEFAULT_SIZES


def parse_min_time(text: object, option: str = "--qcrypto-min-time") -> float:
    """Seconds, a positive finite number no larger than one hour."""
    try:
        value = float(str(text))
    except ValueError:
        raise SettingsError(f"{option}: {text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0 or value > 3600:
        raise SettingsError(f"{option}: must be more than 0 and at most 3600 seconds, not {text}")
    return value


def parse_rounds(text: object, option: str = "--qcrypto-rounds") -> int:
    """A whole number of rounds, 1 to 1000."""
    try:
        value = int(str(text), 10)
    except ValueError:
        raise SettingsError(f"{option}: {text!r} is not a whole number") from None
    if not 1 <= value <= 1000:
        raise SettingsError(f"{option}: must be from 1 to 1000, not {value}")
    return value


def parse_algorithms(values: Iterable[str] | None, kinds: tuple[str, ...],
                     option: str) -> list[Algorithm]:
    """Catalog algorithms of the given kinds, in the order given, without repeats.

    The name :data:`ALL` stands for every algorithm of the kinds, in catalog order.
    """
    found: list[Algorithm] = []
    word = {(catalog.DIGEST,): "digest", (catalog.CIPHER, catalog.AEAD): "cipher"}.get(
        kinds, "algorithm")
    for name in split_list(values):
        if name.lower() == ALL:
            found += [a for a in catalog.ALGORITHMS if a.kind in kinds and a not in found]
            continue
        alg = catalog.lookup(name)
        if alg is None or alg.kind not in kinds:
            if alg is not None:
                hint = (f"; {alg.name} is a {alg.table_kind}: use "
                        f"--qcrypto-{alg.table_kind} {alg.name}.")
            else:
                close = catalog.suggest(name, kinds)
                hint = f"; did you mean {', '.join(close)}?" if close else "."
            valid = ", ".join(n for k in kinds for n in catalog.names(k))
            raise SettingsError(f"{option}: unknown {word} {name!r}{hint} "
                                f"Valid {word}s: {valid}, or {ALL} (see pytest --qcrypto-list or qcrypto list)")
        if alg not in found:
            found.append(alg)
    return found


def check_plugin_count(typed: Sequence[str]) -> None:
    """At most :data:`MAX_PLUGINS` plugins, as qcrypto allows."""
    if len(typed) > MAX_PLUGINS:
        raise SettingsError(f"--qcrypto-plugin: at most {MAX_PLUGINS} plugins, "
                            f"got {len(typed)} ({', '.join(typed)})")


def check_sizes(algorithms: Iterable[Algorithm], sizes: Iterable[int]) -> None:
    """Every size must suit every algorithm's mode (CBC/ECB blocks, XTS minimum)."""
    for alg in algorithms:
        for size in sizes:
            problem = alg.size_problem(size)
            if problem:
                raise SettingsError(f"--qcrypto-size: {problem}")


@dataclass(frozen=True)
class Settings:
    """The checked options of one run.  Sizes in bytes, ``min_time`` in seconds."""

    algorithms: tuple[Algorithm, ...] = ()
    plugins: tuple[str, ...] = ()
    sizes: tuple[int, ...] = DEFAULT_SIZES
    min_time: float = DEFAULT_MIN_TIME
    rounds: int = DEFAULT_ROUNDS
    decrypt: bool = False
    seed: int | None = None
