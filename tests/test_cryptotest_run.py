"""The ``cryptotest`` command end to end: its runs of the engine, their output and exit codes."""

import json
import os
import re
import sys

import pytest

from pytest_qcrypto.commands import cryptotest
from pytest_qcrypto.algorithms import cryptotest_names
from pytest_qcrypto.output.cryptotest_layout import CRYPTOTEST_LINE

#: cryptotest's printf "%8.3f sec, %7d %6s crypts, %7d bytes, %8.0f byte/sec, %7.1f Mb/sec".
LINE = re.compile(r" *(\d+\.\d{3}) sec, +(\d+) +(\S+) crypts, +(\d+) bytes, +(\d+) byte/sec, "
                  r"+(\d+\.\d) Mb/sec")
#: Generous for a loaded 2-core machine.
TIMEOUT = 600


def cryptotest_cmd(pytester, *args):
    """Run the command in a fresh process, as the console script does."""
    return pytester.run(sys.executable, "-m", "pytest_qcrypto.commands.cryptotest", *args,
                        timeout=TIMEOUT)


def fields(line):
    line = line.split("  ? outlier: ")[0]  # a round disturbed on a loaded machine, marked
    match = LINE.fullmatch(line)
    assert match, f"not cryptotest's line: {line!r}"
    sec, ops, name, size, rate, mb = match.groups()
    # the widths of the printf: the figures as printed, printed again, give the same line
    assert line == CRYPTOTEST_LINE % (float(sec), int(ops), name, int(size), float(rate),
                                      float(mb))
    # Mb/sec is byte/sec x 8 / 1024 / 1024, to the printed decimal
    assert abs(float(mb) - int(rate) * 8 / 1024 / 1024) <= 0.05 + 1e-9
    return float(sec), int(ops), name, int(size)


def test_z_on_openssl_prints_one_line_per_algorithm_and_size(pytester):
    r = cryptotest_cmd(pytester, "-P", "openssl", "-z", "1024")
    assert r.ret == 0, r.stderr.str()
    got = [fields(line)[1:] for line in r.outlines]
    doubling = cryptotest_names.sizes_of(8, True)
    # openssl (pyca) has no single DES: cryptotest skips what the device lacks; skj: no one has it
    expected = ([(2048, n, s) for n in ("3des", "blf", "cast") for s in doubling]
                + [(2048, n, s) for n in ("aes", "aes192", "aes256") for s in doubling[1:]]
                + [(1024, n, s) for n in ("md5", "sha1", "sha256", "sha384", "sha512")
                   for s in doubling])
    assert got == expected


def test_one_algorithm_one_size_one_line_of_2048_crypts(pytester):
    r = cryptotest_cmd(pytester, "-P", "openssl", "-a", "aes", "1024", "16384")
    assert r.ret == 0, r.stderr.str()
    (line,) = r.outlines
    sec, ops, name, size = fields(line)
    assert (ops, name, size) == (2048, "aes", 16384)
    assert sec > 0


@pytest.mark.skipif(os.path.exists("/dev/crypto"), reason="this machine has /dev/crypto")
def test_alone_without_dev_crypto_is_exit_1_and_one_line(pytester):
    r = cryptotest_cmd(pytester)
    assert r.ret == 1
    assert r.outlines == []
    assert r.errlines == [
        "cryptotest: /dev/crypto is missing: load it with 'modprobe cryptodev' (cryptodev-linux "
        "installed; FreeBSD: 'kldload cryptodev'), or run the same test elsewhere with "
        "-P afalg or -P openssl"]


def test_unknown_algorithm_is_exit_4_naming_the_valid_ones(pytester):
    r = cryptotest_cmd(pytester, "-a", "nosuch")
    assert r.ret == 4
    assert r.outlines == []
    assert r.errlines == [
        "cryptotest: -a: unknown algorithm 'nosuch'. Valid algorithms: des, 3des, blf, cast, "
        "aes (rijndael), aes192, aes256, md5, sha1, sha256, sha384, sha512, or a catalog name "
        "(qcrypto list)"]


