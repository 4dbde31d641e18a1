"""The size-less kinds (signatures, key agreement, KEMs, RSA encryption, KDFs) through the
engine: options, matrix cells per operation, the checks before timing, the ops/s tables in
every layout, saved results, the gate, floors, report and plots.  The figures come from a
fake clock (``clockplug``), the crypto from pyca/cryptography test doubles
(``doubleplug``, ``peerplug``); ``pkey_checks.check`` is replaced by a stand-in until the
plugins' own lands (:mod:`pkey_doubles`)."""

import json

import pytest

from pkey_doubles import CALLS, CLOCK_PLUGIN, PKEY_PLUGINS, double_check, no_check
from pytest_qcrypto.measure import pkey_bench
from pytest_qcrypto.gate import rules
from pytest_qcrypto.algorithms.settings import SettingsError


@pytest.fixture
def clock(pytester, monkeypatch):
    pytester.makeconftest(CLOCK_PLUGIN)
    monkeypatch.setattr(pkey_bench, "check", no_check)
    CALLS.clear()
    return pytester


@pytest.fixture
def doubles(pytester, monkeypatch):
    pytester.makeconftest(PKEY_PLUGINS)
    monkeypatch.setattr(pkey_bench, "check", double_check)
    CALLS.clear()
    return pytester


def _has(alg, plugin):
    """Whether the built-in ``plugin`` is available here and has ``alg``."""
    from pytest_qcrypto.measure.registry import _builtin_registry

    registry = _builtin_registry()
    p = registry.resolve(plugin).plugin
    return registry.unavailable(p) is None and alg in registry.supported(p)


def block(lines, first, n):
    """The ``n`` lines from the one that is ``first``."""
    i = lines.index(first)
    return lines[i:i + n]


# -- the command line --------------------------------------------------------------------------


def test_unknown_pkey_is_a_usage_error_naming_the_valid_choices(pytester):
    r = pytester.runpytest("--qcrypto-pkey", "ed2551")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    err = r.stderr.str()
    assert ("--qcrypto-pkey: unknown public-key algorithm 'ed2551'; did you mean ed25519, "
            "x25519, ecdh-p256? Valid public-key algorithms: rsa2048, rsa3072, rsa4096, "
            "rsa2048-pkcs1, ecdsa-p256, ecdsa-p384, ed25519, ed448, ml-dsa-44, ml-dsa-65, "
            "ml-dsa-87, x25519, x448, ecdh-p256, ml-kem-512, ml-kem-768, ml-kem-1024, rsa2048-oaep, or all")\
        in err, err
    assert "Traceback" not in err


def test_a_kdf_named_as_a_pkey_is_sent_to_its_option(pytester):
    r = pytester.runpytest("--qcrypto-pkey", "scrypt")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert ("--qcrypto-pkey: unknown public-key algorithm 'scrypt'; scrypt-n16384-r8-p1 is a "
            "KDF: use --qcrypto-kdf scrypt-n16384-r8-p1.") in r.stderr.str()


def test_an_invalid_kdf_parameter_is_a_usage_error_with_the_catalog_s_reason(pytester):
    r = pytester.runpytest("--qcrypto-kdf", "pbkdf2-sha256,scrypt-n1000")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert ("ERROR: --qcrypto-kdf: scrypt-n1000: scrypt's N must be a power of two (RFC 7914), "
            "not 1000") in r.stderr.str()


