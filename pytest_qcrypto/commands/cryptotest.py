"""The ``cryptotest`` command: FreeBSD's /dev/crypto benchmark in front of the pytest plugin.

::

    cryptotest [-czsbvp] [-d dev] [-a algorithm] [-t n] [-P plugin]... [count] [size ...]

The syntax, defaults and output of FreeBSD's ``tools/tools/crypto/cryptotest`` (getopt, so
options come before ``count``): ``count`` iterations (default 1) of each algorithm at each
size, a cipher iteration being one encryption and one decryption of the buffer (2 x count
crypts), an HMAC iteration one MAC; one line per (algorithm, size) on standard output,
``%8.3f sec, %7d %6s crypts, %7d bytes, %8.0f byte/sec, %7.1f Mb/sec``, and nothing else without
``-v``.  Algorithms and size rules are :mod:`pytest_qcrypto.algorithms.cryptotest_names`.

The run is one pytest command line of the same engine as ``qcrypto`` (:func:`pytest_args`):
``--qcrypto-count`` (no calibration), ``--qcrypto-rounds 1``, ``--qcrypto-roundtrip``,
``--qcrypto-format cryptotest``, ``--qcrypto-bare``...  Algorithms whose sizes differ (AES
skips 8 bytes where DES does not) share it: the hidden ``--qcrypto-skip-unsuited-sizes`` makes
such a cell a skip, so one results file (``--qcrypto-save``) and one comparison
(``--qcrypto-compare``) cover the whole run.  ``-P PLUGIN`` (repeatable) measures another
crypto plugin than /dev/crypto (``devcrypto``, the default); ``--qcrypto-NAME=VALUE`` options
pass through (``--qcrypto-save=run.json``).

Exit codes: 0 all measured; 1 a cell failed, or the plugin cannot run here
(/dev/crypto missing: one line saying how to get it); 2 interrupted; 3 an internal
error; 4 a bad command line, naming the valid choices.
"""

from __future__ import annotations

import difflib
import getopt
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from pytest_qcrypto.algorithms import catalog, cryptotest_names, settings
from pytest_qcrypto.algorithms.cryptotest_names import Name
from pytest_qcrypto.measure import harness, jobs
from pytest_qcrypto.pytest_side import progress
from pytest_qcrypto.measure.registry import Registry, RegistryError
from pytest_qcrypto.algorithms.settings import SettingsError

USAGE_ERROR = int(pytest.ExitCode.USAGE_ERROR)
FAILED = int(pytest.ExitCode.TESTS_FAILED)
USAGE = ("usage: cryptotest [-czsbvp] [-d dev] [-a algorithm] [-t n] [-P plugin]... "
         "[--qcrypto-NAME=VALUE]... [count] [size ...]")
#: FreeBSD's getopt string ``cpzsva:bd:t:`` with ``-P plugin`` and ``-h``.
OPTSTRING = "cpzsva:bd:t:P:h"
#: The plugin without ``-P``: /dev/crypto, as cryptotest.
DEFAULT_PLUGIN = "devcrypto"
#: Plugins that have kernel drivers to pin with ``-d``.
DRIVER_PLUGINS = ("devcrypto", "afalg")
PASSTHROUGH = "--qcrypto-"
#: The one line (exit 1) when /dev/crypto is missing.
NO_DEVICE = ("cryptotest: {path} is missing: load it with 'modprobe cryptodev' (cryptodev-linux "
             "installed; FreeBSD: 'kldload cryptodev'), or run the same test elsewhere with "
             "-P afalg or -P openssl")
