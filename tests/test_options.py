"""The table of options (pytest_qcrypto.pytest_side.options): what pytest --help shows, the ini fallback and
where a value came from, the hidden --qcrypto-command of the qcrypto command."""

import ast
import re
from pathlib import Path

import pytest

from pytest_qcrypto.commands import qcrypto as cli
from pytest_qcrypto.pytest_side import options
from pytest_qcrypto.algorithms import settings

PACKAGE = Path(options.__file__).resolve().parent.parent

#: Every option and its metavar (None: a flag) as pytest --help showed them before the table.
OPTIONS_BEFORE = [
    ("--qcrypto-digest", "NAME"), ("--qcrypto-cipher", "NAME"), ("--qcrypto-mac", "NAME"),
    ("--qcrypto-pkey", "NAME"), ("--qcrypto-kdf", "NAME"),  # issue 15
    ("--qcrypto-plugin", "NAME"),
    ("--qcrypto-size", "BYTES"), ("--qcrypto-min-time", "SECONDS"), ("--qcrypto-rounds", "N"),
    ("--qcrypto-decrypt", None), ("--qcrypto-seed", "N"), ("--qcrypto-timeout", "SECONDS"),
    ("--qcrypto-isolate", None), ("--qcrypto-list", None), ("--qcrypto-save", "PATH"),
    ("--qcrypto-history", "DIR"),
    ("--qcrypto-compare", "PATH"), ("--qcrypto-threshold", "PCT"), ("--qcrypto-confirm", "N"),
    ("--qcrypto-allow-missing", None), ("--qcrypto-require-same-machine", None),
    ("--qcrypto-unit", "UNIT"), ("--qcrypto-format", "FORMAT"), ("--qcrypto-plot", "PATH"),
    ("--qcrypto-bare", None), ("--qcrypto-jobs", "N"), ("--qcrypto-threads", "N"),
    # issue 13: cryptotest's fixed count and round trip
    ("--qcrypto-count", "N"), ("--qcrypto-roundtrip", None), ("--qcrypto-check-roundtrip", None),
    # issue 14: suspicious speed-ups
    ("--qcrypto-max-speedup", "X"), ("--qcrypto-strict", None),
    ("--qcrypto-model", None),  # issue 17: where the time goes
    # issue 16: other interpreters and hosts, A/B in one run
    ("--qcrypto-target", "NAME=SPEC"), ("--qcrypto-interleave", None),
    ("--qcrypto-compare-target", "NAME"),
    # issue 23: counted instructions
    ("--qcrypto-measure", "WHAT"), ("--qcrypto-instructions-threshold", "PCT"),
    ("--qcrypto-confirm-pause", "SECONDS"),  # issue 23: confirmation tries a pause apart
    ("--qcrypto-output", "PATH"),  # issue 28: the tables to a file
    # issue 26: what crypto people quote
    ("--qcrypto-quick", None), ("--qcrypto-clock", "CLOCK"), ("--qcrypto-misalign", "N"),
    ("--qcrypto-update-size", "BYTES"),
]
#: Every ini key and its type as pytest --help showed them before the table.
INI_BEFORE = [
    ("qcrypto_timeout", "string"), ("qcrypto_plugins", "args"), ("qcrypto_sizes", "args"),
    ("qcrypto_threads", "string"),
    ("qcrypto_min_time", "string"), ("qcrypto_rounds", "string"),
    ("qcrypto_threshold", "string"), ("qcrypto_thresholds", "linelist"),
    ("qcrypto_floors", "linelist"), ("qcrypto_confirm", "string"),
    ("qcrypto_allow_missing", "bool"), ("qcrypto_require_same_machine", "bool"),
    ("qcrypto_count", "string"),  # issue 13
    ("qcrypto_max_speedup", "string"), ("qcrypto_strict", "bool"),  # issue 14
    ("qcrypto_confirm_pause", "string"),  # issue 23
    ("qcrypto_targets", "linelist"),  # issue 16
    ("qcrypto_measure", "string"), ("qcrypto_instructions_threshold", "string"),  # issue 23
]


def test_help_shows_every_option_metavar_and_ini_key_as_before(pytester):
    r = pytester.runpytest("--help")
    assert r.ret == 0
    text = r.stdout.str()
    shown = {line.split()[0] for line in r.stdout.lines if line.startswith("  --qcrypto-")}
    assert shown == {f"{flag}={metavar}" if metavar else flag for flag, metavar in OPTIONS_BEFORE}
    for key, kind in INI_BEFORE:
        assert f"  {key} ({kind}):" in text
    ini_shown = {line.split()[0] for line in r.stdout.lines if line.startswith("  qcrypto_")}
    assert ini_shown == {key for key, _ in INI_BEFORE}
    assert "--qcrypto-command" not in text  # hidden: the qcrypto command's business


