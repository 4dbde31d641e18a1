"""The main job through pytest's command line: the speed matrix, its table and its ids."""

import re

import pytest

from conftest import FAST, TEST_PLUGINS

NUMBER = r"\d+\.\d\d\??"  # "?": an outlier (a disturbed round), said under the table


def table(outlines, header):
    """The lines of one results table: column line and rows, up to the first blank line."""
    start = outlines.index(header)
    rows = []
    for line in outlines[start + 1:]:
        if not line.strip() or line.startswith("=") or line.startswith("  "):
            break
        rows.append(line)
    return rows


def test_main_job_three_plugins_seven_sizes(pytester):
    r = pytester.runpytest("--qcrypto-digest", "sha256", "--qcrypto-plugin", "openssl",
                           "--qcrypto-plugin", "pycryptodome", "--qcrypto-plugin", "hashlib", *FAST)
    assert r.ret == 0
    rows = table(r.outlines, "Benchmark results for 'sha256' digest (KiB/s):")
    assert rows[0].split() == ["plugin", "16", "64", "256", "1024", "4096", "8192", "32768"]
    assert [row.split()[0] for row in rows[1:]] == ["openssl", "pycryptodome", "hashlib"]
    for row in rows[1:]:
        cells = row.split()[1:]
        assert len(cells) == 7 and all(re.fullmatch(NUMBER, c) for c in cells), row
    r.assert_outcomes(passed=21)


def test_verbose_block_layout(pytester):
    r = pytester.runpytest("--qcrypto-digest", "sha256", "--qcrypto-plugin", "openssl",
                           "--qcrypto-plugin", "pycryptodome", "--qcrypto-size", "16,64", "-v", *FAST)
    assert r.ret == 0
    out = r.outlines
    i = out.index("Benchmarking 'sha256' digest on the following plugin(s): openssl, pycryptodome")
    assert out[i + 1] == "plugin: openssl"
    assert re.fullmatch(r"executed \d+ digests of size 16 bytes in \d+\.\d\d secs", out[i + 2])
    assert re.fullmatch(r"executed \d+ digests of size 64 bytes in \d+\.\d\d secs", out[i + 3])
    assert out[i + 4] == "plugin: pycryptodome"
    assert "Benchmark results for 'sha256' digest (KiB/s):" in out[i + 7:]


def test_verbose_cell_is_count_times_size_over_seconds(pytester):
    r = pytester.runpytest("--qcrypto-digest", "sha256", "--qcrypto-plugin", "hashlib",
                           "--qcrypto-size", "4096", "-v", *FAST)
    line = next(x for x in r.outlines if x.startswith("executed "))
    count = int(line.split()[1])
    rows = table(r.outlines, "Benchmark results for 'sha256' digest (KiB/s):")
    kib = float(rows[1].split()[1])
    seconds = count * 4096 / 1024 / kib
    assert f"in {seconds:.2f} secs" in line


def test_two_cipher_tables(pytester):
    r = pytester.runpytest("--qcrypto-cipher", "aes-128-cbc,chacha20-poly1305",
                           "--qcrypto-plugin", "openssl", *FAST)
    assert r.ret == 0
    # an AEAD's table says AEAD, as qcrypto list groups it (issue 28)
    for alg, word in (("aes-128-cbc", "cipher"), ("chacha20-poly1305", "AEAD")):
        rows = table(r.outlines, f"Benchmark results for '{alg}' {word} (KiB/s):")
        assert len(rows) == 2 and len(rows[1].split()) == 8


def test_decrypt_table_header(pytester):
    r = pytester.runpytest("--qcrypto-cipher", "aes-256-gcm", "--qcrypto-plugin", "openssl",
                           "--qcrypto-decrypt", "--qcrypto-size", "64", *FAST)
    assert r.ret == 0
    assert "Benchmark results for 'aes-256-gcm' AEAD, decrypt (KiB/s):" in r.outlines


