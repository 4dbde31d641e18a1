"""Parsing and checking what the user asked for, before anything runs.

Every function here raises :class:`SettingsError` (a ``ValueError``) with a
one-line message a user can act on; the pytest plugin turns it into a usage
error (exit code 4).  Nothing here imports a crypto library.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from pytest_qcrypto.algorithms import catalog, size_grids
from pytest_qcrypto.algorithms.catalog import Algorithm

#: qcrypto's default buffer sizes, bytes: the ``qnx`` grid (:mod:`.size_grids`).
DEFAULT_SIZES = size_grids.GRIDS["qnx"].sizes
#: qcrypto accepts at most this many -P plugins.
MAX_PLUGINS = 10
#: The largest buffer size accepted (bytes): 256 MiB, so that a typo cannot exhaust memory.
MAX_SIZE = 256 * 1024 * 1024
DEFAULT_MIN_TIME = 0.1
DEFAULT_ROUNDS = 3
#: The longest min-time (seconds) and the most rounds, for the options and the Python API.
MAX_MIN_TIME = 3600.0
MAX_ROUNDS = 1000
#: The most iterations per round (``--qcrypto-count``, and where the doubling loop stops):
#: 2**40 operations cannot finish in a human lifetime.
MAX_COUNT = 2**40
#: The algorithm name that means every algorithm of the option's kinds (openssl speed
#: without an algorithm); the matrix keeps those a chosen plugin supports.
ALL = "all"
#: What a true/false ini key (``qcrypto_allow_missing``) accepts, as pytest reads it, any case.
TRUE_WORDS = ("true", "yes", "on", "1", "y", "t")
FALSE_WORDS = ("false", "no", "off", "0", "n", "f")
#: A whole number as qcrypto takes it: ASCII digits with an optional sign.  (``int()`` also
#: takes other scripts' digits, such as Arabic-Indic ``١٦``, and ``1_000``.)
_WHOLE = re.compile(r"([+-]?)([0-9]+)")
#: The longest text taken as a decimal number (min-time, a percentage, KiB/s, seconds).
MAX_DECIMAL_TEXT = 64


#: Where a message sends the reader for the valid names; the ``qcrypto`` command
#: sets ``"(see qcrypto list)"`` while it runs pytest (:func:`pytest_qcrypto.commands.qcrypto.main`).
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
            whole = text if text.strip() else ",".join(texts)
            raise SettingsError(f"{option}: {shown(whole)} has an empty element; separate "
                                f"{noun} with single commas, e.g. {example}")


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


def shown(text: object, keep: int = 40) -> str:
    """``text`` quoted for a message, cut to ``keep`` characters with its length said, so that
    a pasted megabyte is not echoed whole: ``'99999...'... (5000 characters)``."""
    raw = str(text)
    if len(raw) <= keep:
        return repr(raw)
    return f"{raw[:keep]!r}... ({len(raw)} characters)"


def _shown_whole(negative: bool, digits: str) -> str:
    """A whole number for a message: its digits, or its first 20 and how many there are."""
    sign = "-" if negative else ""
    return f"{sign}{digits}" if len(digits) <= 30 else \
        f"{sign}{digits[:20]}... ({len(digits)} digits)"


#: Builds a whole message from a value as shown (see :func:`whole_number`).
Message = Callable[[str], str]


def whole_number(text: object, where: str, low: int, high: int, *,
                 noun: str = "a whole number", not_whole: Message | None = None,
                 too_low: Message | None = None, too_high: Message | None = None) -> int:
    """``text`` as an int from ``low`` to ``high``: the one parser of every whole number that
    comes from a command line, an ini file or a marker (sizes, rounds, seed, jobs, confirm).

    Takes ASCII digits 0-9 with an optional sign and blanks around them, nothing else:
    ``int()`` also takes other scripts' digits (Arabic-Indic ``١٦``), ``1_000``, and
    ``str.isdigit`` says yes to ``²``.  The number of digits is compared with the bounds'
    before converting, so a 5000-digit value is out of range, not a ``ValueError`` from
    Python's 4300-digit limit on ``int()``.  Leading zeros do not count.

    Raises :class:`SettingsError` with a message that starts with ``where``: ``not_whole``
    (given the text quoted and shortened, :func:`shown`), ``too_low`` or ``too_high``
    (given the value, shortened when it has more than 30 digits) build it when given;
    the defaults read ``WHERE: 'x' is not NOUN (only the ASCII digits 0-9)`` and
    ``WHERE: must be from LOW to HIGH, not VALUE``.
    """
    raw = str(text).strip()
    match = _WHOLE.fullmatch(raw)
    if match is None:
        if not_whole is not None:
            raise SettingsError(not_whole(shown(raw)))
        sign = ", with an optional sign" if low < 0 else ""
        raise SettingsError(f"{where}: {shown(raw)} is not {noun} (only the ASCII digits "
                            f"0-9{sign})")
    sign, digits = match.group(1), match.group(2).lstrip("0") or "0"
    value: int | None = None
    if len(digits) <= len(str(max(abs(low), abs(high)))):
        value = int(f"{sign}{digits}", 10)  # a bounded number of ASCII digits: cheap, exact
        if low <= value <= high:
            return value
    negative = sign == "-" and digits != "0"
    below = negative if value is None else value < low
    shown_number = _shown_whole(negative, digits)
    build = too_low if below else too_high
    if build is not None:
        raise SettingsError(build(shown_number))
    raise SettingsError(f"{where}: must be from {low} to {high}, not {shown_number}")


def is_whole_number(text: object) -> bool:
    """Is ``text`` written as :func:`whole_number` reads numbers (ASCII digits, a sign), of any
    length?"""
    return _WHOLE.fullmatch(str(text).strip()) is not None


def decimal_number(text: object) -> float:
    """``text`` as a float, written in ASCII (``0.5``, ``1e-3``, ``inf``); ``ValueError`` otherwise.

    ``float()`` alone also takes other scripts' digits (``٠٫٥``) and ``1_000``.  A text
    longer than :data:`MAX_DECIMAL_TEXT` characters is refused before converting.  ``inf``
    and ``nan`` are numbers here: every caller checks its range, which they are outside of.
    """
    raw = str(text).strip()
    if len(raw) > MAX_DECIMAL_TEXT:
        raise ValueError(f"over {MAX_DECIMAL_TEXT} characters: {shown(raw)}")
    if not raw.isascii() or "_" in raw:
        raise ValueError(f"not an ASCII number: {raw!r}")
    return float(raw)


def shown_value(value: object) -> str:
    """A value from Python code for a message: ``repr``, cut to 60 characters; an int of
    more than 30 digits as ``a number of about N digits`` (``str()`` of one over 4300
    digits raises ``ValueError``)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value).bit_length() > 99:
        sign = "a negative" if value < 0 else "a"
        return f"{sign} number of about {int(abs(value).bit_length() * math.log10(2))} digits"
    return f"{value!r:.60}"