#: Engine options cryptotest sets itself, and what sets them instead.
OWN_OPTIONS = {
    "--qcrypto-count": "the count argument", "--qcrypto-size": "the size arguments",
    "--qcrypto-plugin": "-P", "--qcrypto-jobs": "-t", "--qcrypto-digest": "-a",
    "--qcrypto-cipher": "-a", "--qcrypto-mac": "-a", "--qcrypto-check-roundtrip": "-c",
    "--qcrypto-roundtrip": "cryptotest itself (a cipher iteration is a round trip)",
    "--qcrypto-format": "cryptotest itself (its line)", "--qcrypto-bare": "cryptotest itself",
}
REFUSED = {
    "-b": "-b (COP_F_BATCH) is refused: the crypto plugins here have no batching of requests "
          "(Linux /dev/crypto has no batch flag)",
    "-p": "-p is refused: it reads FreeBSD's kernel crypto profiling sysctls, which Linux "
          "and the crypto plugins here do not have",
}
HELP = f"""{USAGE}

FreeBSD's cryptotest on the pytest-qcrypto engine: COUNT iterations (default 1) of each
algorithm at each SIZE in bytes (default: its block size; with -z doubled up to 8192),
one cipher iteration = one encryption + one decryption (2 x COUNT crypts), one line each:
seconds, crypts, bytes, byte/sec, Mb/sec (2^20 bits per second).

  -a ALG     {cryptotest_names.valid_names()}
             (md5 ... sha512 are HMACs), or a catalog name (qcrypto list).  Default 3des
  -z         every algorithm of that list, sizes doubled from 8 (or the -a block size)
  -c         check inside the timed loop: ciphertext differs, decryption equals the input
  -v         before each line: device (driver), count and size, IV; skipped sizes
  -d DEV     pin a kernel driver: -P devcrypto / -P afalg become PLUGIN:DEV ('soft':
             a software driver)
  -t N       N processes at once: the real total over the common window, then the line
             FreeBSD's arithmetic (summed process times) would print
  -P PLUGIN  measure another crypto plugin (repeatable): afalg, openssl, pycryptodome,
             hashlib.  Default devcrypto (/dev/crypto), as cryptotest
  -s         accepted, does nothing (as on FreeBSD)
  -b, -p     refused: no batching or kernel profiling here
  --qcrypto-NAME=VALUE   passes to the pytest plugin (--qcrypto-save=run.json)

Exit codes: 0 all measured, 1 a failure or /dev/crypto missing, 2 interrupted (one line
says what was measured), 3 an internal error (a bug), 4 a bad command line."""


class UsageError(Exception):
    """A bad ``cryptotest`` command line; ``str()`` is the message."""


@dataclass(frozen=True)
class Plan:
    """A checked ``cryptotest`` command line.

    ``names`` in cryptotest's order; ``count`` iterations per process; ``sizes``
    in bytes as given (empty: cryptotest's rules, :meth:`sizes_for`), ``ignored``
    the sizes past :data:`cryptotest_names.MAX_SIZES`; ``jobs`` processes
    (``-t``); ``device`` the driver of ``-d``; ``plugins`` as typed;
    ``passthrough`` the ``--qcrypto-*`` options.
    """

    names: tuple[Name, ...]
    count: int = 1
    sizes: tuple[int, ...] = ()
    first_size: int = cryptotest_names.DEFAULT_SIZE
    z: bool = False
    check: bool = False
    verbose: bool = False
    jobs: int = 1
    device: str | None = None
    plugins: tuple[str, ...] = (DEFAULT_PLUGIN,)
    passthrough: tuple[str, ...] = ()
    ignored: tuple[int, ...] = ()

    def sizes_for(self) -> tuple[int, ...]:
        """The sizes asked (bytes), before each algorithm skips those that do not suit it."""
        return self.sizes or cryptotest_names.sizes_of(self.first_size, self.z)


@dataclass(frozen=True)
class Group:
    """Algorithms measured at the same sizes: one pytest run.  ``skipped`` are the ``-v``
    lines printed before it (sizes an algorithm skips, algorithms not measured here)."""

    names: tuple[Name, ...]
    sizes: tuple[int, ...]
    skipped: tuple[str, ...] = ()


_SPEED_FLAG = {"pkey": "-S", "kdf": "-K"}  #: qcrypto speed's flag of each size-less option word


