"""The results file: format and field names, round trip, schema 1, fingerprint, atomic writes."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_qcrypto.results import files, store as results
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.results.store import Result, ResultsError, ResultsFile

#: A conftest adding the crypto plugin ``fake``: a correct sha256 (its known answers
#: pass) whose timed loop spins for a set CPU time per operation, so its throughput
#: on an idle CPU is known and no real speed is ever asserted.  ``fake_speed.json`` beside it sets:
#: ``ns`` per operation (default 20000), ``slow`` (factor), ``slow_measurements``
#: (indexes of measurements of the run, or "all") made that much slower, and
#: ``hiccup_round2`` (indexes) where only the second timed round is slow;
#: ``driver`` is reported as the kernel driver.
FAKE_PLUGIN = '''
import hashlib, json, time
from pathlib import Path
from pytest_qcrypto.backends import Context, CryptoPlugin

SPEC = Path(__file__).with_name("fake_speed.json")
MEASURED = [0]

def spec():
    return json.loads(SPEC.read_text()) if SPEC.exists() else {}

def busy(ns):  # CPU time, not wall time: other processes slow it down like real work
    end = time.thread_time_ns() + ns
    while time.thread_time_ns() < end:
        pass

class FakeContext(Context):
    def __init__(self, algorithm, key):
        super().__init__(algorithm, key)
        self.driver = spec().get("driver")

    def digest(self, data):
        return hashlib.sha256(data).digest()

    def runner(self, work):
        s = spec()
        index = MEASURED[0]
        MEASURED[0] += 1
        slow_ones = s.get("slow_measurements", [])
        ns = s.get("ns", 20000)
        if slow_ones == "all" or index in slow_ones:
            ns = int(ns * s.get("slow", 2.0))
        hiccup = index in s.get("hiccup_round2", [])
        counts = []

        def run(count):
            counts.append(count)
            round2 = len(counts) >= 2 and counts[-2] == count and counts.count(count) == 2
            busy(count * ns * (s.get("slow", 2.0) if hiccup and round2 else 1))
        return run

class Fake(CryptoPlugin):
    name = "fake"
    library = "a busy-wait test double"
    def version(self):
        return spec().get("version", "fake 1.0")
    def supported(self):
        return frozenset({"sha256"})
    def open(self, algorithm, key, variant=None):
        return FakeContext(algorithm, key)

def pytest_qcrypto_plugins():
    return [Fake()]
'''

#: Appended to :data:`FAKE_PLUGIN`'s conftest: the run's timers (``time.perf_counter_ns``
#: and ``time.process_time_ns``, one counter, restored at the end of the run) read a fake
#: clock that the fake's operations advance instead of spinning, so its rounds take exactly
#: their nanoseconds, on any machine at any load (and no real time).
FAKE_CLOCK = '''
CLOCK, SAVED = {"ns": 10**9}, {}

def busy(ns):
    CLOCK["ns"] += round(ns)

def pytest_configure(config):
    SAVED.update(wall=time.perf_counter_ns, cpu=time.process_time_ns)
    time.perf_counter_ns = time.process_time_ns = lambda: CLOCK["ns"]

def pytest_unconfigure(config):
    time.perf_counter_ns, time.process_time_ns = SAVED["wall"], SAVED["cpu"]
'''

#: Options of a fast, exactly-timed fake matrix.
FAKE_RUN = ("--qcrypto-digest", "sha256", "--qcrypto-plugin", "fake", "--qcrypto-min-time",
            "0.002", "--qcrypto-rounds", "1", "-p", "no:cacheprovider")


def fake_speed(pytester, **spec):
    (pytester.path / "fake_speed.json").write_text(json.dumps(spec))


def measurement(**kw):
    base = dict(algorithm="sha256", plugin="openssl-3", size=4096, direction="digest",
                count=1024, rounds_s=(0.01, 0.012, 0.011), cpu_s=(0.0099, 0.0118, 0.0109),
                canonical_plugin="openssl", operation="hash one buffer", driver=None)
    base.update(kw)
    return Measurement(**base)


# -- the format ---------------------------------------------------------------------------------


def test_document_has_the_documented_fields():
    m = measurement()
    doc = ResultsFile([Result.from_measurement(m, "qcrypto::sha256[openssl-3-4096]")],
                      machine=results.fingerprint(), plugins={}).to_json()
    for key in ("schema_version", "complete", "machine", "plugins", "results", "created"):
        assert key in doc
    assert doc["schema_version"] == results.SCHEMA_VERSION and doc["complete"] is True
    entry = doc["results"][0]
    for key in ("algorithm", "plugin", "size", "direction", "count", "rounds_s", "cpu_s",
                "bytes_per_second", "canonical_plugin", "operation"):
        assert key in entry
    assert entry["plugin"] == "openssl-3" and entry["canonical_plugin"] == "openssl"
    assert entry["rounds_s"] == [0.01, 0.012, 0.011]
    assert entry["bytes_per_second"] == pytest.approx(1024 * 4096 / 0.011)  # median round


def test_round_trip(tmp_path):
    m = measurement(driver="sha256-ni", hardware=False)
    tries = [measurement(rounds_s=(0.02,)), m]
    original = ResultsFile([Result.from_measurement(m, "t::x", tries)],
                           machine={"cpu_model": "x", "cores": 2},
                           plugins={"openssl-3": {"canonical": "openssl", "version": "v"}},
                           complete=True, settings={"min_time_s": 0.1, "rounds": 3})
    path = results.save(tmp_path / "r.json", original)
    loaded = results.load(path)
    assert loaded.results == original.results
    assert loaded.results[0].tries == (m.count * m.size / 0.02, m.bytes_per_second)
    assert loaded.machine == original.machine and loaded.plugins == original.plugins
    assert loaded.complete and loaded.settings == original.settings
    assert loaded.results[0].key == ("sha256", "openssl", 4096, "digest")


def test_schema_1_is_migrated(tmp_path):
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"schema_version": 1, "results": [
        {"algorithm": "sha256", "plugin": "openssl", "size": 16, "kib_per_s": 100.0},
        {"algorithm": "aes-128-cbc", "plugin": "openssl", "size": 16, "kib_per_s": 50.0},
    ]}))
    loaded = results.load(path)
    assert loaded.complete and loaded.schema_version == 2
    sha, aes = loaded.results
    assert sha.bytes_per_second == 100.0 * 1024 and sha.direction == "digest"
    assert aes.direction == "encrypt" and aes.kib_per_s == 50.0
    assert sha.rounds_s == () and sha.slowest_round_bytes_per_second == sha.bytes_per_second


def test_schema_1_with_a_bad_entry_names_it(tmp_path):
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"schema_version": 1, "results": [
        {"algorithm": "sha256", "plugin": "openssl", "size": 16, "kib_per_s": "fast"}]}))
    with pytest.raises(ResultsError, match=r"old.json: results\[0\].kib_per_s must be a "
                                           r"positive number"):
        results.load(path)


@pytest.mark.parametrize("content, problem", [
    (b"{not json", "not JSON"),
    (b"\xff\xfe", "not JSON"),
    (b"[]", "not a pytest-qcrypto results file"),
    (b'{"benchmarks": []}', "no schema_version"),
    (b'{"format": "other", "schema_version": 2}', "format 'other'"),
    (b'{"schema_version": 99, "results": []}', "newer pytest-qcrypto"),
    (b'{"schema_version": "2"}', "schema_version must be a whole number"),
    (b'{"schema_version": 2, "complete": true, "machine": {}, "plugins": {}, "results": {}}',
     "results must be a list"),
    (b'{"schema_version": 2, "complete": "yes", "machine": {}, "plugins": {}, "results": []}',
     "complete must be true or false"),
    (b'{"schema_version": 2, "complete": true, "machine": {}, "plugins": {}, '
     b'"results": [{"algorithm": "sha256", "plugin": "x", "size": "16", "direction": "digest",'
     b' "count": 1, "rounds_s": [0.1], "bytes_per_second": 5}]}',
     r"results[0].size must be a whole number"),
    (b'{"schema_version": 2, "complete": true, "machine": {}, "plugins": {}, '
     b'"results": [{"algorithm": "sha256", "plugin": "x", "size": 16, "direction": "digest",'
     b' "count": 1, "rounds_s": [0.1], "bytes_per_second": -5}]}',
     r"results[0].bytes_per_second must be a positive number"),
    (b'{"schema_version": 2, "complete": true, "machine": {}, "plugins": {}, '
     b'"results": [{"algorithm": "sha256", "plugin": "x", "size": 16, "direction": "up",'
     b' "count": 1, "rounds_s": [0.1], "bytes_per_second": 5}]}',
     r"results[0].direction must be one of"),
    (b'{"schema_version": 2, "complete": true, "machine": {}, "plugins": {}, '
     b'"results": [7]}', r"results[0] must be an object"),
    (b'{"schema_version": 2, "complete": true, "machine": {}, "plugins": {}, '
     b'"results": [{"algorithm": "sha256", "plugin": "x", "size": 16, "direction": "digest",'
     b' "count": 4, "rounds_s": [0.1], "bytes_per_second": 5, "jobs": 2, "workers": [{'
     b'"count": 2, "rounds_s": [0.1], "bytes_per_second": 5}]}]}',
     "results[0].workers has 1 entries but jobs is 2"),
    (b'{"schema_version": 2, "complete": true, "machine": {}, "plugins": {}, '
     b'"results": [{"algorithm": "sha256", "plugin": "x", "size": 16, "direction": "digest",'
     b' "count": 4, "rounds_s": [0.1], "bytes_per_second": 5, "jobs": 2, "workers": [{'
     b'"count": 2, "rounds_s": [0.1], "bytes_per_second": 5}, {"count": 1, "rounds_s": [0.1],'
     b' "bytes_per_second": 5}]}]}',
     "results[0].workers' counts add up to 3, not to count (4)"),
    (b'{"schema_version": 2, "complete": true, "machine": {}, "plugins": {}, '
     b'"results": [{"algorithm": "sha256", "plugin": "x", "size": 16, "direction": "digest",'
     b' "count": 4, "rounds_s": [0.1], "bytes_per_second": 5, "jobs": 2, "workers": [{'
     b'"count": 2, "rounds_s": [0], "bytes_per_second": 5}, {}]}]}',
     "results[0].workers[0].rounds_s must be a list of positive seconds"),
    # the run's settings and date: read by report (cycle rate), history and the gate's notes
    (b'{"schema_version": 2, "complete": true, "machine": {}, "plugins": {}, "results": [],'
     b' "settings": null}', "settings must be an object, not null"),
    (b'{"schema_version": 2, "complete": true, "machine": {}, "plugins": {}, "results": [],'
     b' "settings": {"rounds": -1}}', "settings.rounds must be a whole number from 1 to 1000, "
     "not -1"),
    (b'{"schema_version": 2, "complete": true, "machine": {}, "plugins": {}, "results": [],'
     b' "settings": {"min_time_s": 0}}', "settings.min_time_s must be a number of seconds "
     "above 0, at most 3600, not 0"),
    (b'{"schema_version": 2, "complete": true, "machine": {}, "plugins": {}, "results": [],'
     b' "settings": {"count": 0}}', "settings.count must be a whole number from 1 to"),
    (b'{"schema_version": 2, "complete": true, "machine": {}, "plugins": {}, "results": [],'
     b' "settings": {"cycle_rate": {"hz": -1}}}', "settings.cycle_rate.hz must be a number of "
     "cycles a second above 0 and under 10^12, not -1"),
    (b'{"schema_version": 2, "complete": true, "machine": {}, "plugins": {}, "results": [],'
     b' "created": "yesterday"}', 'created must be a date and time in ISO 8601 '
     '("2026-11-29T21:30:00Z"), not "yesterday"'),
])
def test_bad_files_name_file_and_problem(tmp_path, content, problem):
    path = tmp_path / "base.json"
    path.write_bytes(content)
    with pytest.raises(ResultsError) as exc:
        results.load(path)
    assert str(exc.value).startswith(f"{path}: ") and problem in str(exc.value)


def test_missing_directory_and_unreadable(tmp_path, monkeypatch):
    with pytest.raises(ResultsError, match="no such file"):
        results.load(tmp_path / "nope.json")
    with pytest.raises(ResultsError, match="is a directory"):
        results.load(tmp_path)
    path = tmp_path / "locked.json"
    path.write_text("{}")

    def denied(path, limit=0):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(results.files, "read_regular", denied)
    with pytest.raises(ResultsError, match="locked.json: cannot read it: Permission denied"):
        results.load(path)


# -- the fingerprint ----------------------------------------------------------------------------

X86_CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 7B13
cpu MHz\t\t: 2450.000
bogomips\t: 4900.00
flags\t\t: fpu sse2 ssse3 aes pclmulqdq avx avx2 sha_ni vaes vpclmulqdq avx512f rdrand

processor\t: 1
model name\t: AMD EPYC 7B13
cpu MHz\t\t: 3100.000
"""
ARM_CPUINFO = """processor\t: 0
BogoMIPS\t: 50.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics
CPU implementer\t: 0x41
CPU part\t: 0xd0c
"""