def min_time_problem(min_time: object) -> str | None:
    """Why ``min_time`` (seconds, from Python code) is not more than 0 and at most
    :data:`MAX_MIN_TIME`, or None: the limits of ``--qcrypto-min-time``."""
    if isinstance(min_time, bool) or not isinstance(min_time, (int, float)) \
            or not 0 < min_time <= MAX_MIN_TIME:  # also false for NaN
        return (f"min_time must be more than 0 and at most {MAX_MIN_TIME:g} seconds, "
                f"not {shown_value(min_time)}")
    return None


def rounds_problem(rounds: object) -> str | None:
    """Why ``rounds`` (from Python code) is not a whole number from 1 to :data:`MAX_ROUNDS`,
    or None: the limits of ``--qcrypto-rounds``."""
    if isinstance(rounds, bool) or not isinstance(rounds, int) or not 1 <= rounds <= MAX_ROUNDS:
        return f"rounds must be a whole number from 1 to {MAX_ROUNDS}, not {shown_value(rounds)}"
    return None


def argument_problem(size: object, min_time: object, rounds: object,
                     count: object = None) -> str | None:
    """Why these are not a buffer size (bytes, 1 to :data:`MAX_SIZE`), a min-time (seconds,
    more than 0 and at most :data:`MAX_MIN_TIME`), a round count (1 to :data:`MAX_ROUNDS`) and
    a fixed count (None, or 1 to :data:`MAX_COUNT` iterations), or None: the limits of the
    options.  A bug in the calling test, not a size to skip."""
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        return f"size must be a whole number of bytes from 1, not {shown_value(size)}"
    if size > MAX_SIZE:
        shown = shown_value(size)
        shown = shown if shown.isdigit() else f"({shown})"
        return f"size {shown} bytes is over the limit of {MAX_SIZE} (256 MiB)"
    return min_time_problem(min_time) or rounds_problem(rounds) or (
        count_problem(count) if count is not None else None)


