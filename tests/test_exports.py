"""``--qcrypto-format=bencher`` and ``github-action-benchmark``: the JSON continuous-benchmarking
services read, field for field as their documentation gives it.

The documented samples below are the services' own examples, reduced to their fields:
Bencher's "Bencher Metric Format (BMF)" reference page (bencher.dev/docs/reference/
bencher-metric-format: benchmark name -> measure -> value, lower_value, upper_value) and
github-action-benchmark's README, custom benchmarks (a list of objects with name, unit,
value, and optional range and extra, both strings).  The figures come from rounds read off a
fake clock: 1000 iterations of 1024 bytes in 10, 8 and 12.5 ms give 100000 KiB/s (median
round), 80000 (slowest) and 125000 (fastest).
"""

from __future__ import annotations

import json

import pytest

from pytest_qcrypto.commands import qcrypto
from pytest_qcrypto.output import exports, report
from pytest_qcrypto.output.layouts import LAYOUTS, Figures
from pytest_qcrypto.output.render import parse_output
from pytest_qcrypto.algorithms.settings import SettingsError
from pytest_qcrypto.results import store
from pytest_qcrypto.results.model import Result, ResultsFile

#: Bencher's documented example, one benchmark with one measure (the BMF reference page).
BENCHER_SAMPLE = {"benchmark_name": {"latency": {"value": 88.0, "lower_value": 87.42,
                                                 "upper_value": 88.88}}}
#: github-action-benchmark's documented custom-benchmark entries (README): the required
#: fields alone, and with the optional range and extra.
GAB_SAMPLE = [{"name": "My Custom Smaller Is Better Benchmark - CPU Load", "unit": "Percent",
               "value": 50},
              {"name": "My Custom Smaller Is Better Benchmark - Memory Used",
               "unit": "Megabytes", "value": 100, "range": "3",
               "extra": "Value for Tooltip: 25\nOptional Num #2: 100\nAnything Else!"}]
ROUNDS = (0.010, 0.008, 0.0125)


def shape(value):
    """A JSON value's shape: the type of each leaf, each object's keys, lists as their items'."""
    if isinstance(value, dict):
        return {"{}": sorted((k if k in FIELDS else "*", shape(v)) for k, v in value.items())}
    if isinstance(value, list):
        return ["[]", sorted({json.dumps(shape(v)) for v in value})]
    return "number" if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else type(value).__name__


#: Field names of the formats (the others are names chosen by the user: benchmark, measure).
FIELDS = {"value", "lower_value", "upper_value", "name", "unit", "range", "extra"}


def results_file(path):
    cells = [Result("sha256", "openssl", 1024, "digest", 1000 * 1024 / 0.010, count=1000,
                    rounds_s=ROUNDS, cpu_s=ROUNDS, canonical_plugin="openssl"),
             Result("ed25519", "openssl", 0, "sign", 1000 / 0.010, count=1000, rounds_s=ROUNDS,
                    cpu_s=ROUNDS, canonical_plugin="openssl")]
    store.save(path, ResultsFile(cells, machine={"cpu_model": "Test CPU"}))
    return path


def figures(tmp_path):
    doc = store.load(results_file(tmp_path / "run.json"))
    return Figures(report.saved_tables((r.plugin, r) for r in doc.results), "KiB/s")


def test_bencher_is_the_documented_bmf_field_for_field(tmp_path):
    doc = json.loads("\n".join(LAYOUTS["bencher"].draw(figures(tmp_path))))
    assert doc == {
        "sha256 openssl 1024 B digest": {"kib-per-second": {
            "value": pytest.approx(100000.0), "lower_value": pytest.approx(80000.0),
            "upper_value": pytest.approx(125000.0)}},
        "ed25519 openssl sign": {"throughput": {
            "value": pytest.approx(100000.0), "lower_value": pytest.approx(80000.0),
            "upper_value": pytest.approx(125000.0)}}}
    for name, measures in doc.items():  # each benchmark is shaped as the documented one
        assert shape({"benchmark_name": measures}) == shape(
            {"benchmark_name": {m: BENCHER_SAMPLE["benchmark_name"]["latency"]
                                for m in measures}})
    assert len(doc["ed25519 openssl sign"]) == 1 and exports.BENCHER_MEASURES["ops/s"] == \
        "throughput"  # Bencher's built-in Throughput measure is operations / second