def test_fingerprint_x86_keeps_crypto_flags_and_drops_volatile_values():
    fp = results.fingerprint(X86_CPUINFO)
    assert fp["cpu_model"] == "AMD EPYC 7B13"
    assert fp["cpu_flags"] == ["aes", "avx", "avx2", "avx512f", "pclmulqdq", "sha_ni", "ssse3",
                               "vaes", "vpclmulqdq"]
    text = json.dumps(fp)
    assert "2450" not in text and "4900" not in text and "3100" not in text
    for key in ("architecture", "cores", "os", "kernel", "libc", "python"):
        assert fp[key]
    assert fp["python"].split()[0] in ("CPython", "PyPy")
    # the same machine at another clock speed has the same fingerprint
    assert fp == results.fingerprint(X86_CPUINFO.replace("2450.000", "1800.000"))


def test_fingerprint_arm():
    fp = results.fingerprint(ARM_CPUINFO)
    assert fp["cpu_flags"] == ["aes", "asimd", "pmull", "sha1", "sha2"]
    assert fp["cpu_model"] == "implementer 0x41 part 0xd0c"


def test_fingerprint_of_this_machine_is_stable():
    assert results.fingerprint() == results.fingerprint()


def test_machine_differences_name_each_field():
    a = results.fingerprint(X86_CPUINFO)
    b = dict(a, cores=a["cores"] + 6, cpu_flags=[f for f in a["cpu_flags"] if f != "vaes"]
             + ["gfni"])
    diffs = results.machine_differences(a, b)
    assert f"cores: {a['cores']} (baseline) vs {a['cores'] + 6} (now)" in diffs
    assert "cpu_flags: baseline only: vaes; this machine only: gfni" in diffs
    assert results.machine_differences(a, a) == []
    assert results.machine_differences({}, b) == []  # unknown is not a difference


