"""The slow-phase rule against a cell's peers (issue 23): the same algorithm and buffer size in
the run's other crypto plugins, measured in the same spread passes, are the reference that
moves with the machine.  A phase shift that moves a cell and its peers alike is no
regression (cannot tell); the same shift with the peers unmoved is one.  Rounds are made up
(fake clocks), never timed."""

import sys

import pytest

from pytest_qcrypto.gate import spread as rule, verdicts as gate
from pytest_qcrypto.gate.tries import judge_tries
from pytest_qcrypto.gate.verdicts import Criteria, Rule
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.pytest_side import spread as spread_side
from pytest_qcrypto.results import store as results
from pytest_qcrypto.results.store import Result

TEN = Rule(None, None, None, 10.0, "--qcrypto-threshold")
SLOW, FAST = 0.010, 0.0060  # seconds of a round in the slow phase and in a burst


def rounds(scale=1.0, bursts=5, n=25):
    """``n`` rounds, ``bursts`` of them in a fast phase, every one ``scale`` times longer."""
    step = n // bursts
    return tuple(scale * (FAST if i % step == 0 and i // step < bursts else SLOW)
                 for i in range(n))


def cell(plugin, scale=1.0, size=256, algorithm="sha256"):
    r = rounds(scale)
    return Measurement(algorithm, plugin, size, "digest", 1000, r, cpu_s=r,
                       canonical_plugin=plugin, spread_s=9.0)


def base(plugin, size=256, algorithm="sha256"):
    return Result.from_measurement(cell(plugin, size=size, algorithm=algorithm))


def judged(m, baseline, peers):
    c = Criteria(2, baseline, TEN, peers=tuple(peers))
    return gate.judge([m], [None], c, more=False)


def test_a_phase_shift_that_moves_the_peers_too_is_not_a_regression():
    # every round of the cell 30% slower, and so are both peers': the machine moved
    peers = [(cell(p, 1 / 0.7), base(p)) for p in ("openssl", "pycryptodome")]
    v = judged(cell("hashlib", 1 / 0.7), base("hashlib"), peers)
    assert v.status == gate.CANNOT_TELL and not v.failed
    assert v.drift.slowdown == pytest.approx(0.3)
    assert v.drift.cannot_tell_text() == (
        "cannot tell on this machine: 30.0% slower in the slow phase (25% quantile of the "
        "round rates), but sha256's other plugins at this size moved too (openssl, "
        "pycryptodome moved -30.0%): the machine, or what they share: an A/B run of both "
        "versions in one job "
        "(--qcrypto-target) or --qcrypto-measure=instructions can tell")
    assert v.drift.record()["drift_status"] == "cannot tell"


def test_the_same_shift_with_the_peers_unmoved_is_a_regression():
    peers = [(cell(p), base(p)) for p in ("openssl", "pycryptodome")]
    v = judged(cell("hashlib", 1 / 0.7), base("hashlib"), peers)
    assert v.status == gate.REGRESSION and v.failed
    assert v.drift.slowdown == pytest.approx(0.3)
    assert v.drift.band == 0.0  # every side's rounds repeat exactly: nothing to resample
    assert "change -30.0% against sha256's other plugins at this size (openssl, " \
        "pycryptodome moved +0.0%), pass by pass (-30.0% by the clock)" in v.message
    assert "slow phase of spread rounds, against its peers" in v.message


def test_a_slowdown_hidden_by_a_fast_machine_state_is_found_against_the_peers():
    # the run in a fast state, every cell 25% faster; one cell 20% slower than that reads
    # no slower than its baseline by its own figures, and 20% slower than its peers
    peers = [(cell(p, 0.75), base(p)) for p in ("openssl", "pycryptodome")]
    v = judged(cell("hashlib", 0.75 / 0.8), base("hashlib"), peers)
    assert v.status == gate.REGRESSION
    assert v.drift.slowdown == pytest.approx(0.2)
    alone = judged(cell("hashlib", 0.75 / 0.8), base("hashlib"), [])
    assert alone.status == gate.OK  # by its own figures: 6% faster


def test_the_peers_median_move_is_what_counts():
    # one peer was slowed 40% itself: the median of two peers is their mean, 20% here, and
    # the cell, unchanged, is within the threshold against it: no regression
    peers = [(cell("openssl"), base("openssl")), (cell("slowed", 1 / 0.6), base("slowed"))]
    v = judged(cell("hashlib"), base("hashlib"), peers)
    assert v.status == gate.OK and not v.failed


def test_peers_are_the_same_algorithm_size_and_direction_in_other_plugins():
    me = cell("hashlib")
    candidates = [(cell("openssl"), base("openssl")),
                  (cell("openssl", size=64), base("openssl", size=64)),
                  (cell("openssl", algorithm="sha512"), base("openssl", algorithm="sha512")),
                  (cell("hashlib"), base("hashlib"))]
    assert [p.plugin for p, _ in rule.peers_of(me, candidates)] == ["openssl"]
    assert [p.size for p, _ in rule.peers_of(me, candidates)] == [256]
    # no other plugin of its algorithm: every cell of the run's other algorithms, any size
    alone = cell("hashlib", algorithm="md5")
    assert [(p.algorithm, p.plugin, p.size) for p, _ in rule.peers_of(alone, candidates)] == [
        ("sha256", "openssl", 256), ("sha256", "openssl", 64), ("sha512", "openssl", 256),
        ("sha256", "hashlib", 256)]
    # ... but never its own algorithm in its own plugin at another size: the same code, which
    # a change of it slows alike (a one-plugin, one-algorithm run is judged by its figures)
    assert [(p.algorithm, p.plugin, p.size) for p, _ in rule.peers_of(
        cell("hashlib", size=16), candidates)] == [
        ("sha256", "openssl", 256), ("sha256", "openssl", 64), ("sha512", "openssl", 256)]
    assert rule.peers_of(cell("hashlib", size=16), [(cell("hashlib"), base("hashlib"))]) == []


def test_a_cell_without_a_plugin_peer_is_judged_against_the_most_slowed_other_cell():
    # AES-GCM in one plugin only, 30% slower: the run's sha256 cells moved 8% at its size but
    # 35% at 16 B (measured: a whole-run slow state moves other work unalike)
    peers = [(cell("openssl", 1 / 0.92), base("openssl")),
             (cell("hashlib", 1 / 0.92), base("hashlib")),
             (cell("openssl", 1 / 0.65, size=16), base("openssl", size=16))]
    me = cell("openssl", 1 / 0.7, algorithm="aes-128-gcm")
    v = judged(me, base("openssl", algorithm="aes-128-gcm"), rule.peers_of(me, peers))
    assert v.status == gate.CANNOT_TELL and not v.failed
    assert "but the run's other cells moved too (the most slowed, sha256 openssl 16 B, moved " \
        "-35.0%)" in v.drift.cannot_tell_text()
    # against the median of its size (8%) it would have been a 24% regression
    assert v.drift.slowdown == pytest.approx(0.3)


def test_a_cell_without_a_plugin_peer_slower_than_every_other_cell_is_a_regression():
    peers = [(cell("openssl", 1 / 0.95), base("openssl")),
             (cell("openssl", 1 / 0.97, size=16), base("openssl", size=16))]
    me = cell("openssl", 1 / 0.7, algorithm="aes-128-gcm")
    v = judged(me, base("openssl", algorithm="aes-128-gcm"), rule.peers_of(me, peers))
    assert v.status == gate.REGRESSION and v.failed
    assert v.drift.slowdown == pytest.approx(1 - 0.7 / 0.95)
    assert "against the run's other cells (the most slowed, sha256 openssl 256 B, moved " \
        "-5.0%)" in v.message


def test_back_to_back_peers_are_left_out():
    # a peer without spread rounds on both sides is no peer: the cell is judged by itself
    flat = Measurement("sha256", "openssl", 256, "digest", 1000, (SLOW,) * 3,
                       cpu_s=(SLOW,) * 3, canonical_plugin="openssl")
    v = judged(cell("hashlib", 1 / 0.7), base("hashlib"), [(flat, Result.from_measurement(flat))])
    assert v.status == gate.REGRESSION and "against its peers" not in v.message


class _Gate:
    """The run's gate side, as :func:`with_peers` uses it: criteria for a measurement."""

    def __init__(self, baselines):
        self.baselines = baselines

    def criteria(self, m, item):
        return Criteria(2, self.baselines.get(m.plugin), TEN)


def test_the_pytest_side_gives_each_cell_its_peers_from_the_same_passes():
    measured = [cell("hashlib"), cell("openssl"), cell("openssl", size=64)]
    cells = spread_side.SpreadCells(lambda: None, lambda case: None, None, None,
                                    lambda item: None)
    cells.all = measured
    side = _Gate({"hashlib": base("hashlib"), "openssl": base("openssl")})
    item_criteria = lambda m: side.criteria(m, "item")  # noqa: E731 (what run.py passes)
    criteria = spread_side.with_peers(item_criteria, cells, side)
    c = criteria(measured[0])
    assert [(p.plugin, p.size, b.plugin) for p, b in c.peers] == [("openssl", 256, "openssl")]
    # not spread, or no baseline: no peers
    assert criteria(cell("pycryptodome")).peers == ()
    assert spread_side.with_peers(item_criteria, None, side) is item_criteria


def save(path, ms):
    results.save(path, results.ResultsFile(results=[Result.from_measurement(m) for m in ms]))


@pytest.mark.parametrize("peer_scale, status, exit_code", [(1 / 0.7, "cannot tell", 1),
                                                            (1.0, "regression", 1)])
def test_qcrypto_compare_judges_saved_cells_against_their_peers(pytester, peer_scale, status,
                                                                exit_code):
    save(pytester.path / "base.json", [cell("hashlib"), cell("openssl")])
    save(pytester.path / "now.json", [cell("hashlib", 1 / 0.7), cell("openssl", peer_scale)])
    r = pytester.run(sys.executable, "-m", "pytest_qcrypto.commands.qcrypto", "compare",
                     "base.json", "now.json")
    assert r.ret == exit_code, r.stdout.str() + r.stderr.str()
    text = r.stdout.str() + r.stderr.str()
    if status == "cannot tell":
        assert "sha256's other plugins at this size moved too (openssl moved -30.0%)" in text
        # every cell cannot tell: that is not a pass
        assert "ERROR: qcrypto: nothing could be told: for each of the 2 cells judged" in text
    else:
        assert "against sha256's other plugins at this size (openssl moved +0.0%)" in text


def phased(pattern, scale=1.0, plugin="hashlib"):
    """A cell whose round ``i`` took ``SLOW x scale / pattern[i]``: the machine ``pattern[i]``
    times faster in pass ``i`` for every cell alike."""
    r = tuple(SLOW * scale / f for f in pattern)
    return Measurement("sha256", plugin, 256, "digest", 1000, r, cpu_s=r,
                       canonical_plugin=plugin, spread_s=9.0)


def test_peers_are_compared_pass_by_pass_so_the_phases_cancel():
    # the machine's speed changes from pass to pass (1 to 1.8x), differently in the two runs;
    # every cell of a pass moves alike, and the cell is 20% slower in the current run
    before = [1.0, 1.8, 1.1, 1.5, 1.0, 1.3, 1.7, 1.0, 1.2, 1.6] * 2 + [1.0, 1.4, 1.1, 1.0, 1.5]
    after = [1.8 if i % 3 else 1.0 for i in range(25)]
    peers = [(phased(after, plugin=p), Result.from_measurement(phased(before, plugin=p)))
             for p in ("openssl", "pycryptodome")]
    v = judged(phased(after, 1 / 0.8), Result.from_measurement(phased(before)), peers)
    assert v.status == gate.REGRESSION and v.failed
    assert v.drift.slowdown == pytest.approx(0.2) and v.drift.band == pytest.approx(0.0)
    assert "pass by pass" in v.message
    # the same rounds, one peer a round short: the passes do not line up, so the slow phases
    # are compared as before, and the phases the two runs sampled differently hide it
    short = [(phased(after[:-1], plugin="openssl"), peers[0][1]), peers[1]]
    v = judged(phased(after, 1 / 0.8), Result.from_measurement(phased(before)), short)
    assert v.status != gate.REGRESSION and "pass by pass" not in v.message


def test_a_cells_peers_are_measured_next_to_it_in_each_pass():
    from types import SimpleNamespace

    from pytest_qcrypto.algorithms.cases import Case

    items = [Case("sha256", "openssl", 16), Case("sha256", "openssl", 64),
             Case("sha256", "hashlib", 16), Case("sha256", "hashlib", 64),
             Case("aes-128-gcm", "openssl", 16), Case("aes-128-gcm", "openssl", 16, decrypt=True),
             Case("SHA256", "slowed", 16), Case("sha256", "hashlib", 16),  # seen again: once
             Case("ed25519", "openssl", 0, operation="sign")]  # no size: measured alone
    cells = spread_side.SpreadCells(lambda: SimpleNamespace(items=items), lambda case: None,
                                    None, None, case_of=lambda item: item)
    cases = cells.cases()  # calibrated in the items' order: an interrupt keeps the first
    assert cases == items[:7]
    assert [f"{alg} {plugin}-{size}{' decrypt' * decrypt}" for alg, plugin, size, decrypt, _
            in spread_side.pass_order(cases)] == [
        "sha256 openssl-16", "sha256 hashlib-16", "SHA256 slowed-16", "sha256 openssl-64",
        "sha256 hashlib-64", "aes-128-gcm openssl-16", "aes-128-gcm openssl-16 decrypt"]
