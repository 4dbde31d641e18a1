"""The ``qcrypto`` command: QNX qcrypto's command line in front of the pytest plugin.

::

    qcrypto speed [-C cipher | -D digest | -M mac] [-P plugin]... [-v] [--qcrypto-OPTION ...]
    qcrypto list
    qcrypto report FILE... [--qcrypto-unit U] [--qcrypto-format F] [--qcrypto-plot PATH]...
    qcrypto compare BASE CURRENT [--qcrypto-threshold PCT] [--qcrypto-require-same-machine]
                    [-c INIFILE] [-o KEY=VALUE]... [--qcrypto-unit U] [--qcrypto-format F]
    qcrypto history DIR [--since DATE] [-k CELLS]... [--html PATH] [--qcrypto-threshold PCT]
                    [-c INIFILE] [-o KEY=VALUE]...

``speed`` and ``list`` turn their arguments into a pytest command line and run
:func:`pytest.main` in this process, so the speed matrix, its checks, its
tables and the exit code are the pytest plugin's (:data:`EXIT_CODES`: 0 every cell
measured, 1 a cell failed or, as in ``cryptotest``, nothing was measured (every cell
skipped: one line on standard error says why), 2 interrupted, 3 an internal error, 4 a usage error, also for
one this parser finds).  :mod:`pytest_qcrypto.pytest_side.progress` adds the progress line on
standard error, and ends an interrupted run with one line.  ``speed``
adds ``--qcrypto-bare``: the plugin then writes the results alone to standard
output and pytest's own lines (progress, failures) to standard error, which
:class:`pytest_qcrypto.pytest_side.progress.StderrTerminal` arranges; and the hidden
``--qcrypto-command=qcrypto``, so that messages point to ``qcrypto list``.
Every ``--qcrypto-*`` option of the pytest plugin passes through unchanged.

``report`` needs no pytest run: it joins saved results files
(``--qcrypto-save``) into one table per algorithm and direction.  ``compare``
judges a saved run against a saved baseline by the gate's rules, read from the
ini file a pytest run here would read (:mod:`pytest_qcrypto.commands.compare`): exit
1 on a regression, 4 for a bad file, else 0; nothing is measured again.  ``history``
reads a folder of runs (``--qcrypto-history``), finds the steps of every cell and judges
the latest by the same rules (:mod:`pytest_qcrypto.commands.history`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

import pytest

from pytest_qcrypto.algorithms import catalog
from pytest_qcrypto.output import render
from pytest_qcrypto.algorithms import settings
from pytest_qcrypto.algorithms.settings import SettingsError

USAGE_ERROR = int(pytest.ExitCode.USAGE_ERROR)
INTERRUPTED = int(pytest.ExitCode.INTERRUPTED)
#: Options of ``qcrypto speed`` that pass through to pytest start with this.
PASSTHROUGH = "--qcrypto-"
#: This command's name, passed to the pytest plugin as ``--qcrypto-command``.
COMMAND = "qcrypto"


#: The exit codes of every ``qcrypto`` command (pytest's, :class:`pytest.ExitCode`), for -h.
#: pytest's 5 (no tests collected) cannot come: ``speed`` always collects its matrix, and an
#: empty one is a usage error (4) before anything runs.
EXIT_CODES = ("Exit codes (pytest's): 0 done: every cell measured, nothing regressed; "
              "1 a cell failed or fell below its floor, a regression (--qcrypto-compare, "
              "compare), a file (results, plot) could not be written, or speed measured "
              "nothing (every cell skipped); 2 interrupted "
              "(Ctrl-C, SIGTERM, SIGHUP): the tables of what was measured, results saved marked "
              "incomplete; 3 an internal error of pytest or a plugin (a bug: INTERNALERROR "
              "lines say where); 4 a usage error (a bad option, algorithm, plugin or file).")


class UsageError(Exception):
    """A bad ``qcrypto`` command line; ``str()`` is the message."""


class _Parser(argparse.ArgumentParser):
    """argparse that raises :class:`UsageError` instead of exiting with status 2."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="qcrypto",
        description="Crypto speed benchmarks with QNX qcrypto's command line, run by the "
                    "pytest-qcrypto plugin.",
        epilog=EXIT_CODES)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    speed = sub.add_parser(
        "speed", help="measure algorithms in crypto plugins and print qcrypto's KiB/s tables",
        description="Measure one algorithm, or every one the chosen plugins support, in each "
                    "chosen crypto plugin at each buffer size, and print qcrypto's table.",
        epilog="Any --qcrypto-* option of the pytest plugin passes through, e.g. "
               "--qcrypto-size=16,4096, --qcrypto-min-time=0.5, --qcrypto-rounds=5, "
               "--qcrypto-decrypt, --qcrypto-unit=MB/s, --qcrypto-format="
               f"{'|'.join(f for f in render.FORMATS if f != render.DEFAULT_FORMAT)}, "
               "--qcrypto-plot=speed.png, --qcrypto-save=results.json, --qcrypto-compare="
               "base.json (see pytest --help).")
    which = speed.add_mutually_exclusive_group()
    which.add_argument("-C", dest="cipher", metavar="cipher", action="append",
                       help="the cipher or AEAD to measure, e.g. aes-128-cbc")
    which.add_argument("-D", dest="digest", metavar="digest", action="append",
                       help="the digest to measure, e.g. sha256")
    which.add_argument("-M", dest="mac", metavar="mac", action="append",
                       help="the MAC to measure, e.g. hmac-sha256, cmac-aes-128, poly1305")
    which.add_argument("-S", dest="pkey", metavar="pkey", action="append",
                       help="the signature, key agreement, KEM or RSA encryption to measure "
                            "(ops/s, every operation), e.g. ed25519, rsa2048, ml-kem-768")
    which.add_argument("-K", dest="kdf", metavar="kdf", action="append",
                       help="the KDF or password hash to measure (ops/s), its parameters in "
                            "its name, e.g. scrypt, pbkdf2-sha256-i100000, argon2id")
    speed.add_argument("-P", dest="plugins", metavar="plugin", action="append", default=[],
                       help=f"a crypto plugin (up to {settings.MAX_PLUGINS} times; rows in this "
                            "order). Default: the first available plugin; when only "
                            "signatures, KEMs and KDFs (-S, -K) are asked for, every "
                            "available plugin that has one of them (as pytest).")
    speed.add_argument("--target", dest="targets", metavar="NAME=SPEC", action="append",
                       default=[], help="also measure in another Python interpreter, an "
                       "execnet gateway spec (popen//python=PATH, ssh=user@host//python=python3"
                       "): rows PLUGIN@NAME (repeatable; --qcrypto-target)")
    speed.add_argument("--history", dest="history", metavar="DIR",
                       help="also add the run's results file to the history folder DIR "
                            "(--qcrypto-history; read it with qcrypto history DIR)")
    speed.add_argument("--measure", dest="measure", metavar="WHAT", choices=("time", "instructions"),
                       help="time (default, KiB/s) or instructions: count the instructions "
                            "of one operation (valgrind or the PMU; --qcrypto-measure)")
    speed.add_argument("--quick", dest="quick", action="store_true",
                       help="a smoke test: every cell's known answers and one round of about "
                            "1 ms; exit 1 on any error; nothing saved (--qcrypto-quick)")
    speed.add_argument("-v", dest="verbose", action="count", default=0,
                       help="print the counts and times per plugin before each table, and "
                            "the cell being measured on standard error")

    sub.add_parser("list", help="list crypto plugins, their libraries and algorithms",
                   description="List crypto plugins, their availability, libraries and "
                               "algorithms (pytest --qcrypto-list).")

    report = sub.add_parser(
        "report", help="join saved results files into one table per algorithm",
        description="Join results files saved with --qcrypto-save, from several machines or "
                    "runs, into one table per algorithm with a row per machine and plugin.")
    report.add_argument("files", metavar="FILE", nargs="+", help="a results file (JSON)")
    report.add_argument("--qcrypto-unit", metavar="UNIT", help="unit of the cells (see speed)")
    report.add_argument("--qcrypto-format", metavar="FORMAT", help=render.format_names())
    report.add_argument("--qcrypto-plot", metavar="PATH", action="append",
                        help="also plot to .png, .svg or .html (repeatable: every PATH)")
    report.add_argument("-v", "--verbose", action="store_true",
                        help="qcrypto's lines before each table: operations and seconds per cell")

    judge = sub.add_parser(
        "compare", help="judge a saved run against a saved baseline (exit 1 on a regression)",
        description="Judge every result of CURRENT against the same cell of BASE (both saved "
                    "with --qcrypto-save) by the rules of pytest --qcrypto-compare: thresholds, "
                    "floors and qcrypto_* keys of the ini file a pytest run here would read. "
                    "Nothing is measured again (no confirmation tries).",
        epilog="Exit codes: 0 nothing regressed, 1 a regression, a cell below its floor or "
               "no cell of CURRENT in BASE, 4 a bad file or option.")
    judge.add_argument("base", metavar="BASE", help="the baseline results file (JSON)")
    judge.add_argument("current", metavar="CURRENT", help="the results file to judge (JSON)")
    judge.add_argument("--qcrypto-threshold", metavar="PCT",
                       help="the slowdown that counts as a regression, e.g. 10%% (default: "
                            "ini qcrypto_threshold, else 10%%)")
    judge.add_argument("--qcrypto-instructions-threshold", metavar="PCT",
                       help="for files counted with --qcrypto-measure=instructions: percent "
                            "more instructions that fails a cell (default 1%%)")
    judge.add_argument("--qcrypto-require-same-machine", action="store_true",
                       help="do not judge cells whose baseline comes from another machine or "
                            "library version")
    judge.add_argument("--qcrypto-unit", metavar="UNIT", help="unit of the cells (see speed)")
    judge.add_argument("--qcrypto-format", metavar="FORMAT", help=render.format_names())
    judge.add_argument("-c", "--config-file", metavar="INIFILE",
                       help="the ini file to read (as pytest -c)")
    judge.add_argument("-o", "--override-ini", metavar="KEY=VALUE", action="append", default=[],
                       help="override an ini key (as pytest -o)")

    past = sub.add_parser(
        "history", help="the steps of every cell over a folder of runs (exit 1 on a regression)",
        description="Read every results file of DIR (added by --qcrypto-history=DIR), one "
                    "series per cell and machine; find the steps in each (a change that "
                    "lasts 3 runs or more) and list them with the commits and versions on "
                    "either side; judge each cell's latest step by the thresholds and floors "
                    "of pytest --qcrypto-compare (ini qcrypto_* keys).",
        epilog="Exit codes: 0 no cell fails; 1 a cell's latest step is a regression beyond "
               "its threshold, a cell is below its floor, or the page could not be written; "
               "4 a file could not be read (it is skipped and named), DIR has no run, or a "
               "bad option.")
    past.add_argument("folder", metavar="DIR", help="the history folder")
    past.add_argument("--since", metavar="DATE",
                      help="leave out runs created before DATE (2026-12-01 or "
                           "2026-12-01T08:00:00Z, UTC)")
    past.add_argument("-k", dest="cells", metavar="CELLS", action="append", default=[],
                      help="only the cells ALGORITHM[:PLUGIN[:SIZE]] (* a wildcard; "
                           "repeatable, comma lists allowed), e.g. sha256:openssl:4096")
    past.add_argument("--html", metavar="PATH",
                      help="also write one self-contained HTML page of every series")
    past.add_argument("--qcrypto-threshold", metavar="PCT",
                      help="the slowdown that counts as a regression, e.g. 10%% (default: "
                           "ini qcrypto_threshold, else 10%%)")
    past.add_argument("-c", "--config-file", metavar="INIFILE",
                      help="the ini file to read (as pytest -c)")
    past.add_argument("-o", "--override-ini", metavar="KEY=VALUE", action="append", default=[],
                      help="override an ini key (as pytest -o)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``qcrypto`` command; returns the exit code (pytest's codes)."""
    args = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        ns, extra = parser.parse_known_args(args)
        if ns.command is None:
            raise UsageError("qcrypto: give a command: speed, list, report, compare or "
                             "history (qcrypto -h)")
        if ns.command == "speed":
            pytest_args = speed_args(ns, extra)
        elif extra:
            raise UsageError(f"qcrypto {ns.command}: unrecognized arguments: {' '.join(extra)}")
    except UsageError as exc:
        sys.stderr.write(f"ERROR: {exc}\n")
        return USAGE_ERROR
    except SystemExit as exc:  # -h
        return exc.code if isinstance(exc.code, int) else 0
    try:
        return _run(ns, pytest_args if ns.command == "speed" else [])
    except KeyboardInterrupt:  # report, compare, history: one line, no traceback
        sys.stdout.flush()
        sys.stderr.write(f"\nqcrypto {ns.command}: interrupted\n")
        return INTERRUPTED


def _run(ns: argparse.Namespace, pytest_args: list[str]) -> int:
    """The command of ``ns``, its arguments checked; the exit code."""
    if ns.command == "speed":
        # messages then send the reader to `qcrypto list` (pytest_qcrypto.pytest_side.options.list_hint)
        from pytest_qcrypto.pytest_side import progress

        outcomes = progress.Outcomes()  # measured nothing: exit 1, as cryptotest
        code = progress.run([f"--qcrypto-command={COMMAND}", *pytest_args], [outcomes])
        return outcomes.exit_code(code, "qcrypto speed")
    if ns.command == "list":
        return int(pytest.main(["--qcrypto-list", "-p", "no:cacheprovider"]))
    if ns.command == "history":
        from pytest_qcrypto.commands import history

        ini = ([f"--config-file={ns.config_file}"] if ns.config_file else []) + \
            [f"--override-ini={o}" for o in ns.override_ini]
        return history.run(ns.folder, ns.since, ns.cells, ns.html, ns.qcrypto_threshold, ini)
    if ns.command == "compare":
        from pytest_qcrypto.commands import compare as compare_cli

        ini = ([f"--config-file={ns.config_file}"] if ns.config_file else []) + \
            [f"--override-ini={o}" for o in ns.override_ini]
        if ns.qcrypto_instructions_threshold is not None:
            ini.append(f"--qcrypto-instructions-threshold={ns.qcrypto_instructions_threshold}")
        return compare_cli.run(ns.base, ns.current, ns.qcrypto_threshold,
                               ns.qcrypto_require_same_machine, ns.qcrypto_unit,
                               ns.qcrypto_format, ini)
    return report(ns.files, ns.qcrypto_unit, ns.qcrypto_format, ns.qcrypto_plot,
                  verbose=ns.verbose)


#: The flags that choose algorithms, with their option's word (``-D``: ``--qcrypto-digest``).
_FLAGS = (("-C", "cipher"), ("-D", "digest"), ("-M", "mac"), ("-S", "pkey"), ("-K", "kdf"))
_EXAMPLE = {"-C": "aes-128-cbc", "-D": "sha256", "-M": "hmac-sha256", "-S": "ed25519",
            "-K": "scrypt"}


def _algorithm(name: str, kinds: tuple[str, ...], flag: str) -> str:
    """Check a -C / -D / -M name against the catalog, in this command's words."""
    try:
        settings.parse_algorithms([name], kinds, flag)
    except SettingsError as exc:
        raise UsageError(f"qcrypto speed: {exc}".replace("--qcrypto-digest", "-D")
                         .replace("--qcrypto-cipher", "-C")
                         .replace("--qcrypto-mac", "-M")
                         .replace("--qcrypto-pkey", "-S").replace("--qcrypto-kdf", "-K")
                         .replace("pytest --qcrypto-list or qcrypto list", "qcrypto list")
                         .replace("pytest --qcrypto-list", "qcrypto list")) from None
    return name


def check_passthrough(extra: Sequence[str]) -> None:
    """Only ``--qcrypto-*`` options (and the value after one) may pass through to pytest."""
    previous = ""
    for arg in extra:
        if arg.startswith(PASSTHROUGH):
            previous = arg
            continue
        takes_value = previous.startswith(PASSTHROUGH) and "=" not in previous
        if arg.startswith("-") and not _is_number(arg) or not takes_value:
            raise UsageError(f"qcrypto speed: unrecognized argument {settings.shown(arg)} "
                             f"(options of the pytest plugin pass through as "
                             f"{PASSTHROUGH}NAME, see qcrypto speed -h)")
        previous = ""


def _is_number(text: str) -> bool:
    """Is ``text`` (``-3``, ``-0.5``) a number, so the value of the option before it?

    A number as the options read one (:func:`settings.decimal_number`, and
    :func:`settings.is_whole_number` for a whole number of any length), or digits of
    another script (``-١٦``): those pass through too, for the option to refuse by name.
    """
    try:
        settings.decimal_number(text)
    except ValueError:
        return settings.is_whole_number(text) or text.lstrip("+-").isnumeric()
    return True


def speed_args(ns: argparse.Namespace, extra: Sequence[str]) -> list[str]:
    """The pytest command line of ``qcrypto speed``."""
    check_passthrough(extra)
    if len(ns.plugins) > settings.MAX_PLUGINS:
        raise UsageError(f"qcrypto speed: -P: at most {settings.MAX_PLUGINS} plugins, "
                         f"got {len(ns.plugins)}")
    # --assert=plain: no test file of the user's runs, so pytest need not rewrite the asserts
    # of every module of the installed pytest plugins (this one's, hypothesis's) at import
    args = ["--qcrypto-bare", "-p", "no:cacheprovider", "--assert=plain"]
    if getattr(ns, "measure", None):
        args.append(f"--qcrypto-measure={ns.measure}")
    if getattr(ns, "quick", False):
        args.append("--qcrypto-quick")
    args += ["-v"] * ns.verbose + ["--no-header"] if ns.verbose else ["-qq"]
    selecting = [f"--qcrypto-{option}" for option in catalog.OPTION_GROUPS]
    named = any(a.split("=")[0] in selecting for a in extra)
    given = [(flag, word) for flag, word in _FLAGS if getattr(ns, word, None) is not None]
    for flag, word in given:  # each name given (-D sha256 -D md5: both), none empty
        for name in getattr(ns, word):
            if not name.strip():
                raise UsageError(f"qcrypto speed: {flag}: an empty name; give one, e.g. "
                                 f"{flag} {_EXAMPLE[flag]}")
            args += [f"--qcrypto-{word}", _algorithm(name, catalog.OPTION_GROUPS[word], flag)]
    if not given and not named:  # as openssl speed without an algorithm: all the plugins support
        args += [a for option in selecting for a in (option, settings.ALL)]
    for plugin in ns.plugins:
        args += ["--qcrypto-plugin", plugin]
    args += [f"--qcrypto-target={target}" for target in ns.targets]
    if getattr(ns, "history", None) is not None:
        args.append(f"--qcrypto-history={ns.history}")
    return args + joined(extra)


def joined(extra: Sequence[str]) -> list[str]:
    """``--qcrypto-X VALUE`` as ``--qcrypto-X=VALUE``.

    pytest picks its rootdir and ini file before it knows plugin options, and
    takes a separate value that names an existing file (a baseline elsewhere)
    for a test path; the joined form keeps the project's ini file in force.
    """
    out: list[str] = []
    for arg in extra:
        prev = out[-1] if out else ""
        if (prev.startswith(PASSTHROUGH) and "=" not in prev
                and (not arg.startswith("-") or _is_number(arg))):
            out[-1] = f"{prev}={arg}"
        else:
            out.append(arg)
    return out


def report(files: Sequence[str], unit: str | None = None, fmt: str | None = None,
           plot: str | Sequence[str] | None = None, stdout: Any = None,
           verbose: bool = False) -> int:
    """``qcrypto report``: :func:`pytest_qcrypto.output.report.run`, which plots with matplotlib."""
    from pytest_qcrypto.output import plot as plotting, report as joining

    return joining.run(files, unit, fmt, plot, stdout, verbose, plotter=plotting.PLOTTER)


if __name__ == "__main__":
    sys.exit(main())