# -- atomic writes and partial results ---------------------------------------------------------


def test_write_is_atomic_when_the_write_fails(tmp_path, monkeypatch):
    path = tmp_path / "r.json"
    path.write_text("old")

    def broken(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", broken)
    with pytest.raises(KeyboardInterrupt):
        results.write_atomic(path, "new" * 100000)
    assert path.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]  # no temporary left


def test_write_keeps_permissions(tmp_path):
    path = tmp_path / "r.json"
    path.write_text("old")
    path.chmod(0o640)
    results.write_atomic(path, "new")
    assert path.read_text() == "new" and path.stat().st_mode & 0o777 == 0o640


def test_incomplete_results_never_replace_a_file(tmp_path):
    path = tmp_path / "r.json"
    partial = ResultsFile([Result.from_measurement(measurement())], complete=False)
    assert results.save(path, partial) == path  # nothing there yet: PATH itself
    assert results.load(path).complete is False
    path.write_text("old")
    assert results.save(path, partial) == tmp_path / "r.json.partial"
    assert path.read_text() == "old"


def test_save_then_load_through_pytest(pytester):
    pytester.makeconftest(FAKE_PLUGIN)
    r = pytester.runpytest(*FAKE_RUN, "--qcrypto-size", "16,64", "--qcrypto-save", "out.json")
    assert r.ret == 0
    r.stdout.fnmatch_lines(["qcrypto: 2 results saved to *out.json"])
    doc = json.loads((pytester.path / "out.json").read_text())
    assert doc["complete"] is True
    assert doc["plugins"]["fake"] == {"canonical": "fake", "library": "a busy-wait test double",
                                      "version": "fake 1.0", "drivers": [],
                                      "implementations": {"sha256": "fake 1.0"}}
    assert [(e["plugin"], e["size"], e["test"]) for e in doc["results"]] == [
        ("fake", 16, "qcrypto::sha256[fake-16]"), ("fake", 64, "qcrypto::sha256[fake-64]")]
    assert doc["settings"] == {"min_time_s": 0.002, "rounds": 1,  # and how spread rounds ran
                               "spread": {"rounds": 25, "round_s": 0.002, "span_s": 0.16}}
    assert {e["jobs"] for e in doc["results"]} == {1}
    assert "load" in doc["machine_state"]  # the state at the start, beside the fingerprint


