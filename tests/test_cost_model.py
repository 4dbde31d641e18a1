"""Where the time goes (pytest_qcrypto.measure.cost_model): per-call + per-byte fits of known costs,
timed by the real harness on a fake clock, the summary lines and the saved fits."""

import json
import math
from dataclasses import replace

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from pytest_qcrypto.backends.base import CryptoPlugin, NullRequest, Unsupported
from pytest_qcrypto.measure import cost_model, harness, interface_cost
from pytest_qcrypto.measure.registry import RegistryError, Selection
from pytest_qcrypto.results import store as results
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.algorithms.settings import DEFAULT_SIZES

from conftest import FAST


def timed(algorithm, plugin, size, per_call_ns, per_byte_ns, cpu=None, hardware=None,
          jitter=(1.0,)):
    """A Measurement of the real harness on a fake clock: each operation of ``size`` bytes
    costs per_call_ns + size x per_byte_ns of wall time (times the round's jitter factor),
    and ``cpu`` (per-call, per-byte ns) of CPU time (default: the same as wall)."""
    clock = {"wall": 0, "cpu": 0, "round": 0}
    cpu_call, cpu_byte = cpu or (per_call_ns, per_byte_ns)

    def run(count):
        factor = jitter[clock["round"] % len(jitter)]
        clock["round"] += 1
        clock["wall"] += round(count * (per_call_ns + size * per_byte_ns) * factor)
        clock["cpu"] += round(count * (cpu_call + size * cpu_byte) * factor)

    t = harness.time_runner(run, min_time=0.01, rounds=3, clock=lambda: clock["wall"],
                            cpu_clock=lambda: clock["cpu"])
    return Measurement(algorithm, plugin, size, "digest", t.count, t.rounds_s, t.cpu_s,
                       hardware=hardware)


def predicted_within(fit, measured, tolerance):
    for m in measured:
        seconds = m.median_s / m.operations
        assert abs(fit.seconds(m.size) - seconds) <= tolerance * seconds, (m.size, fit)


def test_the_fit_gives_back_known_costs_timed_on_a_fake_clock():
    ms = [timed("sha256", "openssl", s, 1370, 0.52) for s in DEFAULT_SIZES]
    (fit,) = cost_model.fit_all(ms)
    assert (fit.algorithm, fit.plugin, fit.direction, fit.sizes) == (
        "sha256", "openssl", "digest", DEFAULT_SIZES)
    assert fit.per_call_s == pytest.approx(1.37e-6, rel=1e-4)
    assert fit.per_byte_s == pytest.approx(0.52e-9, rel=1e-4)
    assert fit.cpu_per_gib_s is None  # all on the CPU
    predicted_within(fit, ms, 0.001)
    assert cost_model.line(fit) == ("openssl sha256: 1.37 us per call + 0.52 ns per byte "
                                    "(1.92 GB/s for large buffers)")


def test_one_disturbed_cell_does_not_pull_the_robust_line(monkeypatch):
    # every cell within 3% of its cost, the 32768-byte one twice as slow (a stall)
    jitters = {16: 1.03, 64: 0.98, 256: 1.01, 1024: 0.99, 4096: 0.97, 8192: 1.02, 32768: 2.0}
    ms = [timed("sha256", "hashlib", s, 300, 0.6, jitter=(jitters[s],)) for s in DEFAULT_SIZES]
    (fit,) = cost_model.fit_all(ms)
    assert fit.per_call_s == pytest.approx(0.3e-6, rel=0.05)
    assert fit.per_byte_s == pytest.approx(0.6e-9, rel=0.05)
    predicted_within(fit, [m for m in ms if m.size != 32768], 0.05)
    # plain (unweighted by Huber) relative least squares is pulled off by the stall
    monkeypatch.setattr(cost_model, "HUBER_K", math.inf)
    (plain,) = cost_model.fit_all(ms)
    assert abs(plain.per_byte_s / 0.6e-9 - 1) > 0.08


@hsettings(max_examples=60, deadline=None)
@given(per_call_ns=st.floats(50, 50_000), per_byte_ns=st.floats(0.01, 20),
       sizes=st.sets(st.sampled_from(DEFAULT_SIZES + (65536, 1 << 20)), min_size=3),
       noise=st.lists(st.floats(0.95, 1.05), min_size=9, max_size=9))
def test_every_cell_is_predicted_within_15_percent(per_call_ns, per_byte_ns, sizes, noise):
    sizes = sorted(sizes)
    seconds = [(per_call_ns + s * per_byte_ns) * 1e-9 * f for s, f in zip(sizes, noise)]
    a, b = cost_model.fit_line(sizes, seconds)
    assert a >= 0 and b >= 0
    for s, t in zip(sizes, seconds):
        assert abs(a + b * s - t) <= 0.15 * t