def test_node_ids_are_readable(pytester):
    r = pytester.runpytest("--qcrypto-digest", "sha256", "--qcrypto-plugin", "openssl-3",
                           "--qcrypto-size", "16,64", "--collect-only", "-q")
    assert r.outlines[:2] == ["qcrypto::sha256[openssl-3-16]", "qcrypto::sha256[openssl-3-64]"]


def test_k_selects_matrix_items(pytester):
    r = pytester.runpytest("--qcrypto-digest", "sha256,md5", "--qcrypto-plugin", "hashlib",
                           "--qcrypto-size", "16,64", "-k", "md5", *FAST)
    r.assert_outcomes(passed=2, deselected=2)


def test_typed_name_is_kept_in_rows(pytester):
    r = pytester.runpytest("--qcrypto-digest", "sha1", "--qcrypto-plugin", "openssl-3",
                           "--qcrypto-size", "16", *FAST)
    rows = table(r.outlines, "Benchmark results for 'sha1' digest (KiB/s):")
    assert rows[1].split()[0] == "openssl-3"


def test_default_plugin_is_openssl(pytester):
    r = pytester.runpytest("--qcrypto-digest", "sha256", "--qcrypto-size", "16", *FAST)
    rows = table(r.outlines, "Benchmark results for 'sha256' digest (KiB/s):")
    assert rows[1].split()[0] == "openssl"


def test_matrix_only_without_paths(pytester):
    pytester.makepyfile(test_other="def test_other():\n    assert False\n")
    r = pytester.runpytest("--qcrypto-digest", "md5", "--qcrypto-plugin", "hashlib",
                           "--qcrypto-size", "16", *FAST)
    r.assert_outcomes(passed=1)


def test_ini_testpaths_do_not_count_as_paths(pytester):
    pytester.makepyfile(test_other="def test_other():\n    assert False\n")
    pytester.makeini("[pytest]\ntestpaths = .\n")
    r = pytester.runpytest("--qcrypto-digest", "md5", "--qcrypto-plugin", "hashlib",
                           "--qcrypto-size", "16", *FAST)
    r.assert_outcomes(passed=1)


def test_explicit_paths_run_beside_the_matrix(pytester):
    p = pytester.makepyfile(test_other="def test_other():\n    pass\n")
    r = pytester.runpytest(str(p), "--qcrypto-digest", "md5", "--qcrypto-plugin", "hashlib",
                           "--qcrypto-size", "16", *FAST)
    r.assert_outcomes(passed=2)


def test_ini_keys_fill_in_but_never_start_the_matrix(pytester):
    pytester.makeini("[pytest]\nqcrypto_sizes = 16 64\nqcrypto_plugins = hashlib\n"
                     "qcrypto_min_time = 0.001\nqcrypto_rounds = 1\n")
    pytester.makepyfile(test_other="def test_other():\n    pass\n")
    r = pytester.runpytest()
    r.assert_outcomes(passed=1)
    assert "Benchmark results" not in r.stdout.str()
    r = pytester.runpytest("--qcrypto-digest", "md5")
    rows = table(r.outlines, "Benchmark results for 'md5' digest (KiB/s):")
    assert rows[0].split() == ["plugin", "16", "64"] and rows[1].split()[0] == "hashlib"


def test_unavailable_plugin_is_skipped_with_reason_others_run(pytester):
    pytester.makeconftest(TEST_PLUGINS)
    r = pytester.runpytest("--qcrypto-digest", "sha256", "--qcrypto-plugin", "missing",
                           "--qcrypto-plugin", "hashlib", "--qcrypto-size", "16,64", "-rs", *FAST)
    r.assert_outcomes(passed=2, skipped=2)
    r.stdout.fnmatch_lines(["*missing: unavailable: libmissing is not installed*"])
    rows = table(r.outlines, "Benchmark results for 'sha256' digest (KiB/s):")
    assert rows[1].split() == ["missing", "-", "-"]
    r.stdout.fnmatch_lines(["  - missing (all sizes) skipped: missing: unavailable: libmissing*"])


