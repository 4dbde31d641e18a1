"""--qcrypto-jobs: exact aggregation with fake workers, real forked workers, usage errors."""

import json
import os
import signal
from contextlib import contextmanager
from itertools import repeat

import pytest

from conftest import FAST
from pytest_qcrypto.measure import jobs, procs
from pytest_qcrypto.results import store as results
from pytest_qcrypto.measure.harness import KIB, Measurement, TimerError
from pytest_qcrypto.measure.jobs import JobsError, WorkerRound, aggregate, time_jobs


def test_total_bytes_over_the_common_window_is_exact():
    # worker 1: 1000 ops from 0.0 s to 1.0 s; worker 2: 1000 ops from 0.1 s to 1.25 s
    workers = [[WorkerRound(1000, 0, 1_000_000_000, 900_000_000)],
               [WorkerRound(1000, 100_000_000, 1_250_000_000, 1_100_000_000)]]
    count, windows, cpus = aggregate(workers)
    assert count == 2000
    assert windows == (1.25,)
    assert cpus == (2.0,)
    m = Measurement("sha256", "fake", 1024, "digest", count, windows, cpus)
    assert m.kib_per_s == 2000 * 1024 / 1.25 / KIB == 1600.0
    # never the sum of per-worker rates (1000 + 869.57 KiB/s here)
    assert m.kib_per_s != pytest.approx(1000 + 1000 / 1.15)


def test_saved_results_keep_each_worker_exactly(tmp_path):
    # the two workers above, as they reach the saved results: exact figures per worker
    workers = [[WorkerRound(1000, 0, 1_000_000_000, 900_000_000)],
               [WorkerRound(1000, 100_000_000, 1_250_000_000, 1_100_000_000)]]
    count, windows, cpus = aggregate(workers)
    m = Measurement("sha256", "fake", 1024, "digest", count, windows, cpus,
                    jobs=2, workers=jobs.worker_record(workers, 1024))
    saved = results.Result.from_measurement(m, "t::x")
    assert saved.bytes_per_second == 2000 * 1024 / 1.25
    assert [(w.count, w.rounds_s, w.cpu_s, w.bytes_per_second) for w in saved.workers] == [
        (1000, (1.0,), (0.9,), 1000 * 1024 / 1.0),
        (1000, (1.15,), (1.1,), 1000 * 1024 / 1.15)]
    path = results.save(tmp_path / "r.json", results.ResultsFile([saved]))
    entry = json.loads(path.read_text())["results"][0]
    assert entry["jobs"] == 2
    assert entry["workers"][1] == {"count": 1000, "rounds_s": [1.15], "cpu_s": [1.1],
                                   "bytes_per_second": 1000 * 1024 / 1.15}
    assert results.load(path).results == [saved]


def test_each_round_has_its_own_window():
    workers = [[WorkerRound(10, 0, 100, 100), WorkerRound(10, 1000, 1200, 200)],
               [WorkerRound(10, 5, 150, 145), WorkerRound(10, 1010, 1100, 90)]]
    count, windows, cpus = aggregate(workers)
    assert count == 20
    assert windows == (150e-9, 200e-9)
    assert cpus == (245e-9, 290e-9)


@pytest.mark.parametrize("workers, error", [
    ([], ValueError),
    ([[]], ValueError),
    ([[WorkerRound(1, 0, 10, 10)], [WorkerRound(1, 0, 10, 10), WorkerRound(1, 0, 10, 10)]],
     ValueError),
    ([[WorkerRound(1, 0, 10, 10), WorkerRound(2, 0, 10, 10)]], ValueError),
    ([[WorkerRound(1, 5, 5, 0)], [WorkerRound(1, 5, 5, 0)]], TimerError),
])
def test_aggregate_rejects_what_cannot_be_summed(workers, error):
    with pytest.raises(error):
        aggregate(workers)


class FakeClock:
    """Calibration on a fake clock: each operation costs ``ns_per_op``."""

    def __init__(self, ns_per_op):
        self.ns_per_op = ns_per_op
        self.now = 0

    def run(self, count):
        self.now += count * self.ns_per_op

    def clock(self):
        return self.now