def test_bad_save_path_is_a_usage_error(pytester):
    r = pytester.runpytest("--qcrypto-save", "no/such/dir/out.json")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines(["*--qcrypto-save: cannot write no/such/dir/out.json: directory "
                            "*no/such/dir does not exist*"])


def test_failing_run_saves_complete_results(pytester):
    pytester.makeconftest(FAKE_PLUGIN)
    r = pytester.runpytest(*FAKE_RUN, "--qcrypto-size", "16", "--qcrypto-save", "out.json")
    assert r.ret == 0
    base = pytester.path / "base.json"
    doc = json.loads((pytester.path / "out.json").read_text())
    for e in doc["results"]:  # three times faster then: its rounds a third as long
        e["rounds_s"] = [s / 3 for s in e["rounds_s"]]
        e["cpu_s"] = [s / 3 for s in e["cpu_s"]]
        e["bytes_per_second"] *= 3
    base.write_text(json.dumps(doc))
    r = pytester.runpytest(*FAKE_RUN, "--qcrypto-size", "16", "--qcrypto-compare", "base.json",
                           "--qcrypto-save", "out.json", "--qcrypto-confirm", "0")
    assert r.ret == 1
    assert json.loads((pytester.path / "out.json").read_text())["complete"] is True
    assert not (pytester.path / "out.json.partial").exists()


