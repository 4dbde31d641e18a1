"""The ``qcrypto`` command: qcrypto's syntax in front of pytest, and ``qcrypto report``."""

import importlib.metadata
import json
import re
import sys

import pytest

from conftest import FAST, TEST_PLUGINS
from pytest_qcrypto.commands import qcrypto as cli

EXECUTED = r"executed \d+ digests of size {} bytes in \d+\.\d\d secs"
#: A figure, ``?`` after it when it is an outlier among its row's neighbours (a round of a
#: loaded machine; pytest_qcrypto.output.outliers), said on a line under the table.
NUMBER = r"\d+\.\d\d\??"


def qcrypto(pytester, *args):
    """Run the command in a fresh process, as the console script does."""
    return pytester.run(sys.executable, "-m", "pytest_qcrypto.commands.qcrypto", *args)


def test_console_script_is_declared():
    (entry,) = importlib.metadata.entry_points(group="console_scripts", name="qcrypto")
    assert entry.value == "pytest_qcrypto.commands.qcrypto:main"


def test_speed_verbose_prints_the_seed_layout_and_nothing_else(pytester):
    r = qcrypto(pytester, "speed", "-v", "-D", "sha256", "-P", "openssl", "-P", "pycryptodome",
                *FAST)
    assert r.ret == 0, r.stderr.str()
    out = r.outlines
    sizes = ["16", "64", "256", "1024", "4096", "8192", "32768"]
    assert out[0] == "Benchmarking 'sha256' digest on the following plugin(s): openssl, pycryptodome"
    assert out[1] == "plugin: openssl"
    for line, size in zip(out[2:9], sizes):
        assert re.fullmatch(EXECUTED.format(size), line), line
    assert out[9] == "plugin: pycryptodome"
    for line, size in zip(out[10:17], sizes):
        assert re.fullmatch(EXECUTED.format(size), line), line
    assert out[17] == ""
    assert out[18] == "Benchmark results for 'sha256' digest (KiB/s):"
    assert out[19].split() == ["plugin", *sizes]
    assert [row.split()[0] for row in out[20:22]] == ["openssl", "pycryptodome"]
    assert all(re.fullmatch(NUMBER, cell) for row in out[20:22] for cell in row.split()[1:])
    assert all(line.startswith("  ? ") for line in out[22:])  # outliers, if any
    # the progress, cell by cell, is on standard error
    err = r.stderr.str()
    assert "qcrypto::sha256[openssl-16]" in err
    assert "qcrypto::sha256[pycryptodome-32768]" in err


def test_speed_prints_only_the_table(pytester):
    r = qcrypto(pytester, "speed", "-D", "sha256", "--qcrypto-size", "16,64", *FAST)
    assert r.ret == 0, r.stderr.str()
    assert r.outlines[0] == "Benchmark results for 'sha256' digest (KiB/s):"
    assert r.outlines[1].split() == ["plugin", "16", "64"]
    assert len(r.outlines) == 3  # the first available plugin: one row
    assert "passed" not in r.stdout.str() and "test session" not in r.stdout.str()


def test_speed_cipher(pytester):
    r = qcrypto(pytester, "speed", "-C", "aes-128-cbc", "-P", "pycryptodome", "--qcrypto-size",
                "16", "--qcrypto-decrypt", *FAST)
    assert r.ret == 0, r.stderr.str()
    assert r.outlines[0] == "Benchmark results for 'aes-128-cbc' cipher, decrypt (KiB/s):"
    assert r.outlines[2].split()[0] == "pycryptodome"


def test_without_an_algorithm_every_one_the_plugin_supports(pytester):
    r = qcrypto(pytester, "speed", "-P", "hashlib", "--qcrypto-size", "64", *FAST)
    assert r.ret == 0, r.stderr.str()
    headers = [line for line in r.outlines if line.startswith("Benchmark results")]
    assert len(headers) >= 15
    # hashlib has no ciphers; its HMACs come after the digests, as -M is asked for too, and
    # its KDFs (pbkdf2-sha256, scrypt) after them, in ops/s, as -K is (issue 15)
    kinds = [h.split("' ")[1] for h in headers]
    assert kinds == sorted(kinds, key=("digest (KiB/s):", "MAC (KiB/s):", "KDF (ops/s):").index)
    assert "Benchmark results for 'scrypt-n16384-r8-p1' KDF (ops/s):" in headers
    assert "Benchmark results for 'sha3-256' digest (KiB/s):" in headers
    assert "Benchmark results for 'hmac-sha256' MAC (KiB/s):" in headers


