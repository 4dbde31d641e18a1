"""Issue 26: ``--qcrypto-unit=cpb`` (cycles per byte; cycles per operation for the size-less
kinds): seconds times a known rate, its source said and saved, ``qcrypto report`` converting."""

import json
import statistics

import pytest

from conftest import FAST
from pytest_qcrypto.commands import qcrypto as cli
from pytest_qcrypto.measure import cycles
from pytest_qcrypto.measure.cycles import CycleRate
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.output import tables

INTEL = "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz\ncpu MHz\t\t: 1200.000\n"
EPYC = "processor\t: 0\nmodel name\t: AMD EPYC\ncpu MHz\t\t: 2445.404\nprocessor\t: 1\ncpu MHz\t\t: 9.0\n"


def test_the_nominal_frequency_of_the_model_name_wins():
    rate = cycles.nominal_rate(INTEL, has_cpufreq=True)
    assert rate.hz == 2.4e9 and rate.source.startswith("reference cycles (the nominal TSC")


def test_cpu_mhz_counts_only_without_a_cpufreq_driver():
    rate = cycles.nominal_rate(EPYC, has_cpufreq=False)
    assert rate.hz == pytest.approx(2445.404e6)  # the first CPU's line
    assert "kernel calibrated" in rate.source
    assert cycles.nominal_rate(EPYC, has_cpufreq=True) is None
    assert cycles.nominal_rate("model name\t: x\n", has_cpufreq=False) is None


class FakeCounter:
    """Counts 3 cycles per CPU nanosecond that passes on the fake CPU clock while enabled."""

    def __init__(self, clock):
        self.clock, self.value = clock, 0

    def __enter__(self):
        self.start = self.clock.ns
        return self

    def __exit__(self, *exc):
        self.value = 3 * (self.clock.ns - self.start)


class FakeCpuClock:
    def __init__(self):
        self.ns = 0

    def __call__(self):
        self.ns += 1_000_000  # 1 ms a reading
        return self.ns


def test_the_pmu_rate_is_counted_cycles_per_cpu_second():
    clock = FakeCpuClock()
    rate = cycles.pmu_rate(lambda: FakeCounter(clock), cpu_clock=clock, loop_s=0.05)
    # the counter saw 50 ms of the 51 ms between the loop's first and last reading
    assert rate.hz == pytest.approx(3e9 * 50 / 51)
    assert rate.source == "core cycles (perf_event_open cycles:u per CPU second over a 50 ms busy loop)"


def test_a_pmu_that_counts_nothing_gives_no_rate():
    class Dead(FakeCounter):
        def __exit__(self, *exc):
            self.value = 0
    clock = FakeCpuClock()
    assert cycles.pmu_rate(lambda: Dead(clock), cpu_clock=clock) is None


def test_cycles_are_seconds_times_the_rate():
    m = Measurement("sha256", "openssl", 16, "digest", 1000, (0.001, 0.002, 0.0015), (),
                    cycle_rate=CycleRate(2e9, "test"))
    # median 1.5 ms over 1000 operations = 1.5 us an operation = 3000 cycles, 187.5 per byte
    assert cycles.per_operation(m) == pytest.approx(3000)
    assert cycles.per_byte(m) == pytest.approx(187.5)
    assert tables.cell_text(tables.Cell(m), "cpb") == "187.50"
    sign = Measurement("ed25519", "openssl", 0, "sign", 100, (0.01,), (),
                       cycle_rate=CycleRate(3e9, "test"))
    assert tables.cell_text(tables.Cell(sign), "cycles/op") == "300000.00"


def test_a_size_less_table_is_in_cycles_per_operation():
    sized = tables.Table("sha256", "digest", "digest", ("openssl",), (16,), {})
    sizeless = tables.Table("ed25519", "signature", "", ("openssl",), (), {},
                            operations=("sign",))
    assert tables.unit_of(sized, "cpb") == "cpb" and tables.unit_of(sizeless, "cpb") == "cycles/op"
    assert tables.header(sized, "cpb") == ("Benchmark results for 'sha256' digest (cycles per "
                                           "byte; fewer is faster):")


