"""--qcrypto-target with the size-less cells (signatures, KDFs: size 0 and an operation).

The end-to-end tests measure the openssl plugin (pyca/cryptography) in this process and
in a popen target of this same interpreter (the package is importable there); they
assert directions, rows and table shapes, never speeds."""

from __future__ import annotations

import json
import sys
from types import SimpleNamespace

import pytest

from pytest_qcrypto.targets import pairs
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.targets.summary import ratio_lines
from pytest_qcrypto.pytest_side.targets import TargetOptions, _Cell

OLD = f"old=popen//python={sys.executable}"
FAST = ("--qcrypto-plugin", "openssl", "--qcrypto-min-time", "0.01", "--qcrypto-rounds", "3",
        "-p", "no:cacheprovider")


def op(rounds_s, direction="sign", count=100, plugin="openssl@old"):
    """A size-less (size 0) measurement of ``count`` operations per round."""
    return Measurement("ed25519", plugin, 0, direction, count, tuple(rounds_s),
                       cpu_s=tuple(rounds_s))


# -- the paired ratio of size-less cells ------------------------------------------------

def test_a_size_less_ratio_is_of_operations_per_second():
    # 100 operations in 1 s against 100 in 2 s: half the reference's rate, every round
    assert pairs.paired_ratio(op([1.0, 1.0]), op([2.0, 2.0])).text() == "0.50 [0.50, 0.50]"
    assert pairs.paired_ratio(op([1.0]), op([0.25], count=50)).text() == "2.00 [1 round]"


def test_a_zero_figure_gives_no_ratio_and_says_why():
    with pytest.raises(ValueError, match=r"^openssl@old has a round with a zero figure "
                                         r"\(0 operations of 0 bytes\)$"):
        pairs.paired_ratio(op([1.0]), op([1.0], count=0))


def test_the_ratio_table_of_a_size_less_algorithm_has_a_column_per_operation():
    cells = {}
    for direction, slower in (("sign", 2.0), ("verify", 4.0)):
        cells[("ed25519", "openssl", 0, direction)] = _Cell(interleaved={
            "old": op([1.0, 1.0], direction, plugin="openssl@old"),
            "local": op([slower, slower], direction, plugin="openssl@local")})
    cells[("ed448", "openssl", 0, "sign")] = _Cell(interleaved={
        "old": op([1.0], plugin="openssl@old"), "local": op([1.0], count=0)})
    targets = SimpleNamespace(options=TargetOptions((("old", "popen"),), True, "old"),
                              reference="old", cells=cells)
    assert [line.split() for line in ratio_lines(targets)[1:]] == [
        ["ed25519", "sign", "verify"],
        ["openssl@local/old", "0.50", "[0.50,", "0.50]", "0.25", "[0.25,", "0.25]"],
        ["ed448", "sign"],
        ["openssl@local/old", "no", "ratio"],
        ["openssl@local/old", "ed448", "sign:", "no", "ratio:", "openssl@old", "has", "a",
         "round", "with", "a", "zero", "figure", "(0", "operations", "of", "0", "bytes)"]]


# -- end to end: a popen target of this interpreter ---------------------------------------

def test_interleaved_signatures_measure_every_operation_on_every_target(pytester):
    pytest.importorskip("cryptography")
    pytester.makepyfile(test_empty="")
    r = pytester.runpytest("--qcrypto-pkey", "ed25519", *FAST, "--qcrypto-target", OLD,
                           "--qcrypto-interleave", "--qcrypto-save", "out.json")
    out = r.stdout.str()
    assert "ZeroDivisionError" not in out and "Traceback" not in out, out
    r.assert_outcomes(passed=6)  # sign, verify and keygen (openssl generates signature keys)
    rows = json.loads((pytester.path / "out.json").read_text())["results"]
    got = sorted((row["plugin"], row["direction"]) for row in rows)
    assert got == [("openssl@local", "keygen"), ("openssl@local", "sign"),
                   ("openssl@local", "verify"), ("openssl@old", "keygen"),
                   ("openssl@old", "sign"), ("openssl@old", "verify")]
    for target in ("openssl@local", "openssl@old"):  # verify is measured, not sign's copy
        mine = {row["direction"]: row["rounds_s"] for row in rows if row["plugin"] == target}
        assert mine["sign"] != mine["verify"]
    table = [line for line in r.outlines if line.startswith("openssl@") and "sign" not in line]
    speeds = [line.split() for line in table if "@local " in line or "@old " in line]
    assert len(speeds) == 2 and all(len(s) == 4 and "-" not in s for s in speeds), out
    start = r.outlines.index("interleaved: throughput over @local's, geometric mean of the "
                             "paired rounds [95% t-interval]")
    assert r.outlines[start + 1].split() == ["ed25519", "sign", "verify", "keygen"]
    ratio = r.outlines[start + 2].split()
    assert ratio[0] == "openssl@old/local" and len(ratio) == 10, out


@pytest.mark.parametrize("kdf, name", [("scrypt-n1024", "scrypt-n1024-r8-p1"),
                                       ("pbkdf2-sha256-i1000", "pbkdf2-sha256-i1000")])
def test_a_kdf_with_other_parameters_is_measured_on_every_target(pytester, kdf, name):
    pytest.importorskip("cryptography")
    pytester.makepyfile(test_empty="")
    r = pytester.runpytest("--qcrypto-kdf", kdf, *FAST, "--qcrypto-target", OLD, "-rs",
                           "--qcrypto-save", "out.json")
    out = r.stdout.str()
    assert "does not support" not in out, out
    r.assert_outcomes(passed=2)
    rows = json.loads((pytester.path / "out.json").read_text())["results"]
    assert sorted((row["plugin"], row["algorithm"], row["direction"]) for row in rows) == [
        ("openssl@local", name, "derive"), ("openssl@old", name, "derive")]
