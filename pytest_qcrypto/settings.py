"""Parsing and checking what the user asked for, before anything runs.

Every function here raises :class:`SettingsError` (a ``ValueError``) with a
one-line message a user can act on; the pytest plugin turns it into a usage
error (exit code 4).  Nothing here imports a crypto library.
"""

from __future__ import annotations

import math
import re
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
#: What a true/false ini key (``qcrypto_allow_missing``) accepts, as pytest reads it, any case.
TRUE_WORDS = ("true", "yes", "on", "1", "y", "t")
FALSE_WORDS = ("false", "no", "off", "0", "n", "f")
#: A whole number as qcrypto takes it: ASCII digits with an optional sign.  (``int()`` also
#: takes other scripts' digits, such as Arabic-Indic ``١٦``, and ``1_000``.)
_WHOLE = re.compile(r"[+-]?[0-9]+")


#: Where a message sends the reader for the valid names; the ``qcrypto`` command
#: sets ``"(see qcrypto list)"`` while it runs pytest (:func:`pytest_qcrypto.cli.main`).
LIST_HINT = "(see pytest --qcrypto-list or qcrypto list)"


class SettingsError(ValueError):
    """A bad option value; ``str()`` is the one-line message for the user."""


def check_elements(texts: Sequence[str], option: str, noun: str, example: str) -> None:
    """Raise :class:`SettingsError` when a comma list has an empty element (``16,,32``, ``a,``).

    ``texts`` are the option's values as given (one per repetition); an empty
    repetition is shown joined to the others (``'16,'``).
    """
    for text in texts:
        if not all(part.strip() for part in text.split(",")):
            shown = text if text.strip() else ",".join(texts)
            raise SettingsError(f"{option}: {shown!r} has an empty element; separate {noun} "
                                f"with single commas, e.g. {example}")


def ini_list(tokens: Sequence[str]) -> str:
    """An ini list (pytest's ``args`` type, split at blanks) as one comma list.

    ``16, 64``, ``16 64`` and ``16 , 64`` all read ``16,64``; an empty element
    stays empty (``16,,64``, a trailing comma) so that :func:`check_elements` names it.
    """
    joined = " ".join(str(t) for t in tokens).strip()
    return ",".join(re.split(r"\s*,\s*|\s+", joined)) if joined else ""


def split_list(values: Iterable[str] | None) -> list[str]:
    """Repeated options and comma lists as one list: ``["a,b", "c"]`` -> ``["a", "b", "c"]``."""
    out: list[str] = []
    for value in values or ():
        out.extend(part.strip() for part in str(value).split(",") if part.strip())
    return out


def ini_source(name: str, inipath: object, overrides: Iterable[str] | None = ()) -> str:
    """Where an ini value came from, for messages: ``qcrypto_rounds in pytest.ini``, or
    ``-o qcrypto_rounds`` when pytest's ``-o``/``--override-ini`` set it."""
    if any(str(o).partition("=")[0].strip() == name for o in overrides or ()):
        return f"-o {name}"
    return f"{name} in {getattr(inipath, 'name', None) or 'the ini file'}"


def bool_problem(where: str, value: str | None = None) -> str:
    """The message for an ini key that is not true or false (``value`` as shown, if known)."""
    return (f"{where}: {value or 'the value'} is not true or false; write "
            f"{', '.join(TRUE_WORDS[:-1])} or {TRUE_WORDS[-1]} for true, "
            f"{', '.join(FALSE_WORDS[:-1])} or {FALSE_WORDS[-1]} for false")


def whole_number(text: object) -> int | None:
    """``text`` as an int if it is ASCII digits 0-9 with an optional sign, else None."""
    raw = str(text).strip()
    return int(raw, 10) if _WHOLE.fullmatch(raw) else None


def decimal_number(text: object) -> float:
    """``text`` as a float, written in ASCII (``0.5``, ``1e-3``, ``inf``); ``ValueError`` otherwise.

    ``float()`` alone also takes other scripts' digits (``٠٫٥``) and ``1_000``.
    """
    raw = str(text).strip()
    if not raw.isascii() or "_" in raw:
        raise ValueError(f"not an ASCII number: {raw!r}")
    return float(raw)


def parse_sizes(values: Iterable[str] | None, option: str = "--qcrypto-size") -> tuple[int, ...]:
    """Buffer sizes in bytes, ascending and without repeats; the default when none given.

    Sizes are ASCII digits 0-9 (no unit suffix), separated by single commas or given
    again; an empty element (``16,,32``) or a list that is empty (``""``) is an error.
    """
    texts = [str(v) for v in values or ()]
    if texts and not any(t.strip() for t in texts):
        raise SettingsError(f"{option}: the list of sizes is empty; give sizes in bytes, "
                            f"e.g. 16,64, or leave it out for the default "
                            f"{','.join(map(str, DEFAULT_SIZES))}")
    check_elements(texts, option, "sizes", "16,64")
    sizes: set[int] = set()
    for text in split_list(texts):
        size = whole_number(text)
        if size is None:
            raise SettingsError(f"{option}: {text!r} is not a whole number of bytes "
                                "(only the ASCII digits 0-9)")
        if size <= 0:
            raise SettingsError(f"{option}: buffer size must be at least 1 byte, not {size}")
        if size > MAX_SIZE:
            raise SettingsError(f"{option}: {size} bytes is over the limit of {MAX_SIZE} (256 MiB)")
        sizes.add(size)
    return tuple(sorted(sizes)) or DEFAULT_SIZES


def parse_min_time(text: object, option: str = "--qcrypto-min-time") -> float:
    """Seconds, a positive finite number no larger than one hour."""
    try:
        value = decimal_number(text)
    except ValueError:
        raise SettingsError(f"{option}: {text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0 or value > 3600:
        raise SettingsError(f"{option}: must be more than 0 and at most 3600 seconds, not {text}")
    return value


def parse_rounds(text: object, option: str = "--qcrypto-rounds") -> int:
    """A whole number of rounds, 1 to 1000."""
    value = whole_number(text)
    if value is None:
        raise SettingsError(f"{option}: {text!r} is not a whole number (only the ASCII digits "
                            "0-9)")
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
    texts = [str(v) for v in values or ()]
    if any(t.strip() for t in texts):  # nothing at all is "no algorithm name given"
        check_elements(texts, option, f"{word} names",
                       "sha256,md5" if word == "digest" else "aes-128-cbc,aes-256-gcm")
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
                                f"Valid {word}s: {valid}, or {ALL} {LIST_HINT}")
        if alg not in found:
            found.append(alg)
    return found


def check_plugin_count(typed: Sequence[str], option: str = "--qcrypto-plugin") -> None:
    """At most :data:`MAX_PLUGINS` plugins, as qcrypto allows."""
    if len(typed) > MAX_PLUGINS:
        raise SettingsError(f"{option}: at most {MAX_PLUGINS} plugins, "
                            f"got {len(typed)} ({', '.join(typed)})")


def check_sizes(algorithms: Iterable[Algorithm], sizes: Iterable[int],
                option: str = "--qcrypto-size") -> None:
    """Every size must suit every algorithm's mode (CBC/ECB blocks, XTS minimum)."""
    for alg in algorithms:
        for size in sizes:
            problem = alg.size_problem(size)
            if problem:
                raise SettingsError(f"{option}: {problem}")


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
