"""Per-cell rules of the regression gate: thresholds and floors, and how they are written.

A rule is a line ``ALGORITHM[:PLUGIN[:SIZE]] = VALUE`` (ini ``qcrypto_thresholds``,
``qcrypto_floors``) or the ``floor=`` of ``@pytest.mark.qcrypto``; ``*`` is a
wildcard.  Of the rules that cover a cell the most specific wins, ties go to the
later line (:class:`Rules`).  Thresholds are percentages (``10%`` or ``10``,
from 0 up to 100), floors KiB/s (positive).  Every problem is a
:class:`~pytest_qcrypto.algorithms.settings.SettingsError` naming where the value came from.
Plain Python: no pytest, nothing measured.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from pytest_qcrypto.algorithms import callable_names, catalog, settings
from pytest_qcrypto.algorithms.settings import SettingsError, decimal_number, shown

WILDCARD = "*"

def _text(value: object) -> str:
    """An option's text, or a number from a marker as written (not ``str()`` of an int of
    over 4300 digits, which raises ``ValueError``)."""
    return (value if isinstance(value, str) else settings.shown_value(value)).strip()


def parse_percent(text: object, where: str) -> float:
    """A threshold in percent, ``10%`` or ``10`` -> ``10.0``; from 0 up to (not including) 100."""
    raw = _text(text)
    try:
        value = decimal_number(raw.removesuffix("%"))
    except ValueError:
        raise SettingsError(f"{where}: {shown(raw)} is not a percentage (write 10% or "
                            "10)") from None
    if math.isfinite(value) and -100 < value < 0:
        raise SettingsError(f"{where}: a threshold is the slowdown allowed, a positive "
                            f"percentage: write {-value:g}% (not {raw}) to fail what is more "
                            f"than {-value:g}% slower")
    if not math.isfinite(value) or not 0 <= value < 100:
        raise SettingsError(f"{where}: a threshold must be from 0% up to (not including) "
                            f"100%, not {raw}")
    return value


def parse_kib_per_s(text: object, where: str) -> float:
    """A floor: a positive finite number, KiB/s (ops/s for the kinds without a buffer
    size, :attr:`pytest_qcrypto.algorithms.kinds.KindRules.unit`); SettingsError otherwise."""
    raw = _text(text)
    try:
        value = decimal_number(raw)
    except ValueError:
        raise SettingsError(f"{where}: {shown(raw)} is not a number of KiB/s (or ops/s for "
                            "the kinds without a buffer size)") from None
    if not math.isfinite(value) or value <= 0:
        raise SettingsError(f"{where}: a floor must be a positive number of KiB/s (or ops/s "
                            f"for the kinds without a buffer size), not {raw}")
    return value


def parse_speedup(text: object, where: str) -> float:
    """A bound on speed-ups, ``3x``, ``3`` or ``2.5X`` -> ``3.0``: a finite factor above 1 (a
    run as fast as its baseline is not suspicious)."""
    raw = _text(text)
    try:
        value = decimal_number(raw.removesuffix("x").removesuffix("X"))
    except ValueError:
        raise SettingsError(f"{where}: {shown(raw)} is not a factor (write 3x or 3)") from None
    if not math.isfinite(value) or value <= 1:
        raise SettingsError(f"{where}: a speed-up bound must be a factor above 1 (3x flags "
                            f"what is more than 3 times the baseline's figure), not {raw}")
    return value


def parse_whole(text: object, where: str, low: int, high: int) -> int:
    """A whole number from ``low`` to ``high`` (:func:`pytest_qcrypto.algorithms.settings.whole_number`)."""
    return settings.whole_number(text, where, low, high)


#: The longest pause before a confirmation try (``--qcrypto-confirm-pause``), seconds.
MAX_PAUSE_S = 60.0


def parse_pause(text: object, where: str) -> float:
    """Seconds from 0 to :data:`MAX_PAUSE_S` (``--qcrypto-confirm-pause``)."""
    try:
        value = settings.decimal_number(text)
    except ValueError:
        raise settings.SettingsError(f"{where}: {settings.shown(str(text).strip())} is not a "
                                     "number of seconds") from None
    if not 0 <= value <= MAX_PAUSE_S:  # also refuses nan
        raise settings.SettingsError(f"{where}: must be from 0 to {MAX_PAUSE_S:g} seconds, "
                                     f"not {str(text).strip()}")
    return value


@dataclass(frozen=True)
class Rule:
    """One ``ALGORITHM[:PLUGIN[:SIZE]] = VALUE`` line; None fields are wildcards.  For an
    algorithm without a buffer size (signatures, KEMs, KDFs...) ``size`` is the operation
    (``ed25519:openssl:sign``): see :func:`cell_column`."""

    algorithm: str | None
    plugin: str | None
    size: int | str | None
    value: float
    source: str

    @property
    def specificity(self) -> int:
        """How many fields are not wildcards (0 to 3)."""
        return sum(f is not None for f in (self.algorithm, self.plugin, self.size))

    def matches(self, algorithm: str, plugins: Iterable[str], size: int | str) -> bool:
        """Does this rule cover the cell?  ``plugins`` are the names the plugin goes by."""
        return ((self.algorithm is None or self.algorithm == algorithm)
                and (self.plugin is None or self.plugin in {p.lower() for p in plugins})
                and (self.size is None or self.size == size))


def cell_column(size: int, direction: str) -> int | str:
    """What a rule's third field is matched with: the size (bytes), or the operation of a
    size-less cell (size 0: ``sign``)."""
    return size if size else direction


#: The operations that name the cells of the kinds without a buffer size (the third
#: field of ``ed25519:openssl:sign``): every direction of those kinds, in catalog order.
OPERATIONS: tuple[str, ...] = tuple(dict.fromkeys(
    str(d) for k in catalog.KINDS if not k.rules.sized for d in k.rules.directions))


def _operation_pattern(parts: list[str], where: str) -> tuple[str | None, str | None, str]:
    """The pattern of :func:`parse_pattern` whose last field is an operation: the
    algorithm (None for ``*``) must have that operation."""
    operation, plugin_text = parts[-1].lower(), ":".join(parts[1:-1])
    algorithm = None
    if parts[0] != WILDCARD:
        alg = _algorithm(parts[0], where)
        if alg.rules.sized:
            raise SettingsError(f"{where}: {alg.name} has buffer sizes, not operations like "
                                f"{operation} (a {alg.word}: figures in KiB/s); give a size "
                                f"in bytes from 1 to {settings.MAX_SIZE}, or *")
        ops = [str(d) for d in alg.directions]
        if operation not in ops:
            raise SettingsError(f"{where}: {alg.name} has no operation {operation} (a "
                                f"{alg.word}); give one of its operations {', '.join(ops)}, "
                                "or *")
        algorithm = alg.name
    return algorithm, None if plugin_text == WILDCARD else plugin_text.lower(), operation


def _algorithm(text: str, where: str) -> catalog.Algorithm:
    """The catalog algorithm or callable called ``text``; SettingsError if neither."""
    alg = callable_names.lookup(text)  # a catalog algorithm or a callable's name
    if alg is None:
        close = catalog.suggest(text, catalog.KINDS)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise SettingsError(f"{where}: unknown algorithm {shown(text)}{hint}")
    return alg


def parse_pattern(pattern: str, where: str) -> tuple[str | None, str | None, int | str | None]:
    """``sha256:openssl:4096`` -> ``("sha256", "openssl", 4096)``; ``*`` -> None;
    ``ed25519:openssl:sign`` -> ``("ed25519", "openssl", "sign")`` (an algorithm without
    a buffer size takes one of its operations in the third field, never a size).

    ALGORITHM is a catalog name (any alias, as canonical) or the name of a callable
    (``encrypt_record:*:4096``, as given: :mod:`pytest_qcrypto.algorithms.callable_names`); a name that
    is neither, or too close to a catalog name to be a callable's, is unknown.

    A plugin name may itself hold a colon (``afalg:sha256-generic``): with three
    or more fields, the last is the size when it is a number or ``*``, and the operation
    when it is one of :data:`OPERATIONS` (whatever the algorithm field, ``*:*:sign``).

    Raises SettingsError for a column the algorithm can never have: a size for an
    algorithm without a buffer size, an operation it lacks (``ed25519:*:derive``), or an
    operation for an algorithm with buffer sizes (``sha256:*:sign``).
    """
    parts = [p.strip() for p in pattern.strip().split(":")]
    if any(not p for p in parts):
        raise SettingsError(f"{where}: {shown(pattern.strip())} has an empty field; write "
                            "ALGORITHM[:PLUGIN[:SIZE]] with * as a wildcard")
    alg_text, plugin_text, size_text = parts[0], None, None
    sizeless = catalog.lookup(alg_text)
    operations = [str(d) for d in sizeless.directions] \
        if sizeless is not None and not sizeless.rules.sized else None
    if len(parts) >= 3 and parts[-1].lower() in OPERATIONS:
        return _operation_pattern(parts, where)
    if operations is not None and len(parts) >= 3 and parts[-1].lstrip("+-").isnumeric():
        raise SettingsError(f"{where}: {sizeless.name} has no buffer size (a {sizeless.word}:"  # type: ignore
                            f" figures in ops/s); give one of its operations "
                            f"{', '.join(operations)}, or *")
    if len(parts) == 2:
        plugin_text = parts[1]
    elif len(parts) >= 3:
        # digits of any script ('١٦', '²') make it a size, for whole_number to refuse
        if parts[-1] == WILDCARD or parts[-1].lstrip("+-").isnumeric():
            plugin_text, size_text = ":".join(parts[1:-1]), parts[-1]
        else:
            plugin_text = ":".join(parts[1:])
    algorithm = None
    if alg_text != WILDCARD:
        algorithm = _algorithm(alg_text, where).name
    plugin = None if plugin_text in (None, WILDCARD) else plugin_text.lower()
    size = None
    if size_text not in (None, WILDCARD):
        def bad(_: str) -> str:
            return (f"{where}: size {settings.shown(size_text)} must be a whole number of bytes "
                    f"from 1 to {settings.MAX_SIZE} (only the ASCII digits 0-9) or *")

        size = settings.whole_number(size_text, where, 1, settings.MAX_SIZE, not_whole=bad,
                                     too_low=bad, too_high=bad)
    return algorithm, plugin, size


class Rules:
    """Per-cell values from pattern lines: the most specific match wins, ties go to the later."""

    def __init__(self, rules: Sequence[Rule] = ()) -> None:
        self.rules = list(rules)

    @classmethod
    def parse(cls, lines: Iterable[str], where: str,
              value: Callable[[str, str], float]) -> Rules:
        """Rules from ``PATTERN = VALUE`` lines (blank lines and ``#`` comments skipped)."""
        rules = []
        for n, line in enumerate(lines, 1):
            text = str(line).strip()
            if not text or text.startswith("#"):
                continue
            at = f"{where} line {n} ({shown(text, 60)})"
            pattern, sep, raw = text.partition("=")
            if not sep or not pattern.strip():
                raise SettingsError(f"{at}: write ALGORITHM[:PLUGIN[:SIZE]] = VALUE")
            alg, plugin, size = parse_pattern(pattern, at)
            rules.append(Rule(alg, plugin, size, value(raw, at), f"{where}: {text!r}"))
        return cls(rules)

    def pick(self, algorithm: str, plugins: Iterable[str], size: int | str) -> Rule | None:
        """The rule of a cell (``size``: bytes, or a size-less cell's operation,
        :func:`cell_column`): the most specific match, the later of equals; None if none."""
        names = list(plugins)
        best: tuple[int, int, Rule] | None = None
        for i, rule in enumerate(self.rules):
            if rule.matches(algorithm, names, size):
                if best is None or (rule.specificity, i) >= best[:2]:
                    best = (rule.specificity, i, rule)
        return best[2] if best else None


def marker_floors(value: object, where: str) -> Rules:
    """The ``floor=`` of ``@pytest.mark.qcrypto``: a number of KiB/s for every cell of the
    test, or a mapping from a size (int) or an ``ALGORITHM[:PLUGIN[:SIZE]]`` pattern to KiB/s."""
    if isinstance(value, Mapping):
        rules = []
        for k, v in value.items():
            if isinstance(k, int) and not isinstance(k, bool):
                if not 1 <= k <= settings.MAX_SIZE:
                    raise SettingsError(f"{where}: size {settings.shown_value(k)} must be a "
                                        f"whole number of bytes from 1 to {settings.MAX_SIZE}")
                pattern = f"*:*:{k}"
            elif isinstance(k, str):
                pattern = k
            else:
                raise SettingsError(f"{where}: key {settings.shown_value(k)} must be a size or "
                                    "a pattern string")
            at = f"{where} {settings.shown_value(k)}"
            alg, plugin, size = parse_pattern(pattern, at)
            rules.append(Rule(alg, plugin, size, parse_kib_per_s(v, at), at))
        return Rules(rules)
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise SettingsError(f"{where}: must be KiB/s or a mapping, not "
                            f"{settings.shown_value(value)}")
    return Rules([Rule(None, None, None, parse_kib_per_s(value, where), where)])