def test_plugins_of_one_algorithm_say_where_the_other_is_faster():
    fits = cost_model.fit_all(
        [timed("sha256", "openssl", s, 1370, 0.52) for s in DEFAULT_SIZES]
        + [timed("sha256", "hashlib", s, 300, 0.6) for s in DEFAULT_SIZES]
        + [timed("sha256", "slowest", s, 2000, 1.0) for s in (16, 64, 256)])
    openssl, hashlib, slowest = fits
    # (1370 - 300) ns / (0.6 - 0.52) ns per byte = 13375 bytes = 13.1 KiB
    assert cost_model.line(openssl, [hashlib, slowest]) == (
        "openssl sha256: 1.37 us per call + 0.52 ns per byte (1.92 GB/s for large buffers); "
        "hashlib is faster below 13.1 KiB")
    assert cost_model.line(hashlib, [openssl, slowest]) == (
        "hashlib sha256: 300 ns per call + 0.6 ns per byte (1.67 GB/s for large buffers); "
        "openssl is faster above 13.1 KiB")
    assert cost_model.line(slowest, [openssl, hashlib]).endswith(
        "; openssl is faster at every size; hashlib is faster at every size")


def test_work_off_the_cpu_gets_its_cpu_seconds_per_gib():
    # an engine: 5 us + 1 ns per byte of wall time, of which the CPU spends 2 us + 0.25 ns
    ms = [timed("sha256", "afalg", s, 5000, 1.0, cpu=(2000, 0.25), hardware=True)
          for s in DEFAULT_SIZES]
    (fit,) = cost_model.fit_all(ms)
    assert fit.cpu_per_gib_s == pytest.approx(0.25e-9 * 2 ** 30, rel=1e-3)
    assert cost_model.line(fit) == ("afalg sha256: 5 us per call + 1 ns per byte (1 GB/s for "
                                    "large buffers); CPU 0.268 s per GiB processed")
    # not said hardware, but the CPU did a fifth of the wall time: off the CPU all the same
    ms = [timed("sha256", "x", s, 5000, 1.0, cpu=(1000, 0.2)) for s in DEFAULT_SIZES]
    assert cost_model.fit_all(ms)[0].cpu_per_gib_s == pytest.approx(0.2e-9 * 2 ** 30, rel=1e-3)
    # on a busy machine a plugin on the CPU gets 70% of the wall time: not off the CPU
    ms = [timed("sha256", "x", s, 5000, 1.0, cpu=(3500, 0.7)) for s in DEFAULT_SIZES]
    assert cost_model.fit_all(ms)[0].cpu_per_gib_s is None
    # a kernel plugin (it names its driver) gets the figure whatever its share
    ms = [replace(m, driver="sha256-generic") for m in ms]
    assert cost_model.fit_all(ms)[0].cpu_per_gib_s == pytest.approx(0.7e-9 * 2 ** 30, rel=1e-3)


def test_fewer_than_three_sizes_are_not_fitted():
    ms = [timed("sha256", "openssl", s, 1370, 0.52) for s in (16, 64)]
    assert cost_model.fit_all(ms) == []
    assert cost_model.summary_lines(ms) == []
    assert cost_model.summary_lines(ms, explicit=True) == [
        "qcrypto model: nothing was measured at 3 or more sizes"]


def test_a_time_that_falls_with_size_has_no_per_byte_cost():
    a, b = cost_model.fit_line([16, 64, 256], [3e-6, 2e-6, 1e-6])
    assert b == 0 and a == pytest.approx(2e-6, rel=0.5)
    assert cost_model.Fit("sha256", "x", "digest", a, b, (16, 64, 256)).large_bytes_per_s is None
    with pytest.raises(ValueError, match="two or more distinct sizes"):
        cost_model.fit_line([16, 16, 16], [1e-6, 1e-6, 1e-6])
    with pytest.raises(ValueError, match="above zero"):
        cost_model.fit_line([16, 64, 256], [1e-6, 0.0, 1e-6])


# -- through pytest: a fake clock and crypto plugins of known costs -------------------------------

