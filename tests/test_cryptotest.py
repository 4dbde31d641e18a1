"""The ``cryptotest`` command's parts without running pytest: FreeBSD cryptotest's line and
layout, its name table and size rules, the command-line parser and its translation."""

import importlib.metadata

import pytest

from pytest_qcrypto.commands import cryptotest
from pytest_qcrypto.algorithms import cryptotest_names
from pytest_qcrypto.output import render
from pytest_qcrypto.backends.base import Unavailable
from pytest_qcrypto.backends.devcrypto import DevcryptoPlugin
from pytest_qcrypto.commands.cryptotest import Group, Plan, UsageError
from pytest_qcrypto.measure.harness import Measurement, WorkerRecord
from pytest_qcrypto.output.cryptotest_layout import (cryptotest_lines, crypt_line, freebsd_jobs_line,
                                    hexdump)
from pytest_qcrypto.measure.registry import Registry
from pytest_qcrypto.output.tables import FAILED, SKIPPED, Cell, Table

#: The two sample lines of the issue (FreeBSD cryptotest output).
DES_SAMPLE = "   0.129 sec,    2048    des crypts,       8 bytes,   127120 byte/sec,     1.0 Mb/sec"
TDES_SAMPLE = ("   0.687 sec,    2048   3des crypts,    8192 bytes, 24426602 byte/sec,   "
               "186.4 Mb/sec")


# -- the line ------------------------------------------------------------------------------------

def test_the_line_of_the_des_sample():
    # 2048 crypts of 8 bytes at 127120 byte/sec took 16384 / 127120 s (0.129 printed)
    assert crypt_line(16384 / 127120, 2048, "des", 8) == DES_SAMPLE


def test_the_line_of_the_3des_sample():
    assert crypt_line(2048 * 8192 / 24426602, 2048, "3des", 8192) == TDES_SAMPLE


def test_mb_per_sec_is_2_to_the_20_bits():
    # 1 MiB/s = 1048576 byte/sec = 8.0 Mb/sec in cryptotest's unit; 1000000 byte/sec is 7.6
    assert crypt_line(1.0, 1024, "aes", 1024).endswith(" 1048576 byte/sec,     8.0 Mb/sec")
    assert crypt_line(1.0, 1000, "aes", 1000).endswith(" 1000000 byte/sec,     7.6 Mb/sec")


def m(alg="des-cbc", size=8, direction="roundtrip", count=1024, seconds=16384 / 127120,
      plugin="devcrypto", **kw):
    return Measurement(alg, plugin, size, direction, count, (seconds,), **kw)


def table(alg, cells, plugins=("devcrypto",), direction="roundtrip", kind="cipher"):
    sizes = tuple(sorted({s for _, s in cells}))
    return Table(alg, kind, direction, plugins, sizes, cells)


def test_a_round_trip_counts_two_crypts_a_mac_one():
    des = table("des-cbc", {("devcrypto", 8): Cell(m())})
    mac = table("hmac-sha256", {("devcrypto", 64): Cell(m("hmac-sha256", 64, "mac", 1000,
                                                           0.5))}, direction="mac", kind="MAC")
    assert cryptotest_lines([mac, des]) == [
        DES_SAMPLE,  # cryptotest's order: des before the HMACs, whatever the tables' order
        "   0.500 sec,    1000 sha256 crypts,      64 bytes,   128000 byte/sec,     1.0 Mb/sec"]


def test_order_is_cryptotests_then_plugins_then_sizes_others_after():
    cells = {(p, s): Cell(m("aes-128-cbc", s, count=1, seconds=0.001, plugin=p))
             for p in ("devcrypto", "afalg") for s in (16, 32)}
    aes = table("aes-128-cbc", cells, plugins=("devcrypto", "afalg"))
    gcm = table("aes-128-gcm", {("devcrypto", 16): Cell(m("aes-128-gcm", 16, count=1,
                                                          seconds=0.001))})
    tdes = table("des-ede3-cbc", {("devcrypto", 8): Cell(m("des-ede3-cbc", 8, count=1,
                                                           seconds=0.001))})
    lines = cryptotest_lines([gcm, aes, tdes])
    # a table of several plugins names each before its lines (cryptotest's line cannot)
    assert [line for line in lines if line.startswith("plugin: ")] == [
        "plugin: devcrypto", "plugin: afalg"]
    assert [(line.split()[3], line.split()[5]) for line in lines
            if not line.startswith("plugin: ")] == [
        ("3des", "8"), ("aes", "16"), ("aes", "32"), ("aes", "16"), ("aes", "32"),
        ("aes-128-gcm", "16")]


