"""Every ``--qcrypto-*`` option and ``qcrypto_*`` ini key, in one table (:data:`OPTIONS`).

Each :class:`Option` names its flag, its ini key (the default when the flag is not given), the
function that reads its value, its default, help, action and metavar.  :func:`add_options`
declares them all; :func:`given` reads a value with its ini fallback and says where it came
from (``--qcrypto-min-time``, ``qcrypto_min_time in pytest.ini``, ``-o qcrypto_min_time``).
An :class:`Option` and the lazy readers are in :mod:`.option_model`.
Every pytest run imports this table, so it imports nothing of the package when loaded: readers
import their module on first use, and help texts whose choices come from the registries (units,
layouts, plot suffixes: :mod:`pytest_qcrypto.output.render`) are built only when pytest may show
its help.  The hidden ``--qcrypto-command`` is set by the ``qcrypto`` command: messages then
send the reader to ``qcrypto list`` rather than ``pytest --qcrypto-list`` (:func:`for_command`).
This is the pytest side: it imports pytest.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from pytest_qcrypto.pytest_side.option_model import Option, _module, _reader

if TYPE_CHECKING:
    from pytest_qcrypto.algorithms import catalog


def _settings() -> Any:
    return _module("algorithms.settings")


def _gate() -> Any:
    return _module("gate.verdicts")


def _render() -> Any:
    return _module("output.render")


#: The option group of ``pytest --help``.
GROUP = ("qcrypto", "crypto speed benchmarks (pytest-qcrypto)")
#: What ``--qcrypto-command`` is set to by the ``qcrypto`` command.
QCRYPTO_COMMAND = "qcrypto"
#: The list hint of messages under the ``qcrypto`` command (see :data:`settings.LIST_HINT`).
COMMAND_LIST_HINT = "(see qcrypto list)"
#: What ``--qcrypto-command`` is set to by the ``cryptotest`` command, and the advice of notes
#: that names an engine option it sets itself, in its own words (a count it refuses as an
#: option is its positional ``count``).
CRYPTOTEST_COMMAND = "cryptotest"
CRYPTOTEST_WORDS = {"raise --qcrypto-count": "raise the count argument"}


def _choices(names: list[str] | tuple[str, ...], last: str = "or") -> str:
    """``a, b, c or d``."""
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} {last} {names[-1]}"


def _unit_help() -> str:
    return (f"unit of the table cells: {', '.join(_render().unit_choices())}. KiB and MiB are "
            f"1024-based, kB and MB 1000-based. Default: {_render().DEFAULT_UNIT}.")


def _format_help() -> str:
    return _render().format_help()  # every registered layout, with its help


def _plot_help() -> str:
    suffixes = [s for s in _render().PLOT_SUFFIXES if s != ".html"]
    html = ", or a self-contained .html" if ".html" in _render().PLOT_SUFFIXES else ""
    return (f"also plot throughput against buffer size to PATH ({', '.join(suffixes)}{html}, "
            "by its suffix; repeatable: every PATH is written); needs matplotlib: pip "
            "install matplotlib (or, from a clone, pip install '.[plot]').")


def _timeout_help() -> str:
    limits = _module("measure.limits")
    return ("fail a measurement (known-answer check and timed rounds) that takes longer than "
            f"this and go on with the next item (default {limits.DEFAULT_TIMEOUT:g}, or more "
            f"when --qcrypto-min-time x --qcrypto-rounds needs it; '{limits.OFF}': no limit).")


def _digests(text: Any, where: str) -> list[catalog.Algorithm]:
    return _settings().parse_algorithms(text, (_module("algorithms.catalog").DIGEST,), where)


def _ciphers(text: Any, where: str) -> list[catalog.Algorithm]:
    catalog = _module("algorithms.catalog")
    return _settings().parse_algorithms(text, (catalog.CIPHER, catalog.AEAD), where)


def _macs(text: Any, where: str) -> list[catalog.Algorithm]:
    return _settings().parse_algorithms(text, (_module("algorithms.catalog").MAC,), where)


def _pkeys(text: Any, where: str) -> list[catalog.Algorithm]:
    return _settings().parse_algorithms(text, _module("algorithms.catalog").OPTION_GROUPS["pkey"],
                                      where)


def _kdfs(text: Any, where: str) -> list[catalog.Algorithm]:
    return _settings().parse_algorithms(text, _module("algorithms.catalog").OPTION_GROUPS["kdf"],
                                      where)


#: What reads each selecting option's names, by its word (``--qcrypto-pkey``: ``pkey``).
ALGORITHM_PARSERS: dict[str, Callable[[Any, str], list[catalog.Algorithm]]] = {
    "digest": _digests, "cipher": _ciphers, "mac": _macs, "pkey": _pkeys, "kdf": _kdfs}


def _confirm(text: Any, where: str) -> int:
    return _gate().parse_whole(text, where, 0, _gate().MAX_CONFIRM)


#: Every option and ini key, in the order of ``pytest --help``.
OPTIONS: tuple[Option, ...] = (
    Option("--qcrypto-digest", action="append", metavar="NAME", default=[], parse=_digests,
           help="measure this digest (repeatable, comma lists allowed), e.g. sha256. 'all': "
                "every digest the chosen plugins support. Without test paths, only the speed "
                "matrix runs."),
    Option("--qcrypto-cipher", action="append", metavar="NAME", default=[], parse=_ciphers,
           help="measure this cipher or AEAD (repeatable, comma lists allowed), e.g. "
                "aes-128-cbc,chacha20-poly1305; 'all': every one the chosen plugins support."),
    Option("--qcrypto-mac", action="append", metavar="NAME", default=[], parse=_macs,
           help="measure this MAC (repeatable, comma lists allowed), e.g. hmac-sha256, "
                "cmac-aes-128, poly1305; 'all': every one the chosen plugins support."),
    Option("--qcrypto-pkey", action="append", metavar="NAME", default=[], parse=_pkeys,
           help="measure this signature, key agreement, KEM or RSA encryption (repeatable, "
                "comma lists allowed), e.g. ed25519,ecdsa-p256,rsa2048,x25519,ml-kem-768; every "
                "operation (sign and verify, keygen and derive, ...) in ops/s, without buffer "
                "sizes; 'all': every one the chosen plugins support."),
    Option("--qcrypto-kdf", action="append", metavar="NAME", default=[], parse=_kdfs,
           help="measure this KDF or password hash (repeatable, comma lists allowed), its "
                "parameters in its name: pbkdf2-sha256 (-i600000), scrypt (-n16384-r8-p1), "
                "argon2id (-m65536-t3-p4), bcrypt (-c12), hkdf-sha256, e.g. scrypt-n1024; "
                "derivations per second; 'all': every one the chosen plugins support."),
    # checked against the registry of crypto plugins (QcryptoRun.selections)
    Option("--qcrypto-plugin", action="append", metavar="NAME", default=[],
           ini="qcrypto_plugins", ini_type="args",
           ini_help="default crypto plugins (like --qcrypto-plugin).",
           help=lambda: f"crypto plugin to measure (repeatable, at most "
                f"{_settings().MAX_PLUGINS}, table rows in this order): openssl, pycryptodome, "
                "hashlib, ... Default: the first available of "
                f"{', '.join(_module('backends').default_order())}; when only public-key algorithms "
                "and KDFs are asked for, every available plugin that has one of them."),
    Option("--qcrypto-size", action="append", metavar="BYTES", default=[],
           ini="qcrypto_sizes", ini_type="args", parse=_reader("algorithms.settings", "parse_sizes"),
           ini_help="default buffer sizes in bytes (like --qcrypto-size).",
           help=lambda: "buffer size in bytes (repeatable, comma lists allowed), or a named "
                f"grid: {_module('algorithms.size_grids').choices()} (qnx's default sizes, "
                "openssl speed's, its -aead sizes with a 13-byte AAD for AEADs, SUPERCOP's "
                "small lengths; a size an algorithm cannot take is then skipped). Default: "
                f"{','.join(map(str, _settings().DEFAULT_SIZES))}."),
    Option("--qcrypto-min-time", metavar="SECONDS", ini="qcrypto_min_time",
           parse=_reader("algorithms.settings", "parse_min_time"), ini_help="default --qcrypto-min-time, seconds.",
           help=lambda: "the doubling loop stops once a run takes this long (default "
                f"{_settings().DEFAULT_MIN_TIME:g})."),
    Option("--qcrypto-rounds", metavar="N", ini="qcrypto_rounds", parse=_reader("algorithms.settings", "parse_rounds"),
           ini_help="default --qcrypto-rounds.",
           help=lambda: f"timed rounds per measurement; the median is reported (default {_settings().DEFAULT_ROUNDS}; "
                "when not given (an explicit 3 times all three), in one thread, in a run that neither saves nor compares, "
                "the last is timed only when the first two differ by more than 2%%: it could not move the figure by more than 1%%)."),
    Option("--qcrypto-clock", metavar="CLOCK", parse=_reader("measure.clocks", "parse_clock"),
           help="the clock of the tables' figures: wall (default), the elapsed time, or cpu "
                "(user+system CPU seconds of the measuring process, as openssl speed without "
                "-elapsed).  Saved files keep both; the gate judges wall time.  Either way a "
                "note lists cells whose two clocks differ by more than 10%%, saying which way."),
    Option("--qcrypto-count", metavar="N", ini="qcrypto_count", parse=_reader("algorithms.settings", "parse_count"),
           ini_help="default --qcrypto-count.",
           help="run exactly N iterations in every round instead of calibrating (FreeBSD "
                "cryptotest's count; --qcrypto-min-time then has no effect); a round under "
                "1 ms is noted as noisy. With --qcrypto-jobs each process runs N."),
    Option("--qcrypto-quick", action="store_true", default=False,
           help="a smoke test, as openssl speed -testmode: every cell runs its known-answer "
                "checks and one timed round of about 1 ms; any error fails the run.  The "
                "figures are marked quick and never saved or compared (not with "
                "--qcrypto-save, -history, -compare, -min-time, -rounds or -count)."),
    Option("--qcrypto-misalign", metavar="N", parse=_reader("measure.buffers", "parse_misalign"),
           help="place every input and output buffer N bytes (0 to 63) past a 64-byte "
                "boundary, as openssl speed -misalign N, to find slow unaligned paths "
                "(default: wherever Python put them); saved with the results.  A plugin whose "
                "timed loop cannot take placed buffers (the kernel plugins) is skipped."),
    Option("--qcrypto-update-size", metavar="BYTES",
           parse=_reader("measure.buffers", "parse_update_size"),
           help="feed each digest and MAC buffer in BYTES-byte update() calls (the last one "
                "shorter), a fresh state each operation, as the kernel's tcrypt varies the "
                "bytes per update (default: the whole buffer in one update()); saved with the "
                "results.  Other kinds ignore it."),
    Option("--qcrypto-decrypt", action="store_true", default=False,
           help="time decryption instead of encryption."),
    Option("--qcrypto-roundtrip", action="store_true", default=False,
           help="time ciphers and AEADs doing one encryption then one decryption per "
                "iteration, as FreeBSD cryptotest does; both count (2 operations an "
                "iteration); tables and saved results name the direction roundtrip."),
    Option("--qcrypto-check-roundtrip", action="store_true", default=False,
           help="with --qcrypto-roundtrip: check every iteration inside the timed loop (the "
                "ciphertext differs from the plaintext and decrypts back to it), slower, as "
                "cryptotest -c."),
    Option("--qcrypto-seed", metavar="N", parse=_reader("algorithms.settings", "parse_seed"),
           help="seed for keys and data, a whole number from -2**63 to 2**63-1 (default: fresh "
                "random bytes each run)."),
    # parse_timeout(text, min_time, rounds, where): the run's min-time and rounds bound it
    Option("--qcrypto-timeout", metavar="SECONDS", ini="qcrypto_timeout",
           parse=_reader("measure.limits", "parse_timeout"), ini_help="default --qcrypto-timeout, seconds.",
           help=_timeout_help),
    Option("--qcrypto-isolate", action="store_true", default=False, parse=_reader("measure.limits", "check_isolate"),
           help="run each measurement in a child process that is killed on timeout: also "
                "stops plugins stuck in the kernel or crashing (POSIX only)."),
    Option("--qcrypto-list", action="store_true", default=False,
           help="list crypto plugins, their availability, libraries and algorithms, then exit."),
    # collected as lists: a second, different --qcrypto-save is an error rather than
    # silently replacing the first (gate_plugin.one_path); several --qcrypto-compare
    # files are joined into one baseline (gate_plugin.paths, compare.join)
    Option("--qcrypto-save", action="append", metavar="PATH",
           help="write every measurement of the run to PATH as JSON (written atomically, through a symbolic link to its "
                "target; an interrupted run writes PATH.partial if PATH exists; a run that measured nothing writes nothing).  "
                "One PATH per run.  Saving or comparing, cells with a size take at least 25 rounds (more with --qcrypto-rounds) "
                "of at most 10 ms, in turn over at least 8 s (at the default min-time), so that each samples the machine's drift."),
    Option("--qcrypto-history", action="append", metavar="DIR",
           help="also add the run's results file to the history folder DIR (created if "
                "missing), named by its time, git commit and dirty flag; read it with qcrypto "
                "history DIR.  A run that did not finish is not added."),
    Option("--qcrypto-compare", action="append", metavar="PATH",
           help="compare every measurement with the same cell of the results file PATH; a "
                "regression beyond the threshold fails that test, and so does a run in which "
                "no cell had a baseline entry.  Give it once per file to join several "
                "(sharded) baselines; a cell of one test may be in one of them only."),
    Option("--qcrypto-threshold", metavar="PCT", ini="qcrypto_threshold",
           parse=_reader("gate.verdicts", "parse_percent"),
           ini_help="default regression threshold in percent (like --qcrypto-threshold).",
           help=lambda: "slowdown that counts as a regression, e.g. 10%% or 10 (default "
                f"{_gate().DEFAULT_THRESHOLD:g}%%; ini qcrypto_thresholds refines it per "
                "algorithm:plugin:size); a positive number: 5%% allows 5%% slower.  Only with "
                "--qcrypto-compare."),
    Option(None, ini="qcrypto_thresholds", ini_type="linelist",
           parse=_reader("gate.verdicts", "parse_percent"),
           help="per-cell thresholds, lines 'ALGORITHM[:PLUGIN[:SIZE]] = PCT', * is a "
                "wildcard; the most specific line wins, ties go to the later line."),
    Option(None, ini="qcrypto_floors", ini_type="linelist",
           parse=_reader("gate.verdicts", "parse_kib_per_s"),
           help="minimum KiB/s per cell, lines 'ALGORITHM[:PLUGIN[:SIZE]] = KIB_PER_S'; the "
                "kinds without a buffer size (--qcrypto-pkey, --qcrypto-kdf) in ops/s, their "
                "operation in place of the size: 'ed25519:openssl:sign = 5000'."),
    Option("--qcrypto-confirm", metavar="N", ini="qcrypto_confirm", parse=_confirm,
           ini_help="default --qcrypto-confirm.",
           help=lambda: "measure a regressed or below-floor cell up to N more times before "
                f"failing it; the best try counts (default {_gate().DEFAULT_CONFIRM}).  Only with "
                "--qcrypto-compare or a floor."),
    Option("--qcrypto-confirm-pause", metavar="SECONDS", ini="qcrypto_confirm_pause",
           parse=_reader("gate.rules", "parse_pause"),
           ini_help="default --qcrypto-confirm-pause, seconds.",
           help=lambda: "wait this long before each confirmation try, so that it samples "
                "another phase of a shared machine's speed drift (default "
                f"{_module('measure.reference').DEFAULT_PAUSE_S:g}; 0 to 60).  Only with "
                "--qcrypto-compare."),
    Option("--qcrypto-allow-missing", action="store_true", default=False,
           ini="qcrypto_allow_missing", ini_type="bool",
           ini_help="like --qcrypto-allow-missing.",
           help="a baseline cell that is skipped now is a summary line, not a failure (with "
                "--qcrypto-compare)."),
    Option("--qcrypto-require-same-machine", action="store_true", default=False,
           ini="qcrypto_require_same_machine", ini_type="bool",
           ini_help="like --qcrypto-require-same-machine.",
           help="do not judge against a baseline from another machine or other library "
                "versions (such items pass, the summary says why, and a run that judged no cell "
                "fails; with --qcrypto-compare)."),
    Option("--qcrypto-max-speedup", metavar="X", ini="qcrypto_max_speedup",
           parse=_reader("gate.rules", "parse_speedup"),
           ini_help="default --qcrypto-max-speedup.",
           help=lambda: "a cell more than X times as fast as its baseline (3x or 3; default "
                f"{_gate().DEFAULT_MAX_SPEEDUP:g}x) is listed as a suspicious speed-up: the "
                "baseline or the measurement is likely broken.  Only with --qcrypto-compare."),
    Option("--qcrypto-strict", action="store_true", default=False, ini="qcrypto_strict",
           ini_type="bool", ini_help="like --qcrypto-strict.",
           help="fail a cell whose speed-up is beyond --qcrypto-max-speedup (without it, a "
                "summary line).  Only with --qcrypto-compare."),
    Option("--qcrypto-unit", metavar="UNIT", help=_unit_help),
    Option("--qcrypto-format", metavar="FORMAT", help=_format_help),
    Option("--qcrypto-plot", action="append", metavar="PATH", help=_plot_help),
    Option("--qcrypto-output", metavar="PATH", help="write the tables, in the layout of "
           "--qcrypto-format, to PATH (atomically) instead of the terminal; notes stay there."),
    Option("--qcrypto-model", action="store_true", default=False,
           help="under the tables, where the time goes: for each algorithm and plugin measured "
                "at 3 or more sizes, its cost per call and per byte (a robust line fit), the "
                "throughput for large buffers and where another plugin is faster (also "
                "with -v)."),
    Option("--qcrypto-bare", action="store_true", default=False,
           help="write only the results to standard output and pytest's own output to "
                "standard error (what the qcrypto command does)."),
    Option("--qcrypto-jobs", metavar="N", parse=_reader("measure.jobs", "parse_jobs"),
           help="run each measurement in N processes at once and report their summed "
                "throughput (total bytes over the common wall time), like openssl speed "
                "-multi; 'auto' = one per CPU (default 1)."),
    Option("--qcrypto-threads", metavar="N", ini="qcrypto_threads",
           parse=_reader("measure.threads", "parse_threads"),
           ini_help="default --qcrypto-threads.",
           help="run each measurement in N threads of this process at once (each its own "
                "context; summed as --qcrypto-jobs), and measure it in one thread too: a line "
                "under the table says whether the library releases the GIL (default 1)."),
    Option("--qcrypto-measure", metavar="WHAT", ini="qcrypto_measure",
           parse=_reader("measure.counting", "parse_measure"), ini_help="default --qcrypto-measure.",
           help="time (default): the clock, in KiB/s; instructions: count the instructions "
                "one operation takes (valgrind's cachegrind, or the PMU where "
                "perf_event_open counts them), in instructions per byte or per operation, "
                "which neighbours and CPU frequency cannot move. Not for kernel plugins, "
                "targets, --qcrypto-jobs or --qcrypto-threads."),
    Option("--qcrypto-instructions-threshold", metavar="PCT",
           ini="qcrypto_instructions_threshold", parse=_reader("gate.verdicts", "parse_percent"),
           ini_help="default --qcrypto-instructions-threshold, percent.",
           help=lambda: "with --qcrypto-measure=instructions: percent more instructions per "
                "operation than the baseline's that fails a cell (default "
                f"{_module('gate.counted').DEFAULT_THRESHOLD:g}%%).  Only with --qcrypto-compare."),
    # checked by pytest_qcrypto.pytest_side.targets.read_options
    Option("--qcrypto-target", action="append", metavar="NAME=SPEC", default=[],
           ini="qcrypto_targets", ini_type="linelist",
           ini_help="targets to measure on, one NAME=SPEC a line (like --qcrypto-target).",
           help="also measure every plugin in another Python interpreter: SPEC is an execnet "
                "gateway spec (popen//python=.venv-old/bin/python, ssh=user@board//python="
                "python3) where the same pytest-qcrypto is installed; rows become PLUGIN@NAME, "
                "this process being PLUGIN@local (repeatable)."),
    Option("--qcrypto-interleave", action="store_true", default=False,
           help="with --qcrypto-target: measure each cell on all targets at once, their rounds "
                "taken in turn, and print each target's ratio against the first with a 95%% "
                "confidence interval from the paired rounds."),
    Option("--qcrypto-compare-target", metavar="NAME",
           help="with --qcrypto-target: judge every other target against target NAME's figure "
                "of the same cell, with the gate's thresholds, floors and retries, and fail "
                "the cells that regressed (an A/B gate without a stored baseline)."),
    Option("--qcrypto-command", metavar="NAME", hidden=True,
           help="the command that runs pytest, for messages (set by the qcrypto and "
                "cryptotest commands)."),
    Option("--qcrypto-skip-unsuited-sizes", action="store_true", default=False, hidden=True,
           help="a size an algorithm cannot take is a skipped cell with the reason, not a usage "
                "error (set by the cryptotest command, whose -z runs AES beside 8-byte DES)."),
)
#: The table by :attr:`Option.dest` and by ini key.
BY_NAME: dict[str, Option] = {**{o.ini: o for o in OPTIONS if o.ini},
                              **{o.dest: o for o in OPTIONS}}
#: The ini keys that take true or false (pytest's ``type="bool"``).
BOOL_INI = tuple(o.ini for o in OPTIONS if o.ini and o.ini_type == "bool")


def add_options(parser: pytest.Parser, help_wanted: bool = True) -> None:
    """Declare every option of :data:`OPTIONS` in its group, and every ini key.

    Help texts that come from the registries (layouts, units, defaults) are built only when
    ``help_wanted`` (:func:`help_wanted`): a run that never shows them imports nothing for them.
    """
    group = parser.getgroup(*GROUP)
    for o in OPTIONS:
        if o.flag is not None:
            shown = o.help_text() if help_wanted or not callable(o.help) else o.flag
            kwargs: dict[str, Any] = {"default": o.default,
                                      "help": argparse.SUPPRESS if o.hidden else shown}
            if o.action:
                kwargs["action"] = o.action
            if o.metavar:
                kwargs["metavar"] = o.metavar
            group.addoption(o.flag, **kwargs)
    for o in OPTIONS:
        if o.ini is not None:
            text = o.ini_help or (o.help_text() if help_wanted or not callable(o.help) else o.ini)
            parser.addini(o.ini, type=o.ini_type, default=o.ini_default,  # type: ignore[arg-type]
                          help=text)


def where(config: pytest.Config, ini: str) -> str:
    """``qcrypto_rounds in pytest.ini`` (or ``-o qcrypto_rounds``), for messages."""
    return _settings().ini_source(ini, config.inipath, config.getoption("override_ini", None))


def given(config: pytest.Config, name: str) -> tuple[Any, str]:
    """The value of option ``name`` (its dest, ``qcrypto_min_time``), else of its ini key
    (None if neither is set), and where it came from: ``--qcrypto-min-time`` or
    :func:`where` of the ini key.

    An ini list of pytest's ``args`` type (``16, 64`` arrives split at blanks)
    becomes one comma list, as the option takes it.  ``KeyError`` for a name
    not in :data:`OPTIONS`.
    """
    o = BY_NAME[name]
    if o.flag is not None:
        value = config.getoption(o.dest)
        if value not in (None, [], False):
            return value, o.flag
    if o.ini is None:
        return None, str(o.flag)
    value = config.getini(o.ini)
    if o.ini_type == "args" and isinstance(value, list) and value:
        value = [_settings().ini_list(value)]
    return value or None, where(config, o.ini)


def list_hint(config: pytest.Config) -> str:
    """Where messages send the reader for valid names: ``(see qcrypto list)`` under the
    ``qcrypto`` command (``--qcrypto-command qcrypto``), else :data:`settings.LIST_HINT`."""
    command = config.getoption("qcrypto_command", None)
    return COMMAND_LIST_HINT if command == QCRYPTO_COMMAND else _settings().LIST_HINT


def for_command(config: pytest.Config, message: str) -> str:
    """``message`` with :data:`settings.LIST_HINT` replaced by :func:`list_hint`, and under
    the ``cryptotest`` command, advice in its words (:data:`CRYPTOTEST_WORDS`)."""
    message = message.replace(_settings().LIST_HINT, list_hint(config))
    if config.getoption("qcrypto_command", None) == CRYPTOTEST_COMMAND:
        for engine, own in CRYPTOTEST_WORDS.items():
            message = message.replace(engine, own)
    return message


def check_ini_bools(config: pytest.Config) -> None:
    """Raise ``SettingsError`` for a true/false ini key (:data:`BOOL_INI`) with another value,
    naming the key, where it was set and the accepted words."""
    import re

    s = _settings()
    for name in BOOL_INI:
        try:
            config.getini(name)
        except (ValueError, TypeError, pytest.UsageError) as exc:
            found = re.search(r"invalid truth value ('.*')$", str(exc))
            raise s.SettingsError(s.bool_problem(
                where(config, name), found.group(1) if found else None)) from None