def test_matrix_cells_cross_algorithm_plugin_and_operation_without_sizes(clock):
    r = clock.runpytest("--qcrypto-pkey", "ed25519,ml-kem-768", "--qcrypto-kdf", "scrypt",
                        "--qcrypto-cipher", "aes-128-ctr",
                        "--qcrypto-plugin", "clockplug", "--qcrypto-size", "16,64",
                        "--collect-only", "-q")
    assert r.ret == 0, r.stderr.str()
    ids = [line for line in r.stdout.lines if line.startswith("qcrypto::")]
    assert ids == ["qcrypto::aes-128-ctr[clockplug-16]", "qcrypto::aes-128-ctr[clockplug-64]",
                   "qcrypto::ed25519[clockplug-sign]", "qcrypto::ed25519[clockplug-verify]",
                   "qcrypto::ml-kem-768[clockplug-keygen]", "qcrypto::ml-kem-768[clockplug-encaps]",
                   "qcrypto::ml-kem-768[clockplug-decaps]",
                   "qcrypto::scrypt-n16384-r8-p1[clockplug-derive]"]


# -- tables ------------------------------------------------------------------------------------


def test_qcrypto_tables_in_ops_per_second_with_verbose_lines(clock):
    r = clock.runpytest("--qcrypto-pkey", "ed25519,ml-kem-768", "--qcrypto-kdf", "scrypt",
                        "--qcrypto-plugin", "clockplug", "-v")
    assert r.ret == 0, r.stdout.str()
    lines = r.stdout.lines
    assert block(lines, "Benchmarking 'ed25519' signature on the following plugin(s): clockplug",
                 9) == [
        "Benchmarking 'ed25519' signature on the following plugin(s): clockplug",
        "plugin: clockplug",
        # 128 signs of 50 us (6.4 ms, over 1/16 of min-time) predict 2300 for 0.1 s x 1.15;
        # 64 verifies of 125 us (8 ms), 920
        "executed 2300 signs in 0.12 secs",
        "executed 920 verifies in 0.12 secs",
        "",
        "Benchmark results for 'ed25519' signature (ops/s):",
        "plugin          sign    verify",
        "clockplug   20000.00   8000.00",
        ""]
    assert block(lines, "Benchmark results for 'ml-kem-768' KEM (ops/s):", 3) == [
        "Benchmark results for 'ml-kem-768' KEM (ops/s):",
        "plugin        keygen    encaps    decaps",
        "clockplug   25000.00  40000.00  33333.33"]
    # a derivation slower than min-time: a count of 1, and the verbose line says so
    assert ("executed 1 derives in 0.25 secs (one operation per round: a single one already "
            "takes min-time)") in lines
    assert block(lines, "Benchmark results for 'scrypt-n16384-r8-p1' KDF (ops/s):", 4) == [
        "Benchmark results for 'scrypt-n16384-r8-p1' KDF (ops/s):",
        "parameters: N=16384, r=8, p=1",
        "plugin      derive",
        "clockplug     4.00"]
    # checked before each cell is timed (the built-in plugins that have them are its peers);
    # a KDF's cell is checked and timed in a child process, whose calls are not seen here
    assert [(typed, alg) for typed, alg, _ in CALLS] == [("clockplug", "ed25519")] * 2 + [
        ("clockplug", "ml-kem-768")] * 3


def test_openssl_layout_seconds_per_operation_then_operations_per_second(clock):
    r = clock.runpytest("--qcrypto-pkey", "ed25519,ml-kem-768", "--qcrypto-kdf", "scrypt",
                        "--qcrypto-plugin", "clockplug", "--qcrypto-format", "openssl",
                        "--qcrypto-digest", "sha256", "--qcrypto-size", "16")
    lines = r.stdout.lines
    start = lines.index("                                 sign    verify    sign/s  verify/s")
    assert lines[start:start + 6] == [
        "                                 sign    verify    sign/s  verify/s",
        "                    ed25519 0.000050s 0.000125s   20000.0    8000.0",
        "                               keygen    encaps    decaps keygens/s  encaps/s  decaps/s",
        "                 ml-kem-768 0.000040s 0.000025s 0.000030s   25000.0   40000.0   33333.3",
        "                               derive  derive/s",
        "        scrypt-n16384-r8-p1 0.250000s       4.0"]
    # the sized tables come first, in 1000s of bytes, as openssl speed prints them
    assert lines.index("The 'numbers' are in 1000s of bytes per second processed.") < start