FAKE_CLOCK_PLUGINS = '''
import hashlib, time
from pytest_qcrypto.backends import Context, CryptoPlugin

CLOCK = {"wall": 0, "cpu": 0}
SAVED = {}

def pytest_configure(config):
    SAVED.update(wall=time.perf_counter_ns, cpu=time.process_time_ns)
    time.perf_counter_ns = lambda: CLOCK["wall"]
    time.process_time_ns = lambda: CLOCK["cpu"]

def pytest_unconfigure(config):
    time.perf_counter_ns, time.process_time_ns = SAVED["wall"], SAVED["cpu"]

class Costed(CryptoPlugin):
    library = "a fake clock"
    hardware = None
    def __init__(self, name, wall, cpu=None):
        self.name, self.wall, self.cpu = name, wall, cpu or wall
    def supported(self):
        return frozenset({"sha256"})
    def open(self, algorithm, key, variant=None):
        plugin = self
        class Timed(Context):
            hardware = plugin.cpu != plugin.wall or None
            def digest(self, data):
                return hashlib.sha256(data).digest()
            def runner(self, work):
                def run(count):
                    CLOCK["wall"] += round(count * (plugin.wall[0] + work.size * plugin.wall[1]))
                    CLOCK["cpu"] += round(count * (plugin.cpu[0] + work.size * plugin.cpu[1]))
                return run
        return Timed(algorithm, key)

def pytest_qcrypto_plugins():
    return [Costed("slow", (1370, 0.52)), Costed("quick", (300, 0.6)),
            Costed("engine", (5000, 1.0), (2000, 0.25))]
'''
MATRIX = ("--qcrypto-digest", "sha256", "--qcrypto-plugin", "slow,quick,engine", *FAST)
EXPECTED = [
    "where the time goes (time per operation = per call + size x per byte):",
    "  slow sha256: 1.37 us per call + 0.52 ns per byte (1.92 GB/s for large buffers); quick is "
    "faster below 13.1 KiB",
    "  quick sha256: 300 ns per call + 0.6 ns per byte (1.67 GB/s for large buffers); slow is "
    "faster above 13.1 KiB",
    "  engine sha256: 5 us per call + 1 ns per byte (1 GB/s for large buffers); CPU 0.268 s "
    "per GiB processed; slow is faster at every size; quick is faster at every size",
]


@pytest.mark.parametrize("flag", ["--qcrypto-model", "-v"])
def test_the_model_lines_follow_the_tables_of_the_default_sizes(pytester, flag):
    pytester.makeconftest(FAKE_CLOCK_PLUGINS)
    r = pytester.runpytest(*MATRIX, flag, "--qcrypto-save", "out.json")
    assert r.ret == 0, r.stdout.str()
    start = r.outlines.index(EXPECTED[0])
    assert r.outlines[start:start + 4] == EXPECTED
    assert r.outlines[start - 2].startswith("engine  ")  # right under the table
    doc = json.loads((pytester.path / "out.json").read_text())
    fits = {f["plugin"]: f for f in doc["cost_model"]}
    assert list(fits) == ["slow", "quick", "engine"]
    assert fits["slow"]["sizes"] == list(DEFAULT_SIZES)
    assert fits["slow"]["per_call_s"] == pytest.approx(1.37e-6, rel=1e-3)
    assert fits["quick"]["per_byte_s"] == pytest.approx(0.6e-9, rel=1e-3)
    assert "cpu_per_gib_s" not in fits["slow"]
    assert fits["engine"]["cpu_per_gib_s"] == pytest.approx(0.268, rel=1e-2)
    for row in doc["results"]:  # each cell predicted within 15% (here: far closer)
        f = fits[row["plugin"]]
        seconds = row["size"] / row["bytes_per_second"]
        assert abs(f["per_call_s"] + row["size"] * f["per_byte_s"] - seconds) < 0.15 * seconds
    assert len(results.load(pytester.path / "out.json").results) == 21  # still reads back


def test_no_model_lines_without_the_flag_or_v(pytester):
    pytester.makeconftest(FAKE_CLOCK_PLUGINS)
    r = pytester.runpytest(*MATRIX)
    assert r.ret == 0
    assert EXPECTED[0] not in r.outlines


def test_the_flag_says_when_nothing_could_be_fitted(pytester):
    r = pytester.runpytest("--qcrypto-digest", "sha256", "--qcrypto-plugin", "hashlib",
                           "--qcrypto-size", "16,64", "--qcrypto-model", *FAST)
    assert r.ret == 0
    assert "qcrypto model: nothing was measured at 3 or more sizes" in r.outlines


# -- the interface's own cost (a kernel plugin's null request) ----------------------------


class _NullPlugin(CryptoPlugin):
    """A plugin whose null request costs ``ns`` of a fake clock (None: it has none;
    a string: it refuses one with that reason)."""

    def __init__(self, name, ns, clock):
        self.name, self.ns, self.clock, self.closed = name, ns, clock, 0

    def null_request(self):
        if isinstance(self.ns, str):
            raise Unsupported(self.ns)
        if self.ns is None:
            return None

        def run(count):
            self.clock["wall"] += count * self.ns

        return NullRequest("a 1-byte skcipher ecb(cipher_null) request (send + recv)", run,
                           lambda: setattr(self, "closed", self.closed + 1))


