"""The regression gate: saved results, baselines, thresholds, floors and verdicts.

What a CI run gets from it:

* ``--qcrypto-save PATH`` writes every measurement (:mod:`pytest_qcrypto.results`).
* ``--qcrypto-compare PATH`` judges every measurement against the same
  (algorithm, plugin, size, direction) of a baseline file.  The *slowdown* is
  ``(baseline - current) / baseline`` of the median-round bytes per second; a
  slowdown above the threshold is a regression and fails that test item.  The
  summary shows the *change*, ``(current - baseline) / baseline``: ``-12.4%``
  is 12.4% slower.
* Thresholds: ``--qcrypto-threshold`` (default 10%), refined per cell by
  ``qcrypto_thresholds`` ini lines ``ALGORITHM[:PLUGIN[:SIZE]] = PCT``.
* Floors: a minimum KiB/s per cell, from ``qcrypto_floors`` ini lines
  (same patterns) or ``@pytest.mark.qcrypto(..., floor=KIB_PER_S)`` on a test,
  judged on the figure by the clock (the table's), waits for a CPU included.
* Noise: before an item fails it is measured again (``--qcrypto-confirm``,
  default 2 more tries).  It fails only if the best try still regresses beyond
  the threshold *and* the fastest round of that try is slower than the
  baseline's slowest round (outside the spread of the rounds).

Rule matching (:class:`Rules`) and judging (:func:`judge_tries`) are plain
Python; :class:`Gate` is the pytest side, driven by ``QcryptoRun``.
"""

from __future__ import annotations

import math
import os
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_qcrypto import catalog, results, settings
from pytest_qcrypto.catalog import plural
from pytest_qcrypto.harness import KIB, Measurement
from pytest_qcrypto.results import Result, ResultsFile
from pytest_qcrypto.settings import SettingsError, decimal_number, shown

DEFAULT_THRESHOLD = 10.0
#: A try whose median round loses more than this share to its wait for a CPU says so in
#: messages, with its figure without the wait.
BUSY_SHARE = 0.05
DEFAULT_CONFIRM = 2
MAX_CONFIRM = 20
WILDCARD = "*"

#: ``(algorithm, plugin, size, direction)``: a cell of the tables, plugin as typed.
CellKey = tuple[str, str, int, str]

# Verdict states, and the marker of each in the change table.
OK, NEW, REGRESSION, NOISE, BUSY, RECOVERED, NOT_JUDGED, GONE = (
    "ok", "no baseline", "regression", "within noise", "machine busy", "passed on a retry",
    "not judged", "missing")
MARKS = {REGRESSION: "!", NOISE: "~", BUSY: "~", NOT_JUDGED: "?"}
MARK_NOTES = {
    REGRESSION: "regression: slower than the threshold allows, on every try",
    NOISE: "slower than the threshold on every try, but within the spread of the rounds "
           "or only while other work kept the CPUs busy",
    NOT_JUDGED: "not judged: different machine (--qcrypto-require-same-machine) or jobs",
}


# -- parsing -----------------------------------------------------------------------------------


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
    """A floor in KiB/s: a positive finite number."""
    raw = _text(text)
    try:
        value = decimal_number(raw)
    except ValueError:
        raise SettingsError(f"{where}: {shown(raw)} is not a number of KiB/s") from None
    if not math.isfinite(value) or value <= 0:
        raise SettingsError(f"{where}: a floor must be a positive number of KiB/s, not {raw}")
    return value


def parse_whole(text: object, where: str, low: int, high: int) -> int:
    """A whole number from ``low`` to ``high`` (:func:`pytest_qcrypto.settings.whole_number`)."""
    return settings.whole_number(text, where, low, high)


@dataclass(frozen=True)
class Rule:
    """One ``ALGORITHM[:PLUGIN[:SIZE]] = VALUE`` line; None fields are wildcards."""

    algorithm: str | None
    plugin: str | None
    size: int | None
    value: float
    source: str

    @property
    def specificity(self) -> int:
        """How many fields are not wildcards (0 to 3)."""
        return sum(f is not None for f in (self.algorithm, self.plugin, self.size))

    def matches(self, algorithm: str, plugins: Iterable[str], size: int) -> bool:
        """Does this rule cover the cell?  ``plugins`` are the names the plugin goes by."""
        return ((self.algorithm is None or self.algorithm == algorithm)
                and (self.plugin is None or self.plugin in {p.lower() for p in plugins})
                and (self.size is None or self.size == size))


