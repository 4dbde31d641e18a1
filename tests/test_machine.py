"""The machine's state and the noisy-figure notes, from a fake sysfs and known measurements."""

import json

import pytest

from conftest import FAST
from pytest_qcrypto.measure import machine
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.measure.machine import MachineState


def fake_sysfs(tmp_path, governor=None, no_turbo=None, boost=None, cpus=(0, 1)):
    for c in cpus:
        d = tmp_path / f"cpu{c}" / "cpufreq"
        d.mkdir(parents=True)
        if governor:
            (d / "scaling_governor").write_text(governor + "\n")
            (d / "scaling_driver").write_text("intel_pstate\n")
    if no_turbo is not None:
        (tmp_path / "intel_pstate").mkdir()
        (tmp_path / "intel_pstate" / "no_turbo").write_text(no_turbo)
    if boost is not None:
        (tmp_path / "cpufreq").mkdir(exist_ok=True)
        (tmp_path / "cpufreq" / "boost").write_text(boost)
    return tmp_path


def test_capture_reads_governor_and_turbo(tmp_path, monkeypatch):
    monkeypatch.setattr(machine, "_cpus", lambda: [0, 1])
    state = machine.capture(fake_sysfs(tmp_path, governor="powersave", no_turbo="0\n"))
    assert state.governors == ("powersave",)
    assert state.driver == "intel_pstate"
    assert state.turbo is True
    assert state.cpus == 2
    assert state.load is None or len(state.load) == 3
    json.dumps(state.as_dict())


def test_boost_file_when_there_is_no_intel_pstate(tmp_path, monkeypatch):
    monkeypatch.setattr(machine, "_cpus", lambda: [0])
    assert machine.capture(fake_sysfs(tmp_path, boost="0", cpus=(0,))).turbo is False


def test_nothing_exposed_is_none_not_an_error(tmp_path):
    state = machine.capture(tmp_path)
    assert state.governors is None and state.driver is None and state.turbo is None


def state(load=0.1, cpus=2, governors=("performance",)):
    return MachineState((load, load, load), cpus, governors, None, None)


@pytest.mark.parametrize("s, jobs, expected", [
    (state(), 1, []),
    (state(governors=("powersave",)), 1, ["governor is powersave"]),
    (state(load=0.9), 1, []),
    (state(load=1.2), 1, ["load average 1.20 is above the 1 idle CPU this run leaves"]),
    (state(load=0.3), 2, []),
    (state(load=0.7), 2, ["above the 0 idle CPUs this run leaves (2 CPUs, 2 jobs)"]),
    (MachineState(None, 2, None, None, None), 1, []),
])
def test_state_warnings(s, jobs, expected):
    found = machine.state_warnings(s, jobs)
    assert len(found) == len(expected)
    for text, want in zip(found, expected):
        assert want in text


def test_a_threads_run_counts_threads_not_jobs():
    # issue 28: "2 jobs" was printed for two threads
    (found,) = machine.state_warnings(state(load=0.7), threads=2)
    assert "(2 CPUs, 2 threads)" in found and "job" not in found
    (line,) = machine.summary_lines(state(load=0.7), [quiet()], threads=2)
    assert line.startswith("WARNING: figures may be unreliable:") and "2 threads" in line


def quiet():
    return measurement((0.1, 0.1, 0.1), (0.1, 0.1, 0.1))


def measurement(rounds, cpu, **extra):
    return Measurement("sha256", "fake", 16, "digest", 100, rounds, cpu, **extra)


@pytest.mark.parametrize("m, expected", [
    (measurement((0.10, 0.105, 0.109), (0.10, 0.105, 0.109)), []),
    (measurement((0.10, 0.105, 0.111), (0.10, 0.105, 0.111)), ["rounds spread 11%"]),
    (measurement((0.10, 0.10, 0.10), (0.05, 0.05, 0.05)), ["CPU time 50% of wall time"]),
    (measurement((0.10, 0.10, 0.10), (0.19, 0.19, 0.19), jobs=2), []),
    (measurement((0.10, 0.10, 0.10), (0.10, 0.10, 0.10), jobs=2), ["CPU time 50% of wall"]),
    (measurement((0.10,), ()), []),
])
def test_noise(m, expected):
    found = machine.noise(m)
    assert len(found) == len(expected), found
    for text, want in zip(found, expected):
        assert want in text


def test_hardware_work_is_named_as_such():
    m = Measurement("sha256", "afalg", 16, "digest", 1, (0.1,), (0.01,), hardware=True)
    assert machine.noise(m) == ["CPU time 10% of wall time: the work ran off the CPU (hardware)"]