def _algorithm(text: str) -> Name:
    """``-a``'s name (cryptotest's, else the catalog's); :class:`UsageError` naming the
    valid ones."""
    found = cryptotest_names.lookup(text)
    if found is None:
        pool = [n.name for n in cryptotest_names.NAMES] + list(cryptotest_names.ALIASES)
        close = difflib.get_close_matches(text.strip().lower(), pool, n=3, cutoff=0.6)
        close += [n for n in catalog.suggest(text, tuple(catalog.KINDS)) if n not in close]
        hint = f"; did you mean {', '.join(close[:3])}?" if close else "."
        raise UsageError(f"cryptotest: -a: unknown algorithm {settings.shown(text)}{hint} "
                         f"Valid algorithms: {cryptotest_names.valid_names()}, or a catalog "
                         f"name (qcrypto list)")
    if found.entry is None:
        raise UsageError(f"cryptotest: -a {found.name}: skipjack is not in the catalog of "
                         "pytest-qcrypto, so no crypto plugin here measures it")
    if not found.entry.rules.sized:  # a line per size in bytes/sec: no place for ops/s
        flag = _SPEED_FLAG.get(found.entry.rules.option, "-S")
        raise UsageError(f"cryptotest: -a {found.name}: a {found.entry.word} has no buffer size "
                         f"and cryptotest's lines are bytes per second: qcrypto speed {flag} "
                         f"{found.name} measures it")
    return found


def _whole(text: str, what: str, high: int) -> int:
    try:
        return settings.whole_number(text, what, 1, high)
    except SettingsError as exc:
        raise UsageError(f"cryptotest: {exc}") from None


def parse(argv: Sequence[str]) -> Plan:
    """The :class:`Plan` of a command line (without the program name).

    Raises :class:`UsageError` for anything cryptotest's syntax does not allow or this
    package cannot do (``-b``, ``-p``, ``-a skj``), and ``SystemExit(0)`` for ``-h``.
    """
    passthrough = tuple(a for a in argv if a.startswith(PASSTHROUGH))
    _check_passthrough(argv)
    args = [a for a in argv if not a.startswith(PASSTHROUGH)]
    try:
        opts, rest = getopt.getopt(args, OPTSTRING)
    except getopt.GetoptError as exc:
        raise UsageError(f"cryptotest: {exc}\n{USAGE}") from None
    name: Name | None = None
    flags: set[str] = set()
    jobs_n, device, plugins = 1, None, []
    for opt, value in opts:
        if opt == "-h":
            print(HELP)
            raise SystemExit(0)
        if opt in REFUSED:
            raise UsageError(f"cryptotest: {REFUSED[opt]}")
        if opt == "-a":
            name = _algorithm(value)
        elif opt == "-t":
            try:
                jobs_n = jobs.parse_jobs(value, "-t")
            except (SettingsError, ValueError) as exc:
                raise UsageError(f"cryptotest: {exc}") from None
        elif opt == "-d":
            if not value.strip() or ":" in value:
                raise UsageError(f"cryptotest: -d: give a driver name (or 'soft'), not "
                                 f"{settings.shown(value)}")
            device = value.strip()
        elif opt == "-P":
            plugins.append(value.strip())
        else:
            flags.add(opt)
    if len(plugins) > settings.MAX_PLUGINS:
        raise UsageError(f"cryptotest: -P: at most {settings.MAX_PLUGINS} plugins, got "
                         f"{len(plugins)}")
    late = next((a for a in rest if a.startswith("-") and not settings.is_whole_number(a)), None)
    if late is not None:
        raise UsageError(f"cryptotest: option {settings.shown(late)} after the count and sizes: "
                         "options come first, as FreeBSD's cryptotest reads them (e.g. "
                         "cryptotest -P openssl -z 1024)")
    count = _whole(rest[0], "count", harness.MAX_COUNT) if rest else 1
    texts = rest[1:]
    sizes = tuple(_whole(t, f"size {t}", settings.MAX_SIZE)
                  for t in texts[:cryptotest_names.MAX_SIZES])
    ignored = tuple(_whole(t, f"size {t}", settings.MAX_SIZE)
                    for t in texts[cryptotest_names.MAX_SIZES:])
    z = "-z" in flags
    if name is not None:
        names: tuple[Name, ...] = (name,)
    elif z:
        names = cryptotest_names.NAMES
    else:
        names = (cryptotest_names.lookup(cryptotest_names.DEFAULT),)  # type: ignore[assignment]
    first = name.block_size if name is not None else cryptotest_names.DEFAULT_SIZE
    return Plan(names, count, sizes, first, z, "-c" in flags, "-v" in flags, jobs_n, device,
                tuple(plugins) or (DEFAULT_PLUGIN,), passthrough, ignored)