def _run_and_interrupt(pytester, sig):
    """Start a slow fake matrix in a subprocess, send ``sig`` after two items passed."""
    pytester.makeconftest(FAKE_PLUGIN)
    fake_speed(pytester, ns=2_000_000)  # 2 ms per operation
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", *FAKE_RUN, "--qcrypto-min-time", "0.05",
         "--qcrypto-size", ",".join(str(16 * i) for i in range(1, 41)), "-v",
         "--qcrypto-save", "out.json"],
        cwd=pytester.path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seen = []
    deadline = time.monotonic() + 60
    assert proc.stdout is not None
    for line in proc.stdout:
        seen.append(line)
        if sum("PASSED" in x for x in seen) >= 2 or time.monotonic() > deadline:
            break
    proc.send_signal(sig)
    rest, _ = proc.communicate(timeout=60)
    return proc.returncode, "".join(seen) + rest


def test_interrupted_run_keeps_the_old_file_and_writes_partial(pytester):
    old = '{"old": true}\n'
    (pytester.path / "out.json").write_text(old)
    rc, out = _run_and_interrupt(pytester, signal.SIGINT)
    assert rc == pytest.ExitCode.INTERRUPTED, out
    assert (pytester.path / "out.json").read_text() == old
    partial = results.load(pytester.path / "out.json.partial")
    assert partial.complete is False and 2 <= len(partial.results) < 40
    assert "out.json left untouched" in out and "Traceback" not in out
    assert [p.name for p in pytester.path.iterdir() if p.name.endswith(".tmp")] == []


