"""Odd numbers: every number from a command line, an ini file or Python code.

One parser takes whole numbers (``settings.whole_number``: ASCII digits, length
bounded before ``int()``), decimal numbers refuse other scripts and texts over
64 characters, and the Python API applies the options' limits.  The
properties: a valid value comes back as it was written, anything else is a
``SettingsError`` with a short message naming where; never another exception
(Python's own ``ValueError`` past 4300 digits, ``OverflowError`` from a
float).  Through pytest: exit code 4 with the message, never INTERNALERROR
or a traceback.  Results files: ``test_baseline_limits.py``.
"""

import math
import re

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from pytest_qcrypto.measure import bench
from pytest_qcrypto.gate import verdicts as gate
from pytest_qcrypto.measure import harness, jobs
from pytest_qcrypto.algorithms import settings as qsettings
from pytest_qcrypto.measure import limits as qtimeout
from pytest_qcrypto.algorithms.settings import SettingsError

PROPERTIES = settings(deadline=None, max_examples=150,
                      suppress_health_check=[HealthCheck.function_scoped_fixture,
                                             HealthCheck.too_slow])
USAGE = pytest.ExitCode.USAGE_ERROR
#: 5000 digits: past Python's 4300-digit limit on int() of a text.
BIG = "9" * 5000
BIG_SHOWN = "99999999999999999999... (5000 digits)"
#: How a message may be long: a pasted megabyte is never echoed whole.
MAX_MESSAGE = 500

digit_runs = st.integers(1, 6000).map(lambda n: "9" * n)
texts = st.one_of(
    st.integers(-(10**40), 10**40).map(str),
    st.builds("{}{}{}{}".format, st.sampled_from(["", " ", "\t"]), st.sampled_from(["", "+", "-"]),
              st.integers(0, 5000).map("0".__mul__), st.integers(0, 10**12)),
    digit_runs, digit_runs.map("-{}".format), digit_runs.map("{}.5".format),
    st.text(st.characters(categories=["Nd", "No", "Nl"]), min_size=1, max_size=4),  # '١٦', '²'
    st.sampled_from(["", " ", "nan", "-inf", "Infinity", "1e309", "1_000", "0x10", "16k", "²",
                     "١٦", "16\x00", "1e-400", "+", "-", "--1", "1" * 64, "1" * 65]),
    st.text(max_size=20), st.floats().map(repr))


def refused_or(fn, *args):
    """``fn(*args)``, or None after a ``SettingsError`` with a short message."""
    try:
        return fn(*args)
    except SettingsError as exc:
        message = str(exc)
        assert message.strip() and len(message) < MAX_MESSAGE, message
        return None


# -- the one parser of whole numbers ------------------------------------------------------------

bounds = st.tuples(st.integers(-(2**63), 2**63), st.integers(-(2**63), 2**63)).map(sorted)


@PROPERTIES
@given(texts, bounds)
def test_whole_number_is_in_range_or_refused(text, low_high):
    low, high = low_high
    value = refused_or(qsettings.whole_number, text, "--where", low, high)
    assert value is None or (isinstance(value, int) and low <= value <= high)
    if value is not None:  # only ASCII digits, a sign and blanks around them were taken
        assert re.fullmatch(r"\s*[+-]?[0-9]+\s*", text)


@PROPERTIES
@given(bounds.flatmap(lambda b: st.tuples(st.just(b), st.integers(*b))),
       st.sampled_from(["", " ", "\t "]), st.integers(0, 6000), st.booleans())
def test_whole_number_round_trips(bounds_value, blank, zeros, plus):
    (low, high), n = bounds_value
    sign = "-" if n < 0 else ("+" if plus else "")
    text = f"{blank}{sign}{'0' * zeros}{abs(n)}{blank}"  # 6000 leading zeros: still cheap
    assert qsettings.whole_number(text, "--where", low, high) == n


@PROPERTIES
@given(st.text(st.characters(categories=["Nd", "No"], exclude_characters="0123456789"),
               min_size=1, max_size=4))
def test_other_scripts_digits_are_not_numbers(text):
    with pytest.raises(SettingsError, match=r"^--where: .* is not a whole number \(only the "
                                            r"ASCII digits 0-9\)$"):
        qsettings.whole_number(text, "--where", 0, 10**6)