def _check_passthrough(argv: Sequence[str]) -> None:
    """``--qcrypto-*`` options: not one cryptotest sets itself, and a value joined with ``=``
    (:class:`UsageError` naming what to type instead)."""
    for i, arg in enumerate(argv):
        if not arg.startswith(PASSTHROUGH):
            continue
        name = arg.split("=", 1)[0]
        if name in OWN_OPTIONS:
            raise UsageError(f"cryptotest: {name} is set by {OWN_OPTIONS[name]}; give that "
                             "instead (cryptotest -h)")
        following = argv[i + 1] if i + 1 < len(argv) else ""
        if "=" not in arg and following and not following.startswith("-") \
                and not settings.is_whole_number(following):
            raise UsageError(f"cryptotest: {name} {settings.shown(following)}: join an option's "
                             f"value with '=': {name}={following}")


def groups(plan: Plan) -> list[Group]:
    """The pytest runs, in cryptotest's order: consecutive algorithms that keep the same
    sizes share a run (with ``-v``, one that skips sizes starts its own, so that its
    skip lines come just before its results)."""
    out: list[Group] = []
    for name in plan.names:
        entry = name.entry
        if entry is None:
            skipped = (f"cipher {name.name} keylen {name.key_size}: not measured here (the "
                       "catalog of pytest-qcrypto has no skipjack)",)
            kept: tuple[int, ...] = ()
        else:
            problems = [(s, cryptotest_names.size_problem(name, s))
                        for s in dict.fromkeys(plan.sizes_for())]  # each size once
            kept = tuple(s for s, p in problems if p is None)
            skipped = tuple(p for _, p in problems if p is not None)
        last = out[-1] if out else None
        if (last is not None and kept and last.sizes == kept
                and not (plan.verbose and skipped)):
            out[-1] = Group(last.names + (name,), kept, last.skipped)
        else:
            out.append(Group((name,) if kept else (), kept, skipped))
    return out


def pytest_args(plan: Plan, group: Group) -> list[str]:
    """The pytest command line of one :class:`Group` (the engine's options, joined with
    ``=`` so that pytest never takes a value for a test path)."""
    args = ["--qcrypto-bare", "--qcrypto-command=cryptotest", "-p", "no:cacheprovider",
            "--qcrypto-format=cryptotest",
            f"--qcrypto-count={plan.count}", "--qcrypto-rounds=1",
            f"--qcrypto-size={','.join(map(str, group.sizes))}"]
    args += ["-v", "--no-header"] if plan.verbose else ["-qq"]
    entries = [n.entry for n in group.names if n.entry is not None]
    args += [f"--qcrypto-{e.rules.option}={e.name}" for e in entries]
    if any(e.can_roundtrip for e in entries):
        args.append("--qcrypto-roundtrip")
        if plan.check:
            args.append("--qcrypto-check-roundtrip")
    if plan.jobs > 1:
        args.append(f"--qcrypto-jobs={plan.jobs}")
    args += [f"--qcrypto-plugin={p}:{plan.device}" if plan.device else f"--qcrypto-plugin={p}"
             for p in plan.plugins]
    return args + list(plan.passthrough)