def test_skipped_cells_are_left_out_and_said_with_v_failed_ones_always_said():
    cells = {("devcrypto", 8): Cell(m()),
             ("devcrypto", 16): Cell(None, SKIPPED, "devcrypto has no des-cbc here"),
             ("devcrypto", 32): Cell(None, FAILED, "decrypt mismatch")}
    t = table("des-cbc", cells)
    assert cryptotest_lines([t]) == [DES_SAMPLE,
                                     "des 32 bytes in devcrypto failed: decrypt mismatch"]
    verbose = cryptotest_lines([t], verbose=True)
    assert verbose == ["device = devcrypto", "count = 1024, size = 8", DES_SAMPLE,
                       "skipping des in devcrypto (size 16): devcrypto has no des-cbc here",
                       "des 32 bytes in devcrypto failed: decrypt mismatch"]
    none = table("des-cbc", {("openssl", s): Cell(None, SKIPPED, "openssl does not support "
                                                  "des-cbc") for s in (8, 16)},
                 plugins=("openssl",))
    assert cryptotest_lines([none]) == []
    assert cryptotest_lines([none], verbose=True) == [
        "skipping des in openssl (all sizes): openssl does not support des-cbc"]


def test_figures_without_counts_have_no_line_and_a_stopped_clock_no_crash():
    old = table("des-cbc", {("devcrypto", 8): Cell(m(figure_only=True)),
                            ("devcrypto", 16): Cell(m(size=16))})
    assert cryptotest_lines([old]) == [crypt_line(16384 / 127120, 2048, "des", 16)]
    assert cryptotest_lines([old], verbose=True)[0] == (
        "skipping des in devcrypto (size 8): saved as a figure only (schema 1 results): no "
        "count or seconds to print")
    assert crypt_line(0.0, 2, "aes", 16) == (
        "   0.000 sec,       2    aes crypts,      16 bytes,      inf byte/sec,     inf Mb/sec")


def test_verbose_facts_before_each_line_never_the_key():
    iv = bytes(range(20)).hex()
    t = table("des-cbc", {("devcrypto", 8): Cell(m(driver="cbc(des-generic)", iv=iv))})
    assert cryptotest_lines([t], verbose=True) == [
        "device = cbc(des-generic)", "count = 1024, size = 8",
        "iv:", "0000: 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f", "0010: 10 11 12 13",
        DES_SAMPLE]
    # without a driver the plugin is the device
    plain = table("des-cbc", {("devcrypto", 8): Cell(m(plugin="pycryptodome"))})
    assert cryptotest_lines([plain], verbose=True)[0] == "device = pycryptodome"


def test_hexdump_is_cryptotests():
    assert hexdump(bytes(range(17))) == [
        "0000: 00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f", "0010: 10"]
    assert hexdump(b"") == []


def test_several_processes_print_the_real_total_and_freebsds_summed_arithmetic():
    # two workers of 512 round trips of 1024 bytes: 0.100 s and 0.120 s, common window 0.125 s
    workers = (WorkerRecord(512, (0.100,), (0.1,), (10240.0,)),
               WorkerRecord(512, (0.120,), (0.1,), (8533.3,)))
    both = m("aes-128-cbc", 1024, count=1024, seconds=0.125, jobs=2, workers=workers)
    t = table("aes-128-cbc", {("devcrypto", 1024): Cell(both)})
    assert cryptotest_lines([t]) == [
        # the real total: 2048 crypts x 1024 bytes in the 0.125 s window
        "   0.125 sec,    2048    aes crypts,    1024 bytes, 16777216 byte/sec,   128.0 Mb/sec",
        # FreeBSD: 0.100 + 0.120 s summed, 2 x 512 x 2 crypts: a per-process average
        "   0.220 sec,    2048    aes crypts,    1024 bytes,  9532509 byte/sec,    72.7 Mb/sec"
        "  (FreeBSD's -t 2 arithmetic: the processes' times summed)"]
    assert freebsd_jobs_line(m(), "des") is None