def test_csv_and_markdown_say_ops_per_second(clock):
    r = clock.runpytest("--qcrypto-pkey", "ed25519", "--qcrypto-plugin", "clockplug",
                        "--qcrypto-format", "csv", "--qcrypto-unit", "MB/s")
    assert "ed25519,sign,clockplug,0,ops/s,20000.00,2300,0.115000000,ok,,1" in r.stdout.lines
    assert "ed25519,verify,clockplug,0,ops/s,8000.00,920,0.115000000,ok,,1" in r.stdout.lines
    r = clock.runpytest("--qcrypto-kdf", "scrypt", "--qcrypto-plugin", "clockplug",
                        "--qcrypto-format", "markdown")
    assert block(r.stdout.lines, "### Benchmark results for 'scrypt-n16384-r8-p1' KDF (ops/s)",
                 6) == ["### Benchmark results for 'scrypt-n16384-r8-p1' KDF (ops/s)", "",
                        "Parameters: N=16384, r=8, p=1", "", "| plugin | derive |",
                        "| :--- | ---: |"]
    assert "| clockplug | 4.00 |" in r.stdout.lines


def test_a_kdf_with_other_parameters_runs_where_its_family_is_supported(clock):
    # clockplug lists scrypt by its default entry (scrypt-n16384-r8-p1), as plugins do
    r = clock.runpytest("--qcrypto-kdf", "scrypt-n1024", "--qcrypto-plugin", "clockplug")
    assert r.ret == 0, r.stdout.str()
    assert block(r.stdout.lines, "Benchmark results for 'scrypt-n1024-r8-p1' KDF (ops/s):",
                 4) == ["Benchmark results for 'scrypt-n1024-r8-p1' KDF (ops/s):",
                        "parameters: N=1024, r=8, p=1", "plugin       derive",
                        "clockplug   1000.00"]


# -- correctness before timing -----------------------------------------------------------------


def test_checks_cross_the_chosen_plugins_and_the_reference_and_pass(doubles):
    r = doubles.runpytest("--qcrypto-pkey", "ed25519", "--qcrypto-plugin", "doubleplug",
                          "--qcrypto-min-time", "0.001", "--qcrypto-rounds", "1")
    assert r.ret == 0, r.stdout.str()
    # the peers are the other chosen plugins with ed25519 and the shipped reference plugin
    # (openssl, where it has it), never a registered plugin the run did not ask for
    reference = ("openssl",) if _has("ed25519", "openssl") else ()
    assert CALLS == [("doubleplug", "ed25519", reference)] * 2
    CALLS.clear()
    r = doubles.runpytest("--qcrypto-pkey", "ed25519", "--qcrypto-plugin", "doubleplug",
                          "--qcrypto-plugin", "peerplug", "-k", "doubleplug",
                          "--qcrypto-min-time", "0.001", "--qcrypto-rounds", "1")
    assert r.ret == 0, r.stdout.str()
    assert CALLS == [("doubleplug", "ed25519", (*reference, "peerplug"))] * 2


def test_a_wrong_signature_fails_its_items_in_one_line_naming_scheme_and_check(doubles,
                                                                            monkeypatch):
    monkeypatch.setenv("BAD_SIGNATURE", "1")
    r = doubles.runpytest("--qcrypto-pkey", "ed25519", "--qcrypto-plugin", "peerplug",
                          "--qcrypto-plugin", "doubleplug", "--qcrypto-min-time", "0.001",
                          "--qcrypto-rounds", "1")
    assert r.ret == pytest.ExitCode.TESTS_FAILED
    out = r.stdout.str()
    r.assert_outcomes(passed=2, failed=2)
    first = next(p for p in ("openssl", "pycryptodome", "doubleplug") if p == "doubleplug"
                 or _has("ed25519", p))  # the first peer says no
    assert (f"peerplug ed25519: cross-plugin check: {first} rejects peerplug's signature"
            in r.stdout.lines)
    assert "Traceback" not in out and "pkey_doubles.py" not in out
    assert ("  x peerplug (all operations) failed: peerplug ed25519: cross-plugin check: "
            f"{first} rejects peerplug's signature") in r.stdout.lines