def _registry() -> Registry:
    """The built-in crypto plugins (a function, so that tests can put others in)."""
    from pytest_qcrypto.backends import builtin_plugins

    return Registry(builtin_plugins())


def check_plugins(plan: Plan, registry: Registry | None = None) -> None:
    """``-d`` only with a plugin that has drivers; :class:`UsageError` otherwise.  A name
    the built-in registry does not know is left for pytest (a conftest's plugin)."""
    if plan.device is None:
        return
    registry = registry or _registry()
    for typed in plan.plugins:
        try:
            selection = registry.resolve(typed)
        except RegistryError:
            continue
        if selection.variant or selection.plugin.name not in DRIVER_PLUGINS:
            raise UsageError(f"cryptotest: -d {plan.device}: pins a kernel driver of "
                             f"{' or '.join(DRIVER_PLUGINS)}, not of -P {typed}")


def unavailable(plan: Plan, registry: Registry | None = None) -> str | None:
    """The line to print (exit 1) when a chosen plugin cannot run here, else None:
    :data:`NO_DEVICE` when /dev/crypto is missing, else the plugin's reason."""
    registry = registry or _registry()
    for typed in plan.plugins:
        try:
            plugin = registry.resolve(typed).plugin
        except RegistryError:
            continue  # pytest names the valid plugins
        reason = registry.unavailable(plugin)
        if reason is None:
            continue
        path = getattr(plugin, "path", None)
        if plugin.name == DEFAULT_PLUGIN and isinstance(path, str) and not os.path.exists(path):
            return NO_DEVICE.format(path=path)
        return f"cryptotest: -P {typed}: cannot run here: {reason}"
    return None


def _not_in_the_run(plan: Plan, parts: Sequence[Group], union: Sequence[int]) -> list[str]:
    """The ``-v`` skip lines the run's layout cannot say: of algorithms not in the run at
    all (skipjack, or no size suits them), and of sizes no algorithm takes (the layout says
    those of a size in the run, such as AES at 8 bytes beside DES)."""
    lines = [line for g in parts if not g.names for line in g.skipped]
    for name in (n for g in parts for n in g.names):
        for size in dict.fromkeys(plan.sizes_for()):
            problem = None if size in union else cryptotest_names.size_problem(name, size)
            if problem and problem not in lines:
                lines.append(problem)
    return lines


def run(plan: Plan) -> int:
    """The :func:`groups` of the plan as one pytest run (their algorithms in cryptotest's
    order, the sizes of them all; a size an algorithm does not take is a skipped cell): the
    exit code, 1 when it measured nothing (why, on standard error), 4 when no size suits
    any algorithm named."""
    for size in plan.ignored:
        print(f"Too many sizes, ignoring {size}", flush=True)
    parts = groups(plan)
    union = tuple(sorted({s for g in parts for s in g.sizes}))
    if plan.verbose:
        for line in _not_in_the_run(plan, parts, union):
            print(line, flush=True)
    names = tuple(n for g in parts for n in g.names)
    if not names:
        why = next((s for g in parts for s in g.skipped), "")
        sys.stderr.write(f"cryptotest: no size given suits the algorithm: {why}\n")
        return USAGE_ERROR
    args = pytest_args(plan, Group(names, union))
    if len({g.sizes for g in parts if g.names}) > 1:
        args.append("--qcrypto-skip-unsuited-sizes")
    outcomes = progress.Outcomes()
    code = progress.run(args, [outcomes])  # the progress line; one line if interrupted
    return outcomes.exit_code(code, "cryptotest")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``cryptotest`` command; returns the exit code (0, 1 or 4, see the module)."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        plan = parse(args)
        check_plugins(plan)
    except UsageError as exc:
        sys.stderr.write(f"{exc}\n")
        return USAGE_ERROR
    except SystemExit as exc:  # -h
        return exc.code if isinstance(exc.code, int) else 0
    line = unavailable(plan)
    if line is not None:
        sys.stderr.write(f"{line}\n")
        return FAILED
    return run(plan)


if __name__ == "__main__":
    sys.exit(main())