def test_interrupted_first_run_writes_an_incomplete_file(pytester):
    rc, out = _run_and_interrupt(pytester, signal.SIGINT)
    assert rc == pytest.ExitCode.INTERRUPTED, out
    assert results.load(pytester.path / "out.json").complete is False
    r = pytester.runpytest(*FAKE_RUN, "--qcrypto-size", "16", "--qcrypto-compare", "out.json")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines(['*--qcrypto-compare: out.json: the run that wrote it did not '
                            'finish ("complete": false)*'])


def test_killed_run_leaves_the_old_file_intact(pytester):
    old = '{"old": true}\n'
    (pytester.path / "out.json").write_text(old)
    _run_and_interrupt(pytester, signal.SIGKILL)
    assert (pytester.path / "out.json").read_text() == old
    # the save lock's sidecar stays (nothing ran to remove it) but its lock went with the process
    assert sorted(p.name for p in pytester.path.iterdir() if "out.json" in p.name) == [
        "out.json", "out.json.lock"]
    from pytest_qcrypto.results import lock
    lock.acquire(pytester.path / "out.json", wait=0).release()


def test_stopped_early_with_x_is_incomplete(pytester):
    pytester.makeconftest(FAKE_PLUGIN)
    pytester.makeini("[pytest]\nqcrypto_floors =\n    sha256:fake = 1e12\n")
    r = pytester.runpytest(*FAKE_RUN, "--qcrypto-size", "16,64", "--qcrypto-confirm", "0", "-x",
                           "--qcrypto-save", "out.json")
    assert r.ret == 1
    r.assert_outcomes(failed=1)
    saved = results.load(pytester.path / "out.json")
    assert saved.complete is False and len(saved.results) == 1


@pytest.mark.parametrize("field, value", [("bytes_per_second", 10**400), ("rounds_s", [10**400]),
                                          ("cpu_s", [10**400]), ("tries", [10**400])])
def test_numbers_beyond_the_float_range_are_refused(tmp_path, field, value):
    entry = Result.from_measurement(measurement()).to_json()
    entry[field] = value
    doc = ResultsFile([]).to_json()
    doc["results"] = [entry]
    path = tmp_path / "base.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ResultsError, match=rf"results\[0\]\.{field} must be"):
        results.load(path)


# -- where a results file may go ------------------------------------------------------------------


def test_a_symlink_is_followed_and_stays_a_symlink(tmp_path):
    (tmp_path / "store").mkdir()
    real = tmp_path / "store" / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    assert results.check_writable(link) is None
    results.save(link, ResultsFile([Result.from_measurement(measurement())]))
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert len(results.load(real).results) == 1
    # the temporary file was made beside the target (a rename across directories could fail)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "store"]
    assert sorted(p.name for p in real.parent.iterdir()) == ["real.json"]
    # a link to a file not written yet creates that file
    new_link = tmp_path / "new.json"
    new_link.symlink_to(tmp_path / "store" / "new-target.json")
    results.save(new_link, ResultsFile([Result.from_measurement(measurement())]))
    assert new_link.is_symlink() and (tmp_path / "store" / "new-target.json").is_file()


def test_a_fifo_or_a_link_to_one_is_never_replaced(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    link = tmp_path / "link.json"
    link.symlink_to(fifo)
    for path in (fifo, link):
        assert "is a FIFO (named pipe), not a regular file" in results.check_writable(path)
        with pytest.raises(OSError, match="not a regular file"):
            results.save(path, ResultsFile([Result.from_measurement(measurement())]))
        assert fifo.is_fifo() and link.is_symlink()
    assert f"{link} (a symbolic link to {fifo}) is a FIFO" in results.check_writable(link)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "pipe"]  # no temporary
    assert results.check_writable(tmp_path) == f"{tmp_path} is a directory, not a regular file"
    loop = tmp_path / "loop.json"
    loop.symlink_to(loop)
    assert "symbolic link that does not resolve" in results.check_writable(loop)
    lost = tmp_path / "lost.json"
    lost.symlink_to(tmp_path / "no" / "dir" / "r.json")
    assert results.check_writable(lost) == (f"directory {tmp_path / 'no' / 'dir'} (where the "
                                            f"symbolic link {lost} points) does not exist")