def parse_pattern(pattern: str, where: str) -> tuple[str | None, str | None, int | None]:
    """``sha256:openssl:4096`` -> ``("sha256", "openssl", 4096)``; ``*`` -> None.

    A plugin name may itself hold a colon (``afalg:sha256-generic``): with three
    or more fields, the last is the size when it is a number or ``*``.
    """
    parts = [p.strip() for p in pattern.strip().split(":")]
    if any(not p for p in parts):
        raise SettingsError(f"{where}: {shown(pattern.strip())} has an empty field; write "
                            "ALGORITHM[:PLUGIN[:SIZE]] with * as a wildcard")
    alg_text, plugin_text, size_text = parts[0], None, None
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
        alg = catalog.lookup(alg_text)
        if alg is None:
            close = catalog.suggest(alg_text, (catalog.DIGEST, catalog.CIPHER, catalog.AEAD))
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise SettingsError(f"{where}: unknown algorithm {shown(alg_text)}{hint}")
        algorithm = alg.name
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

    def pick(self, algorithm: str, plugins: Iterable[str], size: int) -> Rule | None:
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


# -- judging -----------------------------------------------------------------------------------


def change(current_bps: float, baseline_bps: float) -> float:
    """``(current - baseline) / baseline``: negative is slower."""
    return (current_bps - baseline_bps) / baseline_bps


def slowdown(current_bps: float, baseline_bps: float) -> float:
    """``(baseline - current) / baseline``: what a threshold limits."""
    return -change(current_bps, baseline_bps)


def fastest_round_bps(m: Measurement) -> float:
    """Bytes per second of the fastest round of ``m``."""
    return m.count * m.size / min(m.rounds_s)


def _kib(bps: float) -> str:
    return f"{bps / KIB:.2f}"


def _pct(fraction: float | None) -> str:
    """``-0.124`` -> ``-12.4%``."""
    return "n/a" if fraction is None else f"{fraction * 100:+.1f}%"


def describe(m: Measurement) -> str:
    """``sha256 openssl 4096 B digest``: a cell in words."""
    return f"{m.algorithm} {m.plugin} {m.size} B {m.direction}"


@dataclass
class Verdict:
    """What the gate decided about one recorded measurement.

    ``measurement`` is the best try (kept for tables and the saved file),
    ``tries`` every try in order and ``waits`` the share of each try's time
    spent waiting for a CPU (None: not known).  ``figure`` and ``base_figure``
    are the bytes per second judged against the baseline: the median rounds
    without those waits (a floor takes ``measurement.bytes_per_second``).
    ``failures`` are the one-line messages that fail the item (a confirmed
    regression, a floor).
    """

    measurement: Measurement
    tries: list[Measurement]
    waits: list[float | None]
    figure: float
    baseline: Result | None = None
    base_figure: float = 0.0
    threshold: Rule | None = None
    floor: Rule | None = None
    status: str = OK
    failures: list[str] = field(default_factory=list)
    not_judged: str = ""
    tries_text: str = ""

    @property
    def wait(self) -> float | None:
        """The wait share of the kept try."""
        return self.waits[self.tries.index(self.measurement)]

    @property
    def change(self) -> float | None:
        """The change judged, ``(figure - base_figure) / base_figure``; None without baseline."""
        return None if self.baseline is None else change(self.figure, self.base_figure)

    @property
    def clock_change(self) -> float | None:
        """The change of the measured figures, waits for a CPU included."""
        if self.baseline is None:
            return None
        return change(self.measurement.bytes_per_second, self.baseline.bytes_per_second)

    @property
    def failed(self) -> bool:
        return bool(self.failures)

    @property
    def message(self) -> str:
        return "; ".join(self.failures)


def cpu_wait_s() -> float | None:
    """Seconds this thread has been runnable but waiting for a CPU (Linux schedstat).

    Other processes cause this wait; sleeping or waiting for a device do not.
    None where ``/proc/thread-self/schedstat`` does not exist.
    """
    try:
        with open("/proc/thread-self/schedstat", encoding="ascii") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


class WaitMeter:
    """Of the time this thread was off the CPU since :meth:`start`, the share that it was
    ready to run but waited for a CPU held by other processes.

    0.0: it slept, or waited for a device; 1.0: all of it was other work on the machine.
    """

    def __init__(self, clock: Callable[[], float] = time.perf_counter,
                 wait: Callable[[], float | None] = cpu_wait_s,
                 cpu: Callable[[], float] = time.thread_time) -> None:
        self.clock, self.wait, self.cpu = clock, wait, cpu
        self.start()

    def start(self) -> None:
        self._wait0, self._t0, self._cpu0 = self.wait(), self.clock(), self.cpu()

    def share(self) -> float | None:
        """0.0 to 1.0; None when the system does not tell."""
        t1, w1, c1 = self.clock(), self.wait(), self.cpu()
        if self._wait0 is None or w1 is None:
            return None
        off_cpu = (t1 - self._t0) - (c1 - self._cpu0)
        if off_cpu <= 1e-6:
            return 0.0
        return min(max((w1 - self._wait0) / off_cpu, 0.0), 1.0)


def metered(again: Callable[[], Measurement], clock: Callable[[], float] = time.perf_counter,
            wait: Callable[[], float | None] = cpu_wait_s,
            cpu: Callable[[], float] = time.thread_time) -> tuple[Measurement, float | None]:
    """Run one try; return it and the share of its time off the CPU that was a wait for one."""
    meter = WaitMeter(clock, wait, cpu)
    m = again()
    return m, meter.share()


