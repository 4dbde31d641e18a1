"""Floor and threshold rules that name an operation (``ALGORITHM:PLUGIN:sign``) for the
kinds without a buffer size: a wildcard algorithm takes the operation too (``*:*:sign``),
a column the algorithm can never have is a usage error naming its valid columns, and a
floor's value error names both units.  Figures come from the fake clock of
:mod:`pkey_doubles` (``clockplug``: ed25519 signs at 20000 ops/s, verifies at 8000)."""

import pytest

from pkey_doubles import CALLS, CLOCK_PLUGIN, no_check
from pytest_qcrypto.measure import pkey_bench
from pytest_qcrypto.gate import rules
from pytest_qcrypto.algorithms.settings import SettingsError

RUN = ("--qcrypto-plugin", "clockplug", "--qcrypto-confirm", "0")


@pytest.fixture
def clock(pytester, monkeypatch):
    pytester.makeconftest(CLOCK_PLUGIN)
    monkeypatch.setattr(pkey_bench, "check", no_check)
    CALLS.clear()
    return pytester


def test_an_operation_is_the_column_whatever_the_algorithm_field():
    assert rules.parse_pattern("*:*:sign", "w") == (None, None, "sign")
    assert rules.parse_pattern("*:OpenSSL:Sign", "w") == (None, "openssl", "sign")
    assert rules.parse_pattern("*:*:derive", "w") == (None, None, "derive")
    assert rules.parse_pattern("ed25519:*:verify", "w") == ("ed25519", None, "verify")
    # a plugin variant is still a plugin, with or without a size after it
    assert rules.parse_pattern("*:afalg:sha256-generic", "w") == \
        (None, "afalg:sha256-generic", None)
    assert rules.parse_pattern("*:afalg:sha256-generic:64", "w") == \
        (None, "afalg:sha256-generic", 64)
    floors = rules.Rules.parse(["*:*:sign = 7"], "f", lambda v, w: float(v))
    assert floors.pick("ed25519", ["openssl"], rules.cell_column(0, "sign")).value == 7
    assert floors.pick("ml-dsa-44", ["openssl"], rules.cell_column(0, "sign")).value == 7
    assert floors.pick("ed25519", ["openssl"], rules.cell_column(0, "verify")) is None
    assert floors.pick("sha256", ["openssl"], rules.cell_column(16, "digest")) is None


@pytest.mark.parametrize("pattern, args, failed", [
    ("*:*:sign", ("--qcrypto-pkey", "ed25519,ml-kem-768"), "ed25519 clockplug sign"),
    ("*:clockplug:sign", ("--qcrypto-pkey", "ed25519"), "ed25519 clockplug sign"),
    ("*:*:verify", ("--qcrypto-pkey", "ed25519"), "ed25519 clockplug verify"),
    ("*:*:derive", ("--qcrypto-kdf", "scrypt", "--qcrypto-pkey", "ed25519"),
     "scrypt-n16384-r8-p1 clockplug derive"),
])
def test_a_wildcard_algorithm_floor_fails_only_the_cells_of_its_operation(clock, pattern,
                                                                           args, failed):
    clock.makeini(f"[pytest]\nqcrypto_floors =\n    {pattern} = 999999999\n")
    r = clock.runpytest(*args, *RUN)
    assert r.ret == pytest.ExitCode.TESTS_FAILED, r.stdout.str()
    out = r.stdout.str()
    # the item's short line, and the gate summary's detail under it
    below = [line for line in r.stdout.lines if line.startswith("below floor: ")]
    assert len(below) == 1, out
    assert below[0].startswith(f"below floor: {failed}: ")
    assert below[0].endswith("(detail in the qcrypto summary)")
    below = [line.strip() for line in r.stdout.lines if line.startswith("  below floor: ")]
    assert len(below) == 1, out
    assert (f"floor 999999999.00 ops/s (qcrypto_floors in tox.ini: '{pattern} = "
            f"999999999')") in below[0]
    # every other cell (the other operations, ml-kem-768's) passes
    passed = {"--qcrypto-kdf": 2}.get(args[0], 1) + (3 if "ml-kem-768" in args[1] else 0)
    r.assert_outcomes(passed=passed, failed=1)


def test_a_wildcard_algorithm_threshold_applies_to_its_operation(clock, monkeypatch):
    args = ("--qcrypto-pkey", "ed25519", *RUN)
    assert clock.runpytest(*args, "--qcrypto-save", "base.json").ret == 0
    clock.makeini("[pytest]\nqcrypto_thresholds =\n    *:*:sign = 99%\n")
    monkeypatch.setenv("QSLOW", "2")  # every operation at half speed: -50%
    r = clock.runpytest(*args, "--qcrypto-compare", "base.json")
    assert r.ret == pytest.ExitCode.TESTS_FAILED
    r.assert_outcomes(passed=1, failed=1)  # sign is allowed 99%, verify the default
    out = r.stdout.str()
    assert ("regression: ed25519 clockplug verify: 4000.00 ops/s now, baseline 8000.00 ops/s, "
            "change -50.0%") in out
    assert "regression: ed25519 clockplug sign" not in out


@pytest.mark.parametrize("line, problem", [
    ("ed25519:openssl:derive = 5",
     "ed25519 has no operation derive (a signature); give one of its operations sign, "
     "verify, keygen, or *"),
    ("ed25519:*:encrypt = 5",
     "ed25519 has no operation encrypt (a signature); give one of its operations sign, "
     "verify, keygen, or *"),
    ("sha256:openssl:sign = 5",
     "sha256 has buffer sizes, not operations like sign (a digest: figures in KiB/s); give a "
     "size in bytes from 1 to 268435456, or *"),
    ("aes-128-cbc:*:encrypt = 5",
     "aes-128-cbc has buffer sizes, not operations like encrypt (a cipher: figures in "
     "KiB/s); give a size in bytes from 1 to 268435456, or *"),
])
def test_a_column_the_algorithm_never_has_is_a_usage_error(pytester, line, problem):
    pytester.makeini(f"[pytest]\nqcrypto_floors =\n    {line}\n")
    r = pytester.runpytest("--collect-only", "-q")
    assert r.ret == pytest.ExitCode.USAGE_ERROR, r.stdout.str()
    err = r.stderr.str()
    assert err.splitlines()[0] == f"ERROR: qcrypto_floors in tox.ini line 1 ({line!r}): {problem}"
    assert "Traceback" not in err
    with pytest.raises(SettingsError) as caught:
        rules.parse_pattern(line.partition("=")[0], "w")
    assert str(caught.value) == f"w: {problem}"


def test_a_floor_value_error_names_both_units(pytester):
    pytester.makeini("[pytest]\nqcrypto_floors =\n    ed25519:openssl:sign = abc\n")
    r = pytester.runpytest("--collect-only", "-q")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert r.stderr.lines[0] == (
        "ERROR: qcrypto_floors in tox.ini line 1 ('ed25519:openssl:sign = abc'): 'abc' is not "
        "a number of KiB/s (or ops/s for the kinds without a buffer size)")
    with pytest.raises(SettingsError) as caught:
        rules.parse_kib_per_s("-3", "w")
    assert str(caught.value) == ("w: a floor must be a positive number of KiB/s (or ops/s "
                                 "for the kinds without a buffer size), not -3")
