"""Units and formats of the results, as exact text from known measurements."""

import csv
import os

import pytest

from pytest_qcrypto.output import render, report as joining
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.output.render import (FAILED, SKIPPED, UNITS, Cell, Output, Table, csv_lines,
                                   format_lines, markdown_lines, openssl_lines, parse_output,
                                   report, table_lines)
from pytest_qcrypto.results.store import Result, ResultsFile
from pytest_qcrypto.algorithms.settings import SettingsError


def m(plugin, size, count, seconds, alg="sha256", direction="digest"):
    return Measurement(alg, plugin, size, direction, count, (seconds * 1.1, seconds, seconds * 0.9))


def known_table():
    """1000 operations of 16384 bytes in 1.000 s (16,384,000 bytes/s), and 16-byte cells."""
    cells = {
        ("openssl", 16): Cell(m("openssl", 16, 2097152, 0.64)),        # 52,428,800 bytes/s
        ("openssl", 16384): Cell(m("openssl", 16384, 1000, 1.0)),      # 16,384,000 bytes/s
        ("pycryptodome", 16): Cell(None, SKIPPED, "no such thing"),
        ("pycryptodome", 16384): Cell(m("pycryptodome", 16384, 1, 2.0)),  # 8192 bytes/s = 8 KiB/s
    }
    return Table("sha256", "digest", "digest", ("openssl", "pycryptodome"), (16, 16384), cells)


@pytest.mark.parametrize("unit, label, value", [
    ("KiB/s", "KiB/s", "16000.00"),
    ("MiB/s", "MiB/s", "15.62"),  # 15.625, rounded half to even
    ("kB/s", "kB/s, 1 kB = 1000 bytes", "16384.00"),
    ("MB/s", "MB/s, 1 MB = 1000000 bytes", "16.38"),
    ("ops/s", "ops/s", "1000.00"),
    ("ns/op", "ns/op", "1000000.00"),
])
def test_each_unit_of_1000_ops_of_16384_bytes_in_one_second(unit, label, value):
    lines = table_lines(known_table(), unit)
    assert lines[0] == f"Benchmark results for 'sha256' digest ({label}):"
    assert lines[2].split()[0] == "openssl"
    assert lines[2].split()[2] == value
    assert UNITS[unit].of(m("openssl", 16384, 1000, 1.0)) == pytest.approx(float(value), abs=0.006)


def test_default_unit_is_the_qcrypto_layout_unchanged():
    t = known_table()
    assert table_lines(t) == table_lines(t, "KiB/s") == [
        "Benchmark results for 'sha256' digest (KiB/s):",
        "plugin               16     16384",
        "openssl        51200.00  16000.00",
        "pycryptodome          -      8.00",
        "  - pycryptodome (size 16) skipped: no such thing",
    ]
    assert format_lines([t]) == report([t], verbose=False)
    assert format_lines([t], verbose=True) == report([t], verbose=True)


def test_other_units_keep_the_column_rules():
    assert table_lines(known_table(), "MB/s")[1:4] == [
        "plugin            16  16384",
        "openssl        52.43  16.38",
        "pycryptodome       -   0.01",
    ]


def test_ns_per_op_of_a_16_byte_digest():
    t = Table("sha256", "digest", "digest", ("hashlib",), (16,),
              {("hashlib", 16): Cell(m("hashlib", 16, 4096, 0.001))})
    assert table_lines(t, "ns/op")[2] == "hashlib   244.14"  # 1 ms / 4096 operations


def test_openssl_format_is_openssl_speeds_layout():
    t = Table("sha256", "digest", "digest", ("openssl",), (16, 64, 16384),
              {("openssl", 16): Cell(m("openssl", 16, 2097152, 0.64)),
               ("openssl", 64): Cell(m("openssl", 64, 100, 1.0)),  # 6400 bytes/s: no k
               ("openssl", 16384): Cell(m("openssl", 16384, 1000, 1.0))})
    assert openssl_lines([t]) == [
        "The 'numbers' are in 1000s of bytes per second processed.",
        "type             16 bytes     64 bytes  16384 bytes",
        "sha256           52428.80k     6400.00     16384.00k",
    ]