def test_time_jobs_with_fake_workers():
    fake = FakeClock(1_000)  # calibrates to 115000 operations per round (0.1 s x 1.15)
    calls = []

    def start(run, n, count, rounds, timeout_s, clocks):
        calls.append((n, count, rounds))
        # worker w runs each round in (1 + w/10) * count microseconds, all starting at 0
        return [[WorkerRound(count, r * 10**10, r * 10**10 + count * (1000 + 100 * w), 0)
                 for r in range(rounds)] for w in range(n)]

    timing = time_jobs(fake.run, 3, min_time=0.1, rounds=2, start=start, clock=fake.clock,
                       cpu_clock=fake.clock)
    assert calls == [(3, 115000, 2)]
    assert timing.count == 3 * 115000
    assert timing.rounds_s == (0.138, 0.138)  # the slowest worker ends last: 115000 x 1.2 us
    assert len(timing.workers) == 3 and all(len(w) == 2 for w in timing.workers)
    record = jobs.worker_record(timing.workers, 64)
    assert record[0].kib_per_s == pytest.approx((64 / 1e-6 / KIB,) * 2, rel=1e-12)
    assert record[2].rounds_s == (0.138,) * 2
    json.dumps([results.WorkerResult.from_record(w, 64).to_json() for w in record])  # saved


class StalledClock(FakeClock):
    """:class:`FakeClock` whose run of ``stall_at`` operations stalls for ``stall_ns``."""

    def __init__(self, ns_per_op, stall_at, stall_ns):
        super().__init__(ns_per_op)
        self.stall_at, self.stall_ns = stall_at, stall_ns

    def run(self, count):
        super().run(count)
        if count == self.stall_at:
            self.now += self.stall_ns


@pytest.mark.parametrize("speedup, calls, note", [
    # a stall of 0.35 s ends calibration at 1024 operations: the workers' rounds take
    # 1.024 ms, so the count is predicted again from that rate (1024 x 0.115 s / 1.024 ms)
    (1, [(3, 1024, 2), (3, 115000, 2)], ""),
    # the workers get 16 times faster with each count: still short after two recalibrations
    # (115000 x 62.5 ns = 7.19 ms: 1840000; x 3.90625 ns = 7.19 ms again)
    (16, [(3, 1024, 2), (3, 115000, 2), (3, 1840000, 2)],
     "rounds of 7.19 ms, under half of min-time 0.1 s, after 2 recalibrations (a stall during "
     "calibration)"),
])
def test_a_stalled_calibration_is_chosen_again_from_the_workers_rounds(speedup, calls, note):
    fake = StalledClock(1_000, stall_at=1024, stall_ns=350_000_000)
    seen = []

    def start(run, n, count, rounds, timeout_s, clocks):
        ns = 1000 / speedup ** len(seen)
        seen.append((n, count, rounds))
        return [[WorkerRound(count, r * 10**10, r * 10**10 + int(count * ns), 0)
                 for r in range(rounds)] for _ in range(n)]

    timing = time_jobs(fake.run, 3, min_time=0.1, rounds=2, start=start, clock=fake.clock,
                       cpu_clock=fake.clock)
    assert seen == calls
    assert timing.count == 3 * calls[-1][1] and timing.note == note
    assert timing.recalibrations == len(calls) - 1


def sha256_runner(count, buf=b"y" * 64):
    import hashlib

    for _ in repeat(None, count):
        hashlib.sha256(buf).digest()


def test_forked_workers_run_barrier_started_rounds():
    workers = jobs.fork_workers(sha256_runner, 2, 2000, 3, timeout_s=60)
    assert len(workers) == 2 and all(len(w) == 3 for w in workers)
    for rounds in workers:
        for r in rounds:
            assert r.count == 2000 and r.end_ns > r.start_ns and r.cpu_ns > 0
    for r in range(3):  # round r+1 starts only after every worker ended round r
        if r:
            assert min(w[r].start_ns for w in workers) >= max(w[r - 1].end_ns for w in workers)
    count, windows, _ = aggregate(workers)
    assert count == 4000 and all(w > 0 for w in windows)