def _without_wait(rounds_s: Sequence[float], cpu_s: Sequence[float],
                  share: float | None) -> list[float] | None:
    return results.without_wait(rounds_s, cpu_s, share)


def without_wait(m: Measurement, share: float | None) -> tuple[float, float]:
    """Bytes per second of the median and of the fastest round, the wait for a CPU taken out.

    ``share`` is the part of the try's time off the CPU that was a wait for a
    CPU (:class:`WaitMeter`).  Each round loses that share of its wall time
    beyond its CPU time; the rest (a plugin sleeping, a device working) stays.
    Without ``share`` or CPU times the figures are the measured ones.
    """
    rounds = _without_wait(m.rounds_s, m.cpu_s, share)
    if rounds is None:
        return m.bytes_per_second, fastest_round_bps(m)
    work = m.count * m.size
    return work / statistics.median(rounds), work / min(rounds)


def baseline_figures(r: Result) -> tuple[float, float]:
    """A baseline's judged figure and its slowest round's, its own wait for a CPU taken out.

    Both are scaled from the saved ``bytes_per_second`` (the figure of record);
    :func:`results.load` refuses a file in which they overflow.
    """
    return r.figures_without_wait()


def _waited(clock: float, judged: float) -> str:
    """The share of a figure's time by the clock that was a wait for a CPU, in words
    (``6%``, ``less than 1%``); empty when the two figures print alike in KiB/s."""
    if _kib(clock) == _kib(judged):
        return ""
    lost = 1 - clock / judged
    return f"{lost:.0%}" if lost >= 0.01 else "less than 1%"


def _correction_text(now: str, then: str) -> str:
    """How the judged change differs from the figures quoted (both by the clock): in words,
    so that each cell has one figure, the one the tables and ``qcrypto report`` show."""
    if now and then:
        return (f" without the time each waited for a CPU ({now} of it now, {then} of it in "
                "the baseline)")
    if then:
        return f" without the time the baseline waited for a CPU ({then} of it)"
    if now:
        return f" without the time this try waited for a CPU ({now} of it)"
    return ""


def _tries_text(tries: Sequence[Measurement], waits: Sequence[float | None], best: int,
                judged: bool = True) -> str:
    """``tries: A, B, C KiB/s (best B)``: each try by the clock, and which one counts.

    Against a baseline (``judged``) the best try is the fastest once its wait
    for a CPU is taken out (:func:`without_wait`), and "best" says so when that
    figure is not the listed one (the table shows the listed one).  A try that
    lost more than :data:`BUSY_SHARE` to that wait says so.
    """
    parts = []
    for m, w in zip(tries, waits):
        text = _kib(m.bytes_per_second)
        without = without_wait(m, w)[0]
        lost = 1 - m.bytes_per_second / without
        if lost > BUSY_SHARE:
            text += f" (waited {lost:.0%} of it for a CPU: {_kib(without)} without)"
        parts.append(text)
    kept = tries[best]
    clock, figure = kept.bytes_per_second, without_wait(kept, waits[best])[0]
    which = f"best {_kib(clock)}"
    if judged and _kib(clock) != _kib(figure):
        which += f", judged as {_kib(figure)} without its wait for a CPU"
    return f"tries: {', '.join(parts)} KiB/s ({which})"