def test_openssl_format_with_two_plugins_and_markers():
    assert openssl_lines([known_table()]) == [
        "The 'numbers' are in 1000s of bytes per second processed.",
        "type                     16 bytes  16384 bytes",
        "sha256[openssl]          52428.80k    16384.00k",
        "sha256[pycryptodome]            -      8192.00 ",
        "  - sha256[pycryptodome] (size 16) skipped: no such thing",
    ]


def test_openssl_format_groups_tables_of_the_same_sizes():
    enc = Table("aes-128-cbc", "cipher", "encrypt", ("openssl",), (16384,),
                {("openssl", 16384): Cell(m("openssl", 16384, 1000, 1.0, "aes-128-cbc",
                                            "encrypt"))})
    dec = Table("aes-128-cbc", "cipher", "decrypt", ("openssl",), (16384,),
                {("openssl", 16384): Cell(m("openssl", 16384, 2000, 1.0, "aes-128-cbc",
                                            "decrypt"))})
    assert openssl_lines([enc, dec]) == [
        "The 'numbers' are in 1000s of bytes per second processed.",
        "type                 16384 bytes",
        "aes-128-cbc             16384.00k",
        "aes-128-cbc-decrypt     32768.00k",
    ]


def test_markdown_format():
    assert markdown_lines([known_table()]) == [
        "### Benchmark results for 'sha256' digest (KiB/s)",
        "",
        "| plugin | 16 | 16384 |",
        "| :--- | ---: | ---: |",
        "| openssl | 51200.00 | 16000.00 |",
        "| pycryptodome | - | 8.00 |",
        "",
        "- `-` pycryptodome (size 16) skipped: no such thing",
    ]


def test_markdown_escapes_pipes_and_separates_tables():
    t = Table("sha256", "digest", "digest", ("a|b",), (16,),
              {("a|b", 16): Cell(None, FAILED, "x | y")})
    lines = markdown_lines([t, t])
    assert "| a\\|b | x |" in lines
    assert "- `x` a\\|b (all sizes) failed: x \\| y" in lines
    assert lines.count("### Benchmark results for 'sha256' digest (KiB/s)") == 2
    assert lines[lines.index("### Benchmark results for 'sha256' digest (KiB/s)", 1) - 1] == ""


def test_csv_format():
    lines = csv_lines([known_table()], "kB/s")
    assert lines == [
        "algorithm,direction,plugin,size,unit,value,count,seconds,status,reason,jobs",
        "sha256,digest,openssl,16,kB/s,52428.80,2097152,0.640000000,ok,,1",
        "sha256,digest,openssl,16384,kB/s,16384.00,1000,1.000000000,ok,,1",
        "sha256,digest,pycryptodome,16,kB/s,,,,skipped,no such thing,1",
        "sha256,digest,pycryptodome,16384,kB/s,8.19,1,2.000000000,ok,,1",
    ]
    rows = list(csv.DictReader(lines))
    assert float(rows[1]["value"]) == 16384.0


def test_csv_quotes_commas():
    t = Table("sha256", "digest", "digest", ("p",), (16,), {("p", 16): Cell(None, FAILED, "a, b")})
    assert csv_lines([t])[1] == 'sha256,digest,p,16,KiB/s,,,,failed,"a, b",'


def test_only_the_qcrypto_format_has_a_verbose_block():
    t = known_table()
    assert format_lines([t], "qcrypto", verbose=True)[0].startswith("Benchmarking 'sha256'")
    for fmt in ("openssl", "markdown", "csv"):
        assert format_lines([t], fmt, verbose=True) == format_lines([t], fmt)


# -- option checks -------------------------------------------------------------------

def test_output_defaults():
    assert parse_output() == Output("KiB/s", "qcrypto", None, False)
    assert parse_output(fmt="openssl").unit == "kB/s"


@pytest.mark.parametrize("unit, hint", [
    ("furlongs", ""), ("Mb/s", "did you mean MB/s?"), ("kib/s", "did you mean KiB/s?")])
def test_unknown_unit_names_the_valid_ones(unit, hint):
    with pytest.raises(SettingsError) as e:
        parse_output(unit=unit)
    assert str(e.value).startswith(f"--qcrypto-unit: unknown unit {unit!r}")
    assert "Valid units: KiB/s, MiB/s, kB/s, MB/s, ops/s, ns/op" in str(e.value)
    assert hint in str(e.value)