def test_a_worker_that_raises_is_a_jobs_error_naming_it():
    parent = os.getpid()

    def run(count):
        if os.getpid() != parent:
            raise OSError("the engine went away")

    with pytest.raises(JobsError, match=r"2 of 2 workers failed; worker \d: OSError: the engine went away"):
        jobs.fork_workers(run, 2, 10, 2, timeout_s=30)


def test_a_worker_that_dies_is_a_jobs_error():
    def run(count):
        os._exit(3)

    with pytest.raises(JobsError, match=r"2 of 2 workers failed; worker \d: died \(exit code 3\)"):
        jobs.fork_workers(run, 2, 10, 1, timeout_s=5)


def test_when_one_worker_dies_the_others_stop_at_once(tmp_path):
    import time

    marker = tmp_path / "first"

    def run(count):
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            return  # the other worker carries on to the next barrier
        os._exit(5)

    started = time.monotonic()
    with pytest.raises(JobsError, match=r"worker \d: died \(exit code 5\)"):
        jobs.fork_workers(run, 2, 10, 3, timeout_s=60)
    assert time.monotonic() - started < 10


@pytest.mark.parametrize("text, expected", [("1", 1), ("2", 2), (" 3 ", 3), ("auto", None),
                                             ("AUTO", None)])
def test_parse_jobs(text, expected):
    assert jobs.parse_jobs(text) == (expected or jobs.cpu_count())


@pytest.mark.parametrize("value", ["0", "-1", "abc", "1.5", ""])
def test_bad_jobs_is_a_usage_error_naming_valid_values(pytester, value):
    r = pytester.runpytest("--qcrypto-digest", "sha256", f"--qcrypto-jobs={value}")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    err = r.stderr.str()
    assert f"--qcrypto-jobs: {value!r} is not valid; give a whole number of worker processes " \
           "from 1 up, or 'auto'" in err, err
    assert "Traceback" not in err


SLOW_PLUGIN = '''
from itertools import repeat
import hashlib
from pytest_qcrypto.backends import Context, CryptoPlugin

class ConftestContext(Context):
    def digest(self, data):
        return hashlib.sha256(data).digest()
    def runner(self, work):
        def run(count, buf=work.data):
            for _ in repeat(None, count):
                hashlib.sha256(buf).digest()
        return run

class ConftestPlugin(CryptoPlugin):
    name = "conftest-sha"
    library = "hashlib, from a conftest"
    def supported(self):
        return frozenset({"sha256"})
    def open(self, algorithm, key, variant=None):
        return ConftestContext(algorithm, key)

def pytest_qcrypto_plugins():
    return [ConftestPlugin()]
'''


def test_jobs_reach_a_plugin_from_a_conftest_and_report_each_worker(pytester):
    pytester.makeconftest(SLOW_PLUGIN)
    r = pytester.runpytest("--qcrypto-digest", "sha256", "--qcrypto-plugin", "conftest-sha",
                           "--qcrypto-size", "64,1024", "--qcrypto-jobs", "2", "-v", *FAST)
    r.assert_outcomes(passed=2)
    r.stdout.fnmatch_lines([
        "conftest-sha sha256 64 bytes: * KiB/s from 2 jobs",
        "  worker 1: * KiB/s",
        "  worker 2: * KiB/s",
        "conftest-sha sha256 1024 bytes: * KiB/s from 2 jobs",
    ])