def test_verbose_says_device_count_size_iv_and_skipped_sizes(pytester):
    r = cryptotest_cmd(pytester, "-v", "-P", "pycryptodome", "-a", "aes", "3", "8", "32")
    assert r.ret == 0, r.stderr.str()
    out = r.outlines
    assert out[:3] == ["skipping blocksize 8 'cuz not a multiple of aes blocksize 16",
                       "device = pycryptodome", "count = 3, size = 32"]
    assert out[3] == "iv:" and re.fullmatch(r"0000:( [0-9a-f]{2}){16}", out[4])
    assert fields(out[5])[1:] == (6, "aes", 32)
    assert out[6].startswith("note: a round of ")  # 6 crypts: under the 1 ms a clock can time
    assert len(out) == 7


def test_check_and_several_processes(pytester):
    r = cryptotest_cmd(pytester, "-c", "-t", "2", "-P", "pycryptodome", "-a", "blf", "100",
                       "64")
    assert r.ret == 0, r.stderr.str()
    total, freebsd = r.outlines
    assert fields(total)[1:] == (400, "blf", 64)  # 2 processes x 100 x (encrypt + decrypt)
    line, _, said = freebsd.partition("  (")
    assert fields(line)[1:] == (400, "blf", 64)
    assert said == "FreeBSD's -t 2 arithmetic: the processes' times summed)"


def test_pytest_format_cryptotest_and_the_report_of_its_saved_results(pytester):
    r = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--qcrypto-bare", "--qcrypto-format", "cryptotest",
        "--qcrypto-cipher", "des-ede3-cbc", "--qcrypto-mac", "hmac-sha256",
        "--qcrypto-plugin", "pycryptodome", "--qcrypto-size", "8,64", "--qcrypto-roundtrip",
        "--qcrypto-count", "16", "--qcrypto-rounds", "1", "--qcrypto-save", "run.json",
        timeout=TIMEOUT)
    assert r.ret == 0, r.stderr.str()
    assert [fields(line)[1:] for line in r.outlines] == [
        (32, "3des", 8), (32, "3des", 64), (16, "sha256", 8), (16, "sha256", 64)]
    saved = json.loads((pytester.path / "run.json").read_text())
    assert {x["direction"] for x in saved["results"]} == {"roundtrip", "mac"}
    report = pytester.run(sys.executable, "-m", "pytest_qcrypto.commands.qcrypto", "report", "run.json",
                          "--qcrypto-format", "cryptotest", timeout=TIMEOUT)
    assert report.ret == 0, report.stderr.str()
    assert report.outlines[:4] == r.outlines  # the saved figures give the same lines


class _Passed:
    """A pytest report of a measured item, as Outcomes sees it."""

    when, passed, skipped = "call", True, False