def test_passthrough_formats_and_units(pytester):
    r = qcrypto(pytester, "speed", "-D", "sha256", "-P", "hashlib", "--qcrypto-size", "16",
                "--qcrypto-format", "csv", "--qcrypto-unit", "MB/s", *FAST)
    assert r.ret == 0, r.stderr.str()
    assert r.outlines[0] == \
        "algorithm,direction,plugin,size,unit,value,count,seconds,status,reason,jobs"
    assert re.fullmatch(r"sha256,digest,hashlib,16,MB/s,\d+\.\d\d,\d+,\d+\.\d{9},ok,,1",
                        r.outlines[1])
    assert len(r.outlines) == 2


def test_openssl_format(pytester):
    r = qcrypto(pytester, "speed", "-D", "sha256", "-P", "openssl", "--qcrypto-size", "16,1024",
                "--qcrypto-format=openssl", *FAST)
    assert r.ret == 0, r.stderr.str()
    assert r.outlines[:2] == ["The 'numbers' are in 1000s of bytes per second processed.",
                              "type             16 bytes   1024 bytes"]
    assert re.fullmatch(r"sha256 +\d+\.\d\dk +\d+\.\d\dk", r.outlines[2])


def test_list(pytester):
    r = qcrypto(pytester, "list")
    assert r.ret == 0
    assert r.outlines[0] == "crypto plugins (first available is the default):"
    assert any(line.startswith("openssl") for line in r.outlines)


def test_the_list_with_a_bad_option_is_a_usage_error_naming_the_choices(pytester):
    # it printed the list and exited 0, the bad digest never said
    r = pytester.runpytest_subprocess("--qcrypto-list", "--qcrypto-digest=zzz")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert r.errlines == [
        "ERROR: --qcrypto-digest: unknown digest 'zzz'. Valid digests: md5, sha1, sha224, "
        "sha256, sha384, sha512, sha512-224, sha512-256, sha3-224, sha3-256, sha3-384, "
        "sha3-512, blake2b512, blake2s256, sm3, or all (see pytest --qcrypto-list or qcrypto "
        "list)"]
    assert r.outlines == []
    ini = pytester.runpytest_subprocess("--qcrypto-list", "-o", "qcrypto_plugins=nosuch")
    assert ini.ret == pytest.ExitCode.USAGE_ERROR and ini.outlines == []
    assert ini.errlines[0].startswith(
        "ERROR: -o qcrypto_plugins: unknown crypto plugin 'nosuch'. Valid plugins: openssl, ")
    ok = pytester.runpytest_subprocess("--qcrypto-list", "--qcrypto-digest=sha256")
    assert ok.ret == 0 and ok.outlines[0] == "crypto plugins (first available is the default):"


def test_a_failed_cell_is_exit_1_and_shows_in_the_table(pytester):
    pytester.makeconftest(TEST_PLUGINS)
    r = qcrypto(pytester, "speed", "-D", "sha256", "-P", "wrong", "-P", "hashlib",
                "--qcrypto-size", "16", *FAST)
    assert r.ret == 1
    assert r.outlines[2].split() == ["wrong", "x"]
    assert r.outlines[4].startswith("  x wrong (all sizes) failed: ")
    assert "FAILED" not in r.stdout.str()


def test_speed_that_measured_nothing_is_exit_1_saying_why(pytester):
    # issue 28: it exited 0, while cryptotest exits 1 when it measured nothing
    r = qcrypto(pytester, "speed", "-K", "argon2id", "-P", "pycryptodome", *FAST)
    assert r.ret == 1, r.stderr.str()
    assert r.errlines[-1] == ("qcrypto speed: nothing was measured: pycryptodome does not "
                              "support argon2id-m65536-t3-p4")
    assert "'argon2id-m65536-t3-p4' KDF" in r.stdout.str()  # the table of skips, as before


