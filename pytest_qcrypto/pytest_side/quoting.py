"""The run's options for the forms crypto people quote (issue 26): ``--qcrypto-quick``,
``--qcrypto-clock``, ``--qcrypto-misalign``, ``--qcrypto-update-size``, the cpb unit's check,
what the results file saves of them and the notes under the tables that go with them (and
the note for each option that had no effect, :func:`unused_options`).  The
pytest side; the work is in :mod:`pytest_qcrypto.measure.clocks`, ``.cycles`` and ``.buffers``.

``--qcrypto-quick`` is a smoke test, as ``openssl speed -testmode`` and asv's ``--quick``:
every cell runs its known-answer checks, then one timed round of about :data:`QUICK_MIN_TIME`
seconds (calibration's last run is that round); a wrong answer or any other error fails
its cell and the run (exit 1).  Its figures say the cell works, not how fast it is: the
tables get a note saying so, and the run refuses to save or compare them
(``--qcrypto-save``, ``--qcrypto-history``, ``--qcrypto-compare``: a usage error), so that
no quick figure ever becomes a baseline.

A quick run leaves out what only serves precise figures, never a check: the reference
workload after each round (the drift rule's, :mod:`pytest_qcrypto.measure.reference`), and
the key pairs each cell and its checks would make afresh: it lends them from cell to cell
(:mod:`pytest_qcrypto.measure.reuse`, :func:`close_keys` at its end).
"""

from __future__ import annotations

from collections.abc import Sequence
import sys
from dataclasses import replace

import pytest

from pytest_qcrypto.algorithms.catalog import Algorithm
from pytest_qcrypto.algorithms.settings import Settings, SettingsError
from pytest_qcrypto.measure import buffers, clocks, cycles, limits, noise
from pytest_qcrypto.measure.reuse import KeyPairs
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.output.tables import Table
from pytest_qcrypto.pytest_side import options

#: Seconds of the one timed round of a quick run (calibration stops at this): 1 ms.
QUICK_MIN_TIME = 0.001
#: The note under the tables of a quick run.
QUICK_NOTE = ("qcrypto: quick run (--qcrypto-quick): every cell passed its known-answer "
              f"checks and was timed once, for about {QUICK_MIN_TIME * 1e3:g} ms; these "
              "figures show that it works, not how fast: not for quoting, never saved")
#: Options a quick run refuses: its figures must not become a results file or a verdict.
_NOT_QUICK = ("--qcrypto-save", "--qcrypto-history", "--qcrypto-compare", "--qcrypto-min-time",
              "--qcrypto-rounds", "--qcrypto-count", "--qcrypto-compare-target")


def read(config: pytest.Config, s: Settings) -> Settings:
    """``s`` with ``--qcrypto-misalign``, ``--qcrypto-update-size``, ``--qcrypto-clock`` and
    ``--qcrypto-quick`` (min-time :data:`QUICK_MIN_TIME`, one round) applied, and
    ``--qcrypto-unit=cpb`` checked (a cycle rate must be known).  ``SettingsError`` for a bad
    value, an option a quick run cannot take, and a shaped buffer (the tls grid's AAD,
    misalignment, update size) with counted instructions, whose child builds its own."""
    if config.getoption("qcrypto_misalign", None) is not None:
        s = replace(s, misalign=buffers.parse_misalign(config.getoption("qcrypto_misalign")))
    if config.getoption("qcrypto_update_size", None) is not None:
        s = replace(s, update_size=buffers.parse_update_size(
            config.getoption("qcrypto_update_size")))
    measure, where = options.given(config, "qcrypto_measure")
    shaped = "--qcrypto-size=tls" if s.aad else "--qcrypto-misalign" if s.misalign is not \
        None else "--qcrypto-update-size" if s.update_size else ""
    if shaped and str(measure or "time").strip().lower() == "instructions":
        raise SettingsError(f"{shaped} and counting instructions ({where}): choose one; "
                            "the counting child lays out its own buffers")
    if config.getoption("qcrypto_unit", None) == "cpb" and (why := cycles.problem()):
        raise SettingsError(why)
    clock = config.getoption("qcrypto_clock", None)
    if clock is not None:
        s = replace(s, clock=clocks.parse_clock(clock))
    if not config.getoption("qcrypto_quick", False):
        return s
    for flag in _NOT_QUICK:
        if config.getoption(flag.lstrip("-").replace("-", "_"), None) not in (None, [], False):
            why = ("its figures are never saved or compared" if flag.endswith(
                ("save", "history", "compare", "target")) else
                "a quick run times one round of about 1 ms")
            raise SettingsError(f"--qcrypto-quick and {flag}: choose one; {why} (a quick run "
                                "checks that every cell works)")
    return replace(s, min_time=QUICK_MIN_TIME, rounds=1, quick=True)


