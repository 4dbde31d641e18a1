"""The registry of layouts and the change grid: a new layout is one registered function."""

import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import pytest_qcrypto
from pytest_qcrypto.output import render
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.output.layouts import LAYOUTS
from pytest_qcrypto.output.render import Output
from pytest_qcrypto.output.tables import Cell, Changes, Table, change_lines

#: Appended to the layouts module of a copy of the package: nothing else is touched.
TSV_LAYOUT = '''

@layout("tsv", "(tab-separated values, one line per cell)")
def tsv_layout(figures: Figures) -> list[str]:
    lines = ["algorithm\\tplugin\\tsize\\t" + figures.unit]
    for t in figures.tables:
        lines += [f"{t.algorithm}\\t{p}\\t{s}\\t{cell_text(t.cells.get((p, s)), figures.unit)}"
                  for p in t.plugins for s in t.sizes]
    return lines
'''

RUN = ("--qcrypto-digest", "sha256", "--qcrypto-plugin", "hashlib", "--qcrypto-size", "16,64",
       "--qcrypto-min-time", "0.001", "--qcrypto-rounds", "1", "-p", "no:cacheprovider")


def m(plugin, size, count, seconds):
    return Measurement("sha256", plugin, size, "digest", count, (seconds,))


def table():
    cells = {("openssl", 16): Cell(m("openssl", 16, 1024, 1.0)),  # 16 KiB/s
             ("openssl", 4096): Cell(m("openssl", 4096, 256, 1.0)),  # 1024 KiB/s
             ("hashlib", 16): Cell(m("hashlib", 16, 512, 1.0))}
    return Table("sha256", "digest", "digest", ("openssl", "hashlib"), (16, 4096), cells)


def changes(texts):
    return Changes("Change against baseline base.json (negative = slower):",
                   ("openssl", "hashlib"), (16, 4096), texts,
                   ("! regression: slower than the threshold allows, on every try",))


GRID = {("openssl", 16): "-12.5%!", ("openssl", 4096): "+0.3%",
        ("hashlib", 16): "new", ("hashlib", 4096): "missing"}


def test_the_change_grid_is_drawn_as_the_tables_are():
    assert change_lines(changes(GRID)) == [
        "Change against baseline base.json (negative = slower):",
        "plugin         16     4096",
        "openssl   -12.5%!    +0.3%",
        "hashlib       new  missing",
        "  ! regression: slower than the threshold allows, on every try",
    ]
    assert change_lines(changes(dict.fromkeys(GRID, "-"))) == []  # nothing to show
    assert change_lines(None) == []
    assert change_lines(["drawn", "already"]) == ["drawn", "already"]


def test_the_change_grid_is_the_text_the_gate_draws():
    """The same cells as the gate's own grid (gate_summary.change_grid, data drawn here)."""
    from pytest_qcrypto.gate import verdicts as gate
    from pytest_qcrypto.gate.summary import change_grid

    t = table()
    verdicts = {("sha256", "openssl", 16, "digest"): SimpleNamespace(change=-0.125,
                                                                     status=gate.REGRESSION),
                ("sha256", "openssl", 4096, "digest"): SimpleNamespace(change=0.003,
                                                                       status=gate.OK),
                ("sha256", "hashlib", 16, "digest"): SimpleNamespace(change=None, status=gate.NEW)}
    gone = {("sha256", "hashlib", 4096, "digest"): "skipped"}
    grid = change_grid("base.json", t.algorithm, t.direction, t.plugins, t.sizes, verdicts, gone)
    assert change_lines(grid) == change_lines(changes(GRID))


class Terminal:
    def __init__(self):
        self.lines = []

    def write_sep(self, sep, title):
        self.lines.append(f"{sep * 3} {title} {sep * 3}")

    def write_line(self, line, **markup):
        self.lines.append(line)