# -- the fixture and the marker ----------------------------------------------------------------


def test_marker_and_fixture_measure_an_operation(clock):
    clock.makepyfile('''
        import pytest

        @pytest.mark.qcrypto("ed25519", plugins="clockplug")
        def test_cells(qcrypto_case, qcrypto_context):
            m = qcrypto_context.measure(operation=qcrypto_case.operation)
            assert (m.size, m.direction, m.unit) == (0, qcrypto_case.operation, "ops/s")

        def test_own(qcrypto):
            ctx = qcrypto.open("ed25519", "clockplug")
            assert ctx.measure(operation="sign").ops_per_s == 20000.0
            assert qcrypto.open("scrypt", "clockplug").measure().figure == 4.0  # derive alone

        def test_size_given(qcrypto):
            qcrypto.open("ed25519", "clockplug").measure(16)

        def test_wrong_operation(qcrypto):
            qcrypto.open("ml-kem-768", "clockplug").measure(operation="sign")

        def test_operation_of_a_digest(qcrypto):
            qcrypto.open("sha256", "clockplug").measure(16, operation="sign")
    ''')
    r = clock.runpytest("-v")
    out = r.stdout.lines
    assert "test_marker_and_fixture_measure_an_operation.py::test_cells[ed25519-clockplug-sign] " \
           "PASSED" in " ".join(out).replace("  ", " ") or any(
               "test_cells[ed25519-clockplug-sign] PASSED" in x for x in out)
    assert any("test_cells[ed25519-clockplug-verify] PASSED" in x for x in out)
    r.assert_outcomes(passed=3, failed=3)
    assert ("clockplug ed25519: measure(): ed25519 is a signature: it has no buffer size (give "
            "no size, or 0), not 16") in out
    assert ("clockplug ml-kem-768: measure(): ml-kem-768 is a KEM: give operation= one of "
            "keygen, encaps, decaps, not 'sign'") in out
    assert ("clockplug sha256: measure(): operation='sign': sha256 is a digest measured by "
            "buffer size; give a size, and decrypt=True or roundtrip=True for another "
            "direction") in out


# -- saved, compared, floors, report, plots ----------------------------------------------------


def test_saved_compared_and_a_slowed_signature_fails_the_gate(clock, monkeypatch):
    args = ("--qcrypto-pkey", "ed25519", "--qcrypto-kdf", "scrypt", "--qcrypto-plugin",
            "clockplug", "--qcrypto-confirm", "0")
    assert clock.runpytest(*args, "--qcrypto-save", "base.json").ret == 0
    doc = json.loads((clock.path / "base.json").read_text())
    sign = next(r for r in doc["results"] if r["direction"] == "sign")
    assert (sign["size"], sign["unit"], sign["ops_per_s"], sign["count"]) == \
        (0, "ops/s", 20000.0, 2300)  # 2300 signs of 50 us: 0.1 s x 1.15
    assert "bytes_per_second" not in sign
    kdf = next(r for r in doc["results"] if r["algorithm"] == "scrypt-n16384-r8-p1")
    assert kdf["params"] == {"n": 16384, "r": 8, "p": 1}
    assert clock.runpytest(*args, "--qcrypto-compare", "base.json").ret == 0
    monkeypatch.setenv("QSLOW", "2")  # every operation takes twice as long
    r = clock.runpytest(*args, "--qcrypto-compare", "base.json")
    assert r.ret == pytest.ExitCode.TESTS_FAILED
    out = r.stdout.str()
    assert ("regression: ed25519 clockplug sign: 10000.00 ops/s now, baseline 20000.00 ops/s, "
            "change -50.0%") in out
    assert "regression: scrypt-n16384-r8-p1 clockplug derive: 2.00 ops/s now, baseline 4.00 " \
           "ops/s, change -50.0%" in out
    assert block(r.stdout.lines, "Benchmark results for 'ed25519' signature (ops/s):", 3)[2] == \
        "clockplug   10000.00   4000.00"


