"""Hostile input: every parser, the baseline loader and the plugin registry, fed with nonsense.

Property-based (Hypothesis) and called directly, not through pytester, so the
examples stay fast.  The property everywhere: the answer is a valid value or
a one-line usage error (``SettingsError``, ``RegistryError``, ``ResultsError``),
or, for a crypto plugin, a skipped or failed item with a message; never
another exception, never a hang.
"""

import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st

from pytest_qcrypto.algorithms import catalog
from pytest_qcrypto.gate import verdicts as gate
from pytest_qcrypto.measure import jobs
from pytest_qcrypto.output import render
from pytest_qcrypto.results import store as results
from pytest_qcrypto.measure import limits as qtimeout
from pytest_qcrypto.algorithms import settings as qsettings
from pytest_qcrypto.backends import AuthenticationError, Context, CryptoPlugin, Unavailable
from pytest_qcrypto.measure.bench import Randomness
from pytest_qcrypto.pytest_side.fixture import MeasureOptions, QcryptoFixture
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.pytest_side.run import QcryptoRun, list_plugins
from pytest_qcrypto.measure.registry import Registry, RegistryError
from pytest_qcrypto.algorithms.settings import SettingsError

PROPERTIES = settings(deadline=None, max_examples=100,
                      suppress_health_check=[HealthCheck.function_scoped_fixture,
                                             HealthCheck.too_slow])
FEW = settings(PROPERTIES, max_examples=40)

#: Texts a user might type, or mistype, or a script might paste.
TRICKY = ["", " ", "0", "-0", "00", "-1", "1", "16", " 16 ", "+16", "1_000", "0x10", "1e3", "1.5",
          "1e309", "-1e309", "nan", "NaN", "inf", "-inf", "Infinity", "١٦", "16\x00", "\n",
          "9" * 40, "-" + "9" * 40, "%", "10%", "100%", "99.999%", "off", "OFF", "auto", "all",
          "sha256", "SHA-256", "aes-128-cbc", "openssl", "openssl:", ":", "*", "a:b:c:d",
          "sha256:openssl:16", "sha256::16", "KiB/s", "kib/s", "ns/op", "csv", "\u200b"]
texts = st.one_of(st.sampled_from(TRICKY), st.text(max_size=30),
                  st.integers().map(str), st.floats().map(str),
                  st.from_regex(r"\A[-+ ]?[0-9]{0,25}([.][0-9]{0,5})?([eE][-+]?[0-9]{1,4})?%?\Z"))


def message_of(exc: BaseException) -> str:
    message = str(exc)
    assert message.strip(), f"{type(exc).__name__} without a message"
    return message


def value_or_usage_error(fn, *args):
    """``fn(*args)``, or None after a ``SettingsError`` with a message."""
    try:
        return fn(*args)
    except SettingsError as exc:
        message_of(exc)
        return None


# -- option parsers ---------------------------------------------------------------------------


@PROPERTIES
@given(st.lists(texts, max_size=4))
def test_sizes(values):
    sizes = value_or_usage_error(qsettings.parse_sizes, values)
    if sizes is not None:
        assert list(sizes) == sorted(set(sizes))
        assert all(isinstance(s, int) and 1 <= s <= qsettings.MAX_SIZE for s in sizes)


@PROPERTIES
@given(texts)
def test_min_time_and_rounds(text):
    t = value_or_usage_error(qsettings.parse_min_time, text)
    assert t is None or (math.isfinite(t) and 0 < t <= 3600)
    n = value_or_usage_error(qsettings.parse_rounds, text)
    assert n is None or 1 <= n <= 1000


@PROPERTIES
@given(texts, st.floats(0.0001, 3600), st.integers(1, 1000))
def test_timeout(text, min_time, rounds):
    seconds = value_or_usage_error(qtimeout.parse_timeout, text, min_time, rounds)
    if seconds is not None:
        assert qtimeout.needed_seconds(min_time, rounds) <= seconds <= max(
            qtimeout.MAX_TIMEOUT, qtimeout.default_timeout(min_time, rounds))


@PROPERTIES
@given(texts)
def test_jobs(text):
    n = value_or_usage_error(jobs.parse_jobs, text)
    assert n is None or n >= 1


@PROPERTIES
@given(st.lists(texts, max_size=4), st.sampled_from([
    ((catalog.DIGEST,), "--qcrypto-digest"), ((catalog.CIPHER, catalog.AEAD), "--qcrypto-cipher"),
    ((catalog.DIGEST, catalog.CIPHER, catalog.AEAD), "algorithms")]))