def test_plugin_without_the_algorithm_is_skipped(pytester):
    r = pytester.runpytest("--qcrypto-cipher", "aes-128-cbc", "--qcrypto-plugin", "hashlib",
                           "--qcrypto-plugin", "openssl", "--qcrypto-size", "16", "-rs", *FAST)
    r.assert_outcomes(passed=1, skipped=1)
    r.stdout.fnmatch_lines(["*hashlib does not support aes-128-cbc*"])


def test_wrong_answer_fails_the_item_and_is_never_timed(pytester):
    pytester.makeconftest(TEST_PLUGINS)
    r = pytester.runpytest("--qcrypto-digest", "sha256", "--qcrypto-plugin", "wrong",
                           "--qcrypto-size", "16", *FAST)
    r.assert_outcomes(failed=1)
    out = r.stdout.str()
    assert "wrong gave a wrong answer for sha256 digest on vector 'FIPS 180-4" in out
    assert "was timed" not in out and "Traceback" not in out
    rows = table(r.outlines, "Benchmark results for 'sha256' digest (KiB/s):")
    assert rows[1].split() == ["wrong", "x"]


def test_list_plugins(pytester):
    pytester.makeconftest(TEST_PLUGINS)
    r = pytester.runpytest("--qcrypto-list")
    assert r.ret == 0
    out = r.stdout.str()
    assert re.search(r"openssl \(aliases: openssl-3.*\): available", out)
    assert re.search(r"version: OpenSSL \d", out)
    assert "missing: unavailable: libmissing is not installed" in out
    assert "digests: md5, sha1" in out and "aeads: aes-128-gcm" in out


def test_no_crypto_library_imported_without_qcrypto_options(pytester):
    pytester.makepyfile(test_plain='''
import sys
def test_nothing_imported():
    loaded = [m for m in sys.modules if m.split(".")[0] in ("cryptography", "Crypto")
              or m.startswith("pytest_qcrypto.backends.") and m != "pytest_qcrypto.backends.base"]
    assert loaded == []
''')
    r = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    r.assert_outcomes(passed=1)


def test_counts_of_one_are_singular(pytester):
    cell = ("--qcrypto-digest", "md5", "--qcrypto-plugin", "hashlib", "--qcrypto-size", "16",
            *FAST)
    r = pytester.runpytest(*cell, "--qcrypto-save", "one.json")
    assert r.ret == 0
    r.stdout.fnmatch_lines(["qcrypto: 1 result saved to *one.json"])
    r = pytester.runpytest(*cell, "--qcrypto-compare", "one.json", "--qcrypto-confirm", "1",
                           "--qcrypto-threshold", "99")
    r.stdout.fnmatch_lines(["Regression gate: baseline *one.json (1 result, created *), "
                            "threshold 99% unless an ini line says otherwise, "
                            "1 confirmation try"])
    from pytest_qcrypto.algorithms import catalog

    assert catalog.lookup("md5").size_problem(0) == "md5 needs a buffer of at least 1 byte, not 0"
    assert catalog.plural(2, "confirmation try", "confirmation tries") == "2 confirmation tries"


def test_last_failed_and_failed_first_find_matrix_cells(pytester):
    from conftest import TEST_PLUGINS

    pytester.makeconftest(TEST_PLUGINS)
    args = ("--qcrypto-digest", "sha256", "--qcrypto-plugin", "hashlib", "--qcrypto-plugin",
            "wrong", "--qcrypto-size", "16,64", *FAST)
    r = pytester.runpytest(*args)
    r.assert_outcomes(passed=2, failed=2)
    r = pytester.runpytest(*args, "--lf", "-v")
    r.assert_outcomes(failed=2, deselected=2)
    r.stdout.fnmatch_lines(["run-last-failure: rerun previous 2 failures",
                            "qcrypto::sha256[[]wrong-16[]] FAILED*",
                            "qcrypto::sha256[[]wrong-64[]] FAILED*"])
    r = pytester.runpytest(*args, "--ff", "--co", "-q")
    assert r.outlines[:4] == ["qcrypto::sha256[wrong-16]", "qcrypto::sha256[wrong-64]",
                              "qcrypto::sha256[hashlib-16]", "qcrypto::sha256[hashlib-64]"]