def test_saved_size_less_results_are_read_back_strictly(tmp_path):
    from pytest_qcrypto.results import store as results

    base = {"schema_version": 2, "complete": True, "machine": {}, "plugins": {},
            "results": [{"algorithm": "ed25519", "plugin": "openssl", "size": 0,
                         "direction": "sign", "ops_per_s": 20000.0, "unit": "ops/s",
                         "count": 2048, "rounds_s": [0.1024]}]}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(base))
    loaded = results.load(path).results[0]
    assert (loaded.figure, loaded.unit, loaded.key) == (20000.0, "ops/s",
                                                        ("ed25519", "openssl", 0, "sign"))
    for change, problem in [
            ({"size": 16}, "results[0].size must be a whole number of bytes from 1 to 268435456, "
                           "or 0 for an algorithm without a buffer size, not 16"),
            ({"direction": "digest"}, "results[0].direction must be one of sign, verify, keygen, not "
                                      '"digest"'),
            ({"unit": "KiB/s"}, 'results[0].unit must be ops/s, not "KiB/s"'),
            ({"algorithm": "sha256"}, "results[0].size must be a whole number of bytes from 1 "
                                      "to 268435456, not 0")]:
        path.write_text(json.dumps({**base, "results": [{**base["results"][0], **change}]}))
        with pytest.raises(results.ResultsError) as err:
            results.load(path)
        assert problem in str(err.value)
    entry = dict(base["results"][0])
    del entry["ops_per_s"]
    path.write_text(json.dumps({**base, "results": [entry]}))
    with pytest.raises(results.ResultsError, match="results.0..ops_per_s is missing"):
        results.load(path)


def test_floors_in_ops_per_second_by_operation(clock):
    clock.makeini("[pytest]\nqcrypto_floors =\n    ed25519:clockplug = 5000\n"
                  "    ed25519:clockplug:verify = 9000\n")
    r = clock.runpytest("--qcrypto-pkey", "ed25519", "--qcrypto-plugin", "clockplug",
                        "--qcrypto-confirm", "0")
    assert r.ret == pytest.ExitCode.TESTS_FAILED
    r.assert_outcomes(passed=1, failed=1)  # sign keeps 5000 ops/s, verify misses 9000
    assert ("below floor: ed25519 clockplug verify: 8000.00 ops/s, floor 9000.00 ops/s "
            "(qcrypto_floors in tox.ini: 'ed25519:clockplug:verify = 9000'); tries: 8000.00 ops/s "
            "(fastest try 8000.00)") in r.stdout.str()


def test_rules_name_a_size_less_cell_by_its_operation():
    assert rules.parse_pattern("Ed25519:openssl:sign", "w") == ("ed25519", "openssl", "sign")
    assert rules.parse_pattern("ed25519:openssl", "w") == ("ed25519", "openssl", None)
    floors = rules.Rules.parse(["ed25519 = 100", "ed25519:*:verify = 50"], "f", lambda v, w: float(v))
    assert floors.pick("ed25519", ["openssl"], rules.cell_column(0, "sign")).value == 100
    assert floors.pick("ed25519", ["openssl"], rules.cell_column(0, "verify")).value == 50
    with pytest.raises(SettingsError, match="ed25519 has no buffer size .a signature: figures "
                                            "in ops/s.; give one of its operations sign, "
                                            "verify, keygen, or"):
        rules.parse_pattern("ed25519:openssl:16", "w")