def test_algorithm_names(values, kinds_option):
    kinds, option = kinds_option
    found = value_or_usage_error(qsettings.parse_algorithms, values, kinds, option)
    if found is not None:
        assert all(a.kind in kinds for a in found) and len(set(found)) == len(found)
        sizes = value_or_usage_error(qsettings.parse_sizes, values)
        if sizes is not None:
            value_or_usage_error(qsettings.check_sizes, found, sizes)


@PROPERTIES
@given(texts)
def test_thresholds_and_floors(text):
    pct = value_or_usage_error(gate.parse_percent, text, "--qcrypto-threshold")
    assert pct is None or 0 <= pct < 100
    floor = value_or_usage_error(gate.parse_kib_per_s, text, "qcrypto_floors")
    assert floor is None or (math.isfinite(floor) and floor > 0)
    confirm = value_or_usage_error(gate.parse_whole, text, "--qcrypto-confirm", 0, 20)
    assert confirm is None or 0 <= confirm <= 20


@PROPERTIES
@given(st.lists(st.one_of(texts, st.builds("{} = {}".format, texts, texts)), max_size=5))
def test_threshold_and_floor_lines(lines):
    for value in (gate.parse_percent, gate.parse_kib_per_s):
        rules = value_or_usage_error(gate.Rules.parse, lines, "qcrypto_thresholds", value)
        if rules is not None:
            rules.pick("sha256", ["openssl"], 16)


#: Whole numbers far beyond the float range too (10**400 is refused with a message).
whole = st.integers(-(10**400), 10**400)
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), whole, st.floats(), texts),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.one_of(texts, st.integers()), inner, max_size=4)),
    max_leaves=12)


@PROPERTIES
@given(json_values)
def test_marker_floor_argument(value):
    value_or_usage_error(gate.marker_floors, value, "@pytest.mark.qcrypto floor=")


@PROPERTIES
@given(st.one_of(st.none(), texts), st.one_of(st.none(), texts))
def test_units_and_formats(unit, fmt):
    out = value_or_usage_error(render.parse_output, unit, fmt)
    if out is not None:
        assert out.unit in render.UNITS and out.format in render.FORMATS


def test_command_line_options_end_to_end(pytester):
    """Every option at once through QcryptoRun's checks, as pytest_configure runs them."""
    config = pytester.parseconfig("-p", "no:cacheprovider")
    names = ["qcrypto_digest", "qcrypto_cipher", "qcrypto_plugin", "qcrypto_size"]
    singles = ["qcrypto_min_time", "qcrypto_rounds", "qcrypto_seed", "qcrypto_timeout",
               "qcrypto_jobs", "qcrypto_threshold", "qcrypto_confirm", "qcrypto_unit",
               "qcrypto_format"]
    singles = [n for n in singles if hasattr(config.option, n)]
    defaults = {n: getattr(config.option, n) for n in names + singles}

    @FEW
    @given(st.fixed_dictionaries({}, optional={
        **{n: st.lists(texts, max_size=3) for n in names},
        **{n: texts for n in singles}}))
    def check(options):
        for name, value in {**defaults, **options}.items():
            setattr(config.option, name, value)
        run = QcryptoRun(config)
        try:
            run.check()
        except (SettingsError, RegistryError) as exc:
            message_of(exc)
            return
        if run.requested:
            assert list(run.cases())

    check()


# -- the baseline loader ------------------------------------------------------------------------


def valid_document() -> dict:
    m = Measurement("sha256", "openssl", 4096, "digest", 1000, (0.01, 0.011), (0.01, 0.01),
                    canonical_plugin="openssl")
    doc = results.ResultsFile([results.Result.from_measurement(m, test="qcrypto::sha256")],
                              machine={"cpu_model": "x"}, plugins={"openssl": {}})
    return json.loads(json.dumps(doc.to_json()))


def test_the_valid_document_loads(tmp_path):
    path = tmp_path / "base.json"
    path.write_text(json.dumps(valid_document()))
    assert results.load(path).results[0].size == 4096


def loaded_or_refused(path: Path):
    try:
        return results.load(path)
    except results.ResultsError as exc:
        assert str(path) in message_of(exc)
        return None


hostile_numbers = st.one_of(
    st.sampled_from([float("nan"), float("inf"), -float("inf"), 2**1000, -(2**1000), 0, -1, 0.0,
                     1e-320, 2**63, True, False, None, "", "1", [], {}]),
    whole, st.floats())


@PROPERTIES
@given(json_values)
def test_any_json_document(doc):
    try:
        results.parse(doc, Path("base.json"))
    except results.ResultsError as exc:
        message_of(exc)


