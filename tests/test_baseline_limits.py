"""Results files: odd numbers refused, and plugin aliases mapped, by load().

What ``load()`` lets through must be usable by everything downstream (the
gate's wait-corrected figures, ``qcrypto report``'s tables): a field out of
range is a ``ResultsError`` naming its path (``results[0].size``), so
``--qcrypto-compare`` and ``qcrypto report`` end with exit code 4 and the
message.  A baseline cell under an alias (``pyca``) meets its plugin's cell.
"""

import json
import math
import re

import pytest
from hypothesis import given, strategies as st

from pytest_qcrypto.commands import qcrypto as cli
from pytest_qcrypto.gate import verdicts as gate
from pytest_qcrypto.measure import harness, registry
from pytest_qcrypto.output import render, report
from pytest_qcrypto.results import store as results
from pytest_qcrypto.algorithms import settings as qsettings
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.results.store import Result, ResultsError, ResultsFile
from test_numbers import (BIG, BIG_SHOWN, MAX_MESSAGE, PROPERTIES, USAGE, assert_usage_error,
                          digit_runs)
from test_results import FAKE_PLUGIN, FAKE_RUN


# -- results files ----------------------------------------------------------------------------


def document(**fields) -> str:
    """A valid results file's text, one result of which has ``fields`` (JSON texts) instead."""
    m = Measurement("sha256", "hashlib", 4096, "digest", 1000, (0.01, 0.011, 0.012),
                    (0.002, 0.002, 0.002), canonical_plugin="hashlib")
    doc = ResultsFile([Result.from_measurement(m, test="t")],
                      plugins={"hashlib": {"canonical": "hashlib"}}).to_json()
    for key in fields:
        doc["results"][0][key] = f"@{key}@"
    text = json.dumps(doc)
    for key, value in fields.items():
        text = text.replace(f'"@{key}@"', value)
    return text


def sizeless_document(**fields) -> str:
    """As :func:`document`, of a size-less cell (ed25519 sign, ops/s): 20363.64 ops/s."""
    m = Measurement("ed25519", "openssl", 0, "sign", 224, (0.011, 0.011, 0.012),
                    canonical_plugin="openssl")
    doc = ResultsFile([Result.from_measurement(m, test="t")],
                      plugins={"openssl": {"canonical": "openssl"}}).to_json()
    doc["results"][0].update({k: f"@{k}@" for k in fields})
    text = json.dumps(doc)
    for key, value in fields.items():
        text = text.replace(f'"@{key}@"', value)
    return text


