"""A signature's keygen cell (issue 26, openssl speed 3.5's keygen/s): only a plugin that
declares ``generates_signature_keys`` has one; its key pair is checked (it signs and
verifies) before it is timed; its figures are saved, read back and judged by the gate.  The
figures come from the fake clock of :mod:`pkey_doubles` (``clockplug``, which declares
nothing) and ``keyclock`` here, which declares it and makes real Ed25519 keys."""

import json

import pytest

from conftest import FAST
from pkey_doubles import CALLS, CLOCK_PLUGIN, no_check
from pytest_qcrypto.backends.openssl import OpenSSLPlugin
from pytest_qcrypto.checks import pkey_checks
from pytest_qcrypto.checks.known_answers import KnownAnswerError
from pytest_qcrypto.measure import bench, pkey_bench
from pytest_qcrypto.measure.registry import Selection

#: clockplug and keyclock: keyclock's ed25519 generates a key pair in 80 us on the fake
#: clock (times QSLOW); STALE_KEYGEN=1 makes its generate_key_pair() keep the old key.
KEY_CLOCK = CLOCK_PLUGIN.replace("def pytest_qcrypto_plugins():\n    return [ClockPlug()]\n",
                                 "") + '''
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519
COST_NS[("ed25519", "keygen")] = 80_000

class KeyTimed(Timed):
    def __init__(self, algorithm, key):
        super().__init__(algorithm, key)
        self.priv = ed25519.Ed25519PrivateKey.generate()
    def generate_key_pair(self):
        if os.environ.get("STALE_KEYGEN") != "1":
            self.priv = ed25519.Ed25519PrivateKey.generate()
    def public_key(self):
        return self.priv.public_key().public_bytes(serialization.Encoding.Raw,
                                                   serialization.PublicFormat.Raw)
    def sign(self, message):
        return self.priv.sign(message)
    def verify(self, public_key, message, signature):
        try:
            ed25519.Ed25519PublicKey.from_public_bytes(public_key).verify(signature, message)
            return True
        except Exception:
            return False

class KeyClock(ClockPlug):
    name = "keyclock"
    generates_signature_keys = True
    def open(self, algorithm, key, variant=None):
        return KeyTimed(algorithm, key)

def pytest_qcrypto_plugins():
    return [ClockPlug(), KeyClock()]
'''


@pytest.fixture
def clock(pytester, monkeypatch):
    pytester.makeconftest(KEY_CLOCK)
    monkeypatch.setattr(pkey_bench, "check", no_check)  # the keygen check stays real
    CALLS.clear()
    return pytester


def block(lines, first, n):
    i = lines.index(first)
    return lines[i:i + n]


def test_a_plugin_that_does_not_declare_it_has_no_keygen_cell(clock):
    r = clock.runpytest("--qcrypto-pkey=ed25519", "--qcrypto-plugin=clockplug,keyclock",
                        "--collect-only", "-q")
    assert r.ret == 0, r.stderr.str()
    assert [line for line in r.stdout.lines if line.startswith("qcrypto::")] == [
        "qcrypto::ed25519[clockplug-sign]", "qcrypto::ed25519[clockplug-verify]",
        "qcrypto::ed25519[keyclock-sign]", "qcrypto::ed25519[keyclock-verify]",
        "qcrypto::ed25519[keyclock-keygen]"]


def test_alone_it_keeps_todays_table_and_counts(clock):
    r = clock.runpytest("--qcrypto-pkey=ed25519", "--qcrypto-plugin=clockplug")
    r.assert_outcomes(passed=2)
    assert block(r.stdout.lines, "Benchmark results for 'ed25519' signature (ops/s):", 3) == [
        "Benchmark results for 'ed25519' signature (ops/s):",
        "plugin          sign    verify",
        "clockplug   20000.00   8000.00"]
    assert "keygen" not in r.stdout.str()


def test_a_declaring_plugin_s_keygen_is_timed_and_the_other_row_shows_a_dash(clock):
    r = clock.runpytest("--qcrypto-pkey=ed25519", "--qcrypto-plugin=clockplug,keyclock", "-v")
    r.assert_outcomes(passed=5)
    lines = r.stdout.lines
    assert block(lines, "plugin: keyclock", 4) == [
        "plugin: keyclock",
        "executed 2300 signs in 0.12 secs",  # 50 us each: 0.1 s x 1.15
        "executed 920 verifies in 0.12 secs",  # 125 us
        "executed 1438 keygens in 0.12 secs"]  # 80 us: 115.04 ms, rounded up to whole keygens
    assert block(lines, "Benchmark results for 'ed25519' signature (ops/s):", 5) == [
        "Benchmark results for 'ed25519' signature (ops/s):",
        "plugin          sign    verify    keygen",
        "clockplug   20000.00   8000.00         -",
        "keyclock    20000.00   8000.00  12500.00",
        "  - clockplug (keygen): its plugin does not generate signature keys "
        "(generates_signature_keys)"]