@PROPERTIES
@given(st.data())
def test_a_valid_document_with_one_field_spoiled(data):
    doc = valid_document()
    target = data.draw(st.sampled_from([doc, doc["results"][0]]))
    key = data.draw(st.sampled_from(sorted(target) + ["unknown"]))
    spoiled = data.draw(st.one_of(hostile_numbers, json_values))
    if data.draw(st.booleans()):
        target[key] = spoiled
    else:
        target.pop(key, None)
    try:
        loaded = results.parse(json.loads(json.dumps(doc)), Path("base.json"))
    except results.ResultsError as exc:
        message_of(exc)
        return
    for r in loaded.results:   # what loads is usable by the gate
        assert r.size > 0 and math.isfinite(r.bytes_per_second) and r.bytes_per_second > 0
        assert r.kib_per_s > 0 and r.slowest_round_bytes_per_second > 0


@PROPERTIES
@given(st.data())
def test_truncated_and_garbled_files(tmp_path_factory, data):
    text = json.dumps(valid_document(), indent=1).encode()
    cut = data.draw(st.integers(0, len(text) - 1))
    raw = data.draw(st.sampled_from([
        text[:cut], text[:cut] + data.draw(st.binary(max_size=20)), b"\xff\xfe" + text,
        b"[" * 100_000, text.replace(b"4096", b"1" + b"0" * 400)]))
    path = tmp_path_factory.mktemp("garbled") / "base.json"
    path.write_bytes(raw)
    loaded_or_refused(path)


# -- the plugin registry: third-party plugins that declare nonsense ------------------------------

exceptions = st.sampled_from([ValueError, RuntimeError, KeyError, TypeError, OSError,
                              ImportError, AttributeError, ZeroDivisionError, Unavailable])
good_names = st.from_regex(r"\A[a-z][a-z0-9-]{0,10}\Z")
junk_names = st.one_of(texts, st.none(), st.integers(), st.lists(texts, max_size=2))
junk_aliases = st.one_of(st.none(), texts, st.integers(),
                         st.lists(st.one_of(texts, st.integers(), st.none()), max_size=3),
                         st.just(("sha256", "openssl")))
answers = st.one_of(st.none(), st.integers(), texts, st.binary(max_size=70),
                    st.just(b"\0" * 32), st.lists(st.integers(), max_size=3))


def behaviour(returns):
    """A plugin method: returns something (mostly), or raises one of ``exceptions``."""
    returned = returns.map(lambda v: ("return", v))
    return st.one_of(returned, returned, returned, exceptions.map(lambda e: ("raise", e)))


def act(how, *_):
    kind, value = how
    if kind == "raise":
        raise value("nonsense from a third-party plugin")
    return value


@st.composite
def hostile_plugins(draw):
    how = {
        "probe": draw(behaviour(st.none())),
        "supported": draw(behaviour(st.one_of(
            st.just(frozenset(catalog.names())), st.just(frozenset(catalog.names())),
            st.frozensets(st.sampled_from(["sha256", "md5", "aes-128-gcm", "nosuch", "chacha20"])),
            answers))),
        "open": draw(st.one_of(st.just(("context", None)), st.just(("context", None)),
                               behaviour(answers))),
        "digest": draw(behaviour(answers)),
        "encrypt": draw(behaviour(answers)),
        "runner": draw(behaviour(st.one_of(answers, st.just(lambda count: None)))),
        "close": draw(behaviour(st.none())),
    }

    class HostileContext(Context):
        def digest(self, data):
            return act(how["digest"])

        def encrypt(self, iv, data, aad=b""):
            return act(how["encrypt"])

        def decrypt(self, iv, data, aad=b""):
            if how["encrypt"][0] == "return" and how["encrypt"][1] == b"":
                raise AuthenticationError("tag did not verify")
            return act(how["encrypt"])

        def runner(self, work):
            return act(how["runner"])

        def close(self):
            act(how["close"])

    declared = draw(st.sampled_from(["well", "well", "well", "bad name", "bad aliases"]))

    class Hostile(CryptoPlugin):
        name = draw(junk_names if declared == "bad name" else good_names)
        aliases = draw(junk_aliases if declared == "bad aliases"
                       else st.one_of(st.just(()), st.tuples(good_names)))
        library = draw(st.one_of(texts, st.none(), st.integers()))

        def probe(self):
            act(how["probe"])

        def supported(self):
            return act(how["supported"])

        def open(self, algorithm, key, variant=None):
            if how["open"][0] == "context":
                return HostileContext(algorithm, key)
            return act(how["open"])

        def version(self):
            return act(draw(behaviour(answers)))

    return Hostile()


