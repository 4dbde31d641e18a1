"""FreeBSD cryptotest's way of measuring (issue 13, part E): a fixed count (--qcrypto-count),
the encrypt+decrypt round trip (--qcrypto-roundtrip, direction ``roundtrip``), its checked
form (--qcrypto-check-roundtrip), Measurement.iv; with fake clocks and exact figures."""

import io
import json
from itertools import repeat

import pytest

from pytest_qcrypto.measure import bench
from pytest_qcrypto.algorithms import catalog
from pytest_qcrypto.measure import harness, jobs
from pytest_qcrypto.output import report, tables
from pytest_qcrypto.backends.base import Context, Workload
from pytest_qcrypto.measure.harness import Measurement, TimerError
from pytest_qcrypto.measure.jobs import WorkerRound
from pytest_qcrypto.checks.known_answers import KnownAnswerError
from pytest_qcrypto.results.store import Result, ResultsError, load

from test_harness import FakeMachine

CBC = ("--qcrypto-cipher", "aes-128-cbc", "--qcrypto-plugin", "openssl", "--qcrypto-size", "16")


# -- the fixed count, with a fake clock ---------------------------------------------------------

@pytest.mark.parametrize("count, rounds", [(1, 1), (1024, 3), (5000, 2)])
def test_a_fixed_count_runs_exactly_n_iterations_in_every_round(count, rounds):
    fake = FakeMachine(1_000)  # 1 us an iteration
    timing = harness.time_count(fake.run, count, rounds=rounds, clock=fake.clock,
                                cpu_clock=fake.cpu_clock)
    assert fake.counts == [count] * rounds  # no calibration run at all
    assert timing.count == count
    assert timing.rounds_s == (count * 1e-6,) * rounds
    assert timing.note == ("" if count >= 1000 else
                           "a round of 0.001 ms is under the 1 ms the clock can honestly "
                           "time: raise --qcrypto-count")


def test_short_fixed_rounds_are_named_with_their_range():
    fake = FakeMachine(100, extra_ns={1: 110_000, 2: 5_000_000})  # 0.2, 0.31 and 5.2 ms
    timing = harness.time_count(fake.run, 2048, rounds=3, clock=fake.clock,
                                cpu_clock=fake.cpu_clock)
    assert timing.rounds_s == (0.0002048, 0.0003148, 0.0052048)
    assert timing.note == ("rounds of 0.2 to 0.31 ms are under the 1 ms the clock can honestly "
                           "time: raise --qcrypto-count")
    same = harness.fixed_count_note([210_000, 210_000])
    assert same == ("rounds of 0.21 ms are under the 1 ms the clock can honestly time: "
                    "raise --qcrypto-count")


@pytest.mark.parametrize("count, rounds, message", [
    (0, 3, "count must be a whole number of iterations from 1 to 1099511627776 (2**40), not 0"),
    (2**40 + 1, 3, "not 1099511627777"),
    (True, 3, "not True"),
    (16, 0, "rounds must be a whole number from 1 to 1000, not 0"),
])
def test_fixed_count_limits(count, rounds, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("*", r"\*")):
        harness.time_count(lambda n: None, count, rounds=rounds)


def test_a_frozen_clock_with_a_fixed_count_is_a_timer_error():
    with pytest.raises(TimerError, match="stood still"):
        harness.time_count(lambda n: None, 64, rounds=2, clock=lambda: 5, cpu_clock=lambda: 0)


# -- the round trip: operations and figures ---------------------------------------------------

def test_a_round_trip_counts_both_directions():
    m = Measurement("aes-128-cbc", "fake", 16, "roundtrip", 1024, (0.5, 0.25, 1.0))
    assert m.operations == 2048
    assert m.bytes_per_second == 2 * 1024 * 16 / 0.5 == 65536.0
    assert m.kib_per_s == 64.0
    one_way = Measurement("aes-128-cbc", "fake", 16, "encrypt", 1024, (0.5,))
    assert one_way.operations == 1024 and one_way.bytes_per_second == 32768.0
    # ops/s and ns/op count crypts as cryptotest does
    assert tables.UNITS["ops/s"].of(m) == 4096.0
    assert tables.UNITS["ns/op"].of(m) == pytest.approx(0.5 / 2048 * 1e9, rel=1e-15)