def test_the_layout_is_a_format_with_its_unit_fixed():
    assert "cryptotest" in render.FORMATS
    with pytest.raises(render.SettingsError, match="whose unit is fixed: cryptotest's lines"):
        render.parse_output("KiB/s", "cryptotest")
    t = table("des-cbc", {("devcrypto", 8): Cell(m())})
    assert render.format_lines([t], "cryptotest") == [DES_SAMPLE]


# -- the name table and size rules -------------------------------------------------------------

def test_names_map_to_the_catalog_in_cryptotests_order():
    assert [(n.name, n.algorithm, n.block_size) for n in cryptotest_names.NAMES] == [
        ("des", "des-cbc", 8), ("3des", "des-ede3-cbc", 8), ("blf", "bf-cbc", 8),
        ("cast", "cast5-cbc", 8), ("skj", "", 8), ("aes", "aes-128-cbc", 16),
        ("aes192", "aes-192-cbc", 16), ("aes256", "aes-256-cbc", 16), ("md5", "hmac-md5", 8),
        ("sha1", "hmac-sha1", 8), ("sha256", "hmac-sha256", 8), ("sha384", "hmac-sha384", 8),
        ("sha512", "hmac-sha512", 8)]
    for n in cryptotest_names.NAMES:  # every catalog name is real
        assert n.algorithm == "" or n.entry.name == n.algorithm


def test_lookup_takes_cryptotests_names_any_case_rijndael_and_catalog_names():
    assert cryptotest_names.lookup("RIJNDAEL").algorithm == "aes-128-cbc"
    assert cryptotest_names.lookup("Sha256").algorithm == "hmac-sha256"  # cryptotest's: HMAC
    assert cryptotest_names.lookup("des-ede3-cbc").name == "3des"
    gcm = cryptotest_names.lookup("aes-128-gcm")
    assert (gcm.name, gcm.algorithm, gcm.block_size) == ("aes-128-gcm", "aes-128-gcm", 1)
    assert cryptotest_names.lookup("sha224").algorithm == "sha224"  # a catalog digest
    assert cryptotest_names.lookup("nosuch") is None
    assert cryptotest_names.display_name("bf-cbc") == "blf"
    assert cryptotest_names.display_name("chacha20") == "chacha20"


def test_sizes_double_to_8192_with_z():
    assert cryptotest_names.sizes_of(8, False) == (8,)
    assert cryptotest_names.sizes_of(8, True) == (8, 16, 32, 64, 128, 256, 512, 1024, 2048,
                                                  4096, 8192)
    assert cryptotest_names.sizes_of(16, True)[0] == 16
    aes = cryptotest_names.lookup("aes")
    assert cryptotest_names.size_problem(aes, 8) == (
        "skipping blocksize 8 'cuz not a multiple of aes blocksize 16")
    assert cryptotest_names.size_problem(aes, 32) is None
    assert cryptotest_names.size_problem(cryptotest_names.lookup("md5"), 12) == (
        "skipping blocksize 12 'cuz not a multiple of md5 blocksize 8")
    assert "at least 16 bytes" in cryptotest_names.size_problem(
        cryptotest_names.lookup("aes-128-xts"), 8)


# -- the parser ---------------------------------------------------------------------------------

def test_defaults_are_cryptotests():
    plan = cryptotest.parse([])
    assert [n.name for n in plan.names] == ["3des"]
    assert (plan.count, plan.sizes_for(), plan.plugins, plan.jobs, plan.verbose, plan.check,
            plan.device) == (1, (8,), ("devcrypto",), 1, False, False, None)


def test_every_flag():
    plan = cryptotest.parse(["-czsv", "-d", "soft", "-a", "aes", "-t", "2", "-P", "afalg",
                             "-P", "openssl", "--qcrypto-save=x.json", "1000", "64", "16"])
    assert [n.name for n in plan.names] == ["aes"]
    assert (plan.count, plan.sizes_for(), plan.z, plan.check, plan.verbose, plan.jobs,
            plan.device, plan.plugins, plan.passthrough) == (
        1000, (64, 16), True, True, True, 2, "soft", ("afalg", "openssl"),
        ("--qcrypto-save=x.json",))
    # -a's block size starts -z; -z alone starts at 8 for every algorithm
    assert cryptotest.parse(["-z", "-a", "aes256"]).sizes_for()[0] == 16
    z = cryptotest.parse(["-z"])
    assert [n.name for n in z.names] == [n.name for n in cryptotest_names.NAMES]
    assert z.sizes_for()[0] == 8