def test_qcrypto_layout_draws_the_grid_under_its_table_others_after_all(monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    term = Terminal()
    render.write_summary(term, [table()], Output(), False,
                         after_table=lambda t: changes(GRID))
    grid = change_lines(changes(GRID))
    assert term.lines == ["=== qcrypto speed ==="] + render.table_lines(table()) + grid
    term = Terminal()
    render.write_summary(term, [table()], Output(format="csv"), False,
                         after_table=lambda t: changes(GRID))
    assert term.lines == (["=== qcrypto speed ==="] + render.csv_lines([table()]) + [""]
                          + grid)


def test_choices_and_help_come_from_the_registry():
    assert list(render.FORMATS) == ["qcrypto", "openssl", "markdown", "csv", "cryptotest",
                                    "bencher", "github-action-benchmark"] == list(LAYOUTS)
    assert render.format_help() == (
        "layout of the results: qcrypto (default), openssl (openssl speed's table, 1000s of "
        "bytes per second; no --qcrypto-unit with it), markdown (for a CI job summary), csv, "
        "cryptotest (FreeBSD cryptotest's line per algorithm and size, Mb/sec = 2^20 bits; "
        "no --qcrypto-unit with it), bencher (Bencher Metric Format JSON: a measure per unit, "
        "value, lower and upper values from the rounds; no --qcrypto-unit with it) or "
        "github-action-benchmark (customBiggerIsBetter JSON: name, unit, value, range, extra; "
        "no --qcrypto-unit with it).")
    with pytest.raises(ValueError, match="give a new name"):
        render.layout("csv")(lambda figures: [])


def test_a_registered_layout_is_a_choice_of_pytest_and_qcrypto_report(pytester, monkeypatch):
    copy = pytester.path / "pkg" / "pytest_qcrypto"
    shutil.copytree(Path(pytest_qcrypto.__file__).parent, copy,
                    ignore=shutil.ignore_patterns("__pycache__"))
    with open(copy / "output" / "layouts.py", "a", encoding="utf-8") as f:
        f.write(TSV_LAYOUT)
    monkeypatch.setenv("PYTHONPATH", str(copy.parent))
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytest_run = (sys.executable, "-m", "pytest", "-p", "pytest_qcrypto.plugin")

    r = pytester.run(*pytest_run, "--help", timeout=300)
    assert r.ret == 0, r.stderr.str()
    # argparse may wrap inside "--qcrypto-unit" after its hyphen (pytest 8.4's formatter)
    shown = " ".join(r.stdout.str().split()).replace("--qcrypto- ", "--qcrypto-")
    # registered at the end of layouts.py: before the layouts of their own modules
    # (output/cryptotest_layout.py, output/exports.py), which output/render.py imports
    assert "markdown (for a CI job summary), csv, tsv (tab-separated values, one line per " \
        "cell), cryptotest (FreeBSD" in shown
    assert "no --qcrypto-unit with it), bencher (" in shown

    r = pytester.run(*pytest_run, *RUN, "--qcrypto-format", "tsv", "--qcrypto-bare",
                     "--qcrypto-save", "run.json", timeout=300)
    assert r.ret == 0, r.stderr.str()
    lines = r.outlines
    assert lines[0] == "algorithm\tplugin\tsize\tKiB/s"
    assert [line.split("\t")[:3] for line in lines[1:]] == [["sha256", "hashlib", "16"],
                                                             ["sha256", "hashlib", "64"]]
    assert all(float(line.split("\t")[3]) > 0 for line in lines[1:])

    r = pytester.run(sys.executable, "-m", "pytest_qcrypto.commands.qcrypto", "report", "-h", timeout=300)
    assert ("qcrypto, openssl, markdown, csv, tsv, cryptotest, bencher or "
            "github-action-benchmark") in " ".join(r.stdout.str().split())
    r = pytester.run(sys.executable, "-m", "pytest_qcrypto.commands.qcrypto", "report", "run.json",
                     "--qcrypto-format", "tsv", timeout=300)
    assert r.ret == 0, r.stderr.str()
    assert r.outlines[0] == "algorithm\tplugin\tsize\tKiB/s"
    assert r.outlines[1].split("\t")[:3] == ["sha256", "run/hashlib", "16"]
    assert len(r.outlines) == 3  # this layout leaves the legend (its notes) out