def test_a_directory_where_no_file_can_be_made_is_refused(tmp_path, monkeypatch):
    # (root may write anywhere by its permission bits; /proc says no only when one tries)
    def refused(*args, **kwargs):
        raise FileNotFoundError(2, "No such file or directory")

    monkeypatch.setattr(files.tempfile, "mkstemp", refused)
    assert results.check_writable(tmp_path / "r.json") == \
        f"cannot create a file in directory {tmp_path}: No such file or directory"


def test_check_leaves_nothing_behind(tmp_path):
    assert results.check_writable(tmp_path / "r.json") is None
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("make, problem", [
    ("fifo", "*out.json is a FIFO (named pipe), not a regular file"),
    ("link to fifo", "*out.json (a symbolic link to *pipe) is a FIFO (named pipe), not a regular "
                     "file"),
    ("link into nowhere", "directory *nowhere (where the symbolic link *out.json points) does "
                          "not exist"),
    ("directory", "*out.json is a directory, not a regular file"),
])
def test_a_path_that_is_not_a_regular_file_is_a_usage_error(pytester, make, problem):
    pytester.makeconftest(FAKE_PLUGIN)
    out = pytester.path / "out.json"
    if make == "fifo":
        os.mkfifo(out)
    elif make == "link to fifo":
        os.mkfifo(pytester.path / "pipe")
        out.symlink_to(pytester.path / "pipe")
    elif make == "link into nowhere":
        out.symlink_to(pytester.path / "nowhere" / "r.json")
    else:
        out.mkdir()
    r = pytester.runpytest(*FAKE_RUN, "--qcrypto-size", "16", "--qcrypto-save", "out.json")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines([f"*--qcrypto-save: cannot write out.json: {problem}*"])
    assert "Benchmark results" not in r.stdout.str()  # refused before anything was measured
    assert make != "fifo" or out.is_fifo()


def test_saving_through_pytest_follows_a_symlink(pytester):
    pytester.makeconftest(FAKE_PLUGIN)
    (pytester.path / "store").mkdir()
    (pytester.path / "out.json").symlink_to(pytester.path / "store" / "real.json")
    r = pytester.runpytest(*FAKE_RUN, "--qcrypto-size", "16", "--qcrypto-save", "out.json")
    assert r.ret == 0, r.stdout.str()
    assert (pytester.path / "out.json").is_symlink()
    assert len(results.load(pytester.path / "store" / "real.json").results) == 1


def test_an_empty_save_path_is_a_usage_error(pytester):
    for option in ("--qcrypto-save", "--qcrypto-compare"):
        r = pytester.runpytest(option, "")
        assert r.ret == pytest.ExitCode.USAGE_ERROR
        r.stderr.fnmatch_lines([f"*{option}: the PATH is empty; give a file name*"])


#: Makes the save path a directory while the run measures: the save at the end must fail.
BLOCK_SAVE = '''
def pytest_runtest_teardown(item):
    Path("out.json").mkdir(exist_ok=True)
'''


def test_a_save_that_fails_at_the_end_exits_1_with_an_error_line(pytester):
    pytester.makeconftest(FAKE_PLUGIN + BLOCK_SAVE)
    r = pytester.runpytest(*FAKE_RUN, "--qcrypto-size", "16", "--qcrypto-save", "out.json")
    assert r.ret == pytest.ExitCode.TESTS_FAILED  # not 3, pytest's internal error
    r.assert_outcomes(passed=1)
    r.stdout.fnmatch_lines(["ERROR: qcrypto: could not save results to *out.json: *out.json is "
                            "a directory, not a regular file"])
    assert "INTERNALERROR" not in r.stdout.str() + r.stderr.str()