def test_help_takes_choices_from_the_registries(pytester):
    from pytest_qcrypto.output import render

    r = pytester.runpytest("--help")
    # argparse of older pytest versions may wrap a line after a hyphen ("github-action-" /
    # "benchmark"): join such words back
    text = re.sub(r"(?<=[a-z])- (?=[a-z])", "-", " ".join(r.stdout.str().split()))
    # issue 23: not the counted units; issue 26: cpb, but not cycles/op (a size-less table's)
    accepted = ["KiB/s", "MiB/s", "kB/s", "MB/s", "ops/s", "ns/op", "cpb"]
    assert f"unit of the table cells: {', '.join(accepted)}." in text
    assert ("layout of the results: qcrypto (default), openssl (openssl speed's table, 1000s of "
            "bytes per second; no --qcrypto-unit with it), markdown (for a CI job summary), "
            "csv, cryptotest (FreeBSD cryptotest's line per algorithm and size, Mb/sec = 2^20 "
            "bits; no --qcrypto-unit with it), bencher (Bencher Metric Format JSON: a measure "
            "per unit, value, lower and upper values from the rounds; no --qcrypto-unit with "
            "it) or github-action-benchmark (customBiggerIsBetter JSON: name, unit, value, "
            "range, extra; no --qcrypto-unit with it).") in text


def test_the_table_names_each_option_and_ini_key_once():
    flags = [o.flag for o in options.OPTIONS if o.flag]
    keys = [o.ini for o in options.OPTIONS if o.ini]
    # + the hidden --qcrypto-command and --qcrypto-skip-unsuited-sizes
    assert len(flags) == len(set(flags)) == len(OPTIONS_BEFORE) + 2
    assert sorted(keys) == sorted(k for k, _ in INI_BEFORE)
    assert options.BOOL_INI == ("qcrypto_allow_missing", "qcrypto_require_same_machine",
                                "qcrypto_strict")


@pytest.mark.parametrize("args, ini, expected", [
    ((), "", (None, "qcrypto_min_time in tox.ini")),
    ((), "qcrypto_min_time = 0.5", ("0.5", "qcrypto_min_time in tox.ini")),
    (("--qcrypto-min-time", "0.2"), "qcrypto_min_time = 0.5", ("0.2", "--qcrypto-min-time")),
    (("-o", "qcrypto_min_time=0.3"), "qcrypto_min_time = 0.5", ("0.3", "-o qcrypto_min_time")),
])
def test_given_reads_the_option_then_its_ini_key_and_says_where(pytester, args, ini, expected):
    pytester.makeini(f"[pytest]\n{ini}\n")
    config = pytester.parseconfig(*args)
    assert options.given(config, "qcrypto_min_time") == expected


def test_given_joins_an_ini_list_written_with_blanks(pytester):
    pytester.makeini("[pytest]\nqcrypto_sizes = 16, 64 256\n")
    config = pytester.parseconfig()
    assert options.given(config, "qcrypto_size") == (["16,64,256"], "qcrypto_sizes in tox.ini")
    assert options.given(config, "qcrypto_sizes") == (["16,64,256"], "qcrypto_sizes in tox.ini")
    config = pytester.parseconfig("--qcrypto-size", "32")
    assert options.given(config, "qcrypto_size") == (["32"], "--qcrypto-size")


def test_the_qcrypto_command_rewrites_no_module_global(monkeypatch):
    seen = []

    def fake_main(args, plugins=()):  # (qcrypto speed hands pytest its progress plugins)
        seen.append((list(args), settings.LIST_HINT))
        measured = type("Report", (), {"when": "call", "passed": True, "skipped": False})
        plugins[0].pytest_runtest_logreport(measured)  # one cell measured: exit 0, not 1
        return 0

    monkeypatch.setattr(cli.pytest, "main", fake_main)
    assert cli.main(["speed", "-D", "sha256"]) == 0
    (args, hint), = seen
    assert hint == "(see pytest --qcrypto-list or qcrypto list)"  # as any pytest run has it
    assert args[0] == "--qcrypto-command=qcrypto"
    assert args[1:] == cli.speed_args(*cli.build_parser().parse_known_args(["speed", "-D",
                                                                            "sha256"]))


def test_usage_errors_under_the_qcrypto_command_point_to_qcrypto_list(pytester):
    r = pytester.runpytest("--qcrypto-command=qcrypto", "--qcrypto-digest", "sha265")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    line, = [x for x in r.stderr.lines if x.startswith("ERROR: --qcrypto-digest")]
    assert line.endswith("or all (see qcrypto list)")
    r = pytester.runpytest("--qcrypto-digest", "sha265")
    line, = [x for x in r.stderr.lines if x.startswith("ERROR: --qcrypto-digest")]
    assert line.endswith("or all (see pytest --qcrypto-list or qcrypto list)")


def _imports(module: str) -> set[str]:
    tree = ast.parse((PACKAGE / f"{module.replace('.', '/')}.py").read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def test_process_helpers_come_from_procs_and_the_plugin_needs_no_cli():
    assert not {"pytest_qcrypto.measure.jobs", "pytest_qcrypto.timeout"} & _imports("measure.isolate")
    assert "pytest_qcrypto.measure.jobs" not in _imports("measure.limits")
    assert "pytest_qcrypto.measure.procs" in (_imports("measure.isolate")
                                              & _imports("measure.jobs"))
    assert not any(n.startswith("pytest_qcrypto.commands.qcrypto") for n in _imports("plugin"))