def test_a_saved_rate_reads_back_and_a_bad_one_does_not():
    rate = CycleRate(2.5e9, "reference cycles (test)")
    assert CycleRate.of(rate.as_dict()) == rate
    assert CycleRate.of({"hz": -1}) is None and CycleRate.of({"hz": True}) is None
    assert CycleRate.of(None) is None


needs_rate = pytest.mark.skipif(cycles.reference() is None, reason="no cycle rate known here")


@needs_rate
def test_cpb_on_signatures_is_cycles_per_operation_and_no_note_says_it_had_no_effect(pytester):
    # the note said "--qcrypto-unit=cpb had no effect ...: they are in ops/s" under this table
    r = pytester.runpytest_subprocess("--qcrypto-pkey=ed25519", "--qcrypto-unit=cpb",
                                      "--qcrypto-plugin=openssl", *FAST)
    assert r.ret == 0
    assert ("Benchmark results for 'ed25519' signature (cycles per operation; fewer is "
            "faster):") in r.outlines
    assert not [line for line in r.outlines if "had no effect" in line]


@needs_rate
def test_pytest_prints_a_cycles_per_byte_table_with_its_source(pytester):
    r = pytester.runpytest_subprocess("--qcrypto-digest=sha256", "--qcrypto-unit=cpb",
                                      "--qcrypto-plugin=hashlib", "--qcrypto-size=16,4096", *FAST)
    assert r.ret == 0
    i = r.outlines.index("Benchmark results for 'sha256' digest (cycles per byte; fewer is "
                         "faster):")
    assert r.outlines[i + 1].split() == ["plugin", "16", "4096"]
    small, large = (float(x) for x in r.outlines[i + 2].split()[1:])
    assert small > large > 0  # a call's cost spreads over more bytes
    assert f"qcrypto: cycles = seconds x {cycles.reference().label}" in r.outlines


@needs_rate
def test_report_converts_a_saved_file_at_its_saved_rate(pytester, capsys):
    r = pytester.runpytest_subprocess("--qcrypto-digest=sha256", "--qcrypto-plugin=hashlib",
                                      "--qcrypto-size=64", "--qcrypto-unit=cpb",
                                      "--qcrypto-save=base.json", *FAST)
    assert r.ret == 0
    path = pytester.path / "base.json"
    doc = json.loads(path.read_text())
    assert doc["settings"]["cycle_rate"] == cycles.reference().as_dict()
    doc["settings"]["cycle_rate"] = {"hz": 1e9, "source": "a known rate"}
    path.write_text(json.dumps(doc))
    (result,) = doc["results"]
    expected = statistics.median(result["rounds_s"]) / result["count"] * 1e9 / 64
    capsys.readouterr()  # (pytester's own lines)
    assert cli.main(["report", str(path), "--qcrypto-unit=cpb"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Benchmark results for 'sha256' digest (cycles per byte; fewer is faster):"
    assert out[2].split() == ["base/hashlib", f"{expected:.2f}"]
    assert "cycles of base = seconds x 1 GHz: a known rate (saved with the run)" in out


@needs_rate
def test_report_of_a_file_without_a_rate_uses_this_machines(pytester, capsys):
    r = pytester.runpytest_subprocess("--qcrypto-digest=sha256", "--qcrypto-plugin=hashlib",
                                      "--qcrypto-size=64", "--qcrypto-save=old.json", *FAST)
    assert r.ret == 0
    assert "cycle_rate" not in json.loads((pytester.path / "old.json").read_text())["settings"]
    capsys.readouterr()
    assert cli.main(["report", str(pytester.path / "old.json"), "--qcrypto-unit=cpb"]) == 0
    out = capsys.readouterr().out
    assert (f"cycles of old = seconds x {cycles.reference().label} (not saved with the run: "
            "this machine's)") in out