class Recording(Context):
    """A context whose runners log what they run: ``("encrypt", 1)``, ``("decrypt", 1)``..."""

    def __init__(self):
        super().__init__(catalog.lookup("aes-128-gcm"), b"k" * 16)
        self.log = []
        self.works = []

    def runner(self, work):
        self.works.append(work)
        way = "decrypt" if work.decrypt else "encrypt"
        return lambda count: self.log.append((way, count))


def test_the_default_round_trip_runner_alternates_one_encryption_and_one_decryption():
    ctx = Recording()
    work = Workload(b"p" * 16, nonces=(b"n" * 12, b"m" * 12), ciphertext=b"c" * 32)
    run = ctx.roundtrip_runner(work)
    assert [w.decrypt for w in ctx.works] == [False, True]
    assert all(w.ciphertext == b"c" * 32 and w.nonces == work.nonces for w in ctx.works)
    run(3)
    assert ctx.log == [("encrypt", 1), ("decrypt", 1)] * 3


class OneShot(Context):
    """Encrypts with XOR of a keystream from the IV (or returns the plaintext, or decrypts
    wrongly, when told to), logging the IVs."""

    def __init__(self, name, fault=""):
        super().__init__(catalog.lookup(name), b"k" * 16)
        self.fault, self.ivs = fault, []

    def encrypt(self, iv, data, aad=b""):
        self.ivs.append(iv)
        if self.fault == "unchanged":
            return data
        out = bytes(b ^ 0x5A for b in data)
        return out + b"T" * self.algorithm.tag_size

    def decrypt(self, iv, data, aad=b""):
        body = data[:len(data) - self.algorithm.tag_size]
        out = bytes(b ^ 0x5A for b in body)
        return out[:-1] + b"?" if self.fault == "mismatch" else out


def test_the_checked_round_trip_encrypts_and_decrypts_each_iteration_with_the_next_nonce():
    ctx = OneShot("aes-128-gcm")
    nonces = tuple(bytes([i]) * 12 for i in range(3))
    run = bench.checked_roundtrip_runner("fake", ctx.algorithm, ctx,
                                         Workload(b"d" * 32, nonces=nonces))
    run(4)
    run(1)
    assert ctx.ivs == [nonces[0], nonces[1], nonces[2], nonces[0], nonces[1]]
    cbc = OneShot("aes-128-cbc")
    bench.checked_roundtrip_runner("fake", cbc.algorithm, cbc, Workload(b"d" * 16, iv=b"i" * 16))(2)
    assert cbc.ivs == [b"i" * 16] * 2


@pytest.mark.parametrize("fault, message", [
    ("unchanged", "fake aes-128-cbc: cipher text unchanged: the encryption of the 16-byte "
                  "buffer equals the plaintext (round trip 1)"),
    ("mismatch", "fake aes-128-cbc: decrypt mismatch: the 16-byte buffer did not decrypt back "
                 "to the plaintext (round trip 1)"),
])
def test_the_checked_round_trip_fails_on_the_first_bad_iteration(fault, message):
    ctx = OneShot("aes-128-cbc", fault)
    run = bench.checked_roundtrip_runner("fake", ctx.algorithm, ctx,
                                         Workload(b"d" * 16, iv=b"i" * 16))
    with pytest.raises(KnownAnswerError) as info:
        run(5)
    assert str(info.value) == message


# -- bench: fixed count and round trip on a real plugin, the fake clock counting ---------------

@pytest.fixture
def fake_clock(monkeypatch):
    """Each run() of the harness costs 1 us an iteration on a fake clock; counts are logged."""
    fake = FakeMachine(1_000)
    real = harness.timed

    def timed(run, count, clock, cpu_clock):
        def both(n):
            run(n)
            fake.run(n)
        return real(both, count, fake.clock, fake.cpu_clock)

    monkeypatch.setattr(harness, "timed", timed)
    return fake