def test_too_many_sizes_are_ignored_one_by_one():
    plan = cryptotest.parse(["1", *map(str, range(8, 8 * 131, 8))])
    assert len(plan.sizes) == 128 and plan.ignored == (8 * 129, 8 * 130)


@pytest.mark.parametrize("args, message", [
    (["-a", "nosuch"], "cryptotest: -a: unknown algorithm 'nosuch'. Valid algorithms: des, "
                       "3des, blf, cast, aes (rijndael), aes192, aes256, md5, sha1, sha256, "
                       "sha384, sha512, or a catalog name (qcrypto list)"),
    (["-a", "ae"], "did you mean aes"),
    (["-a", "skj"], "cryptotest: -a skj: skipjack is not in the catalog of pytest-qcrypto"),
    (["-b"], "cryptotest: -b (COP_F_BATCH) is refused: the crypto plugins here have no "
             "batching"),
    (["-p"], "cryptotest: -p is refused: it reads FreeBSD's kernel crypto profiling sysctls"),
    (["-x"], "cryptotest: option -x not recognized\nusage: cryptotest [-czsbvp]"),
    (["-a"], "cryptotest: option -a requires argument"),
    (["0"], "cryptotest: count: must be from 1 to 1099511627776, not 0"),
    (["many"], "cryptotest: count: 'many' is not a whole number"),
    (["1", "16", "0"], "cryptotest: size 0: must be from 1 to 268435456, not 0"),
    (["1", "1k"], "cryptotest: size 1k: '1k' is not a whole number"),
    (["-t", "0"], "cryptotest: -t: '0' is not valid; give a whole number of worker processes"),
    (["-d", ""], "cryptotest: -d: give a driver name (or 'soft'), not ''"),
    (["-P"] * 11 * 2, "cryptotest: -P: at most 10 plugins, got 11"),
    # found by a user trial: options after the count, a value not joined, cryptotest's own
    (["-z", "1024", "-P", "openssl"], "cryptotest: option '-P' after the count and sizes: "
                                      "options come first, as FreeBSD's cryptotest reads them"),
    (["--qcrypto-save", "run.json", "10"], "cryptotest: --qcrypto-save 'run.json': join an "
                                           "option's value with '=': --qcrypto-save=run.json"),
    (["--qcrypto-count=5", "10"], "cryptotest: --qcrypto-count is set by the count argument"),
    (["--qcrypto-plugin=openssl"], "cryptotest: --qcrypto-plugin is set by -P"),
    (["--qcrypto-jobs", "2"], "cryptotest: --qcrypto-jobs is set by -t"),
])
def test_bad_command_lines_say_what_is_valid(args, message):
    with pytest.raises(UsageError) as info:
        cryptotest.parse(args)
    assert message in str(info.value)


def test_bad_command_line_is_exit_4_on_stderr(capsys):
    assert cryptotest.main(["-a", "nosuch"]) == 4
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("cryptotest: -a: unknown algorithm 'nosuch'")
    assert err.count("\n") == 1


def test_help_is_exit_0(capsys):
    assert cryptotest.main(["-h"]) == 0
    assert capsys.readouterr().out.startswith(cryptotest.USAGE)


def test_d_pins_only_kernel_drivers():
    registry = Registry([DevcryptoPlugin()])
    cryptotest.check_plugins(cryptotest.parse(["-d", "soft"]), registry)  # devcrypto: fine
    with pytest.raises(UsageError, match="-d soft: pins a kernel driver of devcrypto or "
                                         "afalg, not of -P openssl"):
        cryptotest.check_plugins(cryptotest.parse(["-d", "soft", "-P", "openssl"]))