def test_nosuch_cipher_is_a_usage_error_naming_valid_ciphers(pytester):
    r = qcrypto(pytester, "speed", "-C", "nosuch")
    assert r.ret == 4
    assert r.outlines == []
    err = r.stderr.str()
    assert "-C: unknown cipher 'nosuch'" in err
    assert "Valid ciphers: aes-128-cbc" in err and "chacha20-poly1305" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("args, message", [
    (["speed", "-C", "sha256"], "sha256 is a digest: use -D sha256"),
    (["speed", "-D", "aes-128-cbc"], "-D: unknown digest 'aes-128-cbc'"),
    (["speed", "-D", "sha256", "-C", "aes-128-cbc"], "not allowed with argument"),
    (["speed", "-D", "sha256", *["-P", "openssl"] * 11], "-P: at most 10 plugins"),
    (["speed", "-D", "sha256", "--bogus"], "unrecognized argument '--bogus'"),
    (["speed", "-D", "sha256", "tests/"], "unrecognized argument 'tests/'"),
    (["speed", "-D"], "expected one argument"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    ([], "give a command: speed, list, report, compare or history"),
    (["list", "--qcrypto-size", "16"], "unrecognized arguments"),
    (["report"], "the following arguments are required: FILE"),
])
def test_command_line_errors_found_by_the_parser_are_exit_4(args, message, capsys):
    assert cli.main(args) == 4
    err = capsys.readouterr().err
    assert message in err and err.startswith("ERROR: ")


@pytest.mark.parametrize("args, message", [
    (["speed", "-D", "sha256", "-P", "nosuch"], "unknown crypto plugin 'nosuch'"),
    (["speed", "-D", "sha256", "--qcrypto-unit", "Mb/s"], "did you mean MB/s?"),
    (["speed", "-D", "sha256", "--qcrypto-format", "openssl", "--qcrypto-unit", "KiB/s"],
     "cannot be used with --qcrypto-format openssl"),
    (["speed", "-D", "sha256", "--qcrypto-plot", "x.gif"], "must end in .png, .svg or .html"),
    (["speed", "-D", "sha256", "--qcrypto-nosuch", "1"], "unrecognized arguments"),
])
def test_command_line_errors_found_by_pytest_are_exit_4(pytester, args, message):
    r = qcrypto(pytester, *args)
    assert r.ret == 4
    assert message in r.stderr.str()
    assert "Traceback" not in r.stderr.str()
    assert r.outlines == []


def test_help(capsys):
    assert cli.main(["-h"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: qcrypto")
    assert "speed" in out and "report" in out and "list" in out
    assert cli.main(["speed", "-h"]) == 0
    out = capsys.readouterr().out
    assert "-C cipher" in out and "-D digest" in out and "-P plugin" in out
    assert "--qcrypto-" in out


def test_speed_builds_one_pytest_command_line():
    ns, extra = cli.build_parser().parse_known_args(
        ["speed", "-D", "sha256", "-P", "openssl", "-P", "hashlib", "--qcrypto-size", "16"])
    assert cli.speed_args(ns, extra) == [
        "--qcrypto-bare", "-p", "no:cacheprovider", "--assert=plain", "-qq", "--qcrypto-digest", "sha256",
        "--qcrypto-plugin", "openssl", "--qcrypto-plugin", "hashlib", "--qcrypto-size=16"]
    ns, extra = cli.build_parser().parse_known_args(["speed", "-vv", "--qcrypto-seed", "-3"])
    args = cli.speed_args(ns, extra)
    assert args[4:7] == ["-v", "-v", "--no-header"]
    assert ["--qcrypto-digest", "all", "--qcrypto-cipher", "all"] == args[7:11]
    assert args[-1:] == ["--qcrypto-seed=-3"]
    ns, extra = cli.build_parser().parse_known_args(["speed", "--qcrypto-digest=md5"])
    assert "all" not in cli.speed_args(ns, extra)


# -- the plugin's side: --qcrypto-bare and the summary in a pytest run -------------------------

def test_bare_pytest_run_keeps_stdout_for_the_results(pytester):
    r = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--qcrypto-bare",
                                      "--qcrypto-digest", "sha256", "--qcrypto-plugin", "hashlib",
                                      "--qcrypto-size", "16", *FAST)
    assert r.ret == 0
    assert r.outlines[0] == "Benchmark results for 'sha256' digest (KiB/s):"
    assert len(r.outlines) == 3
    assert "1 passed" in r.stderr.str()


def test_unit_and_format_in_a_pytest_run(pytester):
    r = pytester.runpytest("--qcrypto-digest", "sha256", "--qcrypto-plugin", "hashlib",
                           "--qcrypto-size", "16", "--qcrypto-unit", "ns/op",
                           "--qcrypto-format", "markdown", *FAST)
    assert r.ret == 0
    out = r.outlines
    i = out.index("### Benchmark results for 'sha256' digest (ns/op)")
    assert out[i + 2:i + 4] == ["| plugin | 16 |", "| :--- | ---: |"]
    assert re.fullmatch(r"\| hashlib \| \d+\.\d\d \|", out[i + 4])


def test_step_summary_gets_the_markdown_tables(pytester, monkeypatch, tmp_path):
    summary = tmp_path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    r = pytester.runpytest("--qcrypto-digest", "sha256", "--qcrypto-plugin", "hashlib",
                           "--qcrypto-size", "16", *FAST)
    assert r.ret == 0
    lines = summary.read_text().splitlines()
    assert lines[0] == "### Benchmark results for 'sha256' digest (KiB/s)"
    assert re.fullmatch(r"\| hashlib \| \d+\.\d\d \|", lines[4])


# -- qcrypto report ------------------------------------------------------------------------------

def saved(pytester, name, machine_edit=None, plugin="hashlib"):
    """A results file from a real run, its fingerprint optionally edited."""
    r = pytester.runpytest("--qcrypto-digest", "sha256", "--qcrypto-plugin", plugin,
                           "--qcrypto-size", "16,64", "--qcrypto-save", name, *FAST)
    assert r.ret == 0, r.outlines
    path = pytester.path / name
    if machine_edit:
        doc = json.loads(path.read_text())
        doc["machine"].update(machine_edit)
        path.write_text(json.dumps(doc))
    return path


def test_report_joins_two_machines_and_names_the_differences(pytester):
    saved(pytester, "ci-small.json", {"cores": 2, "cpu_flags": ["aes", "avx2"]})
    saved(pytester, "ci-big.json", {"cores": 64, "cpu_flags": ["aes", "avx2", "vaes"]},
          plugin="openssl")
    r = qcrypto(pytester, "report", "ci-small.json", "ci-big.json")
    assert r.ret == 0, r.stderr.str()
    out = r.outlines
    assert out[0] == "Benchmark results for 'sha256' digest (KiB/s):"
    assert out[1].split() == ["plugin", "16", "64"]
    assert [row.split()[0] for row in out[2:4]] == ["ci-small/hashlib", "ci-big/openssl"]
    assert all(re.fullmatch(NUMBER, c) for row in out[2:4] for c in row.split()[1:])
    assert out[4] == ""
    assert out[5] == "machines:"
    assert out[6].startswith("  ci-small: ci-small.json: ") and "2 cores" in out[6]
    assert out[7].startswith("  ci-big: ci-big.json: ") and "64 cores" in out[7]
    assert out[8] == "differences:"
    assert "  cpu_flags: vaes (ci-big)" in out
    assert "  cores: ci-small=2, ci-big=64" in out


def test_report_formats_and_plot(pytester):
    saved(pytester, "a.json")
    saved(pytester, "b.json", {"cores": 99})
    r = qcrypto(pytester, "report", "a.json", "b.json", "--qcrypto-format", "csv",
                "--qcrypto-unit", "kB/s", "--qcrypto-plot", "report.svg")
    assert r.ret == 0, r.stderr.str()
    assert r.outlines[0].startswith("algorithm,direction,machine,plugin,size,unit,value")
    assert r.outlines[1].startswith("sha256,digest,a,hashlib,16,kB/s,")
    assert len(r.outlines) == 5
    svg = (pytester.path / "report.svg").read_text()
    assert 'id="qcrypto-sha256-digest-a_hashlib"' in svg
    assert 'id="qcrypto-sha256-digest-b_hashlib"' in svg
    r = qcrypto(pytester, "report", "a.json", "b.json", "--qcrypto-format", "markdown")
    assert r.ret == 0
    assert "**differences**" in r.outlines
    assert any(line.startswith("- cores: a=") and line.endswith(", b=99") for line in r.outlines)


def test_report_of_a_bad_file_is_a_usage_error(pytester):
    pytester.path.joinpath("bad.json").write_text("{not json")
    r = qcrypto(pytester, "report", "bad.json")
    assert r.ret == 4
    assert "bad.json: not JSON" in r.stderr.str()
    r = qcrypto(pytester, "report", "missing.json")
    assert r.ret == 4
    assert "missing.json: no such file" in r.stderr.str()


def test_report_in_process(pytester, capsys):
    saved(pytester, "one.json")
    capsys.readouterr()
    assert cli.main(["report", str(pytester.path / "one.json"), "--qcrypto-format", "openssl"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "The 'numbers' are in 1000s of bytes per second processed."
    assert out[2].startswith("sha256 ")  # one machine, one plugin: openssl's own label
    assert out[-2] == "machines:"
    assert out[-1].startswith(f"  one: {pytester.path / 'one.json'}: ")


def test_all_keeps_a_named_algorithm_the_plugin_lacks(pytester):
    r = pytester.runpytest("--qcrypto-digest", "all,sm3", "--qcrypto-plugin", "pycryptodome",
                           "--qcrypto-size", "64", *FAST)
    assert r.ret == 0
    headers = [line for line in r.outlines if line.startswith("Benchmark results for")]
    assert "Benchmark results for 'sha256' digest (KiB/s):" in headers
    assert "Benchmark results for 'sm3' digest (KiB/s):" in headers  # named: shown as skipped
    r.stdout.fnmatch_lines(["  - pycryptodome (all sizes) skipped: *sm3*"])
    r = pytester.runpytest("--qcrypto-digest", "all", "--qcrypto-plugin", "pycryptodome",
                           "--qcrypto-size", "64", *FAST)
    assert r.ret == 0
    assert "Benchmark results for 'sha256' digest (KiB/s):" in r.outlines
    assert "Benchmark results for 'sm3' digest (KiB/s):" not in r.outlines  # not supported


def test_report_html_plot_carries_the_tables_and_legend(pytester):
    saved(pytester, "a.json")
    saved(pytester, "b.json", {"cores": 99})
    r = qcrypto(pytester, "report", "a.json", "b.json", "--qcrypto-plot", "report.html")
    assert r.ret == 0, r.stderr.str()
    page = (pytester.path / "report.html").read_text()
    assert "Benchmark results for &#x27;sha256&#x27; digest (KiB/s):" in page
    assert "differences:" in page and "b=99" in page


def test_passthrough_values_are_joined_so_a_baseline_elsewhere_keeps_the_ini():
    from pytest_qcrypto.commands.qcrypto import joined

    assert joined(["--qcrypto-compare", "/tmp/base.json", "--qcrypto-decrypt",
                   "--qcrypto-threshold", "-5", "--qcrypto-size=16"]) == [
        "--qcrypto-compare=/tmp/base.json", "--qcrypto-decrypt", "--qcrypto-threshold=-5",
        "--qcrypto-size=16"]


def test_report_verbose_shows_each_cells_operations_and_seconds(tmp_path, capsys):
    from pytest_qcrypto.results import store as results
    from pytest_qcrypto.results.store import Result, ResultsFile

    measured = Result("sha256", "openssl", 16, "digest", 16 * 65536 / 0.125, 65536,
                      (0.125, 0.13, 0.12))
    typed_in = Result("sha256", "openssl", 64, "digest", 1024 * 1000.0)  # schema 1: a figure only
    results.save(tmp_path / "a.json", ResultsFile([measured, typed_in]))
    assert cli.main(["report", "-v", str(tmp_path / "a.json")]) == 0
    assert capsys.readouterr().out.splitlines()[:6] == [
        "Benchmarking 'sha256' digest on the following plugin(s): a/openssl",
        "plugin: a/openssl",
        "executed 65536 digests of size 16 bytes in 0.12 secs",  # the median round, 0.125 s
        "",
        "Benchmark results for 'sha256' digest (KiB/s):",
        "plugin           16       64",
    ]


def test_report_says_where_the_plot_went_on_stderr(tmp_path, capsys):
    from pytest_qcrypto.results import store as results
    from pytest_qcrypto.results.store import Result, ResultsFile

    results.save(tmp_path / "a.json", ResultsFile([
        Result("sha256", "openssl", 16, "digest", 16 * 1000 / 0.1, 1000, (0.1,))]))
    where = tmp_path / "r.svg"
    assert cli.main(["report", str(tmp_path / "a.json"), f"--qcrypto-plot={where}"]) == 0
    out, err = capsys.readouterr()
    assert err == f"qcrypto: plot written to {where}\n"
    assert "plot" not in out and where.read_text().startswith("<?xml")


def test_options_without_effect_on_a_signature_run_name_its_kind(pytester):
    """Issue 24: --qcrypto-size said nothing with only signatures, --qcrypto-decrypt's note
    said "digests have no decrypt direction", --qcrypto-unit=ns/op was ignored in silence."""
    r = pytester.runpytest("--qcrypto-pkey", "ed25519", "--qcrypto-plugin", "openssl",
                           "--qcrypto-size", "16", "--qcrypto-decrypt", "--qcrypto-unit", "ns/op",
                           *FAST)
    r.assert_outcomes(passed=3)  # sign, verify and keygen (openssl generates signature keys)
    notes = [line for line in r.outlines if "had no effect" in line]
    assert notes == [
        "qcrypto: --qcrypto-decrypt had no effect: signatures have no decrypt direction (it "
        "times ciphers and AEADs decrypting)",
        "qcrypto: --qcrypto-size had no effect: signatures have no buffer size (one cell per "
        "operation)",
        "qcrypto: --qcrypto-unit=ns/op had no effect on the tables of signatures: they are in "
        "operations per second (ops/s)"]


def test_a_size_beside_a_digest_has_effect_and_a_unit_reaches_the_kdf_note(pytester):
    r = pytester.runpytest("--qcrypto-digest", "sha256", "--qcrypto-kdf", "pbkdf2-sha256-i1000",
                           "--qcrypto-plugin", "openssl", "--qcrypto-size", "16",
                           "--qcrypto-unit", "MB/s", *FAST)
    r.assert_outcomes(passed=2)
    assert [line for line in r.outlines if "had no effect" in line] == [
        "qcrypto: --qcrypto-unit=MB/s had no effect on the tables of KDFs: they are in "
        "operations per second (ops/s)"]


def test_decrypt_with_only_digests_says_it_had_no_effect(pytester):
    r = pytester.runpytest("--qcrypto-digest", "sha256", "--qcrypto-plugin", "hashlib",
                           "--qcrypto-size", "16", "--qcrypto-decrypt", *FAST)
    r.assert_outcomes(passed=1)
    assert ("qcrypto: --qcrypto-decrypt had no effect: digests have no decrypt direction (it "
            "times ciphers and AEADs decrypting)") in r.outlines
    r = pytester.runpytest("--qcrypto-digest", "sha256", "--qcrypto-cipher", "aes-128-cbc",
                           "--qcrypto-plugin", "openssl", "--qcrypto-size", "16",
                           "--qcrypto-decrypt", *FAST)
    r.assert_outcomes(passed=2)
    assert "had no effect" not in r.stdout.str()


def test_report_of_a_file_without_results_is_a_usage_error(tmp_path, capsys):
    from pytest_qcrypto.results import store as results
    from pytest_qcrypto.results.store import ResultsFile

    results.save(tmp_path / "none.json", ResultsFile([]))
    assert cli.main(["report", str(tmp_path / "none.json")]) == 4
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (f"ERROR: qcrypto report: {tmp_path / 'none.json'}: no results (the run that "
                   "wrote it measured nothing); leave it out or save a run that did\n")



@pytest.mark.parametrize("command, where", [
    (["report", "r.json"], "pytest_qcrypto.commands.qcrypto.report"),
    (["compare", "a.json", "b.json"], "pytest_qcrypto.commands.compare.run"),
    (["history", "runs"], "pytest_qcrypto.commands.history.run")])
def test_ctrl_c_in_report_compare_and_history_ends_with_one_line(monkeypatch, capsys, command,
                                                                  where):
    """Issue 24: Ctrl-C in qcrypto report or compare printed a raw traceback."""
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(where, interrupted)
    try:
        code = cli.main(command)
    except KeyboardInterrupt:  # (the old code: it would stop this test run too)
        pytest.fail("KeyboardInterrupt escaped qcrypto's main(): a traceback for the user")
    assert code == pytest.ExitCode.INTERRUPTED
    assert capsys.readouterr().err == f"\nqcrypto {command[0]}: interrupted\n"
