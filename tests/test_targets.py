"""--qcrypto-target's parts without a second interpreter: option checks, the interleaved
round order, the paired ratio, and errors as they come back from a target."""

from __future__ import annotations

import math
import statistics

import pytest

from pytest_qcrypto.measure import limits
from pytest_qcrypto.targets import pairs, remote
from pytest_qcrypto.backends.base import Unsupported
from pytest_qcrypto.measure.harness import Measurement, WorkerRecord
from pytest_qcrypto.checks.known_answers import KnownAnswerError
from pytest_qcrypto.targets.link import RemoteFailure, rebuilt


def m(rounds_s, count=1000, size=1024, plugin="p"):
    return Measurement("sha256", plugin, size, "digest", count, tuple(rounds_s),
                       cpu_s=tuple(rounds_s))


# -- usage errors -------------------------------------------------------------------------

@pytest.mark.parametrize("args, message", [
    (["--qcrypto-target", "old"],
     "--qcrypto-target: 'old' is not NAME=SPEC, e.g. old=popen//python=.venv-old/bin/python"),
    (["--qcrypto-target", "local=popen"],
     "--qcrypto-target: the name 'local' is this process; give the target another name"),
    (["--qcrypto-target", "a b=popen"],
     "--qcrypto-target: target name 'a b': use 1 to 40 letters, digits, '_', '.' or '-'"),
    (["--qcrypto-target", "a=popen", "--qcrypto-target", "a=popen"],
     "--qcrypto-target: target name 'a' given twice"),
    (["--qcrypto-target", "a=telnet=board"],
     "--qcrypto-target: a=telnet=board: an execnet gateway spec starts with popen, ssh, "
     "socket, vagrant_ssh (e.g. popen//python=PATH, ssh=user@host//python=python3)"),
    (["--qcrypto-interleave"], "--qcrypto-interleave needs --qcrypto-target NAME=SPEC (at least one)"),
    (["--qcrypto-compare-target", "old"],
     "--qcrypto-compare-target needs --qcrypto-target NAME=SPEC (at least one)"),
    (["--qcrypto-target", "old=popen", "--qcrypto-compare-target", "new"],
     "--qcrypto-compare-target new: no such target; valid: local, old"),
])
def test_bad_target_options_are_usage_errors_that_say_why(pytester, args, message):
    r = pytester.runpytest("--qcrypto-digest", "sha256", *args)
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert f"ERROR: {message}" in r.stderr.lines


def test_targets_come_from_ini_lines_too(pytester):
    pytester.makeini("[pytest]\nqcrypto_targets =\n    old\n")
    r = pytester.runpytest("--qcrypto-digest", "sha256")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert ("ERROR: qcrypto_targets: 'old' is not NAME=SPEC, e.g. "
            "old=popen//python=.venv-old/bin/python") in r.stderr.lines


# -- interleaving and the paired ratio -------------------------------------------------------

def test_rounds_alternate_and_reverse_every_other_round():
    calls = []

    def member(name):
        def one(count):
            calls.append((name, count))
            return m([0.01], count=count or {"A": 64, "B": 128}[name])
        return one

    out = pairs.interleave({"A": member("A"), "B": member("B")}, rounds=4)
    # calibration alone (count None), then A B, B A, A B, B A at each one's own count
    assert calls == [("A", None), ("B", None), ("A", 64), ("B", 128), ("B", 128), ("A", 64),
                     ("A", 64), ("B", 128), ("B", 128), ("A", 64)]
    assert out["A"].rounds_s == (0.01,) * 4 and out["A"].count == 64
    assert out["B"].count == 128


def test_a_member_that_fails_leaves_the_rounds_to_the_others():
    calls = []

    def ok(count):
        calls.append("ok")
        return m([0.01], count=8)

    def broken(count):
        calls.append("broken")
        if count is not None:
            raise limits.MeasurementTimeout(2)
        return m([0.01], count=8)

    out = pairs.interleave({"ok": ok, "broken": broken}, rounds=3)
    assert calls == ["ok", "broken", "ok", "broken", "ok", "ok"]
    assert isinstance(out["broken"], limits.MeasurementTimeout)
    assert len(out["ok"].rounds_s) == 3


def test_ctrl_c_stops_the_interleaving():
    def interrupted(count):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        pairs.interleave({"a": interrupted}, rounds=2)


def test_paired_ratio_is_the_geometric_mean_with_a_t_interval_on_log_ratios():
    ref = m([1.0, 1.0, 1.0, 1.0])
    other = m([2.0, 1.6, 2.5, 2.0])  # half, 5/8, 2/5, half the reference's speed
    logs = [math.log(r) for r in (0.5, 0.625, 0.4, 0.5)]
    half = 3.182 * statistics.stdev(logs) / 2  # t(0.975, 3 df) = 3.182
    r = pairs.paired_ratio(ref, other)
    assert r.point == pytest.approx(math.exp(statistics.fmean(logs)))
    assert (r.low, r.high) == pytest.approx((math.exp(statistics.fmean(logs) - half),
                                             math.exp(statistics.fmean(logs) + half)))
    assert r.text() == "0.50 [0.37, 0.67]"  # 0.5 x exp(-+0.290)


def test_equal_rounds_give_a_ratio_without_spread_and_one_round_no_interval():
    assert pairs.paired_ratio(m([1.0, 2.0]), m([0.5, 1.0], count=500)).text() == \
        "1.00 [1.00, 1.00]"
    assert pairs.paired_ratio(m([1.0]), m([4.0])).text() == "0.25 [1 round]"


@pytest.mark.parametrize("df, t", [(1, 12.706), (2, 4.303), (30, 2.042), (35, 2.042),
                                   (60, 2.000), (121, 1.96)])
def test_t_quantiles_come_from_the_table(df, t):
    assert pairs.t975(df) == t


# -- the wire: measurements and errors ------------------------------------------------------

def test_a_measurement_survives_the_channel_as_plain_data():
    from pytest_qcrypto.algorithms.catalog import Direction

    worker = WorkerRecord(count=4, rounds_s=(0.5, 0.6), cpu_s=(0.4, 0.5),
                          kib_per_s=(8.0, 6.6))
    sent = Measurement("sha256", "hashlib", 16, Direction.DIGEST, 8, (0.5, 0.6), (0.4, 0.5),
                       "hashlib", "hash", None, None, jobs=2, workers=(worker,),
                       calibration_note="short", iv="")
    data = remote.measurement_to_dict(sent)
    assert data["direction"] == "digest" and type(data["direction"]) is str
    back = remote.measurement_from_dict(data)
    assert back == sent and back.workers == (worker,) and back.jobs == 2


def test_errors_come_back_as_their_kind():
    def round_trip(exc):
        try:
            raise exc
        except BaseException as caught:
            return rebuilt(remote.error_to_dict(caught))

    timeout = round_trip(limits.MeasurementTimeout(3))
    assert isinstance(timeout, limits.MeasurementTimeout) and timeout.seconds == 3
    wrong = round_trip(KnownAnswerError("hashlib sha256: vector 1: wrong digest"))
    assert type(wrong) is KnownAnswerError and str(wrong) == "hashlib sha256: vector 1: wrong digest"
    assert type(round_trip(Unsupported("no XTS"))) is Unsupported
    os_error = round_trip(OSError(19, "No such device"))
    assert type(os_error) is OSError and (os_error.errno, os_error.strerror) == (19, "No such device")
    other = round_trip(ZeroDivisionError("division by zero"))
    assert type(other) is RemoteFailure and str(other) == "ZeroDivisionError: division by zero"
    assert "test_targets.py" in other.qcrypto_origin