def test_console_script_is_declared():
    (entry,) = importlib.metadata.entry_points(group="console_scripts", name="cryptotest")
    assert entry.value == "pytest_qcrypto.commands.cryptotest:main"


# -- /dev/crypto missing -------------------------------------------------------------------------

def test_missing_dev_crypto_is_one_line_and_exit_1(tmp_path, monkeypatch, capsys):
    missing = str(tmp_path / "crypto")
    monkeypatch.setattr(cryptotest, "_registry", lambda: Registry([DevcryptoPlugin(missing)]))
    assert cryptotest.main([]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (f"cryptotest: {missing} is missing: load it with 'modprobe cryptodev' "
                   "(cryptodev-linux installed; FreeBSD: 'kldload cryptodev'), or run the same "
                   "test elsewhere with -P afalg or -P openssl\n")


def test_another_unavailable_plugin_is_exit_1_with_its_reason():
    class Broken(DevcryptoPlugin):
        name, aliases = "broken", ()

        def probe(self):
            raise Unavailable("no such thing here")

    line = cryptotest.unavailable(cryptotest.parse(["-P", "broken"]), Registry([Broken()]))
    assert line == "cryptotest: -P broken: cannot run here: no such thing here"


# -- the translation ------------------------------------------------------------------------------

def test_z_runs_algorithms_in_order_grouped_by_their_sizes():
    gs = cryptotest.groups(cryptotest.parse(["-z", "-P", "openssl"]))
    assert [[n.name for n in g.names] for g in gs] == [
        ["des", "3des", "blf", "cast"], [], ["aes", "aes192", "aes256"],
        ["md5", "sha1", "sha256", "sha384", "sha512"]]
    assert gs[0].sizes == cryptotest_names.sizes_of(8, True)
    assert gs[1].skipped == ("cipher skj keylen 10: not measured here (the catalog of "
                             "pytest-qcrypto has no skipjack)",)
    assert gs[2].sizes == cryptotest_names.sizes_of(16, True)


def test_with_v_an_algorithm_that_skips_sizes_runs_alone_after_its_skip_lines():
    gs = cryptotest.groups(cryptotest.parse(["-zv"]))
    aes = [g for g in gs if g.names and g.names[0].name.startswith("aes")]
    assert [[n.name for n in g.names] for g in aes] == [["aes"], ["aes192"], ["aes256"]]
    assert aes[1].skipped == ("skipping blocksize 8 'cuz not a multiple of aes192 blocksize 16",)


def test_one_pytest_command_line_per_group():
    plan = cryptotest.parse(["-c", "-t", "2", "-d", "soft", "-P", "afalg", "-a", "aes",
                             "--qcrypto-save=x.json", "1024", "16384", "8"])
    (group,) = cryptotest.groups(plan)
    assert group == Group((cryptotest_names.lookup("aes"),), (16384,),
                          ("skipping blocksize 8 'cuz not a multiple of aes blocksize 16",))
    assert cryptotest.pytest_args(plan, group) == [
        "--qcrypto-bare", "--qcrypto-command=cryptotest", "-p", "no:cacheprovider",
        "--qcrypto-format=cryptotest",
        "--qcrypto-count=1024", "--qcrypto-rounds=1", "--qcrypto-size=16384", "-qq",
        "--qcrypto-cipher=aes-128-cbc", "--qcrypto-roundtrip", "--qcrypto-check-roundtrip",
        "--qcrypto-jobs=2", "--qcrypto-plugin=afalg:soft", "--qcrypto-save=x.json"]


def test_macs_take_no_round_trip_and_verbose_is_pytests():
    plan = cryptotest.parse(["-v", "-c", "-a", "sha1", "-P", "openssl", "10"])
    (group,) = cryptotest.groups(plan)
    assert cryptotest.pytest_args(plan, group) == [
        "--qcrypto-bare", "--qcrypto-command=cryptotest", "-p", "no:cacheprovider",
        "--qcrypto-format=cryptotest",
        "--qcrypto-count=10", "--qcrypto-rounds=1", "--qcrypto-size=8", "-v", "--no-header",
        "--qcrypto-mac=hmac-sha1", "--qcrypto-plugin=openssl"]


def test_a_plan_is_frozen():
    with pytest.raises(AttributeError):
        Plan(()).count = 2  # type: ignore[misc]