def test_a_run_that_measured_nothing_writes_no_file(pytester):
    pytester.makeconftest(FAKE_PLUGIN)
    pytester.makepyfile(test_plain="def test_one():\n    pass\n")
    r = pytester.runpytest("-p", "no:cacheprovider", "--qcrypto-save", "out.json")
    assert r.ret == 0
    r.stdout.fnmatch_lines(["qcrypto: nothing was measured (no benchmark item ran): *out.json "
                            "not written"])
    assert not (pytester.path / "out.json").exists()
    # a baseline kept from an earlier run is left as it was
    (pytester.path / "out.json").write_text("kept")
    r = pytester.runpytest("-p", "no:cacheprovider", "--qcrypto-save", "out.json")
    assert r.ret == 0 and (pytester.path / "out.json").read_text() == "kept"


def test_under_xdist_nothing_is_measured_and_nothing_is_saved(pytester):
    pytester.makeconftest(FAKE_PLUGIN)
    r = pytester.runpytest_subprocess(*FAKE_RUN, "--qcrypto-size", "16", "-n", "2",
                                      "--qcrypto-save", "out.json", timeout=120)
    assert r.ret == 0
    r.stdout.fnmatch_lines(["qcrypto: nothing was measured (benchmarks are not measured under "
                            "pytest-xdist: run them with -n 0): *out.json not written"])
    assert not (pytester.path / "out.json").exists()


def test_two_tests_may_measure_one_cell_but_a_test_saves_it_once(pytester):
    pytester.makeconftest(FAKE_PLUGIN)
    pytester.makepyfile(test_own='''
def test_twice(qcrypto):
    ctx = qcrypto.open("sha256", "fake")
    ctx.measure(16)
    ctx.measure(16)

def test_once(qcrypto):
    qcrypto.open("sha256", "fake").measure(16)
''')
    r = pytester.runpytest("-p", "no:cacheprovider", "--qcrypto-min-time", "0.002",
                           "--qcrypto-rounds", "1", "--qcrypto-save", "out.json")
    assert r.ret == 0, r.stdout.str()
    saved = results.load(pytester.path / "out.json")  # one entry per cell and test
    assert [r.test for r in saved.results] == ["test_own.py::test_twice",
                                               "test_own.py::test_once"]


def test_a_cell_twice_for_one_test_is_refused(tmp_path):
    entry = Result.from_measurement(measurement(), "t::x").to_json()
    doc = ResultsFile([]).to_json()
    doc["results"] = [entry, dict(entry, size=16, bytes_per_second=entry["bytes_per_second"] / 256),
                      dict(entry, driver="other")]
    path = tmp_path / "base.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ResultsError) as exc:
        results.load(path)
    assert str(exc.value) == (f"{path}: results[2] repeats results[0]: sha256 openssl 4096 B "
                              "digest of test t::x is in the file twice; keep one of them")
    doc["results"][2]["test"] = "t::y"  # another test measuring the same cell: fine
    path.write_text(json.dumps(doc))
    assert len(results.load(path).results) == 3
    path.write_text(json.dumps({"schema_version": 1, "results": [
        {"algorithm": "sha256", "plugin": "openssl", "size": 16, "kib_per_s": 100.0},
        {"algorithm": "sha256", "plugin": "openssl", "size": 16, "kib_per_s": 90.0}]}))
    with pytest.raises(ResultsError, match=r"results\[1\] repeats results\[0\]: sha256 openssl "
                                           r"16 B digest is in the file twice"):
        results.load(path)


@pytest.mark.parametrize("content, problem", [
    (b'{"schema_version": 2, "complete": true, "machine": {}, "plugins": {}, "results": [{"algo',
     "not JSON (Unterminated string starting at line 1 column 84); the file ends too early: "
     "was it cut off?"),
    (b'{"schema_version": 2, "complete": true, ', "the file ends too early"),
    (b"\n\n", "not JSON (the file is empty)"),
])
def test_json_errors_read_well(tmp_path, content, problem):
    path = tmp_path / "base.json"
    path.write_bytes(content)
    with pytest.raises(ResultsError) as exc:
        results.load(path)
    assert problem in str(exc.value) and " at at " not in str(exc.value)