def test_report_shows_the_saved_ops_per_second_tables(clock, capsys):
    from pytest_qcrypto.output import report

    assert clock.runpytest("--qcrypto-pkey", "ed25519", "--qcrypto-plugin", "clockplug",
                           "--qcrypto-save", "run.json").ret == 0
    capsys.readouterr()
    assert report.run([str(clock.path / "run.json")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert block(out, "Benchmark results for 'ed25519' signature (ops/s):", 3) == [
        "Benchmark results for 'ed25519' signature (ops/s):",
        "plugin              sign    verify",
        "run/clockplug   20000.00   8000.00"]


def test_plot_draws_a_bar_per_plugin_grouped_by_operation(clock):
    pytest.importorskip("matplotlib")
    r = clock.runpytest("--qcrypto-pkey", "ml-kem-768", "--qcrypto-plugin", "clockplug",
                        "--qcrypto-plot", "p.svg")
    assert r.ret == 0, r.stdout.str()
    svg = (clock.path / "p.svg").read_text()
    for op in ("keygen", "encaps", "decaps"):
        assert f'id="bar-ml-kem-768-{op}-clockplug"' in svg
    assert '<g id="spread-ml-kem-768--clockplug">' in svg  # the error bars, fastest to slowest
    assert svg.count('id="bar-') == 3  # no baseline bars without a baseline


# -- timeouts and jobs -------------------------------------------------------------------------


def test_timeout_stops_a_slow_signature(doubles, monkeypatch):
    monkeypatch.setenv("SLOW_S", "3")
    r = doubles.runpytest("--qcrypto-pkey", "ed25519", "--qcrypto-plugin", "slowplug",
                          "--qcrypto-timeout", "1", "-k", "sign")
    assert r.ret == pytest.ExitCode.TESTS_FAILED
    assert "timed out after 1 s in slowplug ed25519 sign" in r.stdout.str()


def test_jobs_sum_the_operations_of_several_processes(doubles):
    r = doubles.runpytest("--qcrypto-pkey", "ed25519", "--qcrypto-plugin", "doubleplug",
                          "--qcrypto-jobs", "2", "--qcrypto-min-time", "0.01",
                          "--qcrypto-rounds", "1", "-v", "--qcrypto-save", "j.json")
    assert r.ret == 0, r.stdout.str()
    doc = json.loads((doubles.path / "j.json").read_text())
    for res in doc["results"]:
        assert res["jobs"] == 2 and len(res["workers"]) == 2
        assert sum(w["count"] for w in res["workers"]) == res["count"]
    assert any(line.startswith("doubleplug ed25519 sign: ") and line.endswith("ops/s from 2 jobs")
               for line in r.stdout.lines)


# -- qcrypto speed -----------------------------------------------------------------------------


def test_qcrypto_speed_takes_S_and_K_and_all_includes_them(capsys):
    from pytest_qcrypto.commands import qcrypto as cli

    ns, extra = cli.build_parser().parse_known_args(["speed", "-S", "ed25519", "-P", "openssl"])
    assert cli.speed_args(ns, extra)[4:] == ["-qq", "--qcrypto-pkey", "ed25519",
                                             "--qcrypto-plugin", "openssl"]
    ns, extra = cli.build_parser().parse_known_args(["speed", "-K", "scrypt-n1024"])
    assert cli.speed_args(ns, extra)[4:] == ["-qq", "--qcrypto-kdf", "scrypt-n1024"]
    ns, extra = cli.build_parser().parse_known_args(["speed"])
    args = cli.speed_args(ns, extra)
    assert ["--qcrypto-pkey", "all", "--qcrypto-kdf", "all"] == args[-4:]
    assert cli.main(["speed", "-K", "scrypt-n1000"]) == 4
    assert capsys.readouterr().err == ("ERROR: qcrypto speed: -K: scrypt-n1000: scrypt's N must "
                                       "be a power of two (RFC 7914), not 1000\n")
    assert cli.main(["speed", "-S", "sha256"]) == 4
    assert ("-S: unknown public-key algorithm 'sha256'; sha256 is a digest: use -D sha256. "
            "Valid public-key algorithms: rsa2048,") in capsys.readouterr().err