FILE_CASES = {
    "size of 5000 digits": (document(size=BIG), f"results[0].size must be a whole number of "
                                                f"bytes from 1 to 268435456, not {BIG_SHOWN}"),
    "size of 400 digits": (document(size="9" * 400), "results[0].size must be a whole number "
                                                     "of bytes from 1 to 268435456, not "
                                                     "99999999999999999999... (400 digits)"),
    "size over 256 MiB": (document(size="268435457"), "results[0].size must be a whole number "
                                                      "of bytes from 1 to 268435456, not "
                                                      "268435457"),
    "count of 400 digits": (document(count="9" * 400), "results[0].count must be a whole "
                                                       "number from 0 to 9007199254740992, not "
                                                       "99999999999999999999... (400 digits)"),
    "count beyond a float's whole numbers": (
        document(count=str(2**64)), "results[0].count must be a whole number from 0 to "
                                    "9007199254740992, not 18446744073709551616"),
    "schema_version of 5000 digits": (
        document().replace('"schema_version": 2', f'"schema_version": {BIG}'),
        f"schema_version must be a whole number from 1, not {BIG_SHOWN}"),
    "schema_version of 400 digits": (
        document().replace('"schema_version": 2', f'"schema_version": {"9" * 400}'),
        "schema_version must be a whole number from 1, not 99999999999999999999... "
        "(400 digits)"),
    "a huge number in the machine": (
        document().replace('"machine": {}', f'"machine": {{"cores": {BIG}}}'),
        f"machine.cores: {BIG_SHOWN} is out of range: a whole number in a results file has at "
        "most 20 digits"),
    "infinite figure": (document(bytes_per_second="Infinity"),
                        "results[0].bytes_per_second must be a positive number, not Infinity"),
    "a round under a nanosecond": (
        document(rounds_s="[1e-300]"), "results[0].rounds_s must be a list of positive seconds "
                                       "(each at least 1e-09), not [1e-300]"),
    # a figure is recomputed from count and rounds_s: one they do not give is refused (it
    # was judged as saved while report showed the recomputed one), also when huge
    "a figure its rounds do not give": (
        document(bytes_per_second="1e308", cpu_wait_share="0.5", cpu_s="[0, 0, 0]"),
        "results[0].bytes_per_second is 1e+308, but count and rounds_s give 3.72364e+08 (the "
        "median round's); a saved figure must match its rounds: remeasure the cell"),
    "an edited figure": (
        document(bytes_per_second="1e9"),
        "results[0].bytes_per_second is 1e+09, but count and rounds_s give 3.72364e+08 (the "
        "median round's); a saved figure must match its rounds: remeasure the cell"),
    "an edited ops/s figure": (
        sizeless_document(ops_per_s="2.0366e7"),
        "results[0].ops_per_s is 2.0366e+07, but count and rounds_s give 20363.6 (the "
        "median round's); a saved figure must match its rounds: remeasure the cell"),
    "an edited figure of a worker": (
        document(jobs="2", count="1000", workers='[{"count": 500, "rounds_s": [0.011], '
                 '"cpu_s": [], "bytes_per_second": 1e9}, {"count": 500, "rounds_s": [0.011], '
                 '"cpu_s": [], "bytes_per_second": 186181818.18181819}]'),
        "results[0].workers[0].bytes_per_second is 1e+09, but count and rounds_s give "
        "1.86182e+08 (the median round's); a saved figure must match its rounds: remeasure "
        "the cell"),
    "a round with no time once the wait is taken out": (
        # (CPU seconds of 0 are a clock too coarse to time a round: no correction at all)
        document(cpu_wait_share="1", cpu_s="[1e-300, 1e-300, 1e-300]"),
        "results[0]: bytes_per_second 3.72364e+08 without the wait for a CPU (cpu_wait_share 1 "
        "of each round's time beyond its cpu_s) would be infinite: a round is left with no time"),
    "a key twice": (document().replace('"complete": true', '"complete": false, "complete": true'),
                    'the key "complete" is given twice in one object; JSON readers differ on '
                    "which counts, so keep one"),
    "schema 1 in KiB/s beyond the float range in bytes/s": (
        json.dumps({"schema_version": 1, "results": [
            {"algorithm": "sha256", "plugin": "hashlib", "size": 16, "kib_per_s": 1e306}]}),
        "results[0].kib_per_s must be a positive number (of KiB/s, finite in bytes/s), not "
        "1e+306"),
}


@pytest.mark.parametrize("case", list(FILE_CASES))
def test_results_files_are_refused_by_load(tmp_path, case):
    text, problem = FILE_CASES[case]
    path = tmp_path / "base.json"
    path.write_text(text)
    with pytest.raises(ResultsError) as exc:
        results.load(path)
    assert str(exc.value) == f"{path}: {problem}"


@pytest.mark.parametrize("case", ["size of 5000 digits", "count of 400 digits",
                                  "schema_version of 5000 digits",
                                  "a figure its rounds do not give", "an edited ops/s figure",
                                  "a key twice"])
def test_results_files_through_compare_and_report(pytester, capsys, case):
    text, problem = FILE_CASES[case]
    path = pytester.path / "base.json"
    path.write_text(text)
    r = pytester.runpytest("--qcrypto-digest", "sha256", "--qcrypto-compare", "base.json",
                           "-p", "no:cacheprovider")
    assert_usage_error(r, f"--qcrypto-compare: {path}: {problem}")
    capsys.readouterr()
    assert cli.main(["report", str(path)]) == USAGE
    out, err = capsys.readouterr()
    assert out == "" and err == f"ERROR: {path}: {problem}\n"


def test_figures_are_recomputed_from_the_rounds_on_load(tmp_path):
    """A figure rounded by hand (within rounding of its rounds' figure) loads, and every
    figure of a loaded file is the one its rounds give, as report and the gate compute it."""
    path = tmp_path / "base.json"
    path.write_text(document(bytes_per_second="372363636.4"))
    (r,) = results.load(path).results
    assert r.bytes_per_second == 1000 * 4096 / 0.011
    path.write_text(sizeless_document(ops_per_s="20363.64"))
    (r,) = results.load(path).results
    assert r.bytes_per_second == 224 / 0.011


def test_python_json_would_have_raised():
    """What the loader guards against: json.loads itself fails past 4300 digits."""
    with pytest.raises(ValueError, match="4300"):
        json.loads(document(size=BIG))