def test_unknown_format_names_the_valid_ones():
    with pytest.raises(SettingsError, match="Valid formats: qcrypto, openssl, markdown, csv"):
        parse_output(fmt="html")


@pytest.mark.parametrize("unit", ["KiB/s", "kB/s", "MB/s"])
def test_a_unit_with_the_openssl_format_is_a_usage_error(unit):
    with pytest.raises(SettingsError, match="cannot be used with --qcrypto-format openssl"):
        parse_output(unit=unit, fmt="openssl")


def test_plot_suffix_is_checked():
    with pytest.raises(SettingsError, match=r"must end in \.png, \.svg or \.html"):
        parse_output(plot="speed.jpg")
    assert parse_output(plot="out/speed.SVG").plots == (os.path.abspath("out/speed.SVG"),)


# -- where the lines go --------------------------------------------------------------

class Terminal:
    def __init__(self):
        self.lines = []

    def write_sep(self, sep, title):
        self.lines.append(f"{sep * 3} {title} {sep * 3}")

    def write_line(self, line, **markup):
        self.lines.append(line)


class Stream:
    def __init__(self):
        self.text = ""

    def write(self, text):
        self.text += text

    def flush(self):
        pass


def test_summary_on_the_terminal(monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    term = Terminal()
    render.write_summary(term, [known_table()], Output(format="qcrypto"), verbose=False)
    assert term.lines[0] == "=== qcrypto speed ==="
    assert term.lines[1:] == table_lines(known_table())


def test_bare_summary_goes_to_stdout_alone(monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    term, out = Terminal(), Stream()
    render.write_summary(term, [known_table()], Output(format="csv", bare=True), False,
                         stdout=out)
    assert term.lines == []
    assert out.text.splitlines() == csv_lines([known_table()])


def test_markdown_tables_are_appended_to_the_step_summary(monkeypatch, tmp_path):
    summary = tmp_path / "summary.md"
    summary.write_text("# earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    render.write_summary(Terminal(), [known_table()], Output("MB/s"), verbose=False)
    text = summary.read_text()
    assert text.startswith("# earlier step\n### Benchmark results for 'sha256' digest (MB/s, ")
    assert "| openssl | 52.43 | 16.38 |" in text


def test_an_unwritable_step_summary_is_reported_not_raised(monkeypatch, tmp_path):
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "no" / "such" / "dir.md"))
    term = Terminal()
    render.write_summary(term, [known_table()], Output(), verbose=False)
    assert any(line.startswith("ERROR: cannot append to GITHUB_STEP_SUMMARY") for line in term.lines)


# -- one report across machines ------------------------------------------------------

def results_file(name, cores, flags, version, *results):
    machine = {"cpu_model": "Test CPU", "cpu_flags": flags, "architecture": "x86_64",
               "cores": cores, "os": "Linux", "kernel": "6.1", "libc": "glibc 2.36",
               "python": "CPython 3.11.7"}
    return ResultsFile(list(results), machine,
                       {"openssl": {"canonical": "openssl", "library": "pyca/cryptography",
                                    "version": version}}, path=name)


def test_joined_tables_have_a_row_per_machine_and_plugin():
    a = results_file("runs/a.json", 2, ["aes", "avx2"], "OpenSSL 3.0",
                     Result("sha256", "openssl", 16384, "digest", 16_384_000.0, 1000, (1.0,)),
                     Result("sha256", "hashlib", 16384, "digest", 8_192_000.0, 500, (1.0,)))
    b = results_file("runs/b.json", 8, ["aes", "sha_ni"], "OpenSSL 3.4",
                     Result("sha256", "openssl", 16, "digest", 1_024_000.0),  # schema 1 style
                     Result("sha256", "openssl", 16384, "digest", 32_768_000.0, 2000, (1.0,)))
    tables, legend = joining.joined_tables([a, b], ["runs/a.json", "runs/b.json"])
    assert len(tables) == 1
    assert table_lines(tables[0]) == [
        "Benchmark results for 'sha256' digest (KiB/s):",
        "plugin            16     16384",
        "a/openssl          -  16000.00",
        "a/hashlib          -   8000.00",
        "b/openssl    1000.00  32000.00",
        "  - a/openssl (size 16): not in this results file",
        "  - a/hashlib (size 16): not in this results file",
    ]
    assert legend == [
        "machines:",
        "  a: runs/a.json: Test CPU, x86_64, 2 cores, Linux 6.1, glibc 2.36, CPython 3.11.7",
        "  b: runs/b.json: Test CPU, x86_64, 8 cores, Linux 6.1, glibc 2.36, CPython 3.11.7",
        "differences:",
        "  cpu_flags: avx2 (a), sha_ni (b)",
        "  cores: a=2, b=8",
        "  openssl version: a=OpenSSL 3.0, b=OpenSSL 3.4",
    ]
    assert csv_lines(tables)[:2] == [
        "algorithm,direction,machine,plugin,size,unit,value,count,seconds,status,reason,jobs",
        "sha256,digest,a,openssl,16,KiB/s,,,,skipped,not in this results file,1",
    ]
    assert csv_lines(tables)[2] == \
        "sha256,digest,a,openssl,16384,KiB/s,16000.00,1000,1.000000000,ok,,1"


def test_same_machine_twice_says_so():
    r = Result("sha256", "openssl", 16, "digest", 1_024_000.0)
    a = results_file("x/run.json", 2, ["aes"], "OpenSSL 3.0", r)
    b = results_file("y/run.json", 2, ["aes"], "OpenSSL 3.0", r)
    tables, legend = joining.joined_tables([a, b], ["x/run.json", "y/run.json"])
    assert tables[0].plugins == ("x/run.json/openssl", "y/run.json/openssl")
    assert legend[-1] == "same fingerprint, plugin versions and settings on every machine"


def test_jobs_get_a_row_of_their_own_and_settings_differences_are_named():
    one = Result("sha256", "openssl", 16, "digest", 1_024_000.0, 1000, (1.0,))
    two = Result("sha256", "openssl", 16, "digest", 2_048_000.0, 2000, (1.0,), jobs=2)
    a = results_file("x/run.json", 2, ["aes"], "OpenSSL 3.0", one)
    b = results_file("y/run.json", 2, ["aes"], "OpenSSL 3.0", one)
    b.results.append(Result("sha256", "openssl", 64, "digest", 4_096_000.0, 1000, (1.0,)))
    j = results_file("j2.json", 2, ["aes"], "OpenSSL 3.0", two)
    a.settings, b.settings, j.settings = ({"min_time_s": 0.1, "rounds": 3},
                                          {"min_time_s": 0.5, "rounds": 3},
                                          {"min_time_s": 0.1, "rounds": 3})
    tables, legend = joining.joined_tables([a, b, j], ["x/run.json", "y/run.json", "j2.json"])
    assert table_lines(tables[0]) == [
        "Benchmark results for 'sha256' digest (KiB/s):",
        "plugin                  16     64",
        "x/run.json/openssl   15.62      -",  # 1000 x 16 B in 1 s
        "y/run.json/openssl   15.62  62.50",
        "j2/openssl x2 jobs   31.25      -",
        "  - x/run.json/openssl (size 64): not in this results file",
        "  - j2/openssl x2 jobs (size 64): not in this results file",
    ]
    assert legend[-2:] == ["differences:", "  min_time_s: x/run.json=0.1, y/run.json=0.5, j2=0.1"]
    assert [line.split(",")[2:4] for line in csv_lines(tables)[1:]] == [
        ["x/run.json", "openssl"], ["x/run.json", "openssl"], ["y/run.json", "openssl"],
        ["y/run.json", "openssl"], ["j2", "openssl x2 jobs"], ["j2", "openssl x2 jobs"]]


def test_machine_labels_are_unique():
    assert joining.machine_labels(["a.json", "b.json", "dir/c"]) == ["a", "b", "c"]
    assert joining.machine_labels(["x/a.json", "y/a.json"]) == ["x/a.json", "y/a.json"]
    assert joining.machine_labels(["a.json", "a.json"]) == ["a.json", "a.json#2"]