def test_a_saved_jobs_run_has_every_worker(pytester):
    r = pytester.runpytest("--qcrypto-digest", "sha256", "--qcrypto-plugin", "hashlib",
                           "--qcrypto-size", "64", "--qcrypto-jobs", "2",
                           "--qcrypto-save", "out.json", *FAST)
    r.assert_outcomes(passed=1)
    (entry,) = json.loads((pytester.path / "out.json").read_text())["results"]
    assert entry["jobs"] == 2 and len(entry["workers"]) == 2
    assert sum(w["count"] for w in entry["workers"]) == entry["count"]
    for w in entry["workers"]:
        assert len(w["rounds_s"]) == len(entry["rounds_s"]) == len(w["cpu_s"])
        median = sorted(w["rounds_s"])[(len(w["rounds_s"]) - 1) // 2]  # odd round counts
        assert w["bytes_per_second"] == w["count"] * 64 / median
        assert max(w["rounds_s"]) <= max(entry["rounds_s"])  # inside the common window


def test_without_verbose_no_worker_lines(pytester):
    r = pytester.runpytest("--qcrypto-digest", "sha256", "--qcrypto-plugin", "hashlib",
                           "--qcrypto-size", "64", "--qcrypto-jobs", "2", *FAST)
    r.assert_outcomes(passed=1)
    # the table says its figures are sums, as qcrypto report's 'x2 jobs' rows do
    r.stdout.fnmatch_lines(["hashlib *", "  hashlib: the summed throughput of 2 processes at "
                            "once (--qcrypto-jobs 2)"])
    assert "worker 1:" not in r.stdout.str()


def test_jobs_through_the_qcrypto_fixture(pytester):
    pytester.makepyfile('''
def test_two_jobs(qcrypto):
    m = qcrypto.open("sha256", "hashlib").measure(256, min_time=0.001, rounds=2)
    assert m.jobs == 2
    assert len(m.workers) == 2
    assert m.count == sum(w.count for w in m.workers)
    assert len(m.rounds_s) == 2
''')
    r = pytester.runpytest("--qcrypto-jobs", "2")
    r.assert_outcomes(passed=1)


# -- the limit on --qcrypto-jobs -------------------------------------------------------


def limit_message(option, jobs_):
    cpus = jobs.cpu_count()
    return (f"{option}: {jobs_} is too many; give at most {8 * cpus} (8 x the {cpus} "
            f"CPU{'' if cpus == 1 else 's'} this process may use): more workers only take "
            "turns on the same CPUs, and each is a forked process")


def test_the_limit_is_eight_per_cpu():
    assert jobs.max_jobs() == 8 * jobs.cpu_count()
    assert jobs.parse_jobs(str(jobs.max_jobs())) == jobs.max_jobs()
    with pytest.raises(jobs.SettingsError) as info:
        jobs.parse_jobs(str(jobs.max_jobs() + 1))
    assert str(info.value) == limit_message("--qcrypto-jobs", jobs.max_jobs() + 1)


def test_too_many_jobs_is_a_usage_error_naming_the_limit(pytester):
    r = pytester.runpytest("--qcrypto-digest", "sha256", "--qcrypto-size", "16",
                           "--qcrypto-jobs", "100000")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    err = r.stderr.str()
    assert f"ERROR: {limit_message('--qcrypto-jobs', 100000)}" in err, err
    assert "Traceback" not in err


def test_too_many_jobs_in_the_bench_api_is_a_value_error_before_anything_runs(monkeypatch):
    from pytest_qcrypto.backends.hashlib import HashlibPlugin
    from pytest_qcrypto.measure.bench import open_context
    from pytest_qcrypto.measure.registry import Selection

    monkeypatch.setattr(os, "fork", lambda: pytest.fail("forked"))
    ctx = open_context(Selection("hashlib", HashlibPlugin()), "sha256")
    too_many = jobs.max_jobs() + 1
    with pytest.raises(ValueError) as info:
        ctx.measure(16, jobs=too_many, min_time=0.001, rounds=1)
    assert str(info.value) == limit_message("jobs", too_many)
    assert not ctx.checked  # not even the known answers
    with pytest.raises(ValueError, match="^jobs: .* is too many; give at most "):
        jobs.time_jobs(sha256_runner, too_many)


# -- workers never outlive the run -----------------------------------------------------


def gone(pid):
    """Whether process ``pid`` has exited and been reaped (its /proc entry is gone)."""
    return not os.path.exists(f"/proc/{pid}")


def test_a_failed_fork_kills_and_reaps_the_workers_already_started(monkeypatch):
    import errno

    real_fork, started = os.fork, []

    def fork():
        if len(started) == 2:
            raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")
        pid = real_fork()
        if pid:
            started.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", fork)
    with pytest.raises(JobsError) as info:
        jobs.fork_workers(sha256_runner, 3, 10, 1, timeout_s=60)  # the 2 wait at the barrier
    assert str(info.value) == ("could not start worker 3 of 3: [EAGAIN] Resource temporarily "
                               "unavailable: too many processes (ulimit -u); the 2 already "
                               "started were killed")
    assert len(started) == 2 and all(gone(pid) for pid in started)


FORK_FAILS = SLOW_PLUGIN + '''
import errno, os

_real_fork, _forks = os.fork, []

def _fork():  # the third worker cannot be started
    if len(_forks) == 2:
        raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")
    _forks.append(1)
    return _real_fork()

os.fork = _fork
'''


def test_a_failed_fork_fails_the_item_with_one_line(pytester):
    pytester.makeconftest(FORK_FAILS)
    r = pytester.runpytest_subprocess("--qcrypto-digest", "sha256", "--qcrypto-size", "16",
                                      "--qcrypto-plugin", "conftest-sha", "--qcrypto-jobs", "3",
                                      *FAST)
    r.assert_outcomes(failed=1)
    r.stdout.fnmatch_lines(["*conftest-sha sha256 at 16 bytes: could not start worker 3 of 3: "
                            "[[]EAGAIN[]] Resource temporarily unavailable: too many processes "
                            "(ulimit -u); the 2 already started were killed"])
    assert "Traceback" not in r.stdout.str()


def pdeathsig():
    import ctypes

    value = ctypes.c_int(-1)
    ctypes.CDLL(None).prctl(2, ctypes.byref(value), 0, 0, 0)  # PR_GET_PDEATHSIG
    return value.value


@pytest.mark.skipif(not os.path.exists("/proc/self"), reason="Linux only")
def test_workers_ask_to_be_killed_with_their_parent():
    parent = os.getpid()

    def run(count):
        if os.getpid() != parent and pdeathsig() != signal.SIGKILL:
            raise OSError(f"PR_SET_PDEATHSIG is {pdeathsig()}, not SIGKILL")

    assert len(jobs.fork_workers(run, 2, 10, 1, timeout_s=30)) == 2


def test_a_child_whose_parent_died_before_the_request_exits_at_once():
    pid = os.fork()
    if pid == 0:  # as if forked by a parent that has died since: the pid is not our parent's
        procs.die_with_parent(os.getppid() + 1 if os.getppid() != 1 else 2)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 1


#: A plugin whose workers note their pid and parent (in pids/PID), then sleep; the
#: session's end records which of them still have a /proc entry (running or unreaped).
SLEEPY_WORKERS = SLOW_PLUGIN.replace('''                hashlib.sha256(buf).digest()
        return run''', '''                hashlib.sha256(buf).digest()
            if multiprocessing.current_process().name == "qcrypto-worker":
                note = os.path.join(HERE, "pids", str(os.getpid()))
                with open(note + ".tmp", "w") as f:
                    f.write(str(os.getppid()))
                os.rename(note + ".tmp", note)
                time.sleep(120)
        return run''') + '''
import json, multiprocessing, os, time

HERE = os.path.dirname(os.path.abspath(__file__))
os.makedirs(os.path.join(HERE, "pids"), exist_ok=True)

def pytest_sessionfinish(session):
    # still in the pytest process: its own cleanup, not its death, must have ended them
    pids = [name for name in os.listdir(os.path.join(HERE, "pids")) if name.isdigit()]
    left = [pid for pid in pids if os.path.exists("/proc/" + pid)]
    with open(os.path.join(HERE, "left.json"), "w") as f:
        json.dump({"workers": pids, "left": left}, f)
'''


def proc_start(pid):
    """(state, start time) of ``pid`` from /proc, or None when it has no entry."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return fields[0], fields[19]


def alive(pid, start):
    """Whether ``pid`` is still the process first seen (same start time) and not a zombie."""
    now = proc_start(pid)
    return now is not None and now[1] == start and now[0] not in "ZX"


@contextmanager
def workers_sleeping(pytester, *args, workers=2):
    """Run pytest until its ``workers`` sleepy workers have started: (process, {pid: start}).

    The pids are the workers' and an isolated child's.  The output goes to the
    file ``out`` (a pipe would stay open while a worker lived).  Whatever
    happens, pytest and the processes found are killed at the end.
    """
    import subprocess
    import sys
    import time

    pytester.makeconftest(SLEEPY_WORKERS)
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--qcrypto-digest", "sha256",
           "--qcrypto-plugin", "conftest-sha", "--qcrypto-size", "16", "--qcrypto-jobs",
           str(workers), *FAST, *args]
    procs = {}
    with open(pytester.path / "out", "w") as out:
        # SIGINT as a terminal would deliver it, even when this suite runs with it ignored
        proc = subprocess.Popen(cmd, cwd=pytester.path, stdout=out, stderr=subprocess.STDOUT,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        give_up, found = time.monotonic() + 60, []
        while proc.poll() is None and time.monotonic() < give_up:
            found = [p for p in (pytester.path / "pids").glob("*") if p.name.isdigit()]
            if len(found) == workers:
                break
            time.sleep(0.05)
        assert len(found) == workers, (pytester.path / "out").read_text()
        pids = {int(p.name) for p in found} | {int(p.read_text()) for p in found}
        pids.discard(proc.pid)  # what is left: the workers, and an isolated child
        procs.update((pid, proc_start(pid)[1]) for pid in pids if proc_start(pid))
        yield proc, procs
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid, start in procs.items():
            if alive(pid, start):
                os.kill(pid, signal.SIGKILL)


def assert_all_end(procs):
    """Every process in ``procs`` ends within a few seconds (dead, or a zombie of another)."""
    import time

    give_up = time.monotonic() + 5
    while any(alive(p, s) for p, s in procs.items()) and time.monotonic() < give_up:
        time.sleep(0.05)
    survivors = [p for p, s in procs.items() if alive(p, s)]
    assert not survivors, f"worker processes outlived pytest: {survivors}"


@pytest.mark.skipif(not os.path.exists("/proc/self"), reason="needs /proc and PR_SET_PDEATHSIG")
@pytest.mark.parametrize("isolate", [False, True], ids=["in-process", "isolate"])
def test_sigkill_of_pytest_mid_measurement_leaves_no_worker(pytester, isolate):
    with workers_sleeping(pytester, *(["--qcrypto-isolate"] if isolate else [])) as (proc, procs):
        assert len(procs) == 2 + isolate
        proc.kill()
        proc.wait(timeout=30)
        assert_all_end(procs)


@pytest.mark.skipif(not os.path.exists("/proc/self"), reason="needs /proc")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_an_interrupt_mid_measurement_kills_and_reaps_the_workers(pytester, sig):
    with workers_sleeping(pytester) as (proc, procs):
        proc.send_signal(sig)
        proc.wait(timeout=60)
        out = (pytester.path / "out").read_text()
        assert proc.returncode == pytest.ExitCode.INTERRUPTED, out
        left = json.loads((pytester.path / "left.json").read_text())
        assert sorted(map(int, left["workers"])) == sorted(procs)
        assert left["left"] == [], out  # gone before pytest ended: killed and reaped by it
        assert_all_end(procs)


@pytest.mark.skipif(not os.path.exists("/proc/self"), reason="needs /proc")
def test_a_timeout_mid_measurement_kills_and_reaps_the_workers(pytester):
    pytester.makeconftest(SLEEPY_WORKERS)
    r = pytester.runpytest_subprocess("--qcrypto-digest", "sha256", "--qcrypto-size", "16",
                                      "--qcrypto-plugin", "conftest-sha", "--qcrypto-jobs", "2",
                                      "--qcrypto-timeout", "2", *FAST)
    r.assert_outcomes(failed=1)
    r.stdout.fnmatch_lines(["*timed out after 2 s in conftest-sha sha256 at 16 bytes*"])
    left = json.loads((pytester.path / "left.json").read_text())
    assert len(left["workers"]) == 2 and left["left"] == []