def test_bench_roundtrip_with_a_fixed_count_is_exact(fake_clock):
    from pytest_qcrypto.backends.openssl import OpenSSLPlugin
    from pytest_qcrypto.measure.registry import Selection

    sel = Selection("openssl", OpenSSLPlugin())
    for name in ("aes-128-cbc", "aes-256-gcm", "chacha20-poly1305"):
        fake_clock.counts.clear()
        with bench.open_context(sel, name, bench.Randomness(7)) as ctx:
            m = ctx.measure(64, roundtrip=True, count=1024, rounds=3)
        assert fake_clock.counts == [1024] * 3
        assert (m.direction, m.count, m.operations) == ("roundtrip", 1024, 2048)
        assert m.rounds_s == (0.001024,) * 3 and m.calibration_note == ""
        assert m.bytes_per_second == 2048 * 64 / 0.001024
        alg = catalog.lookup(name)
        assert len(bytes.fromhex(m.iv)) == alg.iv_size  # the IV, or the first nonce


def test_bench_roundtrip_leaves_digests_their_direction_and_refuses_decrypt_too(fake_clock):
    from pytest_qcrypto.backends.hashlib import HashlibPlugin
    from pytest_qcrypto.measure.registry import Selection

    with bench.open_context(Selection("hashlib", HashlibPlugin()), "sha256") as ctx:
        m = ctx.measure(16, roundtrip=True, count=8, rounds=1)
        assert (m.direction, m.operations, m.iv) == ("digest", 8, "")
        assert m.calibration_note.startswith("a round of 0.008 ms is under the 1 ms")
        with pytest.raises(ValueError, match="decrypt and roundtrip: choose one"):
            ctx.measure(16, decrypt=True, roundtrip=True, count=8)
        with pytest.raises(ValueError, match="count must be a whole number"):
            ctx.measure(16, count=0)


# -- jobs x fixed count -------------------------------------------------------------------------

def test_jobs_with_a_fixed_count_run_n_in_each_worker_and_sum_them():
    fake = FakeMachine(1_000)
    asked = []

    def start(run, n_jobs, count, rounds, timeout_s, clocks):
        asked.append((n_jobs, count, rounds))
        return [[WorkerRound(count, 10_000_000 + 100 * w, 10_000_000 + 100 * w + count * 1_000,
                             count * 900) for _ in range(rounds)] for w in range(n_jobs)]

    timing = jobs.time_jobs(fake.run, 3, rounds=2, count=4096, start=start, clock=fake.clock,
                            cpu_clock=fake.cpu_clock)
    assert asked == [(3, 4096, 2)]
    assert fake.counts == [1]  # one untimed iteration here sizes the timeout; no calibration
    assert timing.count == 3 * 4096 and timing.recalibrations == 0 and timing.note == ""
    assert timing.rounds_s == (4_096_200 / 1e9,) * 2  # the first start to the last end
    records = jobs.worker_record(timing.workers, 16, per_iteration=2)
    assert records[0].kib_per_s == (4096 * 2 * 16 / 0.004096 / 1024,) * 2


def test_jobs_with_a_short_fixed_count_note_the_workers_rounds():
    def start(run, n_jobs, count, rounds, timeout_s, clocks):
        return [[WorkerRound(count, 0, 300_000, 1)] for _ in range(n_jobs)]

    timing = jobs.time_jobs(lambda n: None, 2, rounds=1, count=64, start=start)
    assert timing.note == ("rounds of 0.3 ms are under the 1 ms the clock can honestly time: "
                           "raise --qcrypto-count")


# -- results, report, tables ----------------------------------------------------------------------

def _roundtrip_measurement(**kw):
    return Measurement("aes-128-cbc", "openssl", 16, "roundtrip", 1024, (0.5,), (0.5,),
                       "openssl", "op", iv="00" * 16, **kw)


