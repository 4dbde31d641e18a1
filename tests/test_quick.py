"""Issue 26: ``--qcrypto-quick`` (and ``qcrypto speed --quick``): known answers and one short
round a cell, exit 1 on any error, figures marked quick and never saved or compared."""

import json
import sys

import pytest

from conftest import TEST_PLUGINS
from pytest_qcrypto.commands import qcrypto as cli
from pytest_qcrypto.measure import harness
from pytest_qcrypto.pytest_side import quoting

#: Writes every kept measurement's cell and round count to rounds.json at the end of the run.
RECORD_ROUNDS = '''
import json, pathlib

def pytest_unconfigure(config):
    run = config.pluginmanager.get_plugin("qcrypto-run")
    if run is not None:
        pathlib.Path("rounds.json").write_text(json.dumps(
            [[m.plugin, m.algorithm, m.size, len(m.rounds_s)] for m in run.ledger.measurements]))
'''


class FakeClock:
    """A clock that advances 1000 ns an operation."""

    def __init__(self):
        self.ns, self.runs = 0, []

    def run(self, count):
        self.runs.append(count)
        self.ns += 1000 * count


def test_a_quick_round_is_the_calibration_run_that_reaches_1_ms():
    fake = FakeClock()
    timing = harness.time_runner(fake.run, min_time=quoting.QUICK_MIN_TIME, rounds=1,
                                 clock=lambda: fake.ns, cpu_clock=lambda: 0, guard=lambda: 0.0)
    # doubling 1, 2, ... 64 operations (64 us: 1/16 of 1 ms), then the skip to 1024, the first
    # power of two of 1 ms or more, whose run is the one timed round
    assert fake.runs == [1, 2, 4, 8, 16, 32, 64, 1024]
    assert (timing.count, timing.rounds_s) == (1024, (0.001024,))


def test_a_quick_run_times_one_round_a_cell_and_marks_its_figures(pytester):
    pytester.makeconftest(RECORD_ROUNDS)
    r = pytester.runpytest_subprocess("--qcrypto-quick", "--qcrypto-digest", "sha256",
                                      "--qcrypto-plugin", "hashlib", "--qcrypto-size", "16,4096")
    assert r.ret == 0, r.outlines
    assert json.loads((pytester.path / "rounds.json").read_text()) == [
        ["hashlib", "sha256", 16, 1], ["hashlib", "sha256", 4096, 1]]
    assert quoting.QUICK_NOTE in r.outlines


@pytest.mark.parametrize("other", ["--qcrypto-save=out.json", "--qcrypto-compare=base.json",
                                   "--qcrypto-history=runs", "--qcrypto-rounds=5",
                                   "--qcrypto-min-time=1", "--qcrypto-count=10"])
def test_a_quick_run_refuses_to_save_compare_or_time_longer(pytester, other):
    r = pytester.runpytest_subprocess("--qcrypto-quick", "--qcrypto-digest", "sha256", other)
    assert r.ret == 4
    flag = other.split("=")[0]
    assert f"ERROR: --qcrypto-quick and {flag}: choose one; " in r.stderr.str()
    assert not (pytester.path / "out.json").exists()


def qcrypto(pytester, *args):
    return pytester.run(sys.executable, "-m", "pytest_qcrypto.commands.qcrypto", *args)


def test_speed_quick_passes_the_option_and_nothing_else():
    ns, extra = cli.build_parser().parse_known_args(["speed", "--quick", "-P", "openssl"])
    args = cli.speed_args(ns, extra)
    assert "--qcrypto-quick" in args and "--qcrypto-min-time" not in " ".join(args)


def test_speed_quick_exits_1_when_a_plugin_answers_wrongly(pytester):
    pytester.makeconftest(TEST_PLUGINS)  # "wrong": a sha256 whose digest is all zeros
    r = qcrypto(pytester, "speed", "--quick", "-P", "wrong")
    assert r.ret == 1, r.stderr.str()
    assert r.outlines[0] == "Benchmark results for 'sha256' digest (KiB/s):"
    assert r.outlines[2].split() == ["wrong", "x", "x", "x", "x", "x", "x", "x"]
    assert r.outlines[3].startswith("  x wrong (all sizes) failed: wrong gave a wrong answer "
                                    "for sha256 digest on vector 'FIPS 180-4 examples")
