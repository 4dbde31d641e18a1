"""Issue 23: a benchmark test of a user's own that measures and then fails its own
assertion kept its figure in the table, unmarked, and in ``--qcrypto-save``, where it could
become the next baseline.  Now the cell is marked ``failed`` (figure kept), the result is
saved with ``"outcome": "failed"``, and such a result is never used as a baseline (one
summary line says which cells)."""

import json

from test_results import FAKE_PLUGIN

OWN = '''
import os

def test_mine(qcrypto):
    qcrypto.open("sha256", "fake").measure(16)
    assert not os.environ.get("QFAIL"), "the output was wrong"

def test_other(qcrypto):
    qcrypto.open("sha256", "fake").measure(64)
'''
ARGS = ("-p", "no:cacheprovider", "--qcrypto-min-time", "0.002", "--qcrypto-rounds", "1")


def test_a_measured_cell_whose_test_failed_is_marked_saved_so_and_never_a_baseline(
        pytester, monkeypatch):
    pytester.makeconftest(FAKE_PLUGIN)
    pytester.makepyfile(test_own=OWN)
    monkeypatch.setenv("QFAIL", "1")
    r = pytester.runpytest(*ARGS, "--qcrypto-save", "base.json")
    assert r.ret == 1, r.stdout.str()
    r.assert_outcomes(passed=1, failed=1)
    row = next(line for line in r.outlines if line.startswith("fake "))
    cells = row.split()  # fake, 16 B: its figure marked "(failed)", 64 B: its figure
    assert len(cells) == 4 and cells[2] == "(failed)" and float(cells[1]) > 0, row
    assert ("  x fake (size 16) failed after measuring: AssertionError: the output was wrong "
            "(its figure is kept, saved with the outcome, never used as a baseline)") in r.outlines
    doc = json.loads((pytester.path / "base.json").read_text())
    assert [(e["size"], e.get("outcome")) for e in doc["results"]] == [(16, "failed"),
                                                                      (64, None)]
    monkeypatch.delenv("QFAIL")
    r = pytester.runpytest(*ARGS, "--qcrypto-compare", "base.json")
    assert r.ret == 0, r.stdout.str()
    r.stdout.fnmatch_lines([
        "baseline cells whose test failed there (never used as a baseline):",
        "  sha256 fake 16 B digest: test_own.py::test_mine failed",
        "no baseline entry (not judged):", "  sha256 fake digest, size 16: new"])