def null_cost(ns, name="afalg"):
    clock = {"wall": 0}
    plugin = _NullPlugin(name, ns, clock)
    cost = interface_cost.time_null(plugin, clock=lambda: clock["wall"],
                                    cpu_clock=lambda: clock["wall"])
    assert plugin.closed == (1 if isinstance(ns, int) else 0)
    return cost


def test_the_null_request_timed_on_a_fake_clock_is_said_beside_the_per_call_cost():
    cost = null_cost(3900)
    assert cost.per_call_s == pytest.approx(3.9e-6, rel=1e-12)
    ms = [timed("sha256", "afalg", s, 5100, 0.52) for s in DEFAULT_SIZES]
    assert cost_model.summary_lines(ms, interface={"afalg": cost}) == [
        "where the time goes (time per operation = per call + size x per byte):",
        "  afalg sha256: 5.1 us per call, of which the interface (null request) 3.9 us, + 0.52 "
        "ns per byte (1.92 GB/s for large buffers)",
        "  afalg interface: 3.9 us per call (null request: a 1-byte skcipher ecb(cipher_null) "
        "request (send + recv))"]


def test_a_null_request_slower_than_the_fitted_per_call_cost_is_said_so():
    (fit,) = cost_model.fit_all([timed("sha256", "afalg", s, 2000, 0.52) for s in DEFAULT_SIZES])
    assert cost_model.line(fit, interface=null_cost(3900)) == (
        "afalg sha256: 2 us per call (the interface's null request alone: 3.9 us, more than "
        "that), + 0.52 ns per byte (1.92 GB/s for large buffers)")


def test_a_plugin_without_a_null_request_shows_nothing_new():
    assert null_cost(None, "openssl") is None
    ms = [timed("sha256", "openssl", s, 1370, 0.52) for s in DEFAULT_SIZES]
    registry = {"openssl": _NullPlugin("openssl", None, {"wall": 0})}
    found = interface_cost.of_run(lambda typed: Selection(typed, registry[typed]), ms)
    assert found == {}
    assert cost_model.summary_lines(ms, interface=found) == cost_model.summary_lines(ms) == [
        "where the time goes (time per operation = per call + size x per byte):",
        "  openssl sha256: 1.37 us per call + 0.52 ns per byte (1.92 GB/s for large buffers)"]


def test_a_refused_null_request_says_why_even_without_a_fit():
    cost = null_cost("no null request: /dev/crypto (cryptodev-linux) refuses a session of the "
                     "null cipher (CIOCGSESSION cipher=16 keylen=0): [EINVAL] Invalid argument",
                     "devcrypto")
    assert cost == cost_model.InterfaceCost("devcrypto", "", None, cost.why_not)
    ms = [timed("sha256", "devcrypto", s, 9000, 1.0) for s in (16, 64)]  # too few to fit
    assert cost_model.summary_lines(ms, interface={"devcrypto": cost}) == [
        "devcrypto interface: not timed (no null request: /dev/crypto (cryptodev-linux) "
        "refuses a session of the null cipher (CIOCGSESSION cipher=16 keylen=0): [EINVAL] "
        "Invalid argument)"]


def test_each_plugin_is_timed_once_for_every_name_it_was_typed_as():
    clock = {"wall": 0}
    plugin = _NullPlugin("afalg", 3900, clock)
    timed_calls = []
    real = interface_cost.time_null

    def counting(p, **kw):
        timed_calls.append(p)
        return real(p, clock=lambda: clock["wall"], cpu_clock=lambda: clock["wall"])

    ms = [timed("sha256", typed, 16, 5100, 0.52) for typed in ("afalg", "afalg:soft", "afalg")]

    def resolve(typed):
        if typed == "gone":
            raise RegistryError("unknown crypto plugin 'gone'")
        return Selection(typed, plugin, typed.partition(":")[2] or None)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(interface_cost, "time_null", counting)
        found = interface_cost.of_run(resolve, [*ms, replace(ms[0], plugin="gone")])
    assert timed_calls == [plugin] and list(found) == ["afalg", "afalg:soft"]
    assert found["afalg"] is found["afalg:soft"]
    assert cost_model.summary_lines(ms, interface=found) == [
        "afalg interface: 3.9 us per call (null request: a 1-byte skcipher ecb(cipher_null) "
        "request (send + recv))"]


def test_a_failing_null_request_is_said_not_raised():
    class Failing(_NullPlugin):
        def null_request(self):
            def run(count):
                raise OSError(5, "Input/output error")
            return NullRequest("a request", run, lambda: setattr(self, "closed", 1))

    plugin = Failing("afalg", 0, {"wall": 0})
    cost = interface_cost.time_null(plugin)
    assert plugin.closed == 1
    assert cost_model.interface_line(cost) == (
        "afalg interface: not timed (the null request failed: OSError: [Errno 5] Input/output "
        "error)")
