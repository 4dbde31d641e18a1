"""Issue 26: ``--qcrypto-quick`` (and ``qcrypto speed --quick``): known answers and one short
round a cell, exit 1 on any error, figures marked quick and never saved or compared."""

import json
import sys

import pytest

from conftest import TEST_PLUGINS
from pkey_doubles import PKEY_PLUGINS
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
    # doubling 1, 2, ... 64 operations (64 us: 1/16 of 1 ms), then the skip to the 1150 they
    # predict take 1 ms x 1.15, whose run is the one timed round
    assert fake.runs == [1, 2, 4, 8, 16, 32, 64, 1150]
    assert (timing.count, timing.rounds_s) == (1150, (0.00115,))


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


# -- what a quick run leaves out: fresh key pairs and the reference workload ---------------

#: doubleplug's ed25519 (pkey_doubles.PKEY_PLUGINS) as ``counted``, on a fake clock: 50 us
#: an operation; counted.json gets the contexts opened and closed, each timed run's count
#: and each measurement's reference times.
COUNTED = PKEY_PLUGINS + '''
import json, pathlib

CLOCK, SAVED, OPENED, CLOSED, RUNS = {"ns": 0}, {}, [], [], []

def pytest_configure(config):
    SAVED.update(wall=time.perf_counter_ns, cpu=time.process_time_ns)
    time.perf_counter_ns = time.process_time_ns = lambda: CLOCK["ns"]

def pytest_unconfigure(config):
    time.perf_counter_ns, time.process_time_ns = SAVED["wall"], SAVED["cpu"]
    run = config.pluginmanager.get_plugin("qcrypto-run")
    pathlib.Path("counted.json").write_text(json.dumps({
        "opened": len(OPENED), "closed": len(CLOSED), "runs": RUNS,
        "references": [len(m.reference_s) for m in run.ledger.measurements]}))

class CountedContext(PkeyContext):
    def __init__(self, algorithm, key):
        super().__init__(algorithm, key)
        OPENED.append(algorithm.name)
    def close(self):
        CLOSED.append(self.algorithm.name)
    def runner(self, work):
        run = super().runner(work)
        def timed(count):
            RUNS.append([work.operation, count])
            run(count)
            CLOCK["ns"] += 50_000 * count
        return timed

class Counted(CryptoPlugin):
    name = "counted"
    library = "pyca/cryptography, counted"
    def supported(self):
        return frozenset({"ed25519"})
    def open(self, algorithm, key, variant=None):
        return CountedContext(algorithm, key)

def pytest_qcrypto_plugins():
    return [PeerPlug(), Counted()]
'''


def counted_run(pytester, *args):
    pytester.makeconftest(COUNTED)
    r = pytester.runpytest_subprocess("--qcrypto-pkey", "ed25519", "--qcrypto-plugin", "counted",
                                      "-p", "no:cacheprovider", *args)
    assert r.ret == 0, r.outlines
    return json.loads((pytester.path / "counted.json").read_text())


def test_a_quick_run_lends_key_pairs_and_times_one_round_without_the_reference(pytester):
    got = counted_run(pytester, "--qcrypto-quick")
    # one key pair for both cells and their self and cross checks, and the three RFC 8032
    # vectors' own contexts in each cell's known answers (every check still runs): 1 + 2 x 3
    # opened, all closed (the lent one at the end of the run)
    assert (got["opened"], got["closed"]) == (7, 7)
    # each cell: 1 and 2 operations (50 us each), then the 23 that 2 in 100 us predict take
    # 1 ms x 1.15, whose run is its one timed round
    assert got["runs"] == [["sign", 1], ["sign", 2], ["sign", 23],
                           ["verify", 1], ["verify", 2], ["verify", 23]]
    assert got["references"] == [0, 0]


def test_a_normal_run_opens_its_own_key_pairs_and_a_saving_one_times_the_reference(pytester):
    got = counted_run(pytester, "--qcrypto-min-time=0.001", "--qcrypto-rounds=2",
                      "--qcrypto-save=saved.json")
    # each cell: its own context, the three vectors' and one for the self check: 2 x 5
    assert (got["opened"], got["closed"]) == (10, 10)
    assert got["runs"] == [["sign", 1], ["sign", 2], ["sign", 23], ["sign", 23],
                           ["verify", 1], ["verify", 2], ["verify", 23], ["verify", 23]]
    assert got["references"] == [2, 2]  # the drift rule of a later compare judges by them


def test_a_run_that_neither_saves_nor_compares_times_no_reference(pytester):
    got = counted_run(pytester, "--qcrypto-min-time=0.001", "--qcrypto-rounds=2")
    assert got["runs"] == [["sign", 1], ["sign", 2], ["sign", 23], ["sign", 23],
                           ["verify", 1], ["verify", 2], ["verify", 23], ["verify", 23]]
    assert got["references"] == [0, 0]


def test_speed_quick_exits_1_when_a_public_key_answer_is_wrong(pytester, monkeypatch):
    pytester.makeconftest(PKEY_PLUGINS)  # BAD_SIGNATURE=1: peerplug signs with another key
    monkeypatch.setenv("BAD_SIGNATURE", "1")
    r = qcrypto(pytester, "speed", "--quick", "-S", "ed25519", "-P", "peerplug")
    assert r.ret == 1, r.stderr.str()
    assert ("  x peerplug (all operations) failed: peerplug ed25519: self check: its own "
            "signature does not verify") in r.outlines  # both cells, each checked with the key
    # pair lent from the sign cell to the verify cell; pytest cuts the summary line to the
    # terminal's width (COLUMNS), so a cut line must be the start of the whole one
    for direction in ("sign", "verify"):
        whole = (f"FAILED qcrypto::ed25519[peerplug-{direction}] - Failed: peerplug ed25519: "
                 "self check: its own signature does not verify")
        assert any(line == whole or (line.endswith("...") and len(line) > 50
                                     and whole.startswith(line[:-3]))
                   for line in r.errlines), r.errlines


def test_key_pairs_lend_a_context_again_once_kept_and_close_what_they_kept():
    from pytest_qcrypto.algorithms import catalog
    from pytest_qcrypto.measure.reuse import KeyPairs

    class Ctx:
        def __init__(self, alg):
            self.alg = alg

    keys, closed = KeyPairs(), []
    ed, rsa = catalog.lookup("ed25519"), catalog.lookup("rsa2048")
    lend = keys.lend("plug", Ctx)
    a = lend(ed)
    b = lend(ed)  # a is out: a second key pair
    assert keys.keep(a) and keys.keep(b) and not keys.keep(Ctx(ed))  # (not lent: caller closes)
    assert {id(lend(ed)), id(lend(ed))} == {id(a), id(b)} and keys.made == 2
    keys.keep(a)
    assert lend(rsa) is not a and keys.lend("other", Ctx)(ed) is not a and keys.made == 4
    assert keys.close(closed.append) is None and closed == [a]