finite_or_not = st.one_of(st.floats(), st.sampled_from([1e308, 1.7976931348623157e308, 5e-324]))
json_number = st.one_of(
    finite_or_not.map(lambda f: json.dumps(f)), st.integers(-(10**30), 10**30).map(str),
    digit_runs, st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400", "-0", "0"]))
fields = st.sampled_from(["size", "count", "bytes_per_second", "cpu_wait_share", "jobs"])
lists = st.sampled_from(["rounds_s", "cpu_s", "tries"])


@PROPERTIES
@given(st.dictionaries(fields, json_number, max_size=3),
       st.dictionaries(lists, st.lists(json_number, min_size=1, max_size=3).map(
           lambda xs: f"[{', '.join(xs)}]"), max_size=2))
def test_what_loads_is_usable_downstream(tmp_path_factory, numbers, number_lists):
    path = tmp_path_factory.mktemp("hostile") / "base.json"
    path.write_text(document(**numbers, **number_lists))
    try:
        loaded = results.load(path)
    except ResultsError as exc:
        assert str(exc).startswith(f"{path}: ") and len(str(exc)) < MAX_MESSAGE + len(str(path))
        return
    for r in loaded.results:  # every figure the gate, the report and the tables compute
        figures = [r.bytes_per_second, r.kib_per_s, r.slowest_round_bytes_per_second,
                   *gate.baseline_figures(r)]
        if r.count and r.rounds_s:
            figures += [r.count * r.size / min(r.rounds_s)]
        assert all(math.isfinite(f) for f in figures), (r, figures)
    tables, _ = report.joined_tables([loaded], [str(path)])
    render.format_lines(tables)


@PROPERTIES
@given(st.integers(1, qsettings.MAX_SIZE), st.integers(1, harness.MAX_COUNT * 64),
       st.lists(st.floats(1e-9, 1e6), min_size=1, max_size=5),
       st.one_of(st.none(), st.floats(0, 1)), st.sampled_from(["openssl", "pyca", "python"]))
def test_valid_results_round_trip(tmp_path_factory, size, count, rounds, share, plugin):
    m = Measurement("sha256", plugin, size, "digest", count, tuple(rounds),
                    tuple(r / 2 for r in rounds),
                    canonical_plugin=registry.builtin_canonical(plugin))
    saved = Result.from_measurement(m, test="t", cpu_wait_share=share)
    path = tmp_path_factory.mktemp("valid") / "r.json"
    results.save(path, ResultsFile([saved]))
    (loaded,) = results.load(path).results
    assert loaded == saved


# -- plugin names written as aliases ----------------------------------------------------------


def schema_1(*entries):
    return json.dumps({"schema_version": 1, "results": [
        {"algorithm": "sha256", "plugin": p, "size": s, "kib_per_s": k} for p, s, k in entries]})


def test_load_maps_aliases_to_canonical_names(tmp_path):
    path = tmp_path / "old.json"
    path.write_text(schema_1(("pyca", 16, 1.0), ("openssl-3", 64, 1.0), ("python", 16, 1.0),
                             ("cryptodome", 16, 1.0), ("AF_ALG:sha256-generic", 16, 1.0),
                             ("someone-elses", 16, 1.0)))
    loaded = results.load(path).results
    assert [(r.plugin, r.canonical_plugin) for r in loaded] == [
        ("pyca", "openssl"), ("openssl-3", "openssl"), ("python", "hashlib"),
        ("cryptodome", "pycryptodome"), ("AF_ALG:sha256-generic", "afalg:sha256-generic"),
        ("someone-elses", "someone-elses")]
    # schema 2 without canonical_plugin, and its plugins entry without canonical
    doc = json.loads(document())
    del doc["results"][0]["canonical_plugin"]
    doc["results"][0]["plugin"] = "pyca"
    doc["plugins"] = {"pyca": {"version": "OpenSSL 3"}}
    path.write_text(json.dumps(doc))
    loaded = results.load(path)
    assert loaded.results[0].key == ("sha256", "openssl", 4096, "digest")
    assert loaded.plugin_entry("openssl") == {"version": "OpenSSL 3", "canonical": "openssl"}
    # the run's own names (a conftest plugin's alias) through the caller's mapping
    path.write_text(schema_1(("phony", 16, 1.0)))
    (r,) = results.load(path, {"phony": "fake"}.get).results
    assert r.canonical_plugin == "fake"


def test_an_alias_and_its_plugin_for_one_cell_are_one_cell_twice(tmp_path):
    path = tmp_path / "old.json"
    path.write_text(schema_1(("pyca", 16, 1.0), ("openssl", 16, 2.0)))
    with pytest.raises(ResultsError) as exc:
        results.load(path)
    assert str(exc.value) == (f"{path}: results[1] repeats results[0]: sha256 openssl 16 B "
                              "digest is in the file twice (as pyca and openssl); keep one of "
                              "them")


def gate_sections(stdout: str) -> dict[str, set[tuple[str, str, int, str]]]:
    """The cells the gate's summary lists as new and as not measured, plugins canonical."""
    sections: dict[str, set[tuple[str, str, int, str]]] = {"new": set(), "not run": set()}
    for line in stdout.splitlines():
        found = re.fullmatch(r"  (\S+) (\S+) (\w+), sizes? ([\d, ]+): (new|not run)", line)
        if found:
            alg, plugin, direction, sizes, what = found.groups()
            for size in sizes.split(", "):
                sections[what].add((alg, registry.builtin_canonical(plugin), int(size),
                                    direction))
    return sections


BASELINES = {
    "schema 1": schema_1(("pyca", 16, 1e-3), ("python", 16, 1e-3), ("cryptodome", 16, 1e-3),
                         ("openssl-3", 64, 1e-3)),
    "schema 2 without canonical_plugin": json.dumps({
        "schema_version": 2, "complete": True, "machine": {}, "plugins": {}, "results": [
            {"algorithm": "sha256", "plugin": p, "size": 16, "direction": "digest", "count": 0,
             "rounds_s": [], "bytes_per_second": 1.0} for p in ("cryptography", "python")]}),
}


@pytest.mark.parametrize("case", list(BASELINES))
def test_no_cell_is_both_new_and_not_measured(pytester, case):
    """The bug: a baseline cell under an alias was never judged, listed as new and as not run."""
    (pytester.path / "base.json").write_text(BASELINES[case])
    r = pytester.runpytest("--qcrypto-digest", "sha256", "--qcrypto-size", "16",
                           "--qcrypto-plugin", "openssl,hashlib,pycryptodome",
                           "--qcrypto-min-time", "0.002", "--qcrypto-rounds", "1",
                           "--qcrypto-compare", "base.json", "-p", "no:cacheprovider")
    assert r.ret == 0, r.stdout.str()
    sections = gate_sections(r.stdout.str())
    assert not sections["new"] & sections["not run"], r.stdout.str()
    run = {("sha256", p, 16, "digest") for p in ("openssl", "hashlib", "pycryptodome")}
    baseline = {("sha256", registry.builtin_canonical(e.plugin), e.size, e.direction)
                for e in results.load(pytester.path / "base.json").results}
    assert sections["new"] == run - baseline and sections["not run"] == baseline - run
    assert r.stdout.str().count("%") >= len(run & baseline)  # a change, judged, per cell


def test_a_cell_under_a_conftest_plugins_alias_is_judged(pytester):
    pytester.makeconftest(FAKE_PLUGIN.replace('    name = "fake"\n',
                                              '    name = "fake"\n    aliases = ("phony",)\n'))
    (pytester.path / "old.json").write_text(schema_1(("phony", 16, 1e12)))
    r = pytester.runpytest(*FAKE_RUN, "--qcrypto-size", "16", "--qcrypto-compare", "old.json",
                           "--qcrypto-confirm", "0")
    r.assert_outcomes(failed=1)
    r.stdout.fnmatch_lines(["*regression: sha256 fake 16 B digest: * KiB/s now*, baseline "
                            "1000000000000.00 KiB/s*"])
    assert "no baseline entry" not in r.stdout.str()
    assert "not measured in this run" not in r.stdout.str()


def test_report_shows_one_row_per_plugin(tmp_path, capsys):
    (tmp_path / "lo.json").write_text(schema_1(("pyca", 16, 1.0), ("openssl", 64, 2.0),
                                               ("python", 16, 3.0)))
    assert cli.main(["report", str(tmp_path / "lo.json")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Benchmark results for 'sha256' digest (KiB/s):"
    assert [line.split() for line in out[1:4]] == [["plugin", "16", "64"],
                                                   ["lo/openssl", "1.00", "2.00"],
                                                   ["lo/python", "3.00", "-"]]


def test_rounds_that_would_overflow_or_are_missing_are_load_errors(tmp_path):
    """Found by Hypothesis (rounds of 1e308 s: their median overflowed to inf) and by a user
    trial (an empty rounds_s loaded, and qcrypto report -v left its line out silently)."""
    from pytest_qcrypto.results import store as res

    def doc(rounds):
        return {"schema_version": 2, "complete": True, "machine": {}, "plugins": {},
                "results": [{"algorithm": "sha256", "plugin": "hashlib", "size": 16,
                             "direction": "digest", "bytes_per_second": 1000.0, "count": 64,
                             "rounds_s": rounds}]}

    for rounds, problem in (([1e308, 1e308], "rounds_s must be a list of positive seconds"),
                            ([], "rounds_s is empty, but count is 64")):
        path = tmp_path / "r.json"
        path.write_text(json.dumps(doc(rounds)))
        with pytest.raises(res.ResultsError, match=problem):
            res.load(path)