def parse_sizes(values: Iterable[str] | None, option: str = "--qcrypto-size") -> tuple[int, ...]:
    """Buffer sizes in bytes, ascending and without repeats; the default when none given.

    Sizes are ASCII digits 0-9 (no unit suffix) or the name of a grid
    (:data:`~pytest_qcrypto.algorithms.size_grids.GRIDS`: ``openssl``, ``tls``...),
    separated by single commas or given again; an empty element (``16,,32``) or a list
    that is empty (``""``) is an error.
    """
    texts = [str(v) for v in values or ()]
    if texts and not any(t.strip() for t in texts):
        raise SettingsError(f"{option}: the list of sizes is empty; give sizes in bytes, "
                            f"e.g. 16,64, or leave it out for the default "
                            f"{','.join(map(str, DEFAULT_SIZES))}")
    check_elements(texts, option, "sizes", "16,64")
    sizes = {whole_number(
        text, option, 1, MAX_SIZE, not_whole=lambda v: (
            f"{option}: {v} is not a whole number of bytes (only the ASCII digits 0-9) nor a "
            f"named grid: {size_grids.choices()}"),
        too_low=lambda v: f"{option}: buffer size must be at least 1 byte, not {v}",
        too_high=lambda v: f"{option}: {v} bytes is over the limit of {MAX_SIZE} (256 MiB)")
        for text in split_list(size_grids.expanded(texts))}
    return tuple(sorted(sizes)) or DEFAULT_SIZES


def parse_min_time(text: object, option: str = "--qcrypto-min-time") -> float:
    """Seconds, a positive finite number no larger than one hour (:data:`MAX_MIN_TIME`)."""
    try:
        value = decimal_number(text)
    except ValueError:
        raise SettingsError(f"{option}: {shown(str(text).strip())} is not a number of "
                            "seconds") from None
    if not math.isfinite(value) or value <= 0 or value > MAX_MIN_TIME:
        raise SettingsError(f"{option}: must be more than 0 and at most {MAX_MIN_TIME:g} "
                            f"seconds, not {str(text).strip()}")
    return value


def parse_rounds(text: object, option: str = "--qcrypto-rounds") -> int:
    """A whole number of rounds, 1 to :data:`MAX_ROUNDS`."""
    return whole_number(text, option, 1, MAX_ROUNDS)


def count_problem(count: object) -> str | None:
    """Why ``count`` (iterations per round, from Python code) is not a whole number from 1 to
    :data:`MAX_COUNT`, or None: the limits of ``--qcrypto-count``."""
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_COUNT:
        return (f"count must be a whole number of iterations from 1 to {MAX_COUNT} (2**40), "
                f"not {shown_value(count)}")
    return None


def parse_count(text: object, option: str = "--qcrypto-count") -> int:
    """A fixed number of iterations per round, 1 to :data:`MAX_COUNT` (FreeBSD cryptotest's
    ``count``)."""
    return whole_number(text, option, 1, MAX_COUNT, noun="a whole number of iterations")


def check_directions(decrypt: bool, roundtrip: bool, check_roundtrip: bool) -> None:
    """``--qcrypto-roundtrip`` excludes ``--qcrypto-decrypt``, and ``--qcrypto-check-roundtrip``
    needs it: :class:`SettingsError` otherwise."""
    if roundtrip and decrypt:
        raise SettingsError("--qcrypto-roundtrip and --qcrypto-decrypt: choose one; a round "
                            "trip times one encryption and one decryption per iteration")
    if check_roundtrip and not roundtrip:
        raise SettingsError("--qcrypto-check-roundtrip checks round trips: give "
                            "--qcrypto-roundtrip too")


#: ``--qcrypto-seed`` takes a signed 64-bit number.
SEED_RANGE = (-(2**63), 2**63 - 1)


def parse_seed(text: object, option: str = "--qcrypto-seed") -> int:
    """The seed of keys and data: a whole number in :data:`SEED_RANGE`."""
    return whole_number(text, option, *SEED_RANGE)