def test_one_run_for_every_algorithm_its_exit_code_and_the_lines_before_it(monkeypatch, capsys):
    """-z is one pytest run, every algorithm in cryptotest's order at every size any of them
    takes (AES skips 8 inside the run, so one --qcrypto-save file holds every line); with -v
    the lines the run cannot say come first; its exit code is the command's, and a run that
    measured nothing is 1 (issue 13: -z saved only its last group of algorithms)."""
    calls = []

    def fake_main(args, plugins=()):
        calls.append([a for a in args if a.startswith(("--qcrypto-cipher", "--qcrypto-mac",
                                                       "--qcrypto-size", "--qcrypto-skip"))])
        print(f"run {len(calls)}")
        for outcome in outcomes.pop(0):
            plugins[0].pytest_runtest_logreport(outcome)
        return codes.pop(0)

    monkeypatch.setattr(cryptotest.pytest, "main", fake_main)
    plan = cryptotest.parse(["-v", "-z", "-P", "openssl", "1", "8", *["16"] * 127, "24",
                             "32"])
    codes, outcomes = [1], [[_Passed()]]
    assert cryptotest.run(plan) == 1
    assert capsys.readouterr().out.splitlines() == [
        "Too many sizes, ignoring 24", "Too many sizes, ignoring 32",
        "cipher skj keylen 10: not measured here (the catalog of pytest-qcrypto has no skipjack)",
        "run 1"]
    assert calls == [[
        "--qcrypto-size=8,16",
        *(f"--qcrypto-cipher={c}" for c in ("des-cbc", "des-ede3-cbc", "bf-cbc", "cast5-cbc",
                                            "aes-128-cbc", "aes-192-cbc", "aes-256-cbc")),
        *(f"--qcrypto-mac=hmac-{d}" for d in ("md5", "sha1", "sha256", "sha384", "sha512")),
        "--qcrypto-skip-unsuited-sizes"]]
    # a run whose every item skipped measured nothing: exit 1, and why on standard error
    calls.clear()
    codes, outcomes = [0], [[]]
    assert cryptotest.run(cryptotest.parse(["-P", "openssl", "-a", "aes", "1", "16"])) == 1
    assert capsys.readouterr().err == "cryptotest: nothing was measured: no test ran\n"
    assert calls == [["--qcrypto-size=16", "--qcrypto-cipher=aes-128-cbc"]]
    # no size suits the one algorithm named: a bad command line, before any run
    calls.clear()
    assert cryptotest.run(cryptotest.parse(["-a", "aes", "1", "8"])) == 4 and not calls
    assert capsys.readouterr().err == ("cryptotest: no size given suits the algorithm: "
                                       "skipping blocksize 8 'cuz not a multiple of aes "
                                       "blocksize 16\n")


def test_z_saves_every_line_in_one_complete_file_and_the_report_gives_them_back(pytester):
    """Found by a user trial: -z ran one pytest run per group of sizes, each saving over the
    last, so the file kept only the HMACs and still said complete."""
    r = cryptotest_cmd(pytester, "-P", "openssl", "-z", "--qcrypto-save=z.json", "16")
    assert r.ret == 0, r.stderr.str()
    lines = r.outlines
    saved = json.loads((pytester.path / "z.json").read_text())
    assert saved["complete"] is True
    assert len(saved["results"]) == len(lines) == 11 * 3 + 10 * 3 + 11 * 5
    assert {x["direction"] for x in saved["results"]} == {"roundtrip", "mac"}
    trip = next(x for x in saved["results"] if x["direction"] == "roundtrip")
    assert trip["operation"].startswith("one encryption then one decryption of one buffer")
    report = pytester.run(sys.executable, "-m", "pytest_qcrypto.commands.qcrypto", "report",
                          "--qcrypto-format", "cryptotest", "z.json", timeout=TIMEOUT)
    assert report.ret == 0, report.stderr.str()
    assert report.outlines[:len(lines)] == lines


def test_the_report_of_a_t_2_file_gives_freebsds_line_too(pytester):
    r = cryptotest_cmd(pytester, "-t", "2", "-P", "pycryptodome", "-a", "blf",
                       "--qcrypto-save=t2.json", "100", "64")
    assert r.ret == 0, r.stderr.str()
    report = pytester.run(sys.executable, "-m", "pytest_qcrypto.commands.qcrypto", "report",
                          "--qcrypto-format", "cryptotest", "t2.json", timeout=TIMEOUT)
    assert report.outlines[:2] == r.outlines
    assert report.outlines[1].endswith("(FreeBSD's -t 2 arithmetic: the processes' times summed)")


def test_several_plugins_are_named_before_their_lines(pytester):
    r = cryptotest_cmd(pytester, "-P", "openssl", "-P", "pycryptodome", "-a", "aes", "10", "64")
    assert r.ret == 0, r.stderr.str()
    assert [line if line.startswith("plugin: ") else fields(line)[1:] for line in r.outlines] == [
        "plugin: openssl", (20, "aes", 64), "plugin: pycryptodome", (20, "aes", 64)]


def test_nothing_measured_is_exit_1_saying_why(pytester):
    r = cryptotest_cmd(pytester, "-P", "openssl", "-a", "des", "10")
    assert r.ret == 1 and r.outlines == []
    assert r.errlines[-1] == "cryptotest: nothing was measured: openssl does not support des-cbc"