def test_a_roundtrip_result_is_saved_and_loaded_with_its_iv(tmp_path):
    from pytest_qcrypto.results.store import ResultsFile, save

    result = Result.from_measurement(_roundtrip_measurement())
    assert result.bytes_per_second == 65536.0 and result.count == 1024
    assert result.to_json()["iv"] == "00" * 16
    path = tmp_path / "r.json"
    mac = Result("hmac-sha256", "openssl", 64, "mac", 1000.0, 1, (0.064,))
    save(path, ResultsFile([result, mac]))
    loaded = load(path)
    assert [(r.direction, r.iv) for r in loaded.results] == [("roundtrip", "00" * 16),
                                                             ("mac", "")]
    doc = json.loads(path.read_text())
    doc["results"][0]["iv"] = "not hex"
    path.write_text(json.dumps(doc))
    with pytest.raises(ResultsError, match=r"results\[0\]\.iv .*a string of hex digits"):
        load(path)


def test_workers_of_a_roundtrip_count_two_operations_an_iteration():
    m = _roundtrip_measurement(jobs=2, workers=(
        harness.WorkerRecord(512, (0.5,), (0.5,), (16.0,)),
        harness.WorkerRecord(512, (0.25,), (0.25,), (64.0,))))
    r = Result.from_measurement(m)
    assert [w.bytes_per_second for w in r.workers] == [2 * 512 * 16 / 0.5, 2 * 512 * 16 / 0.25]


def test_report_shows_a_saved_roundtrip_with_its_figure(tmp_path):
    from pytest_qcrypto.results.store import ResultsFile, save

    path = tmp_path / "rt.json"
    save(path, ResultsFile([Result.from_measurement(_roundtrip_measurement())]))
    out = io.StringIO()
    assert report.run([str(path)], stdout=out, verbose=True) == 0
    lines = out.getvalue().splitlines()
    assert lines[:7] == [
        "Benchmarking 'aes-128-cbc' cipher on the following plugin(s): rt/openssl",
        "plugin: rt/openssl",
        "executed 1024 round trips of size 16 bytes in 0.50 secs",
        "",
        "Benchmark results for 'aes-128-cbc' cipher, roundtrip (KiB/s):",
        "plugin          16",
        "rt/openssl   64.00"]  # 2 x 1024 x 16 bytes in 0.5 s
    (table,) = report.saved_tables([("openssl", load(path).results[0])])
    assert table.cells[("openssl", 16)].measurement.iv == "00" * 16


@pytest.mark.parametrize("direction, header", [
    ("encrypt", "Benchmark results for 'aes-128-cbc' cipher (KiB/s):"),
    ("decrypt", "Benchmark results for 'aes-128-cbc' cipher, decrypt (KiB/s):"),
    ("roundtrip", "Benchmark results for 'aes-128-cbc' cipher, roundtrip (KiB/s):"),
])
def test_table_headers_name_every_direction_but_the_default(direction, header):
    table = tables.Table("aes-128-cbc", "cipher", direction, (), (), {})
    assert tables.header(table) == header
    assert tables.header(tables.Table("hmac-sha256", "MAC", "mac", (), (), {})) == \
        "Benchmark results for 'hmac-sha256' MAC (KiB/s):"


def test_an_aead_table_is_titled_aead_as_qcrypto_list_groups_it():
    # issue 28: the title word comes from KindRules.table_word (algorithms/kinds.py)
    from pytest_qcrypto.algorithms import settings
    for name in ("aes-128-gcm", "chacha20-poly1305"):
        table = tables.assemble(name, "encrypt", [], {})
        assert tables.header(table) == f"Benchmark results for '{name}' AEAD (KiB/s):"
    assert tables.header(tables.assemble("aes-128-cbc", "decrypt", [], {})) == \
        "Benchmark results for 'aes-128-cbc' cipher, decrypt (KiB/s):"
    # --qcrypto-cipher still selects both, and its messages still say cipher
    assert catalog.group_word(catalog.OPTION_GROUPS["cipher"]) == "cipher"
    with pytest.raises(settings.SettingsError, match="aes-128-gcm is an AEAD: use --qcrypto-cipher"):
        settings.parse_algorithms(["aes-128-gcm"], catalog.OPTION_GROUPS["digest"], "--qcrypto-digest")