def fixture_outcome(fixture, algorithm, plugin):
    """What a test using the fixture would end in: passed, skipped or failed, with the message."""
    try:
        fixture.open(algorithm, plugin).measure(16)
        return "passed"
    except pytest.skip.Exception as exc:
        return f"skipped: {message_of(exc)}"
    except pytest.fail.Exception as exc:
        return f"failed: {message_of(exc)}"
    finally:
        try:
            fixture.close()
        except Exception as exc:  # a context whose close raises: a teardown error with a message
            message_of(exc)


@PROPERTIES
@given(hostile_plugins(), st.lists(texts, max_size=3),
       st.sampled_from(["sha256", "md5", "aes-128-gcm", "chacha20", "nosuch"]))
def test_hostile_crypto_plugin(plugin, typed_names, algorithm):
    try:
        registry = Registry([plugin])
    except RegistryError as exc:
        message_of(exc)
        event("refused by the registry")
        return
    why = registry.unavailable(plugin)
    assert why is None or (isinstance(why, str) and why)
    assert all(isinstance(n, str) for n in registry.supported(plugin))
    assert all(isinstance(line, str) for line in list_plugins(registry))
    for typed in typed_names + [plugin.name]:
        try:
            registry.resolve(typed)
        except RegistryError as exc:
            message_of(exc)
    fixture = QcryptoFixture(lambda: registry, lambda m, again: None, Randomness(1),
                             MeasureOptions(0.001, 1, timeout=5))
    outcome = fixture_outcome(fixture, algorithm, plugin.name)
    event(outcome.split(":")[0])
    assert outcome == "passed" or ": " in outcome


# -- the same, through a whole run ------------------------------------------------------------

NONSENSE_PLUGINS = '''
from pytest_qcrypto.backends import Context, CryptoPlugin

class ProbeBreaks(CryptoPlugin):
    name = "probe-breaks"
    def probe(self):
        raise KeyError("no such device")

class ListsJunk(CryptoPlugin):
    name = "lists-junk"
    def supported(self):
        return 42

class OpensNothing(CryptoPlugin):
    name = "opens-nothing"
    def supported(self):
        return frozenset({"sha256"})
    def open(self, algorithm, key, variant=None):
        return None

class AnswersNone(Context):
    def digest(self, data):
        return None

class Silent(CryptoPlugin):
    name = "silent"
    def supported(self):
        return ["sha256", 7, None]
    def open(self, algorithm, key, variant=None):
        return AnswersNone(algorithm, key)

def pytest_qcrypto_plugins():
    return [ProbeBreaks(), ListsJunk(), OpensNothing(), Silent()]
'''


def test_nonsense_plugins_in_a_run_skip_or_fail_their_items_with_a_message(pytester):
    pytester.makeconftest(NONSENSE_PLUGINS)
    r = pytester.runpytest("--qcrypto-digest", "sha256", "--qcrypto-size", "16", "-rsf",
                           "--qcrypto-plugin", "probe-breaks,lists-junk,opens-nothing,silent,hashlib",
                           "--qcrypto-min-time", "0.001", "--qcrypto-rounds", "1")
    r.assert_outcomes(passed=1, skipped=2, failed=1, errors=1)  # open() fails in setup
    r.stdout.fnmatch_lines_random([
        "*probe-breaks: unavailable: probe failed: KeyError: 'no such device'*",
        "*lists-junk: unavailable: could not list its algorithms: TypeError*",
        "*opens-nothing sha256: cannot open a context: TypeError: OpensNothing.open() returned "
        "None, not a pytest_qcrypto.backends.Context*",
        "*plugin silent returned NoneType from digest(), expected bytes*"])
    assert "Traceback" not in r.stdout.str()


NUMERIC_FIELDS = ["bytes_per_second", "size", "count", "rounds_s", "cpu_s", "tries"]
HOSTILE_VALUES = [float("nan"), float("inf"), -1, 0, True, "12", None, 10**400,
                  [float("nan")], [-1.0], ["1"], [10**400]]


@pytest.mark.parametrize("field, value", [
    pytest.param(f, v, id=f"{f}={str(v)[:12]}") for f in NUMERIC_FIELDS for v in HOSTILE_VALUES])
def test_every_numeric_field_of_a_baseline(field, value, tmp_path):
    doc = valid_document()
    doc["results"][0][field] = value
    path = tmp_path / "base.json"
    path.write_text(json.dumps(doc))
    loaded = loaded_or_refused(path)
    if loaded is not None:
        r = loaded.results[0]
        assert math.isfinite(r.bytes_per_second) and r.bytes_per_second > 0 and r.size > 0