#: An example list of names for each table word, in messages about a bad list.
_EXAMPLES = {"digest": "sha256,md5", "MAC": "hmac-sha256,cmac-aes-128",
             "public-key algorithm": "ed25519,ml-kem-768", "KDF": "scrypt,pbkdf2-sha256"}
#: The word of a list of kinds that no table word covers (``--qcrypto-pkey``'s four).
_WORDS = {catalog.OPTION_GROUPS["pkey"]: "public-key algorithm"}


def parse_algorithms(values: Iterable[str] | None, kinds: tuple[str, ...],
                     option: str) -> list[Algorithm]:
    """Catalog algorithms of the given kinds, in the order given, without repeats.

    The name :data:`ALL` stands for every algorithm of the kinds, in catalog order.
    """
    found: list[Algorithm] = []
    word = _WORDS.get(tuple(kinds)) or catalog.group_word(kinds)
    texts = [str(v) for v in values or ()]
    if any(t.strip() for t in texts):  # nothing at all is "no algorithm name given"
        check_elements(texts, option, f"{word} names",
                       _EXAMPLES.get(word, "aes-128-cbc,aes-256-gcm"))
    if catalog.KDF in kinds:  # a KDF's parameters are in its name: no loose ends
        for raw in (part for t in texts for part in t.split(",") if part.strip()):
            if raw != raw.rstrip() or raw.strip().endswith("-"):
                raise SettingsError(f"{option}: {raw.lstrip()!r} ends in "
                                    f"{'a dash' if raw.strip().endswith('-') else 'a space'}: "
                                    "give a KDF's parameters in full (scrypt-n1024) or none "
                                    "(scrypt)")
    for name in split_list(values):
        if name.lower() == ALL:
            found += [a for a in catalog.algorithms(kinds) if a not in found]
            continue
        alg = catalog.lookup(name)
        problem = catalog.kdf_problem(name) if alg is None and catalog.KDF in kinds else None
        if problem:  # a KDF's parameters in its name, out of range or misspelt
            raise SettingsError(f"{option}: {problem}")
        if alg is None or not alg.is_of(kinds):
            if alg is not None:
                article = "an" if alg.table_kind[0] in "AEIOU" else "a"
                hint = (f"; {alg.name} is {article} {alg.table_kind}: use "
                        f"--qcrypto-{alg.rules.option} {alg.name}.")
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
    """Every size must suit every algorithm's mode (CBC/ECB blocks, XTS minimum); the
    kinds without a buffer size (``KindRules.sized`` False) take no size and are left out."""
    for alg in algorithms:
        if not alg.rules.sized:
            continue
        for size in sizes:
            problem = alg.size_problem(size)
            if problem:
                raise SettingsError(f"{option}: {problem}")


@dataclass(frozen=True)
class Settings:
    """The checked options of one run.  Sizes in bytes, ``min_time`` in seconds.

    ``count``: a fixed number of iterations per round instead of calibrating (None:
    calibrate); ``roundtrip``: ciphers and AEADs time one encryption and one decryption per
    iteration; ``check_roundtrip``: each such iteration also checks its result; ``aad``:
    the AAD bytes every AEAD authenticates beside each buffer (13 under the ``tls`` grid);
    ``quick``: ``--qcrypto-quick``, one short round a cell (never saved); ``clock``: the
    clock of the tables' figures, ``wall`` or ``cpu`` (``--qcrypto-clock``); ``misalign``: every
    buffer that many bytes past a 64-byte boundary (``--qcrypto-misalign``; None: anywhere);
    ``update_size``: a digest's or MAC's bytes per ``update()`` (None: the buffer at once).
    """

    algorithms: tuple[Algorithm, ...] = ()
    plugins: tuple[str, ...] = ()
    sizes: tuple[int, ...] = DEFAULT_SIZES
    min_time: float = DEFAULT_MIN_TIME
    rounds: int = DEFAULT_ROUNDS
    decrypt: bool = False
    seed: int | None = None
    count: int | None = None
    roundtrip: bool = False
    check_roundtrip: bool = False
    aad: int = 0
    quick: bool = False
    clock: str = "wall"
    misalign: int | None = None
    update_size: int | None = None