# -- the pytest side ---------------------------------------------------------------------------

def test_roundtrip_with_a_fixed_count_is_measured_saved_and_shown(pytester):
    r = pytester.runpytest(*CBC, "--qcrypto-roundtrip", "--qcrypto-count", "1024",
                           "--qcrypto-rounds", "2", "--qcrypto-save", "rt.json", "-v",
                           "-p", "no:cacheprovider")
    r.assert_outcomes(passed=1)
    r.stdout.fnmatch_lines(["executed 1024 round trips of size 16 bytes in * secs",
                            "Benchmark results for 'aes-128-cbc' cipher, roundtrip (KiB/s):"])
    doc = json.loads((pytester.path / "rt.json").read_text())
    (entry,) = doc["results"]
    assert (entry["direction"], entry["count"], len(entry["rounds_s"])) == ("roundtrip", 1024, 2)
    median = sum(entry["rounds_s"]) / 2
    assert entry["bytes_per_second"] == pytest.approx(2 * 1024 * 16 / median, rel=1e-12)
    assert len(bytes.fromhex(entry["iv"])) == 16
    assert doc["settings"]["count"] == 1024


def _baseline(pytester, direction, bytes_per_second):
    """A baseline of one aes-128-cbc openssl 16-byte cell in ``direction``, far too fast."""
    doc = {"format": "pytest-qcrypto results", "schema_version": 2, "complete": True,
           "machine": {}, "plugins": {}, "results": [
        {"algorithm": "aes-128-cbc", "plugin": "openssl", "size": 16, "direction": direction,
         "bytes_per_second": bytes_per_second, "count": 2**40,
         # the figure is the one its rounds give (load recomputes it)
         "rounds_s": [(2 if direction == "roundtrip" else 1) * 2**40 * 16 / bytes_per_second]}]}
    (pytester.path / "base.json").write_text(json.dumps(doc))


def test_the_gate_compares_a_roundtrip_only_with_a_roundtrip(pytester):
    args = (*CBC, "--qcrypto-roundtrip", "--qcrypto-count", "256", "--qcrypto-rounds", "1",
            "--qcrypto-compare", "base.json", "--qcrypto-confirm", "0", "-p", "no:cacheprovider")
    _baseline(pytester, "encrypt", 1e15)  # an encryption figure no machine reaches
    r = pytester.runpytest(*args)
    r.assert_outcomes(passed=1)  # not compared with it
    _baseline(pytester, "roundtrip", 1e15)
    r = pytester.runpytest(*args)
    r.assert_outcomes(failed=1)
    r.stdout.fnmatch_lines(["*regression*aes-128-cbc openssl 16 B roundtrip*"])


@pytest.mark.parametrize("args, message", [
    (("--qcrypto-roundtrip", "--qcrypto-decrypt"),
     "--qcrypto-roundtrip and --qcrypto-decrypt: choose one; a round trip times one encryption "
     "and one decryption per iteration"),
    (("--qcrypto-check-roundtrip",),
     "--qcrypto-check-roundtrip checks round trips: give --qcrypto-roundtrip too"),
    (("--qcrypto-count", "0"), "--qcrypto-count: must be from 1 to 1099511627776, not 0"),
    (("--qcrypto-count", "1e3"),
     "--qcrypto-count: '1e3' is not a whole number of iterations (only the ASCII digits 0-9)"),
    (("--qcrypto-count", "1099511627777"),
     "--qcrypto-count: must be from 1 to 1099511627776, not 1099511627777"),
])
def test_bad_count_and_roundtrip_options_are_usage_errors(pytester, args, message):
    r = pytester.runpytest(*CBC, *args)
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert f"ERROR: {message}" in r.stderr.lines


def test_the_ini_count_is_read_and_named_when_bad(pytester):
    pytester.makeini("[pytest]\nqcrypto_count = lots\n")
    r = pytester.runpytest(*CBC)
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert ("ERROR: qcrypto_count in tox.ini: 'lots' is not a whole number of iterations (only "
            "the ASCII digits 0-9)") in r.stderr.lines