def judge_tries(first: Measurement, again: Callable[[], Measurement] | None, confirm: int,
                baseline: Result | None, threshold: Rule | None, floor: Rule | None,
                not_judged: str = "", first_wait: float | None = None,
                meter: Callable[[Callable[[], Measurement]],
                                tuple[Measurement, float | None]] = metered) -> Verdict:
    """Judge ``first``, measuring again (at most ``confirm`` more tries) while it fails.

    ``first_wait`` and ``meter(again)`` (which runs one more try) give the
    share of each try's time that the thread waited for a CPU, held by other
    work on the machine.  Against the baseline, tries and baseline are judged
    without their waits (:func:`without_wait`); a sleeping or slower plugin does
    not wait for a CPU, so its slowdown stays whole.  A floor judges the figure
    by the clock (the one the table shows): it promises what was achieved.  The
    kept try is the fastest without its wait among the tries that keep the
    floor (among all, when none does); without a baseline, the fastest by the
    clock.  Messages quote each cell by the clock, the baseline as ``qcrypto
    report`` shows it, and say the wait correction in words.  Without a
    baseline (or when ``not_judged`` gives a reason) only the floor applies.
    Returns the :class:`Verdict`; failing the test is the caller's.
    """
    judged = baseline is not None and threshold is not None and not not_judged
    base_bps, base_slowest = baseline_figures(baseline) if baseline is not None else (0.0, 0.0)
    tries, waits = [first], [first_wait]

    def figure(i: int) -> float:
        return without_wait(tries[i], waits[i])[0]

    limit = threshold.value if threshold is not None else math.inf

    def regressed(bps: float, base: float = base_bps) -> bool:
        return judged and slowdown(bps, base) * 100 > limit

    def below_floor(bps: float) -> bool:
        return floor is not None and bps / KIB < floor.value

    def clock(i: int) -> float:
        return tries[i].bytes_per_second

    if again is not None:
        while len(tries) <= confirm and (regressed(figure(-1)) or below_floor(clock(-1))):
            m, w = meter(again)
            tries.append(m)
            waits.append(w)
    # a floor is a promise about what was achieved: it takes the figure by the clock, as
    # the table shows it, and the best try is one that keeps it (any try, when none does);
    # the figure without the wait for a CPU ranks the tries only against a baseline
    keeping = [i for i in range(len(tries)) if not below_floor(clock(i))]
    best = max(keeping or range(len(tries)), key=figure if judged else clock)
    kept = tries[best]
    v = Verdict(kept, tries, waits, figure(best), baseline, base_bps, threshold, floor,
                not_judged=not_judged, tries_text=_tries_text(tries, waits, best, judged))
    if baseline is None:
        v.status = NEW
    elif not_judged:
        v.status = NOT_JUDGED
    elif regressed(v.figure):
        assert threshold is not None
        fastest = without_wait(kept, waits[best])[1]
        if fastest < base_slowest:
            v.status = REGRESSION
            correction = _correction_text(_waited(kept.bytes_per_second, v.figure),
                                          _waited(baseline.bytes_per_second, base_bps))
            v.failures.append(
                f"regression: {describe(kept)}: {_kib(kept.bytes_per_second)} KiB/s now, "
                f"baseline {_kib(baseline.bytes_per_second)} KiB/s, change {_pct(v.change)}"
                f"{correction}, threshold {threshold.value:g}% ({threshold.source}); "
                f"{v.tries_text}; its fastest round {_kib(fastest)} KiB/s is below the "
                f"baseline's slowest round {_kib(base_slowest)} KiB/s"
                + (" (each without its wait for a CPU)" if correction else ""))
        else:
            v.status = NOISE
    elif regressed(kept.bytes_per_second, baseline.bytes_per_second):
        v.status = BUSY  # slower by the clock, not once the waits for a CPU are taken out
    elif any(regressed(figure(i)) for i in range(len(tries))):
        v.status = RECOVERED
    if below_floor(kept.bytes_per_second):
        assert floor is not None
        waited = _waited(kept.bytes_per_second, v.figure)
        v.failures.append(
            f"below floor: {describe(kept)}: {_kib(kept.bytes_per_second)} KiB/s"
            + (f" (by the clock, as the table shows, although {waited} of it was a wait for "
               "a CPU)" if waited else "")
            + f", floor {floor.value:.2f} KiB/s ({floor.source}); {v.tries_text}")
    return v


# -- the pytest side ---------------------------------------------------------------------------


def _lines_per_group(keys: Iterable[CellKey], what: str) -> list[str]:
    """``  sha256 openssl digest, sizes 16, 64: WHAT`` per (algorithm, plugin, direction)."""
    groups: dict[tuple[str, str, str], list[int]] = {}
    for alg, plugin, size, direction in keys:
        groups.setdefault((alg, plugin, direction), []).append(size)
    return [f"  {alg} {plugin} {direction}, size{'s' if len(sizes) > 1 else ''} "
            f"{', '.join(str(s) for s in sorted(set(sizes)))}: {what}"
            for (alg, plugin, direction), sizes in groups.items()]