def test_whole_number_messages():
    w = qsettings.whole_number
    with pytest.raises(SettingsError) as exc:
        w(BIG, "--qcrypto-rounds", 1, 1000)
    assert str(exc.value) == f"--qcrypto-rounds: must be from 1 to 1000, not {BIG_SHOWN}"
    with pytest.raises(SettingsError) as exc:
        w("-" + BIG, "--qcrypto-seed", -5, 5)
    assert str(exc.value) == f"--qcrypto-seed: must be from -5 to 5, not -{BIG_SHOWN}"
    with pytest.raises(SettingsError) as exc:
        w("x" * 5000, "--qcrypto-rounds", 1, 1000)
    assert str(exc.value) == (f"--qcrypto-rounds: {'x' * 40!r}... (5000 characters) is not a "
                              "whole number (only the ASCII digits 0-9)")
    assert w("0" * 5000 + "16", "x", 1, 16) == 16  # leading zeros do not count
    assert w("-0", "x", 0, 0) == 0


@PROPERTIES
@given(st.lists(texts, max_size=3), texts)
def test_every_option_parser(values, text):
    sizes = refused_or(qsettings.parse_sizes, values)
    assert sizes is None or all(1 <= s <= qsettings.MAX_SIZE for s in sizes)
    rounds = refused_or(qsettings.parse_rounds, text)
    assert rounds is None or 1 <= rounds <= qsettings.MAX_ROUNDS
    seed = refused_or(qsettings.parse_seed, text)
    assert seed is None or -(2**63) <= seed < 2**63
    n = refused_or(jobs.parse_jobs, text)
    assert n is None or 1 <= n <= jobs.max_jobs()
    confirm = refused_or(gate.parse_whole, text, "--qcrypto-confirm", 0, gate.MAX_CONFIRM)
    assert confirm is None or 0 <= confirm <= gate.MAX_CONFIRM
    t = refused_or(qsettings.parse_min_time, text)
    assert t is None or (math.isfinite(t) and 0 < t <= qsettings.MAX_MIN_TIME)
    pct = refused_or(gate.parse_percent, text, "--qcrypto-threshold")
    assert pct is None or 0 <= pct < 100
    floor = refused_or(gate.parse_kib_per_s, text, "qcrypto_floors")
    assert floor is None or (math.isfinite(floor) and floor > 0)
    seconds = refused_or(qtimeout.parse_timeout, text, 0.1, 3)
    assert seconds is None or (math.isfinite(seconds) and 0 < seconds)
    for parsed in (t, pct, floor, seconds):  # decimals are ASCII, at most 64 characters
        assert parsed is None or (text.strip().isascii() and len(text.strip()) <= 64)
    rules = refused_or(gate.Rules.parse, [f"sha256:hashlib:{text} = 5"], "qcrypto_floors",
                       gate.parse_kib_per_s)
    if rules is not None and rules.rules[0].size is not None:
        assert 1 <= rules.rules[0].size <= qsettings.MAX_SIZE
        assert text.strip().lstrip("+").isdigit() and text.strip().isascii()


@PROPERTIES
@given(st.one_of(st.integers(-(10**5000), 10**5000), st.integers(-5, 300), st.floats(),
                 st.booleans(), st.none(), texts),
       st.one_of(st.floats(), st.integers(-(10**5000), 10**5000), st.just(True)),
       st.one_of(st.integers(-(10**5000), 10**5000), st.integers(-2, 1002), st.floats()))
def test_python_api_arguments(size, min_time, rounds):
    """measure() from Python: the options' limits, and a short message for any value."""
    problem = bench.argument_problem(size, min_time, rounds)
    ok = (type(size) is int and 1 <= size <= qsettings.MAX_SIZE
          and type(min_time) in (int, float) and 0 < min_time <= qsettings.MAX_MIN_TIME
          and type(rounds) is int and 1 <= rounds <= qsettings.MAX_ROUNDS)
    assert (problem is None) == ok, problem
    assert problem is None or len(problem) < MAX_MESSAGE


# -- the same limits from the Python API ----------------------------------------------------------