def test_summary_lines_warn_once_and_list_noisy_figures():
    quiet = measurement((0.1, 0.1, 0.1), (0.1, 0.1, 0.1))
    noisy = measurement((0.1, 0.2, 0.1), (0.1, 0.2, 0.1))
    lines = machine.summary_lines(state(load=3.0, governors=("powersave",)), [quiet, noisy])
    assert lines[0] == ("noisy figure, rounds spread: sha256 fake 16 bytes: rounds spread 100% "
                        "(0.1 to 0.2 s)")
    verbose = machine.summary_lines(state(), [quiet, noisy], verbose=True)
    assert verbose[:2] == ["noisy figures (median round shown; 1 of 2):",
                           "  sha256 fake 16 bytes: rounds spread 100% (0.1 to 0.2 s)"]
    warnings = [line for line in lines if line.startswith("WARNING")]
    assert len(warnings) == 1 and "powersave" in warnings[0] and "load average 3.00" in warnings[0]


def test_summary_is_empty_for_a_quiet_run_unless_verbose():
    quiet = measurement((0.1, 0.1, 0.1), (0.1, 0.1, 0.1))
    assert machine.summary_lines(state(), [quiet]) == []
    verbose = machine.summary_lines(state(), [quiet], verbose=True)
    assert verbose == ["machine at start: load average 0.10 0.10 0.10, 2 CPUs, governor "
                       "performance, turbo not exposed"]


def test_the_run_keeps_the_machine_state_and_prints_it_in_verbose_mode(pytester):
    pytester.makeconftest('''
import pytest

def pytest_terminal_summary(config):
    state = config.pluginmanager.get_plugin("qcrypto-run").machine_state
    print("captured cpus:", state.cpus)
''')
    r = pytester.runpytest("--qcrypto-digest", "sha256", "--qcrypto-plugin", "hashlib",
                           "--qcrypto-size", "16", "-v", *FAST)
    r.assert_outcomes(passed=1)
    r.stdout.fnmatch_lines(["machine at start: load average *, * CPUs, governor *, turbo *",
                            "captured cpus: *"])


@pytest.mark.parametrize("governor, warned", [
    ("schedutil", True), ("ondemand", True), ("conservative", True), ("powersave", True),
    ("performance", False), ("userspace", False)])
def test_every_governor_that_follows_the_load_is_warned_of_with_its_driver(governor, warned):
    found = machine.state_warnings(MachineState((0.1,) * 3, 2, (governor,), "intel_pstate", None))
    assert found == ([f"the CPU frequency governor is {governor} (driver intel_pstate): the "
                      "clock rate follows the load; set it to performance for stable figures"]
                     if warned else [])


# -- the load warning against the run's own wait for a CPU (issue 28) -------------------------

def test_a_load_left_by_the_previous_command_does_not_warn_when_the_run_kept_its_cpu():
    """On a one-CPU guest the 1-minute load average of the previous command (1.6 here) is
    above the run's tolerance; the run's own thread waited 1% of the time it wanted a CPU."""
    busy_before = state(load=1.6, cpus=1)
    assert machine.state_warnings(busy_before) != []  # the load alone: warned, as before
    assert machine.state_warnings(busy_before, waited=0.01) == []
    assert machine.state_warnings(busy_before, waited=0.25) == [
        "the measurements waited for a CPU 25% of the time they wanted one (load average 1.60 "
        "at the start): other work competed with them"]
    # work that began after the start competes too, whatever the load was then
    assert machine.state_warnings(state(load=0.0), waited=0.05) != []


def test_the_summary_takes_the_wait_from_this_threads_schedstat(monkeypatch):
    start = MachineState((1.6,) * 3, 1, ("performance",), None, None, schedstat=(10.0, 2.0))
    monkeypatch.setattr(machine, "schedstat", lambda: (19.9, 2.1))  # 9.9 s ran, 0.1 s waited
    assert machine.summary_lines(start, [quiet()], own_thread=True) == []
    assert machine.summary_lines(start, [quiet()], own_thread=True, verbose=True) == [
        "machine at start: load average 1.60 1.60 1.60, 1 CPU, governor performance, turbo "
        "not exposed; the run waited for a CPU 1.0%"]
    monkeypatch.setattr(machine, "schedstat", lambda: (18.0, 4.0))  # 8 s ran, 2 s waited
    (line,) = machine.summary_lines(start, [quiet()], own_thread=True)
    assert line == ("WARNING: figures may be unreliable: the measurements waited for a CPU 20% "
                    "of the time they wanted one (load average 1.60 at the start): other work "
                    "competed with them")
    # jobs, threads, isolation or targets measure elsewhere: the load rule, as before
    (line,) = machine.summary_lines(start, [quiet()])
    assert "load average 1.60 is above the 0 idle CPUs" in line
    # a run that measured nothing (every cell skipped): no warning about its figures
    assert machine.summary_lines(start, [], own_thread=True) == []
    assert "schedstat" not in start.as_dict()


def test_schedstat_reads_this_threads_times():
    found = machine.schedstat()
    if found is None:
        pytest.skip("no /proc/thread-self/schedstat here")
    assert found[0] > 0 and found[1] >= 0
    # differences of real readings: not exact in binary floating point
    assert machine.waited_share(found, (found[0] + 3.0, found[1] + 1.0)) == pytest.approx(0.25)
    assert machine.waited_share(None, found) is None