class Gate:
    """The regression gate of one pytest run: options, baseline, verdicts, the saved file.

    ``registry`` returns the run's crypto plugin registry (built only when needed).
    """

    def __init__(self, config: pytest.Config, registry: Callable[[], Any]) -> None:
        self.config = config
        self._registry = registry
        self.save_path: Path | None = None
        self.baseline: ResultsFile | None = None
        self.default_threshold = Rule(None, None, None, DEFAULT_THRESHOLD, "default")
        self.thresholds = Rules()
        self.floors = Rules()
        self.confirm = DEFAULT_CONFIRM
        self.allow_missing = False
        self.require_same_machine = False
        self.results: list[Result] = []
        self.verdicts: dict[CellKey, Verdict] = {}
        self.gone: dict[CellKey, str] = {}  # baseline cells skipped now: the skip reason
        self.seen: set[tuple[str, str, int, str]] = set()  # baseline keys attempted this run
        self.saved: str = ""
        self.compare_only: list[str] = []
        self._result_at: dict[tuple[tuple[str, str, int, str], str | None], int] = {}
        self._index: dict[tuple[str, str, int, str], list[Result]] = {}
        self._canonical: dict[str, str] = {}
        self._versions: dict[str, str] = {}
        self._machine_diffs: list[str] | None = None
        self._meter = WaitMeter()

    # -- settings ------------------------------------------------------------------------

    def _path(self, text: str) -> Path:
        return self.config.invocation_params.dir / text

    def _ini_where(self, name: str) -> str:
        return settings.ini_source(name, self.config.inipath,
                                   self.config.getoption("override_ini", None))

    def one_path(self, name: str, why: str) -> str | None:
        """The one PATH of option ``name`` (None: not given), as typed.

        The option collects every value; the same file given twice is that
        file, two different ones a :class:`SettingsError` naming them and
        ``why`` only one is taken.  An empty PATH is an error too.
        """
        option = f"--{name.replace('_', '-')}"
        given = self.config.getoption(name)
        typed = [given] if isinstance(given, str) else [str(v) for v in given or ()]
        if any(not text.strip() for text in typed):
            raise SettingsError(f"{option}: the PATH is empty; give a file name")
        files = {os.path.abspath(self._path(text)): text for text in typed}
        if len(files) > 1:
            named = ", ".join(repr(text) for text in dict.fromkeys(typed))
            raise SettingsError(f"{option} was given more than once, with different files "
                                f"({named}): {why}; give it once")
        return typed[0] if typed else None

    def check(self) -> None:
        """Read and check every gate option and the baseline (raises :class:`SettingsError`)."""
        opt, ini = self.config.getoption, self.config.getini
        save = self.one_path("qcrypto_save", "a run writes one results file")
        compare = self.one_path("qcrypto_compare", "only one baseline file is supported")
        if save:
            self.save_path = self._path(save)
            problem = results.check_writable(self.save_path)
            if problem:
                raise SettingsError(f"--qcrypto-save: cannot write {save}: {problem}")
        if opt("qcrypto_threshold") is not None:
            self.default_threshold = Rule(None, None, None, parse_percent(
                opt("qcrypto_threshold"), "--qcrypto-threshold"), "--qcrypto-threshold")
        elif ini("qcrypto_threshold"):
            where = self._ini_where("qcrypto_threshold")
            self.default_threshold = Rule(None, None, None,
                                          parse_percent(ini("qcrypto_threshold"), where), where)
        self.thresholds = Rules.parse(ini("qcrypto_thresholds"),
                                      self._ini_where("qcrypto_thresholds"), parse_percent)
        self.floors = Rules.parse(ini("qcrypto_floors"), self._ini_where("qcrypto_floors"),
                                  parse_kib_per_s)
        confirm, where = opt("qcrypto_confirm"), "--qcrypto-confirm"
        if confirm is None and ini("qcrypto_confirm"):
            confirm, where = ini("qcrypto_confirm"), self._ini_where("qcrypto_confirm")
        if confirm is not None:
            self.confirm = parse_whole(confirm, where, 0, MAX_CONFIRM)
        #: options given on the command line that only a comparison (or a floor) uses
        self.compare_only = [f"--{n.replace('_', '-')}" for n in (
            "qcrypto_threshold", "qcrypto_confirm", "qcrypto_allow_missing",
            "qcrypto_require_same_machine") if opt(n) not in (None, False)]
        self.allow_missing = bool(opt("qcrypto_allow_missing") or ini("qcrypto_allow_missing"))
        self.require_same_machine = bool(opt("qcrypto_require_same_machine")
                                         or ini("qcrypto_require_same_machine"))
        if compare:
            try:
                baseline = results.load(self._path(compare), self.canonical)
            except results.ResultsError as exc:
                raise SettingsError(f"--qcrypto-compare: {exc}") from None
            if not baseline.complete:
                raise SettingsError(
                    f"--qcrypto-compare: {compare}: the run that wrote it did not finish "
                    "(\"complete\": false); save a complete run to compare against")
            if not baseline.results:
                raise SettingsError(
                    f"--qcrypto-compare: {compare}: no results (the run that wrote it measured "
                    "nothing, so every item would pass); save a run that measured the cells "
                    "to compare")
            self.baseline = baseline
            for r in baseline.results:
                self._index.setdefault(r.key, []).append(r)

    # -- helpers -------------------------------------------------------------------------

    def canonical(self, typed: str) -> str:
        """The canonical plugin name of a typed one (the typed name if it does not resolve)."""
        if typed not in self._canonical:
            try:
                self._canonical[typed] = self._registry().resolve(typed).canonical
            except Exception:
                self._canonical[typed] = typed
        return self._canonical[typed]

    def _version(self, typed: str) -> str:
        if typed not in self._versions:
            self._versions[typed] = results.plugin_entries(
                [typed], self._registry().resolve)[typed]["version"]
        return self._versions[typed]

    @property
    def machine_differences(self) -> list[str]:
        if self._machine_diffs is None:
            self._machine_diffs = (results.machine_differences(self.baseline.machine,
                                                               results.fingerprint())
                                   if self.baseline is not None else [])
        return self._machine_diffs

    def library_difference(self, typed: str, canonical: str) -> str:
        """``openssl: 'OpenSSL 3.0.2 ...' (baseline) vs '...' (now)``, or empty."""
        if self.baseline is None:
            return ""
        entry = self.baseline.plugin_entry(canonical)
        if entry is None or "version" not in entry:
            return ""
        now = self._version(typed)
        return "" if entry["version"] == now else \
            f"{typed}: {entry['version']!r} (baseline) vs {now!r} (now)"

    def _baseline_for(self, key: tuple[str, str, int, str], test: str | None) -> Result | None:
        found = self._index.get(key, [])
        for r in found:
            if r.test == test:
                return r
        return found[0] if found else None

    def _floor(self, m: Measurement, names: Sequence[str], item: pytest.Item | None) -> Rule | None:
        marker = item.get_closest_marker("qcrypto") if item is not None else None
        if marker is not None and "floor" in marker.kwargs:
            try:
                rules = marker_floors(marker.kwargs["floor"], "@pytest.mark.qcrypto(floor=...)")
            except SettingsError as exc:
                problem = str(exc)  # failed outside the handler: one message, not a chain
            else:
                problem = ""
            if problem:
                pytest.fail(problem, pytrace=False)
            rule = rules.pick(m.algorithm, names, m.size)
            if rule is not None:
                return rule
        return self.floors.pick(m.algorithm, names, m.size)

    # -- during the tests ----------------------------------------------------------------

    def begin(self) -> None:
        """A test item starts: its first measurement's wait for a CPU is counted from now."""
        self._meter.start()

    def judge(self, m: Measurement, again: Callable[[], Measurement] | None,
              item: pytest.Item | None) -> Verdict:
        """Judge one recorded measurement (inside the test); keep its best try for saving.

        Adds the item's user properties (``qcrypto_kib_per_s``,
        ``qcrypto_change_pct``, ...).  Call :meth:`enforce` after storing
        ``verdict.measurement``: it fails the test on a regression or a floor.
        """
        canonical = m.canonical_plugin or self.canonical(m.plugin)
        names = [m.plugin, canonical, m.plugin.partition(":")[0], canonical.partition(":")[0]]
        key = (m.algorithm, canonical, m.size, m.direction)
        test = item.nodeid if item is not None else None
        base = self._baseline_for(key, test) if self.baseline is not None else None
        threshold = None
        not_judged = ""
        if base is not None:
            self.seen.add(key)
            threshold = self.thresholds.pick(m.algorithm, names, m.size) or self.default_threshold
            jobs = m.jobs
            if base.jobs != jobs:  # a sum over processes is not comparable with one process
                not_judged = f"different jobs ({base.jobs} in the baseline, {jobs} now)"
            elif self.require_same_machine:
                diffs = [d.partition(":")[0] for d in self.machine_differences]
                if self.library_difference(m.plugin, canonical):
                    diffs.append(f"{m.plugin} version")
                if diffs:
                    not_judged = f"different machine ({', '.join(diffs)})"
        v = judge_tries(m, again, self.confirm, base, threshold, self._floor(m, names, item),
                        not_judged, first_wait=self._meter.share())
        if self.baseline is None and v.status == NEW:
            v.status = OK  # not comparing: "no baseline" would say nothing
        self._meter.start()  # the next measurement of this item is timed from here
        saved = Result.from_measurement(v.measurement, test, v.tries, v.wait)
        at = self._result_at.setdefault((saved.key, test), len(self.results))
        if at == len(self.results):
            self.results.append(saved)
        else:  # the same test measured the cell again: the later figure, as in the table
            self.results[at] = saved
        self.verdicts[(m.algorithm, m.plugin, m.size, m.direction)] = v
        if item is not None:
            self._properties(item, v)
        return v

    @staticmethod
    def _properties(item: pytest.Item, v: Verdict) -> None:
        m = v.measurement
        props = [("qcrypto_cell", f"{m.algorithm}:{m.plugin}:{m.size}:{m.direction}"),
                 ("qcrypto_kib_per_s", f"{m.kib_per_s:.2f}")]
        if v.baseline is not None:
            props += [("qcrypto_baseline_kib_per_s", f"{v.baseline.kib_per_s:.2f}"),
                      ("qcrypto_change_pct", _pct(v.change).rstrip("%"))]
            if v.threshold is not None:
                props.append(("qcrypto_threshold_pct", f"{v.threshold.value:g}"))
        if v.floor is not None:
            props.append(("qcrypto_floor_kib_per_s", f"{v.floor.value:.2f}"))
        status = "; ".join(f.partition(":")[0] for f in v.failures) or (
            f"not judged: {v.not_judged}" if v.not_judged else v.status)
        props += [("qcrypto_tries", str(len(v.tries))), ("qcrypto_verdict", status)]
        item.user_properties.extend(props)

    @staticmethod
    def enforce(v: Verdict) -> None:
        """Fail the current test (no traceback) when the verdict has failures."""
        if v.failed:
            pytest.fail(v.message, pytrace=False)

    def on_report(self, case: Any, report: pytest.TestReport) -> None:
        """A matrix or marker item's report: a baseline cell that is skipped now fails.

        The skip becomes a failure of the item (reported as a failed test, also
        when the skip happened in a fixture) unless missing cells are allowed.
        """
        if self.baseline is None or case is None or report.when not in ("setup", "call"):
            return
        alg = catalog.lookup(case.algorithm)
        if alg is None:
            return
        direction = "digest" if alg.kind == catalog.DIGEST else (
            "decrypt" if case.decrypt else "encrypt")
        key = (alg.name, self.canonical(case.plugin), case.size, direction)
        if key not in self._index:
            return
        self.seen.add(key)
        if not report.skipped:
            return
        reason = _skip_reason(report)
        cell = (alg.name, case.plugin, case.size, direction)
        self.gone[cell] = reason
        if self.allow_missing:
            return
        base = self._index[key][0]
        report.outcome = "failed"
        report.when = "call"  # a failed test, not an error, even when a fixture skipped
        report.longrepr = (
            f"missing: {alg.name} {case.plugin} {case.size} B {direction} is in the baseline "
            f"({base.kib_per_s:.2f} KiB/s) but was skipped now: {reason} "
            "(--qcrypto-allow-missing accepts this)")

    # -- the end of the run --------------------------------------------------------------

    def finish(self, session: pytest.Session, exitstatus: int, ran_to_end: bool = True) -> None:
        """Save the results file, if asked (from ``pytest_sessionfinish``).

        A run that measured nothing writes nothing (an empty file would pass
        every later comparison); a file that cannot be written is an error
        line and exit status 1.  The file says ``"complete": true`` only when
        ``ran_to_end`` (every benchmark item finished, no interrupt was seen:
        see :mod:`pytest_qcrypto.interrupts`) and the exit status and session
        agree; an incomplete run never replaces an existing file.
        """
        if self.save_path is None or hasattr(self.config, "workerinput"):
            return  # (a pytest-xdist worker: the controller saves)
        if not self.results:
            xdist = getattr(self.config.option, "numprocesses", None)
            why = ("benchmarks are not measured under pytest-xdist: run them with -n 0"
                   if xdist else "no benchmark item ran")
            self.saved = (f"qcrypto: nothing was measured ({why}): {self.save_path} not "
                          "written")
            return
        complete = (ran_to_end
                    and exitstatus not in (pytest.ExitCode.INTERRUPTED,
                                           pytest.ExitCode.INTERNAL_ERROR,
                                           pytest.ExitCode.USAGE_ERROR)
                    and not session.shouldstop and not session.shouldfail)
        typed = list(dict.fromkeys(r.plugin for r in self.results))
        try:
            resolve = self._registry().resolve if typed else None
            run_settings, state = self._run_state()
            doc = ResultsFile(
                results=self.results, machine=results.fingerprint(),
                plugins=results.plugin_entries(typed, resolve, self.results) if resolve else {},
                complete=complete, settings=run_settings, machine_state=state)
            for entry_typed, entry in doc.plugins.items():
                entry["drivers"] = sorted({r.driver for r in self.results
                                           if r.plugin == entry_typed and r.driver})
            target = results.save(self.save_path, doc)
        except OSError as exc:
            self.saved = (f"ERROR: qcrypto: could not save results to {self.save_path}: "
                          f"{exc.strerror or exc}")
            if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
            return
        n = plural(len(self.results), "result")
        if complete:
            self.saved = f"qcrypto: {n} saved to {target}"
        elif target != self.save_path:
            self.saved = (f"qcrypto: the run did not finish: {n} saved to {target} "
                          f"(\"complete\": false); {self.save_path} left untouched")
        else:
            self.saved = (f"qcrypto: the run did not finish: {n} saved to {target} "
                          "(\"complete\": false)")

    def _run_state(self) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """The run's min_time and rounds, and the machine state when measuring started."""
        run = self.config.pluginmanager.get_plugin("qcrypto-run")
        s = getattr(run, "settings", None)
        state = getattr(run, "machine_state", None)
        return ({"min_time_s": s.min_time, "rounds": s.rounds} if s is not None else {},
                state.as_dict() if hasattr(state, "as_dict") else None)

    def table_lines(self, table: Any) -> list[str]:
        """Under a results table: the change against the baseline per cell (compare mode).

        ``table`` has ``algorithm``, ``direction``, ``plugins`` (as typed) and ``sizes``.
        """
        if self.baseline is None:
            return []
        texts: dict[tuple[str, int], str] = {}
        used: set[str] = set()
        for p in table.plugins:
            for s in table.sizes:
                cell = (table.algorithm, p, s, table.direction)
                v = self.verdicts.get(cell)
                if v is not None and v.change is not None:
                    mark = MARKS.get(v.status, "")
                    if mark:
                        used.add(v.status)
                    texts[(p, s)] = f"{_pct(v.change)}{mark}"
                elif v is not None:
                    texts[(p, s)] = "new"
                elif cell in self.gone:
                    texts[(p, s)] = "missing"
                else:
                    texts[(p, s)] = "-"
        if all(t == "-" for t in texts.values()):
            return []
        label_w = max(len(p) for p in ("plugin", *table.plugins)) + 1
        cell_w = max(len(t) for t in (*texts.values(), *(str(s) for s in table.sizes))) + 2
        lines = [f"Change against baseline {self.baseline.path} (negative = slower):",
                 "plugin".ljust(label_w) + "".join(str(s).rjust(cell_w) for s in table.sizes)]
        for p in table.plugins:
            lines.append(p.ljust(label_w) + "".join(texts[(p, s)].rjust(cell_w)
                                                    for s in table.sizes))
        if BUSY in used:
            used.add(NOISE)
        lines += [f"  {MARKS[s]} {MARK_NOTES[s]}" for s in (REGRESSION, NOISE, NOT_JUDGED)
                  if s in used]
        return lines

    def summary_lines(self) -> list[str]:
        """After the tables: regressions, floors, differences, missing and new cells, the file."""
        lines: list[str] = []
        verdicts = list(self.verdicts.values())
        failed = [v for v in verdicts if v.failed]
        if self.baseline is not None:
            b = self.baseline
            lines.append(f"Regression gate: baseline {b.path} ({plural(len(b.results), 'result')}"
                         f"{', created ' + b.created if b.created else ''}), threshold "
                         f"{self.default_threshold.value:g}% unless an ini line says "
                         f"otherwise, "
                         f"{plural(self.confirm, 'confirmation try', 'confirmation tries')}")
        regressions = [v for v in failed if v.status == REGRESSION]
        if regressions:
            lines.append(f"regressions ({len(regressions)}):")
            lines += [f"  {v.failures[0]}" for v in regressions]
        floors = [f for v in failed for f in v.failures if f.startswith("below floor")]
        if floors:
            lines.append(f"below floor ({len(floors)}):")
            lines += [f"  {f}" for f in floors]
        if self.baseline is None:
            unused = [o for o in self.compare_only if o != "--qcrypto-confirm"
                      or not any(v.floor is not None for v in verdicts)]
            if unused:
                lines.append(f"qcrypto: {', '.join(unused)} had no effect: "
                             f"{'it applies' if len(unused) == 1 else 'they apply'} only with "
                             "--qcrypto-compare" + (" (or a floor)" if "--qcrypto-confirm"
                                                    in unused else ""))
            return lines + ([self.saved] if self.saved else [])
        for d in self.machine_differences:
            lines.append(f"machine differs from the baseline: {d}")
        libs = {self.library_difference(p, v.measurement.canonical_plugin or p)
                for (_, p, _, _), v in self.verdicts.items() if v.baseline is not None}
        lines += [f"library differs from the baseline: {d}" for d in sorted(libs) if d]
        for cell, v in self.verdicts.items():
            then, now = (v.baseline.driver if v.baseline else None), v.measurement.driver
            if v.baseline is not None and then != now:
                lines.append(f"driver changed: {describe(v.measurement)}: {then or 'unknown'} "
                             f"(baseline) vs {now or 'unknown'} (now)")
        reasons: dict[str, int] = {}
        for v in verdicts:
            if v.status == NOT_JUDGED:
                reasons[v.not_judged] = reasons.get(v.not_judged, 0) + 1
        lines += [f"not judged: {why}: {n} measurement{'s pass' if n > 1 else ' passes'} "
                  "unjudged" for why, n in reasons.items()]
        noisy = [v for v in verdicts if v.status == NOISE]
        lines += [f"within noise (not failed): {describe(v.measurement)}: change "
                  f"{_pct(v.change)} but rounds overlap the baseline's"
                  for v in noisy]
        lines += [f"machine busy (not failed): {describe(v.measurement)}: change "
                  f"{_pct(v.clock_change)} by the clock, {_pct(v.change)} "
                  f"without the time spent waiting for a CPU; {v.tries_text}"
                  for v in verdicts if v.status == BUSY]
        lines += [f"passed on a retry: {describe(v.measurement)}: {v.tries_text}"
                  for v in verdicts if v.status == RECOVERED]
        if self.gone:
            what = ("in the baseline, skipped now (allowed by --qcrypto-allow-missing)"
                    if self.allow_missing else "in the baseline, skipped now: failed")
            lines.append("missing cells:")
            lines += [f"  {a} {p} {d}, size {s}: {what}: {r}"
                      for (a, p, s, d), r in self.gone.items()]
        new = [k for k, v in self.verdicts.items() if v.status == NEW]
        if new:
            lines.append("no baseline entry (not judged):")
            lines += _lines_per_group(new, "new")
        not_run = [(r.algorithm, r.plugin, r.size, r.direction)
                   for r in self.baseline.results if r.key not in self.seen]
        if not_run:
            lines.append("in the baseline but not measured in this run:")
            lines += _lines_per_group(dict.fromkeys(not_run), "not run")
        return lines + ([self.saved] if self.saved else [])


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ").strip()
    return str(longrepr or "skipped").strip().splitlines()[-1]