@pytest.mark.parametrize("kwargs, message", [
    (dict(rounds=10**100), "rounds must be a whole number from 1 to 1000, not a number of "
                           "about 100 digits"),
    (dict(rounds=1001), "rounds must be a whole number from 1 to 1000, not 1001"),
    (dict(min_time=3600.5), "min_time must be more than 0 and at most 3600 seconds, not 3600.5"),
    (dict(min_time=float("inf")), "min_time must be more than 0 and at most 3600 seconds, "
                                  "not inf"),
])
def test_the_harness_applies_the_options_limits(kwargs, message):
    def never(count):
        raise AssertionError("refused arguments must not run anything")

    with pytest.raises(ValueError) as exc:
        harness.time_runner(never, **kwargs)
    assert str(exc.value) == message
    if "rounds" in kwargs:
        with pytest.raises(ValueError) as exc:
            jobs.time_jobs(never, 2, rounds=kwargs["rounds"], start=lambda *a: [])
        assert str(exc.value) == message


def test_measure_from_python_code_applies_the_options_limits(pytester):
    pytester.makepyfile('''
import pytest
from pytest_qcrypto.measure import bench
from pytest_qcrypto.backends.hashlib import HashlibPlugin
from pytest_qcrypto.measure.registry import Selection

@pytest.mark.parametrize("kwargs", [dict(rounds=10**100), dict(min_time=1e9),
                                    dict(rounds=1001), dict(size=2**28 + 1),
                                    dict(size=10**5000)],
                         ids=["rounds", "min_time", "rounds1001", "size", "size-huge"])
def test_fixture(qcrypto, kwargs):
    qcrypto.open("sha256", "hashlib").measure(**{"size": 16, **kwargs})

def test_bench():
    with bench.open_context(Selection("hashlib", HashlibPlugin()), "sha256") as ctx:
        with pytest.raises(ValueError, match="^rounds must be a whole number from 1 to 1000, "
                                             "not a number of about 100 digits$"):
            ctx.measure(16, rounds=10**100, timeout=20)
''')
    r = pytester.runpytest("-p", "no:cacheprovider", "-rf", "--qcrypto-timeout", "30")
    r.assert_outcomes(failed=5, passed=1)
    for line in [
            "hashlib sha256: measure(): rounds must be a whole number from 1 to 1000, not a "
            "number of about 100 digits",
            "hashlib sha256: measure(): min_time must be more than 0 and at most 3600 seconds, "
            "not 1000000000.0",
            "hashlib sha256: measure(): rounds must be a whole number from 1 to 1000, not 1001",
            "hashlib sha256: measure(): size 268435457 bytes is over the limit of 268435456 "
            "(256 MiB)",
            "hashlib sha256: measure(): size (a number of about 5000 digits) bytes is over the "
            "limit of 268435456 (256 MiB)"]:
        assert line in r.outlines, r.stdout.str()
    assert "timed out" not in r.stdout.str() and "Traceback" not in r.stdout.str()


# -- through pytest: a usage error naming the option -------------------------------------------

OPTION_CASES = [
    ("--qcrypto-size", BIG, f"--qcrypto-size: {BIG_SHOWN} bytes is over the limit of 268435456 "
                            "(256 MiB)"),
    ("--qcrypto-rounds", BIG, f"--qcrypto-rounds: must be from 1 to 1000, not {BIG_SHOWN}"),
    ("--qcrypto-seed", BIG, "--qcrypto-seed: must be from -9223372036854775808 to "
                            f"9223372036854775807, not {BIG_SHOWN}"),
    ("--qcrypto-seed", "-" + BIG, "--qcrypto-seed: must be from -9223372036854775808 to "
                                  f"9223372036854775807, not -{BIG_SHOWN}"),
    ("--qcrypto-jobs", BIG, f"--qcrypto-jobs: {BIG_SHOWN} is too many; give at most *"),
    ("--qcrypto-confirm", BIG, f"--qcrypto-confirm: must be from 0 to 20, not {BIG_SHOWN}"),
    ("--qcrypto-min-time", BIG, f"--qcrypto-min-time: {BIG[:40]!r}... (5000 characters) is not "
                                "a number of seconds"),
    ("--qcrypto-size", "\u0661\u0666", "--qcrypto-size: '\u0661\u0666' is not a whole number "
                                       "of bytes (only the ASCII digits 0-9) nor a named grid: "
                                       "qnx, openssl, tls or supercop"),
]