def test_github_action_benchmark_is_the_documented_custom_list(tmp_path):
    entries = json.loads("\n".join(LAYOUTS["github-action-benchmark"].draw(figures(tmp_path))))
    assert entries == [
        {"name": "sha256 openssl 1024 B digest", "unit": "KiB/s",
         "value": pytest.approx(100000.0), "range": "± 22500.00",
         "extra": "3 rounds of 1000 iterations; median round 0.010000 s; slowest round "
                  "80000.00, fastest 125000.00 KiB/s"},
        {"name": "ed25519 openssl sign", "unit": "ops/s", "value": pytest.approx(100000.0),
         "range": "± 22500.00",
         "extra": "3 rounds of 1000 iterations; median round 0.010000 s; slowest round "
                  "80000.00, fastest 125000.00 ops/s"}]
    assert shape(entries) == shape(GAB_SAMPLE[1:])
    required = set(GAB_SAMPLE[0])
    assert all(required <= set(e) <= set(GAB_SAMPLE[1]) for e in entries)


def test_qcrypto_report_exports_and_refuses_another_unit(tmp_path, capsys):
    path = results_file(tmp_path / "run.json")
    assert qcrypto.main(["report", str(path), "--qcrypto-format=bencher"]) == 0
    # a joined report names each row MACHINE/PLUGIN (the machine: the file's name)
    assert set(json.loads(capsys.readouterr().out)) == {"sha256 run/openssl 1024 B digest",
                                                         "ed25519 run/openssl sign"}
    assert qcrypto.main(["report", str(path), "--qcrypto-format=github-action-benchmark",
                         "--qcrypto-unit=MB/s"]) == 4
    assert capsys.readouterr().err == (
        "ERROR: --qcrypto-unit MB/s cannot be used with --qcrypto-format "
        "github-action-benchmark, whose unit is fixed: " + exports.FIXED_UNIT + "\n")
    with pytest.raises(SettingsError, match="Valid formats: qcrypto, openssl, markdown, csv, "
                                            "cryptotest, bencher, github-action-benchmark"):
        parse_output(fmt="bmf")


def test_a_real_run_writes_json_alone_to_standard_output(capsys):
    code = qcrypto.main(["speed", "-D", "sha256", "-P", "hashlib", "--qcrypto-size=1024",
                         "--qcrypto-min-time=0.01", "--qcrypto-rounds=3",
                         "--qcrypto-format=github-action-benchmark"])
    assert code == 0
    (entry,) = json.loads(capsys.readouterr().out)
    assert entry["name"] == "sha256 hashlib 1024 B digest" and entry["unit"] == "KiB/s"
    assert entry["value"] > 0 and entry["range"].startswith("± ")


def test_a_files_strings_make_no_markup_in_the_job_summary(tmp_path, monkeypatch, capsys):
    hostile = ["<script>alert(1)</script>", "[x](https://evil.example)",
               "![i](http://evil.example/i.png)", "www.evil.example", "`code` &amp; |~~x~~"]
    cells = [Result("sha256", name, 1024, "digest", 1000 * 1024 / 0.010, count=1000,
                    rounds_s=ROUNDS, cpu_s=ROUNDS, canonical_plugin=name) for name in hostile]
    store.save(tmp_path / "run.json", ResultsFile(cells, machine={"cpu_model": "<b>CPU</b>"}))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    assert qcrypto.main(["report", str(tmp_path / "run.json")]) == 0
    summary = (tmp_path / "summary.md").read_text()
    rows = [line for line in summary.splitlines() if line.startswith("| run/")]
    assert rows[:2] == ["| run/\\<script\\>alert(1)\\</script\\> | 100000.00 |",
                        "| run/\\[x\\](https\\://evil.example) | 100000.00 |"]
    assert rows[3:] == ["| run/www\\.evil.example | 100000.00 |",
                        "| run/\\`code\\` \\&amp; \\|\\~\\~x\\~\\~ | 100000.00 |"]
    for mark in ("<", ">", "[", "]", "`", "&", "~"):  # every one escaped
        assert summary.count(mark) == summary.count("\\" + mark), mark
    assert "://" not in summary.replace("\\://", "")


def test_github_action_benchmark_counts_one_round_of_one_iteration_in_the_singular():
    from pytest_qcrypto.measure.harness import Measurement
    from pytest_qcrypto.output.tables import Cell, assemble

    m = Measurement("sha256", "hashlib", 64, "digest", count=1, rounds_s=(0.001,))
    table = assemble("sha256", "digest", ["hashlib"], {("hashlib", 64): Cell(m)})
    (entry,) = json.loads("\n".join(LAYOUTS["github-action-benchmark"].draw(
        Figures([table], "KiB/s"))))
    assert entry["extra"] == ("1 round of 1 iteration; median round 0.001000 s; slowest round "
                              "62.50, fastest 62.50 KiB/s")