def test_roundtrip_with_only_digests_says_it_had_no_effect(pytester):
    r = pytester.runpytest("--qcrypto-digest", "sha256", "--qcrypto-plugin", "hashlib",
                           "--qcrypto-size", "16", "--qcrypto-roundtrip", "--qcrypto-count", "64",
                           "--qcrypto-rounds", "1", "-p", "no:cacheprovider")
    r.assert_outcomes(passed=1)
    r.stdout.fnmatch_lines([
        "Benchmark results for 'sha256' digest (KiB/s):",
        "qcrypto: --qcrypto-roundtrip had no effect: digests have no round trip (it "
        "times ciphers and AEADs encrypting then decrypting)"])


def test_a_short_fixed_round_is_a_noisy_figure_under_the_table(pytester):
    pytester.makeconftest('''
import pytest
from pytest_qcrypto.measure import harness

@pytest.fixture(autouse=True)
def fake_clock(monkeypatch):
    real = harness.time_count
    class Clock:
        now = 0
    def run_on_the_fake(run, count, *, rounds, **kw):
        def costly(n):  # 100 ns an iteration on the fake clock
            run(n)
            Clock.now += 100 * n
        return real(costly, count, rounds=rounds, clock=lambda: Clock.now,
                    cpu_clock=lambda: Clock.now)
    monkeypatch.setattr(harness, "time_count", run_on_the_fake)
''')
    r = pytester.runpytest(*CBC, "--qcrypto-roundtrip", "--qcrypto-count", "2100",
                           "--qcrypto-rounds", "3", "-p", "no:cacheprovider")
    r.assert_outcomes(passed=1)
    r.stdout.fnmatch_lines([
        "noisy figure, short rounds: aes-128-cbc openssl 16 bytes: rounds of 0.21 ms are under "
        "the 1 ms the clock can honestly time: raise --qcrypto-count"])


def test_jobs_with_a_fixed_roundtrip_count_save_every_worker(pytester):
    r = pytester.runpytest(*CBC, "--qcrypto-roundtrip", "--qcrypto-count", "512",
                           "--qcrypto-rounds", "1", "--qcrypto-jobs", "2",
                           "--qcrypto-save", "j.json", "-p", "no:cacheprovider")
    r.assert_outcomes(passed=1)
    (entry,) = json.loads((pytester.path / "j.json").read_text())["results"]
    assert (entry["direction"], entry["jobs"], entry["count"]) == ("roundtrip", 2, 1024)
    assert [w["count"] for w in entry["workers"]] == [512, 512]
    for w in entry["workers"]:
        assert w["bytes_per_second"] == 2 * 512 * 16 / w["rounds_s"][0]
    assert entry["bytes_per_second"] == pytest.approx(2 * 1024 * 16 / entry["rounds_s"][0],
                                                      rel=1e-12)


def test_the_marker_takes_roundtrip_and_refuses_it_with_decrypt(pytester):
    pytester.makepyfile('''
import pytest

@pytest.mark.qcrypto("aes-128-gcm,sha256", plugins="openssl", sizes=32, roundtrip=True)
def test_trip(qcrypto_case, qcrypto_context):
    assert qcrypto_case.roundtrip == (qcrypto_case.algorithm == "aes-128-gcm")
    m = qcrypto_context.measure(32, roundtrip=qcrypto_case.roundtrip, count=16, rounds=1)
    assert m.direction == ("roundtrip" if qcrypto_case.roundtrip else "digest")

''')
    r = pytester.runpytest("-p", "no:cacheprovider")
    r.assert_outcomes(passed=2)
    pytester.makepyfile(test_both='''
import pytest

@pytest.mark.qcrypto("aes-128-gcm", plugins="openssl", sizes=32, roundtrip=True, decrypt=True)
def test_both(qcrypto_case):
    pass
''')
    r = pytester.runpytest("test_both.py", "-p", "no:cacheprovider")
    r.assert_outcomes(errors=1)
    r.stdout.fnmatch_lines(["*@pytest.mark.qcrypto: decrypt=True and roundtrip=True: choose one*"])