def assert_usage_error(r, message):
    assert r.ret == USAGE, r.stdout.str() + r.stderr.str()
    r.stderr.fnmatch_lines([f"ERROR: {message}"])
    everything = r.stdout.str() + r.stderr.str()
    assert "INTERNALERROR" not in everything and "Traceback" not in everything
    assert len(everything) < 2000  # the 5000 digits are not echoed


@pytest.mark.parametrize("option, value, message", OPTION_CASES,
                         ids=[f"{o}={v[:8]}" for o, v, _ in OPTION_CASES])
def test_options(pytester, option, value, message):
    r = pytester.runpytest("--qcrypto-digest", "sha256", f"{option}={value}",
                           "-p", "no:cacheprovider")
    assert_usage_error(r, message)


INI_CASES = [
    (f"qcrypto_sizes = 16, {BIG}",
     f"qcrypto_sizes in tox.ini: {BIG_SHOWN} bytes is over the limit of 268435456 (256 MiB)"),
    (f"qcrypto_floors =\n    sha256:hashlib:{BIG} = 5",
     f"qcrypto_floors in tox.ini line 1 ('sha256:hashlib:{BIG[:45]}'... (5019 characters)): "
     f"size {BIG[:40]!r}... (5000 characters) must be a whole number of bytes from 1 to "
     "268435456 (only the ASCII digits 0-9) or *"),
    ("qcrypto_thresholds =\n    sha256:hashlib:\u00b2 = 5%",
     "qcrypto_thresholds in tox.ini line 1 ('sha256:hashlib:\u00b2 = 5%'): size '\u00b2' must "
     "be a whole number of bytes from 1 to 268435456 (only the ASCII digits 0-9) or *"),
    ("qcrypto_thresholds =\n    sha256:hashlib:\u0661\u0666 = 5%",
     "qcrypto_thresholds in tox.ini line 1 ('sha256:hashlib:\u0661\u0666 = 5%'): size "
     "'\u0661\u0666' must be a whole number of bytes from 1 to 268435456 (only the ASCII "
     "digits 0-9) or *"),
    (f"qcrypto_confirm = {BIG}", f"qcrypto_confirm in tox.ini: must be from 0 to 20, not "
                                 f"{BIG_SHOWN}"),
]


@pytest.mark.parametrize("ini, message", INI_CASES, ids=[i[:24] for i, _ in INI_CASES])
def test_ini_values(pytester, ini, message):
    pytester.makeini(f"[pytest]\n{ini}\n")
    r = pytester.runpytest("--qcrypto-digest", "sha256", "-p", "no:cacheprovider")
    assert_usage_error(r, message)


def test_marker_sizes_from_python_code(pytester):
    pytester.makepyfile('''
import pytest

@pytest.mark.qcrypto("sha256", plugins="hashlib", sizes=[16, 10**5000])
def test_huge(qcrypto_case, qcrypto_context):
    pass
''')
    r = pytester.runpytest("-p", "no:cacheprovider")
    r.assert_outcomes(errors=1)
    r.stdout.fnmatch_lines(["test_huge: @pytest.mark.qcrypto: sizes: a number of about 5000 digits is over "
                            "the limit of 268435456 bytes (256 MiB)"])
    assert "Traceback" not in r.stdout.str() and "ValueError" not in r.stdout.str()


@pytest.mark.parametrize("value", ["-3", "-0.5", "-" + BIG, "-\u0661\u0666", "-1e309"])
def test_qcrypto_speed_passes_a_negative_number_to_its_option(value):
    """The option names the problem (its range, ASCII digits), not 'unrecognized argument'."""
    from pytest_qcrypto.commands import qcrypto as cli

    ns, extra = cli.build_parser().parse_known_args(["speed", "--qcrypto-seed", value])
    assert cli.speed_args(ns, extra)[-1] == f"--qcrypto-seed={value}"


def test_qcrypto_speed_shortens_an_unrecognized_argument():
    from pytest_qcrypto.commands import qcrypto as cli

    with pytest.raises(cli.UsageError, match=r"^qcrypto speed: unrecognized argument "
                                             r"'-x{39}'\.\.\. \(5001 characters\) \(options"):
        cli.speed_args(*cli.build_parser().parse_known_args(["speed", "-" + "x" * 5000]))