def close_keys(keys: KeyPairs | None, session: pytest.Session) -> None:
    """Close the key pairs a quick run kept (None: a normal run, which keeps none), each
    within ``limits.CLOSE_TIMEOUT`` seconds; a ``close()`` that raises or does not return
    fails the run (exit 1) with one line on standard error, as it fails a normal run's cell."""
    if keys is None:
        return
    from pytest_qcrypto.measure.bench import close_bounded

    error = keys.close(close_bounded)
    if error is not None:
        sys.stderr.write(f"qcrypto: closing a kept context failed: {limits.plugin_error(error)}\n")
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def notes(s: Settings, measurements: Sequence[Measurement] = ()) -> list[str]:
    """The notes under the tables (beside :func:`unused_options`'s): the quick run's
    (:data:`QUICK_NOTE`) when anything was measured, the clock of the figures and the cells
    whose CPU and wall time differ by more than 10%
    (:func:`pytest_qcrypto.measure.clocks.difference_lines`) but are not among the noisy
    figures' "CPU time under wall time" (:mod:`pytest_qcrypto.measure.noise`): one note a cell."""
    lines: list[str] = []
    if s.quick and measurements:
        lines.append(QUICK_NOTE)
    if s.update_size and any(str(m.direction) in ("digest", "mac") for m in measurements):
        lines.append(f"qcrypto: digests and MACs fed {s.update_size} bytes an update() "
                     f"(--qcrypto-update-size={s.update_size}), a fresh state each operation")
    if s.misalign is not None and measurements:
        lines.append(f"qcrypto: every buffer {s.misalign} bytes past a 64-byte boundary "
                     f"(--qcrypto-misalign={s.misalign}, as openssl speed -misalign)")
    under = noise.NOISE_KINDS[2]  # the noisy-figures note already says these, which way
    return lines + clocks.clock_lines(s.clock, measurements) + clocks.difference_lines(
        m for m in measurements if under not in dict(noise.noise_kinds(m)))


def cycles_lines(unit: str, measurements: Sequence[Measurement]) -> list[str]:
    """Under cpb tables: the rate the cycles come from (:mod:`pytest_qcrypto.measure.cycles`)."""
    rate = cycles.reference() if unit == "cpb" and measurements else None
    return [f"qcrypto: cycles = seconds x {rate.label}"] if rate is not None else []


def saved(unit: str, s: Settings) -> dict[str, object]:
    """What the results file's ``settings`` get: the cycle rate under cpb (``cycle_rate``), the
    misalignment (``misalign``, bytes), the AEADs' AAD (``aad_bytes``) and the digests' and
    MACs' bytes per update (``update_size``) when given."""
    rate = cycles.reference() if unit == "cpb" else None
    return {**({"cycle_rate": rate.as_dict()} if rate is not None else {}),
            **({"misalign": s.misalign} if s.misalign is not None else {}),
            **({"aad_bytes": s.aad} if s.aad else {}),
            **({"update_size": s.update_size} if s.update_size else {})}


def clocked(tables: list[Table], clock: str) -> list[Table]:
    """``tables`` with every figure by ``clock`` (:func:`pytest_qcrypto.measure.clocks.on_clock`)."""
    if clock == "wall":
        return tables
    return [replace(t, cells={k: replace(c, measurement=clocks.on_clock(c.measurement, clock))
                              if c.measurement is not None else c for k, c in t.cells.items()})
            for t in tables]


def _kinds_of(algorithms: Sequence[Algorithm]) -> str:
    """``digests and signatures``, ``KDFs``: the kinds of ``algorithms`` in the plural, in order."""
    words = list(dict.fromkeys(a.rules.word + ("" if a.rules.word.endswith("encryption")
                                                else "s") for a in algorithms))
    return " and ".join(words) if len(words) < 3 else f"{', '.join(words[:-1])} and {words[-1]}"


def unused_options(s: Settings, size_given: bool = False, unit: str | None = None) -> list[str]:
    """A note for each option that had no effect on what was measured, naming the kinds:
    ``--qcrypto-decrypt`` or ``--qcrypto-roundtrip`` where no algorithm with a buffer size
    has that direction (the kinds without a size measure each of their operations anyway);
    ``--qcrypto-size`` (``size_given``: from the command line or the ini file) where no
    algorithm has a buffer size; ``--qcrypto-unit`` (``unit``: as given, None when not)
    where a kind's tables are in ops/s whatever it says (cpb is not: cycles per operation)."""
    algs = s.algorithms
    notes = []
    if (s.decrypt or s.roundtrip) and not any(a.rules.sized and a.can_decrypt for a in algs):
        which = [a for a in algs if not (a.rules.sized and a.can_decrypt)]
        if s.roundtrip:
            notes.append(f"qcrypto: --qcrypto-roundtrip had no effect: {_kinds_of(which)} have "
                         "no round trip (it times ciphers and AEADs encrypting then decrypting)")
        else:
            notes.append(f"qcrypto: --qcrypto-decrypt had no effect: {_kinds_of(which)} have no "
                         "decrypt direction (it times ciphers and AEADs decrypting)")
    sizeless = [a for a in algs if not a.rules.sized]
    if size_given and algs and len(sizeless) == len(algs):
        notes.append(f"qcrypto: --qcrypto-size had no effect: {_kinds_of(sizeless)} have no "
                     "buffer size (one cell per operation)")
    if s.update_size and algs and not any(a.kind in buffers.PIECEWISE for a in algs):
        notes.append("qcrypto: --qcrypto-update-size had no effect: it feeds digests and MACs "
                     f"in pieces, not {_kinds_of(algs)}")
    if unit is not None and unit not in ("ops/s", "cpb") and sizeless:
        notes.append(f"qcrypto: --qcrypto-unit={unit} had no effect on the tables of "
                     f"{_kinds_of(sizeless)}: they are in operations per second (ops/s)")
    return notes