def test_a_keygen_whose_key_does_not_change_fails_its_cell_only(clock, monkeypatch):
    monkeypatch.setenv("STALE_KEYGEN", "1")
    r = clock.runpytest("--qcrypto-pkey=ed25519", "--qcrypto-plugin=keyclock")
    r.assert_outcomes(passed=2, failed=1)
    assert ("keyclock ed25519: keygen check: generate_key_pair() left the key pair as it was "
            "(the same public key)") in r.stdout.str()


def test_keygen_figures_are_saved_read_back_and_judged(clock, monkeypatch):
    args = ("--qcrypto-pkey=ed25519", "--qcrypto-plugin=keyclock", "--qcrypto-confirm=0")
    assert clock.runpytest(*args, "--qcrypto-save=base.json").ret == 0
    doc = json.loads((clock.path / "base.json").read_text())
    keygen = next(r for r in doc["results"] if r["direction"] == "keygen")
    assert (keygen["size"], keygen["unit"], keygen["count"], keygen["rounds_s"]) == \
        (0, "ops/s", 1438, [0.11504] * 3)  # 1438 key pairs of 80 us a round (0.1 s x 1.15)
    assert keygen["ops_per_s"] == pytest.approx(12500.0)
    assert clock.runpytest(*args, "--qcrypto-compare=base.json").ret == 0
    monkeypatch.setenv("QSLOW", "2")
    r = clock.runpytest(*args, "--qcrypto-compare=base.json")
    assert r.ret == pytest.ExitCode.TESTS_FAILED
    assert ("regression: ed25519 keyclock keygen: 6250.00 ops/s now, baseline 12500.00 ops/s, "
            "change -50.0%") in r.stdout.str()


def test_a_floor_names_the_keygen_operation(clock):
    clock.makeini("[pytest]\nqcrypto_floors =\n    ed25519:keyclock:keygen = 20000\n")
    r = clock.runpytest("--qcrypto-pkey=ed25519", "--qcrypto-plugin=keyclock",
                        "--qcrypto-confirm=0")
    r.assert_outcomes(passed=2, failed=1)  # sign and verify have no floor
    assert ("below floor: ed25519 keyclock keygen: 12500.00 ops/s, floor 20000.00 ops/s "
            "(qcrypto_floors in tox.ini: 'ed25519:keyclock:keygen = 20000')") in r.stdout.str()


def test_measure_refuses_keygen_of_a_plugin_that_does_not_declare_it():
    class Quiet(OpenSSLPlugin):
        name = "quiet"
        generates_signature_keys = False

    with bench.open_context(Selection("quiet", Quiet()), "ed25519") as ctx:
        with pytest.raises(ValueError, match="give operation= one of sign, verify, not "
                           "'keygen' .its plugin does not declare generates_signature_keys."):
            ctx.measure(0, operation="keygen", min_time=0.001, rounds=1)


def test_the_keygen_check_catches_a_key_that_does_not_verify(monkeypatch):
    with bench.open_context(Selection("openssl", OpenSSLPlugin()), "ed25519") as ctx:
        pkey_checks.check_keygen("openssl", ctx.context)  # a real one passes
        monkeypatch.setattr(type(ctx.context), "verify", lambda self, p, m, s: False)
        with pytest.raises(KnownAnswerError, match="openssl ed25519: keygen check: its new "
                           "key's signature does not verify"):
            pkey_checks.check_keygen("openssl", ctx.context)


def test_pytest_shows_openssl_s_keygen_column(pytester):
    r = pytester.runpytest("--qcrypto-pkey=ed25519", "--qcrypto-plugin=openssl", *FAST)
    r.assert_outcomes(passed=3)
    head = block(r.stdout.lines, "Benchmark results for 'ed25519' signature (ops/s):", 3)
    assert head[1].split() == ["plugin", "sign", "verify", "keygen"]
    assert head[2].split()[0] == "openssl" and all(float(x) > 0 for x in head[2].split()[1:])
